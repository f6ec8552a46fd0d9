#!/usr/bin/env python3
"""test_http.py - drives mcp-everything --http over real sockets: sessions,
JSON and SSE answers, the GET stream, DELETE ending one session's handlers,
and the HTTP error codes.  Standard library only; exits 0/1 (77 to skip).

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything test_http.py
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import httpsrv  # noqa: E402
import tap  # noqa: E402

# Every check is one TAP test point (tests/lib/tap.py); the plan comes last.
POINTS = tap.Points()
check = POINTS.check


def post(port, body, session=None, accept="application/json, text/event-stream", headers=None,
         host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=30)
    h = {"Content-Type": "application/json", "Accept": accept}
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    c.request("POST", "/mcp", body if isinstance(body, str) else json.dumps(body), h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), data


def start_server(*args, stderr=subprocess.DEVNULL, host="127.0.0.1"):
    """mcp-everything --http on a free port with `args` (and, for make
    check-cluster, the store of $MCP_EVERYTHING_ARGS); returns (proc,
    port) once it accepts connections."""
    return httpsrv.start_server(BIN, *args, stderr=stderr, host=host, with_env_args=True)


def stop_server(srv, name):
    """SIGTERM, and check the orderly exit."""
    srv.send_signal(signal.SIGTERM)
    try:
        code = srv.wait(10)
    except subprocess.TimeoutExpired:
        srv.kill()
        code = "killed"
    check(name, code == 0, code)
    return code


def wait_line(lines, line, seconds=10):
    """Whether `line` shows up in `lines` (filled by a reader thread)
    within `seconds`."""
    end = time.monotonic() + seconds
    while line not in lines:
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def sse_messages(text):
    """The JSON messages of an SSE body (the empty priming event skipped)."""
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and line[6:].strip()]


def sse_events(text):
    """Every SSE event of a body as a dict of its fields (id, retry, data, ...)."""
    events, cur = [], {}
    for line in text.split("\n"):
        if line == "":
            if cur:
                events.append(cur)
            cur = {}
            continue
        name, _, value = line.partition(":")
        cur[name] = value[1:] if value.startswith(" ") else value
    if cur:
        events.append(cur)
    return events


def open_session(port, version="2025-11-25"):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    _, hd, _ = post(port, init, accept="application/json")
    sid = hd.get("Mcp-Session-Id")
    post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def get_stream(port, sid, last_event_id=None, timeout=10):
    """GET the session's stream (resuming after `last_event_id`); returns
    (status, body) once the server ends the response or `timeout` passes."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Accept": "text/event-stream", "Mcp-Session-Id": sid}
    if last_event_id:
        h["Last-Event-ID"] = last_event_id
    c.request("GET", "/mcp", headers=h)
    r = c.getresponse()
    try:
        data = r.read().decode()
    except (socket.timeout, TimeoutError):
        data = ""
    c.close()
    return r.status, data


def resumability():
    """SSE event ids, priming, a handler closing its stream and the client
    resuming it with Last-Event-ID, a client that disconnects mid-request
    and resumes, and the errors of GET with a bad Last-Event-ID."""
    srv, port = start_server()
    try:
        sid = open_session(port)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "test_reconnection", "arguments": {}}}
        st, hd, body = post(port, call, sid)
        ev = sse_events(body)
        check("2025-11-25 POST stream starts with a priming event (id, retry, empty data)",
              st == 200 and ev and ev[0].get("id", "").endswith("-0") and
              ev[0].get("data") == "" and "retry" in ev[0], body[:200])
        check("a handler's mcp_ctx_close_stream ends the response with retry and no answer",
              any(e.get("retry") == "200" for e in ev) and not sse_messages(body), body[:300])
        last = [e["id"] for e in ev if "id" in e][-1]
        st, body = get_stream(port, sid, last)
        msgs = sse_messages(body)
        check("GET with Last-Event-ID replays the rest of that stream: the answer",
              st == 200 and len(msgs) == 1 and msgs[0].get("id") == 7 and
              "Reconnection test completed" in json.dumps(msgs[0]), f"{st} {body[:300]}")
        ids = [e["id"] for e in sse_events(body) if "id" in e]
        st, body = get_stream(port, sid, ids[-1] if ids else last)
        check("resuming after the last event gets nothing more (finished stream)",
              st == 200 and not sse_messages(body), body[:200])
        st, body = get_stream(port, sid, last)
        check("a finished stream can be replayed again", len(sse_messages(body)) == 1, body[:200])

        # A client that goes away mid-request: not a cancellation; the rest waits.
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        req = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                          "params": {"name": "progress",
                                     "arguments": {"steps": 6, "interval_ms": 60},
                                     "_meta": {"progressToken": "p8"}}})
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"Content-Type: application/json\r\n"
                      f"Accept: application/json, text/event-stream\r\n"
                      f"Mcp-Session-Id: {sid}\r\nContent-Length: {len(req)}\r\n\r\n"
                      f"{req}").encode())
        got = b""
        while got.count(b"notifications/progress") < 1:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        sock.close()
        seen = [l.split(": ", 1)[1] for l in got.decode(errors="replace").split("\r\n")
                for l in l.split("\n") if l.startswith("id: ")]
        check("disconnecting client saw event ids before leaving", len(seen) >= 2, got[:300])
        time.sleep(0.6)  # the handler finishes meanwhile
        # Until the server has noticed the dead socket the stream still
        # counts as open, and a GET for it is rightly 409: retry then.
        end = time.monotonic() + 10
        while True:
            st, body = get_stream(port, sid, seen[-1])
            if st != 409 or time.monotonic() > end:
                break
            time.sleep(0.1)
        msgs = sse_messages(body)
        progress = [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"]
        check("after a disconnect, resuming delivers the remaining progress and the answer",
              st == 200 and msgs and msgs[-1].get("id") == 8 and progress and
              progress == sorted(progress) and min(progress) > 1 and max(progress) == 6,
              body[:400])

        st, _ = get_stream(port, sid, "garbage")
        check("malformed Last-Event-ID is 400", st == 400, st)
        st, _ = get_stream(port, sid, "999-3")
        check("Last-Event-ID of no stream of the session is 400", st == 400, st)

        # A 2025-06-18 session: no priming; the handler cannot close its stream.
        old = open_session(port, "2025-06-18")
        st, hd, body = post(port, dict(call, id=9), old)
        ev = sse_events(body)
        check("2025-06-18: no priming event, the answer comes on the POST stream",
              ev and ev[0].get("data", "") != "" and "retry" not in ev[0] and
              [m.get("id") for m in sse_messages(body)] == [9], body[:300])
        check("every SSE event has an id", all("id" in e for e in ev), body[:300])
    finally:
        stop_server(srv, "resumability server exits 0")


def sessions_and_errors():
    """One server: initialize, JSON and SSE answers, the HTTP error codes,
    two sessions and a DELETE that ends only its own."""
    srv, port = start_server("--trace", "--grace-ms", "1500", stderr=subprocess.PIPE)
    err_lines = []
    threading.Thread(target=lambda: err_lines.extend(l.decode().rstrip() for l in srv.stderr),
                     daemon=True).start()
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                           "clientInfo": {"name": "t", "version": "1"}}}
        st, hd, body = post(port, init, accept="application/json")
        sid = hd.get("Mcp-Session-Id")
        check("initialize answers JSON with a session id", st == 200 and sid and len(sid) == 32,
              f"{st} {hd}")
        check("initialize result", json.loads(body)["result"]["protocolVersion"] == "2025-11-25")
        st, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        check("notification gets 202", st == 202, st)

        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": "echo", "arguments": {"text": "hi"}}},
                            sid, accept="application/json")
        check("JSON answer", st == 200 and json.loads(body)["result"]["content"][0]["text"] == "hi",
              body)

        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                   "params": {"name": "progress",
                                              "arguments": {"steps": 3, "interval_ms": 5},
                                              "_meta": {"progressToken": "pt"}}}, sid)
        msgs = sse_messages(body)
        check("SSE stream carries progress then the answer",
              hd.get("Content-Type") == "text/event-stream" and len(msgs) == 4 and
              [m.get("method") for m in msgs[:3]] == ["notifications/progress"] * 3 and
              msgs[3].get("id") == 3, body[:300])

        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        check("missing session id is 400", st == 400, st)
        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, "0" * 32)
        check("unknown session id is 404", st == 404, st)
        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, sid,
                            headers={"Origin": "http://attacker.example"})
        check("foreign Origin is 403", st == 403, st)
        check("foreign Origin: a JSON-RPC error body naming the Origin",
              hd.get("Content-Type", "").startswith("application/json") and
              json.loads(body).get("error", {}).get("code") == -32600 and
              "Origin" in json.loads(body)["error"].get("message", ""), body[:200])
        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, sid,
                        headers={"MCP-Protocol-Version": "1999-01-01"})
        check("unsupported MCP-Protocol-Version is 400", st == 400, st)
        st, _, body = post(port, "{not json", sid)
        check("unparseable body is 400 with -32700",
              st == 400 and json.loads(body)["error"]["code"] == -32700, f"{st} {body}")
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, sid)
        check("bad id type is 400 with -32600",
              st == 400 and json.loads(body)["error"]["code"] == -32600, f"{st} {body}")
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 5, "method": "nope"}, sid,
                           accept="application/json")
        check("unknown method is -32601 on the request's id",
              json.loads(body)["error"]["code"] == -32601 and json.loads(body)["id"] == 5, body)

        # A second session is independent; DELETE of the first cancels only its handler.
        st, hd2, _ = post(port, init, accept="application/json")
        sid2 = hd2.get("Mcp-Session-Id")
        check("second session has its own id", sid2 and sid2 != sid)
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid2)
        result = {}

        def long_call(session, key):
            result[key] = post(port, {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                      "params": {"name": "sleep", "arguments": {"ms": 60000}}},
                               session)

        t1 = threading.Thread(target=long_call, args=(sid, "a"))
        t1.start()
        wait_line(err_lines, "started 9")   # the DELETE must find the call running
        t0 = time.time()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
        r = c.getresponse()
        r.read()
        check("DELETE is 200", r.status == 200, r.status)
        t1.join(10)
        check("the deleted session's stream ends promptly, without an answer",
              not t1.is_alive() and not any(m.get("id") == 9 for m in sse_messages(result["a"][2])),
              str(result.get("a"))[:200])
        # The server wrote it before the stream ended; our stderr reader
        # may not have read it yet.
        check("its handler saw session_deleted (DELETE's own reason)",
              wait_line(err_lines, "cleanup 9 session_deleted", 5),
              err_lines[-5:])
        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 10, "method": "ping"}, sid)
        check("a deleted session is 404", st == 404, st)
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 10, "method": "ping"}, sid2,
                           accept="application/json")
        check("the other session still works", st == 200 and json.loads(body)["id"] == 10, body)
        _ = t0
    finally:
        code = stop_server(srv, "SIGTERM: orderly exit 0")
        if code != 0:
            time.sleep(0.2)
            tap.diag("server stderr (tail):\n" + "\n".join(err_lines[-60:]))


SECTIONS = ["sessions_and_errors", "options_json_and_session_limit", "resumability",
            "access_control", "stateless", "ipv6", "scenarios", "batches", "modern_over_http"]


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("no mcp-everything binary")
    for name in SECTIONS:
        POINTS.guard(globals()[name])
    return POINTS.finish()


def options_json_and_session_limit():
    """--json answers as JSON even when SSE is accepted; --max-sessions 2
    refuses a third initialize with 503."""
    srv, port = start_server("--json", "--max-sessions", "2")
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        st, hd, body = post(port, init)
        check("--json: answered as application/json although SSE is accepted",
              st == 200 and hd.get("Content-Type") == "application/json" and
              json.loads(body)["id"] == 1, f"{st} {hd}")
        st2, _, _ = post(port, init)
        st3, _, _ = post(port, init)
        check("--max-sessions 2: the third initialize gets 503", (st2, st3) == (200, 503),
              (st2, st3))
    finally:
        stop_server(srv, "option server exits 0")


def access_control():
    """Host and Origin allow-lists (DNS rebinding) and the bearer-token hook."""
    srv, port = start_server("--allow-host", "mcp.example", "--allow-host", "api.example:8443",
                             "--allow-origin", "https://app.example", "--bearer", "s3cret")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
    auth = {"Authorization": "Bearer s3cret"}
    try:
        st, hd, body = post(port, init)
        check("no Authorization: 401 with WWW-Authenticate: Bearer",
              st == 401 and hd.get("WWW-Authenticate") == "Bearer", f"{st} {hd}")
        st, _, _ = post(port, init, headers={"Authorization": "Bearer wrong"})
        check("a token the hook refuses: 403", st == 403, st)
        st, hd, _ = post(port, init, headers=auth, accept="application/json")
        sid = hd.get("Mcp-Session-Id")
        check("the right token: initialize answered", st == 200 and sid, st)
        for host, want in (("evil.example", 403), (f"evil.example:{port}", 403),
                           ("mcp.example", 200), (f"mcp.example:{port}", 200),
                           ("api.example:8443", 200), ("api.example:9999", 403),
                           (f"localhost:{port}", 200), (f"[::1]:{port}", 200)):
            st, _, body = post(port, ping, sid, headers=dict(auth, Host=host),
                               accept="application/json")
            check(f"Host {host}: {want}", st == want, st)
            if want == 403:
                check(f"Host {host}: a JSON-RPC error body naming the Host",
                      "Host" in json.loads(body).get("error", {}).get("message", ""), body[:200])
        for origin, want in (("https://app.example", 200), ("https://app.example.evil", 403),
                             (f"http://localhost:{port}", 200), ("null", 403),
                             ("http://127.0.0.1.evil.example", 403)):
            st, _, _ = post(port, ping, sid, headers=dict(auth, Origin=origin),
                            accept="application/json")
            check(f"Origin {origin}: {want}", st == want, st)
    finally:
        stop_server(srv, "access-control server exits 0")


def stateless():
    """--stateless: no sessions; each request served alone; GET/DELETE 405."""
    srv, port = start_server("--stateless", "--trace", stderr=subprocess.PIPE)
    err_lines = []
    err_reader = threading.Thread(
        target=lambda: err_lines.extend(l.decode().rstrip() for l in srv.stderr), daemon=True)
    err_reader.start()
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        st, hd, body = post(port, init, accept="application/json")
        check("stateless: initialize answered without Mcp-Session-Id",
              st == 200 and "Mcp-Session-Id" not in hd and
              json.loads(body)["result"]["protocolVersion"] == "2025-11-25", f"{st} {hd}")
        st, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        check("stateless: a notification gets 202", st == 202, st)
        v = {"MCP-Protocol-Version": "2025-11-25"}
        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": "echo", "arguments": {"text": "s"}}},
                            headers=v, accept="application/json")
        check("stateless: tools/call without a session, JSON",
              st == 200 and json.loads(body)["result"]["content"][0]["text"] == "s", body)
        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                   "params": {"name": "progress",
                                              "arguments": {"steps": 2, "interval_ms": 5},
                                              "_meta": {"progressToken": 1}}}, headers=v)
        msgs = sse_messages(body)
        check("stateless: SSE with progress then the answer",
              [m.get("method") for m in msgs[:2]] == ["notifications/progress"] * 2 and
              msgs[-1].get("id") == 3, body[:300])
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                  "params": {"name": "roots", "arguments": {}}},
                           headers=v, accept="application/json")
        check("stateless: a handler cannot call the client (no capabilities)",
              st == 200 and ("error" in json.loads(body) or
                             json.loads(body)["result"].get("isError")), body)
        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 5, "method": "ping"},
                        headers={"MCP-Protocol-Version": "1999-01-01"})
        check("stateless: unsupported MCP-Protocol-Version is 400", st == 400, st)
        results = []

        def one(i):
            results.append(post(port, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                       "params": {"name": "echo", "arguments": {"text": str(i)}}},
                                headers=v, accept="application/json"))
        threads = [threading.Thread(target=one, args=(i,)) for i in range(100, 140)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        check("stateless: 40 concurrent requests, each answered with its own id",
              sorted(json.loads(b)["id"] for _, _, b in results) == list(range(100, 140)),
              [r[0] for r in results][:5])
        for method in ("GET", "DELETE"):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request(method, "/mcp", headers={"Accept": "text/event-stream"})
            r = c.getresponse()
            data = r.read()
            c.close()
            check(f"stateless: {method} is 405, with Allow: POST and a JSON-RPC error",
                  r.status == 405 and r.getheader("Allow") == "POST" and
                  json.loads(data or b"{}").get("error", {}).get("code") == -32600,
                  (r.status, r.getheader("Allow"), data[:200]))
    finally:
        stop_server(srv, "stateless server exits 0")
    err_reader.join(10)   # all it printed is in before counting
    started = [l for l in err_lines if l.startswith("started ")]
    completed = [l for l in err_lines if l.endswith(" completed")]
    check("stateless: every handler ran to completion", len(started) == len(completed) >= 43,
          (len(started), len(completed)))


def raw_request(port, method, path="/mcp", headers=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers or {})
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused on its header (413) while the body was still going out
    r = c.getresponse()
    data = r.read().decode(errors="replace")
    c.close()
    return r.status, data


def scenarios():
    """The HTTP scenarios of the transport issue: DELETE while a handler is
    blocked on a server-to-client request, abandoned sessions, concurrent
    POSTs and a duplicate in-flight id in one session, bad requests."""
    srv, port = start_server("--trace", "--grace-ms", "1500", "--max-message", str(4 << 20),
                             stderr=subprocess.PIPE)
    err_lines = []
    threading.Thread(target=lambda: err_lines.extend(l.decode().rstrip() for l in srv.stderr),
                     daemon=True).start()

    def wait_err(line):
        return wait_line(err_lines, line)
    try:
        # DELETE while the handler waits for the client's roots/list answer.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                           "clientInfo": {"name": "t", "version": "1"}}}
        _, hd, _ = post(port, init, accept="application/json")
        sid = hd["Mcp-Session-Id"]
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        req = json.dumps({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                          "params": {"name": "roots", "arguments": {"timeout_ms": 60000}}})
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"Content-Type: application/json\r\n"
                      f"Accept: application/json, text/event-stream\r\n"
                      f"Mcp-Session-Id: {sid}\r\nContent-Length: {len(req)}\r\n\r\n"
                      f"{req}").encode())
        got = b""
        while b"roots/list" not in got:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        check("roots/list reaches the client on the request's SSE stream", b"roots/list" in got,
              got[:200])
        st, _ = raw_request(port, "DELETE", headers={"Mcp-Session-Id": sid})
        check("DELETE while the handler waits on roots/list: 200", st == 200, st)
        sock.settimeout(10)
        rest = b""
        try:
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                rest += chunk
        except OSError:
            pass
        sock.close()
        check("the request's stream ends without an answer",
              b'"id":21' not in rest and b'"result"' not in rest, rest[:200])
        check("the handler blocked on roots saw session_deleted",
              wait_err("cleanup 21 session_deleted"), err_lines[-5:])

        # Sessions opened and abandoned.
        abandoned = []
        for i in range(150):
            _, hd, _ = post(port, dict(init, id=i), accept="application/json")
            abandoned.append(hd.get("Mcp-Session-Id"))
        check("150 abandoned sessions each got their own id",
              len(set(abandoned)) == 150 and all(abandoned))

        # Concurrent POSTs in one session.
        sid = open_session(port)
        results = []

        def one(i):
            results.append(post(port, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                       "params": {"name": "echo",
                                                  "arguments": {"text": f"t{i}"}}},
                                sid, accept="application/json" if i % 2 else
                                "application/json, text/event-stream"))
        threads = [threading.Thread(target=one, args=(i,)) for i in range(200, 240)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        answers = {}
        for st, hd, body in results:
            msgs = sse_messages(body) if hd.get("Content-Type") == "text/event-stream" \
                else [json.loads(body)]
            for m in msgs:
                answers[m["id"]] = m["result"]["content"][0]["text"]
        check("40 concurrent POSTs in one session (JSON and SSE): each its own answer",
              answers == {i: f"t{i}" for i in range(200, 240)}, len(answers))

        # A duplicate in-flight id in one session: the first keeps its stream.
        # (It sleeps 3 s, so it is still in flight when the duplicate comes.)
        first = {}
        t = threading.Thread(target=lambda: first.update(r=post(
            port, {"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                   "params": {"name": "sleep", "arguments": {"ms": 3000}}}, sid)))
        t.start()
        wait_err("started 50")
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 50, "method": "ping"}, sid,
                           accept="application/json")
        check("a duplicate in-flight id is refused with -32600",
              json.loads(body).get("error", {}).get("code") == -32600, body)
        t.join(10)
        msgs = sse_messages(first["r"][2])
        check("the first request with that id is answered once",
              [m.get("id") for m in msgs] == [50] and "result" in msgs[0], first["r"][2][:200])

        # Bad requests: the connection's answer is a clear error, nothing crashes.
        for name, want, args in (
                ("PUT", 405, ("PUT", "/mcp", {"Mcp-Session-Id": sid}, "{}")),
                ("another path", 404, ("POST", "/other", {"Content-Type": "application/json"},
                                       "{}")),
                ("text/plain body", 415, ("POST", "/mcp", {"Content-Type": "text/plain",
                                                           "Mcp-Session-Id": sid}, "{}")),
                ("empty body", 400, ("POST", "/mcp", {"Content-Type": "application/json",
                                                      "Mcp-Session-Id": sid}, "")),
                ("a JSON array (2025-11-25)", 400, ("POST", "/mcp", {
                    "Content-Type": "application/json", "Mcp-Session-Id": sid},
                    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]')),
                ("invalid UTF-8", 400, ("POST", "/mcp", {"Content-Type": "application/json",
                                                         "Mcp-Session-Id": sid},
                                        b'{"jsonrpc":"2.0","id":1,"method":"\xff"}')),
                ("a body over --max-message (4 MiB)", 413, ("POST", "/mcp", {
                    "Content-Type": "application/json", "Mcp-Session-Id": sid},
                    '{"x":"' + "a" * (5 << 20) + '"}')),
                ("GET without text/event-stream", 405, ("GET", "/mcp", {
                    "Accept": "application/json", "Mcp-Session-Id": sid}, None)),
                ("GET with an unknown session", 404, ("GET", "/mcp", {
                    "Accept": "text/event-stream", "Mcp-Session-Id": "f" * 32}, None)),
                ("DELETE without a session", 400, ("DELETE", "/mcp", {}, None)),
                ("a session id with odd bytes", 404, ("POST", "/mcp", {
                    "Content-Type": "application/json", "Mcp-Session-Id": "../../etc"},
                    '{"jsonrpc":"2.0","id":1,"method":"ping"}'))):
            st, data = raw_request(port, args[0], args[1], args[2], args[3])
            check(f"bad request, {name}: {want}", st == want, st)
            # Every refusal says why, in a JSON-RPC error (fuzz-http's rule).
            try:
                err = json.loads(data).get("error", {})
            except ValueError:
                err = {}
            check(f"bad request, {name}: a JSON-RPC error body",
                  isinstance(err.get("code"), int) and isinstance(err.get("message"), str),
                  data[:200])
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 60, "method": "ping"}, sid,
                           accept="application/json")
        check("the session still works after the bad requests",
              st == 200 and json.loads(body)["id"] == 60, body)
    finally:
        t0 = time.monotonic()
        stop_server(srv, "scenario server exits 0 with 150 abandoned sessions")
        check("and promptly", time.monotonic() - t0 < 8, time.monotonic() - t0)


def batches():
    """2025-03-26 sessions take JSON-RPC batches over HTTP; later ones do not."""
    srv, port = start_server()
    try:
        sid = open_session(port, "2025-03-26")
        st, hd, body = post(port, [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "echo", "arguments": {"text": "b"}}},
            {"jsonrpc": "2.0", "method": "notifications/whatever"}], sid)
        arr = json.loads(body) if st == 200 else []
        check("2025-03-26 batch: one JSON array with an answer per request",
              hd.get("Content-Type") == "application/json" and
              sorted(m["id"] for m in arr) == [1, 2] and
              [m for m in arr if m["id"] == 2][0]["result"]["content"][0]["text"] == "b", body)
        st, _, body = post(port, [{"jsonrpc": "2.0", "method": "notifications/whatever"}], sid)
        check("2025-03-26 batch of notifications only: 202", st == 202 and body == "", (st, body))
        st, _, body = post(port, [7, {"jsonrpc": "2.0", "id": 3, "method": "nope"}], sid)
        codes = sorted(m["error"]["code"] for m in json.loads(body)) if st == 200 else []
        check("2025-03-26 batch with bad elements: each gets its error in the array",
              codes == [-32601, -32600], body)
        st, _, _ = post(port, [], sid)
        check("an empty batch is 400", st == 400, st)
        sid2 = open_session(port, "2025-06-18")
        st, _, body = post(port, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], sid2)
        check("2025-06-18: a batch is 400 -32600",
              st == 400 and json.loads(body)["error"]["code"] == -32600, (st, body))
        # 2024-11-05 had no Streamable HTTP, but a client that asks for
        # it here is served it (doc/design.md): that revision's answer, no
        # completions capability, and no batches (they came in 2025-03-26).
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        st, hd, body = post(port, init, accept="application/json")
        res = json.loads(body).get("result", {}) if st == 200 else {}
        check("Streamable HTTP: initialize asking 2024-11-05 is answered 2024-11-05",
              res.get("protocolVersion") == "2024-11-05" and
              "completions" not in res.get("capabilities", {}), (st, body))
        sid3 = hd.get("Mcp-Session-Id")
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid3,
             headers={"MCP-Protocol-Version": "2024-11-05"})
        st, _, body = post(port, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], sid3,
                           headers={"MCP-Protocol-Version": "2024-11-05"})
        check("2024-11-05: a batch is 400 -32600",
              st == 400 and json.loads(body)["error"]["code"] == -32600, (st, body))
        st, _, body = post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": "test_audio_content", "arguments": {}}},
                           sid3, accept="application/json",
                           headers={"MCP-Protocol-Version": "2024-11-05"})
        blocks = json.loads(body).get("result", {}).get("content", []) if st == 200 else []
        check("2024-11-05 over Streamable HTTP: audio becomes a text note",
              [b.get("type") for b in blocks] == ["text"] and "2024-11-05" in blocks[0]["text"],
              (st, body))
    finally:
        stop_server(srv, "batch server exits 0")


def modern_over_http():
    """2026-07-28 over HTTP: no session, the ladder's statuses, the
    Mcp-Method / Mcp-Name / Mcp-Param-* header checks, SSE without event
    ids for a request that asked for progress, and a listen stream."""
    srv, port = start_server()
    M = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
         "io.modelcontextprotocol/clientCapabilities": {}}

    def call(rid, method, params, hdrs=None, accept="application/json"):
        h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        name = params.get("name") or params.get("uri")
        if name:
            h["Mcp-Name"] = name
        h.update(hdrs or {})
        h = {k: v for k, v in h.items() if v is not None}
        return post(port, {"jsonrpc": "2.0", "id": rid, "method": method,
                           "params": dict(params, _meta=params.get("_meta", M))},
                    headers=h, accept=accept)
    try:
        st, hd, body = call(1, "tools/call", {"name": "echo", "arguments": {"text": "m"}})
        r = json.loads(body)
        check("modern: tools/call without a session, no session id issued",
              st == 200 and "Mcp-Session-Id" not in hd and
              r["result"]["resultType"] == "complete", body)
        for rid, method, params, hdrs, want in (
                (2, "tools/list", {"_meta": {}}, None, (400, -32602)),
                (3, "tools/list", {}, {"MCP-Protocol-Version": "2025-11-25"}, (400, -32020)),
                (4, "ping", {}, None, (404, -32601)),
                (5, "tools/list", {}, {"Mcp-Method": None}, (400, -32020)),
                (6, "tools/list", {}, {"Mcp-Method": "TOOLS/LIST"}, (400, -32020)),
                (7, "tools/call", {"name": "echo", "arguments": {"text": "x"}},
                 {"Mcp-Name": "other"}, (400, -32020)),
                (8, "tools/call", {"name": "test_custom_header", "arguments": {"region": "eu"}},
                 None, (400, -32020)),
                (9, "tools/call", {"name": "test_custom_header", "arguments": {"region": "eu"}},
                 {"Mcp-Param-Region": "=?base64?ZXU?="}, (400, -32020)),
                (10, "tools/call", {"name": "test_missing_capability", "arguments": {}}, None,
                 (400, -32021))):
            st, _, body = call(rid, method, params, hdrs)
            code = json.loads(body).get("error", {}).get("code") if body else None
            check(f"modern ladder: {method} {hdrs or params.get('_meta', '')} -> {want}",
                  (st, code) == want and json.loads(body).get("id") == rid, f"{st} {body}")
        for rid, value in ((11, "eu"), (12, "=?base64?ZXU=?="), (13, "  eu  ")):
            st, _, body = call(rid, "tools/call", {"name": "test_custom_header",
                                                   "arguments": {"region": "eu"}},
                               {"Mcp-Param-Region": value, "Mcp-Name": " test_custom_header "})
            check(f"modern: Mcp-Param-Region {value!r} accepted",
                  st == 200 and "Region: eu" in body, f"{st} {body}")
        st, hd, body = call(14, "tools/call", {"name": "progress", "arguments": {
            "steps": 2, "interval_ms": 5}, "_meta": dict(M, progressToken=1)},
            accept="application/json, text/event-stream")
        check("modern: progress over SSE without event ids",
              hd.get("Content-Type") == "text/event-stream" and "id:" not in body and
              sse_messages(body)[-1].get("id") == 14, body[:300])
        # A listen stream: acknowledged first, then the change, tagged.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/mcp", json.dumps({
            "jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": M}}),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
        r = c.getresponse()
        first = r.fp.readline() + r.fp.readline()
        call(15, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
        more = b""
        while b"list_changed" not in more:
            line = r.fp.readline()
            if not line:
                break
            more += line
        c.close()
        got = first + more
        check("modern: a listen stream is acknowledged, then hears the change, tagged",
              0 <= got.find(b"subscriptions/acknowledged") < got.find(b"list_changed") and
              got.count(b'"io.modelcontextprotocol/subscriptionId":"L"') == 2, got)
    finally:
        stop_server(srv, "modern server exits 0 (with a listen stream open)")


def ipv6():
    """--http [::1]:PORT binds IPv6 loopback."""
    try:
        socket.create_connection(("::1", 9), timeout=0.2)
    except ConnectionRefusedError:
        pass
    except OSError:
        POINTS.skip("IPv6: initialize over [::1]", "no IPv6 loopback")
        return
    srv, port = start_server(host="::1")
    try:
        st, hd, body = post(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"protocolVersion": "2025-11-25",
                                              "capabilities": {}}},
                            accept="application/json", host="::1")
        check("IPv6: initialize over [::1]", st == 200 and hd.get("Mcp-Session-Id"), st)
    finally:
        stop_server(srv, "IPv6 server exits 0")


if __name__ == "__main__":
    sys.exit(main())
