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
failures = []
passed = 0


def check(name, cond, detail=""):
    global passed
    if cond:
        passed += 1
        print(f"ok - {name}")
    else:
        failures.append(name)
        print(f"not ok - {name} {detail}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, body, session=None, accept="application/json, text/event-stream", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Content-Type": "application/json", "Accept": accept}
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    c.request("POST", "/mcp", body if isinstance(body, str) else json.dumps(body), h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), data


def start_server(*args, stderr=subprocess.DEVNULL):
    """mcp-everything --http on a free port with `args`; returns (proc,
    port) once it accepts connections."""
    port = free_port()
    srv = subprocess.Popen([BIN, "--http", f"127.0.0.1:{port}", *args],
                           stdout=subprocess.DEVNULL, stderr=stderr)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return srv, port


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


def sse_messages(text):
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        print("skip: no mcp-everything binary")
        return 77
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
        st, _, _ = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, sid,
                        headers={"Origin": "http://attacker.example"})
        check("foreign Origin is 403", st == 403, st)
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
        time.sleep(0.3)
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
        for _ in range(100):
            if "cleanup 9 transport_closed" in err_lines:
                break
            time.sleep(0.05)
        check("its handler saw transport_closed", "cleanup 9 transport_closed" in err_lines,
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
            print("server stderr (tail):\n" + "\n".join(err_lines[-60:]))
    options_json_and_session_limit()
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


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


if __name__ == "__main__":
    sys.exit(main())
