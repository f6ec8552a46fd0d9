#!/usr/bin/env python3
"""test_legacy_sse.py - the legacy HTTP+SSE transport of MCP 2024-11-05
(mcp_server_set_http_legacy_sse) over real sockets against
mcp-everything --http --legacy-sse:

  - off by default: /sse and /messages are unknown paths (404);
  - the GET's first event is "endpoint" naming /messages?sessionId=ID;
    initialize, tools/list and tools/call POSTed there are answered 202
    "Accepted", and their answers arrive on the stream as "message"
    events without ids; progress and log notifications too, before the
    answer; a call to the client (roots/list) goes out on the stream and
    its answer comes back by POST;
  - refusals carry a JSON-RPC body: an unknown session 404, bad JSON and
    a missing sessionId 400, a wrong Content-Type 415, another Host or
    Origin 403 (on the GET and the POST), and a legacy id is no
    Streamable HTTP session;
  - a stream dropped during a call ends its session: the handler's token
    fires with transport_closed (the --trace line says so), the call never
    completes, and the session is gone (404); so does a reader that stops
    reading while it owes more than --stream-backlog (cut off, since
    dropping events would drop answers);
  - the limits: past --max-sessions and past --max-streams a GET gets 503
    with Retry-After and a JSON-RPC body;
  - --bearer: the GET and the POSTs need the token (401 with
    WWW-Authenticate); as an OAuth protected resource, both get its
    challenges (a token's principal bound to the session is tested by the
    Streamable HTTP suites: the legacy POST uses the same bind_principal);
  - the server's shutdown ends an open stream cleanly;
  - a 2024-11-05 client gets only what that revision has (recorded for
    make check-schema), and libmcp's own client (mcp-call --http URL/sse)
    falls back to this transport by itself.

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything MCP_CALL=PATH/TO/mcp-call test_legacy_sse.py [--repeat N] [NAME...]
"""
import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import httpsrv  # noqa: E402
import tap  # noqa: E402

BIN = os.environ.get("MCP_EVERYTHING")
Fail = tap.Fail
WAIT_S = 30  # a bound on each wait for an event, never a sleep


def expect(cond, what, *detail):
    if not cond:
        raise Fail(what + ("" if not detail else ": " + " ".join(repr(d) for d in detail)))


class Server:
    """mcp-everything --http with `args`; its stderr lines (the --trace
    events) are collected by a thread, so a test can wait for one."""

    def __init__(self, *args):
        self.p, self.port = httpsrv.start_server(BIN, *args, stderr=subprocess.PIPE)
        self.lines = []
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.p.stderr:
            with self.cv:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)  # end of stderr
            self.cv.notify_all()

    def wait_line(self, line):
        """Blocks until `line` is on stderr (True), or stderr ends or the
        bound passes without it (False)."""
        with self.cv:
            return self.cv.wait_for(lambda: line in self.lines or None in self.lines,
                                    WAIT_S) and line in self.lines

    def stop(self, name="server"):
        code, _ = httpsrv.stop_server(self.p)
        self.t.join(WAIT_S)
        err = "\n".join(x for x in self.lines if x is not None)
        expect(httpsrv.clean_exit(code, err), f"{name} exits 0 with no sanitizer report", code,
               err[-2000:])


class Stream:
    """A GET on the SSE path: its status and headers, then its events,
    read by a thread into a queue (None marks the end of the stream)."""

    def __init__(self, port, headers=None, path="/sse"):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S * 2)
        h = {"Accept": "text/event-stream"}
        h.update(headers or {})
        self.c.request("GET", path, headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.headers = dict(self.r.getheaders())
        self.events = queue.Queue()
        self.clean_end = None
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()
        else:
            self.body = self.r.read().decode()

    def _read(self):
        cur = {}
        try:
            while True:
                line = self.r.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line == "":
                    if cur:
                        self.events.put(cur)
                    cur = {}
                    continue
                name, _, value = line.partition(":")
                cur[name] = value[1:] if value.startswith(" ") else value
            self.clean_end = True
        except Exception:  # noqa: BLE001 - a reset, or drop() closing under us
            self.clean_end = False
        self.events.put(None)

    def next(self):
        try:
            return self.events.get(timeout=WAIT_S)
        except queue.Empty:
            raise Fail("no event on the stream within the bound")

    def message(self):
        """The next "message" event's JSON."""
        ev = self.next()
        expect(ev is not None, "the stream ended early")
        expect(ev.get("event") == "message" and "id" not in ev,
               "an event \"message\" without an id", ev)
        return json.loads(ev["data"])

    def until_answer(self, rid):
        """The messages up to and including the answer to `rid`."""
        out = []
        while True:
            m = self.message()
            out.append(m)
            if m.get("id") == rid and ("result" in m or "error" in m):
                return out

    def drop(self):
        """Hangs up the socket under the stream."""
        try:
            self.r.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.c.close()


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
    h = {}
    if body is not None:
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    if body is not None and not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    c.request(method, path, body, h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), data


def rpc_error(body):
    """The JSON-RPC error of a refusal's body, or None."""
    try:
        m = json.loads(body)
    except ValueError:
        return None
    return m.get("error") if m.get("jsonrpc") == "2.0" and "id" in m else None


def open_legacy(port, headers=None, version="2024-11-05"):
    """A stream and its messages URL, initialized (capabilities: roots)."""
    s = Stream(port, headers)
    expect(s.status == 200 and s.headers.get("Content-Type", "").startswith("text/event-stream"),
           "GET /sse opens an event stream", s.status, s.headers)
    ev = s.next()
    expect(ev and ev.get("event") == "endpoint", "the first event is \"endpoint\"", ev)
    url = ev["data"]
    expect(re.fullmatch(r"/messages\?sessionId=[0-9a-f]{32}", url), "the endpoint URL", url)
    st, _, body = request(port, "POST", url, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {"roots": {}},
                   "clientInfo": {"name": "legacy-test", "version": "1"}}}, headers)
    expect(st == 202 and body == "Accepted", "initialize is accepted with 202", st, body)
    init = s.message()
    expect(init.get("id") == 1 and "result" in init, "initialize is answered on the stream", init)
    st, _, _ = request(port, "POST", url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers)
    expect(st == 202, "notifications/initialized is accepted", st)
    return s, url, init


# ---- scenarios ------------------------------------------------------------------


def off_by_default():
    """Without --legacy-sse, /sse and /messages are unknown paths, as
    before the transport existed."""
    srv = Server()
    try:
        st, _, body = request(srv.port, "GET", "/sse", headers={"Accept": "text/event-stream"})
        expect(st == 404 and (rpc_error(body) or {}).get("code") == -32600,
               "GET /sse is 404 when off, as any unknown path", st, body)
        st, _, body = request(srv.port, "POST", "/messages?sessionId=" + "0" * 32,
                              {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        expect(st == 404 and (rpc_error(body) or {}).get("code") == -32600,
               "POST /messages is 404 when off, as any unknown path", st, body)
    finally:
        srv.stop()


def endpoint_and_calls():
    """The endpoint event, then initialize, tools/list and tools/call: each
    POST 202, each answer on the stream."""
    srv = Server("--legacy-sse")
    try:
        s, url, init = open_legacy(srv.port)
        expect(init["result"].get("protocolVersion") == "2024-11-05",
               "the revision asked for is negotiated", init["result"].get("protocolVersion"))
        st, _, body = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 2,
                                                      "method": "tools/list"})
        expect(st == 202 and body == "Accepted", "tools/list accepted", st, body)
        ans = s.until_answer(2)[-1]
        names = {t["name"] for t in ans["result"]["tools"]}
        expect({"echo", "sleep", "progress"} <= names, "tools/list on the stream", names)
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": "c-3", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}})
        expect(st == 202, "tools/call accepted", st)
        ans = s.until_answer("c-3")[-1]
        expect(ans["result"]["content"][0]["text"] == "hi", "tools/call answered", ans)
        # An invalid request is answered on the stream under its id, as on
        # stdio: the POST itself was well-formed JSON-RPC.
        st, _, _ = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 4,
                                                   "method": "no/such"})
        expect(st == 202, "an unknown method is accepted", st)
        ans = s.until_answer(4)[-1]
        expect(ans.get("error", {}).get("code") == -32601, "-32601 on the stream", ans)
        # A legacy session is no Streamable HTTP session.
        sid = url.split("=", 1)[1]
        st, _, body = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 5,
                                                         "method": "ping"},
                              {"Mcp-Session-Id": sid, "Accept": "application/json"})
        expect(st == 404 and rpc_error(body), "a legacy id is unknown at /mcp", st, body)
        # And Streamable HTTP still works beside it.
        st, hd, body = request(srv.port, "POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}},
            {"Accept": "application/json, text/event-stream"})
        expect(st == 200 and hd.get("Mcp-Session-Id"), "Streamable HTTP beside it", st, body)
        s.drop()
    finally:
        srv.stop()


def notifications_on_stream():
    """Progress and log notifications of a call, and its call to the client
    (roots/list), travel on the stream before its answer."""
    srv = Server("--legacy-sse")
    try:
        s, url, _ = open_legacy(srv.port)
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "progress", "arguments": {"steps": 3, "interval_ms": 1,
                                                         "log": True},
                       "_meta": {"progressToken": "p"}}})
        expect(st == 202, "progress call accepted", st)
        msgs = s.until_answer(7)
        prog = [m["params"]["progress"] for m in msgs
                if m.get("method") == "notifications/progress"]
        logs = [m["params"]["data"] for m in msgs if m.get("method") == "notifications/message"]
        expect(prog == [1, 2, 3], "three progress notifications in order", msgs)
        expect(logs == ["step 1 of 3", "step 2 of 3", "step 3 of 3"], "three log messages", msgs)
        expect(msgs[-1]["result"]["content"][0]["text"] == "done", "then the answer", msgs[-1])
        # The server's request to the client, answered by POST.
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": "roots", "arguments": {"timeout_ms": WAIT_S * 1000}}})
        expect(st == 202, "roots call accepted", st)
        m = s.message()
        expect(m.get("method") == "roots/list" and "id" in m, "roots/list on the stream", m)
        st, _, body = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": m["id"],
            "result": {"roots": [{"uri": "file:///legacy", "name": "legacy"}]}})
        expect(st == 202, "the client's answer is accepted", st, body)
        ans = s.until_answer(8)[-1]
        expect("file:///legacy" in json.dumps(ans), "the tool saw the roots", ans)
        s.drop()
    finally:
        srv.stop()


def refusals():
    """Every refusal is an HTTP status with a JSON-RPC error body."""
    srv = Server("--legacy-sse", "--max-message", "4096")
    try:
        s, url, _ = open_legacy(srv.port)
        ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
        cases = [
            ("unknown session", "/messages?sessionId=" + "f" * 32, ping, {}, 404),
            ("missing sessionId", "/messages", ping, {}, 400),
            ("bad JSON", url, "{\"jsonrpc\":", {}, 400),
            ("not an object", url, "42", {}, 400),
            ("bad envelope", url, {"jsonrpc": "1.0", "id": 3, "method": "ping"}, {}, 400),
            ("wrong Content-Type", url, ping, {"Content-Type": "text/plain"}, 415),
            ("foreign Host", url, ping, {"Host": "evil.example"}, 403),
            ("foreign Origin", url, ping, {"Origin": "http://evil.example"}, 403),
        ]
        for what, path, body, hdrs, want in cases:
            st, _, text = request(srv.port, "POST", path, body, hdrs)
            expect(st == want and rpc_error(text), f"{what}: {want} with a JSON-RPC body", st,
                   text)
        st, _, text = request(srv.port, "POST", url, "{\"a\":\"" + "x" * 5000 + "\"}")
        expect(st == 413, "a body over --max-message: 413", st, text)
        for what, hdrs in (("foreign Host", {"Host": "evil.example"}),
                           ("foreign Origin", {"Origin": "http://evil.example"})):
            g = Stream(srv.port, hdrs)
            expect(g.status == 403 and rpc_error(g.body), f"GET with a {what}: 403", g.status)
        st, hd, text = request(srv.port, "POST", "/sse", ping)
        expect(st == 405 and hd.get("Allow") == "GET" and rpc_error(text), "POST /sse: 405", st)
        st, hd, text = request(srv.port, "GET", url)
        expect(st == 405 and hd.get("Allow") == "POST" and rpc_error(text), "GET /messages: 405",
               st)
        # Nothing of the above reached the session: it still answers.
        st, _, _ = request(srv.port, "POST", url, ping)
        expect(st == 202 and s.until_answer(9)[-1].get("result") == {}, "the session lives on")
        s.drop()
    finally:
        srv.stop()


def drop_mid_call():
    """A stream dropped while a call runs: the handler is cancelled with
    transport_closed and never completes, the session is gone."""
    srv = Server("--legacy-sse", "--trace")
    try:
        s, url, _ = open_legacy(srv.port)
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": 11, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 600000}}})
        expect(st == 202, "the slow call is accepted", st)
        expect(srv.wait_line("started 11"), "the handler started")
        s.drop()
        expect(srv.wait_line("cleanup 11 transport_closed"),
               "the handler ended with transport_closed", srv.lines[-5:])
        expect("cleanup 11 completed" not in srv.lines, "it never completed")
        # The session is over: its URL finds nothing (it left the table
        # before the handler's token fired).
        st, _, body = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 12,
                                                      "method": "ping"})
        expect(st == 404 and rpc_error(body), "the ended session is 404", st, body)
    finally:
        srv.stop()


class StalledStream:
    """A GET on the SSE path whose reader reads up to the answer of
    initialize, then stops reading (the socket stays open)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Accept: text/event-stream\r\n\r\n")
        self.buf = b""

    def read_until(self, needle):
        while needle not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Fail("the stream ended early")
            self.buf += chunk
        return self.buf


def slow_reader_cut():
    """A reader that stops reading while a call streams progress is cut
    off once it owes more than --stream-backlog: its session ends and the
    handler is cancelled (transport_closed), rather than answers being
    dropped from the stream."""
    srv = Server("--legacy-sse", "--trace", "--stream-backlog", "4096")
    try:
        s = StalledStream(srv.port)
        # The header ends in CRLF CRLF: the first blank LF line ends the
        # endpoint event.
        url = re.search(rb"data: (/messages\?sessionId=[0-9a-f]{32})\n", s.read_until(b"\n\n"))
        expect(url, "the endpoint event", s.buf[:300])
        url = url.group(1).decode()
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                       "clientInfo": {"name": "slow", "version": "1"}}})
        expect(st == 202, "initialize accepted", st)
        s.read_until(b'"id":1,"result"')
        st, _, _ = request(srv.port, "POST", url, {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "progress", "arguments": {"steps": 100000, "interval_ms": 0},
                       "_meta": {"progressToken": 2}}})
        expect(st == 202, "the streaming call is accepted", st)
        expect(srv.wait_line("started 2"), "the handler started")
        expect(srv.wait_line("cleanup 2 transport_closed"),
               "the handler ended with transport_closed", srv.lines[-5:])
        st, _, body = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 3,
                                                      "method": "ping"})
        expect(st == 404 and rpc_error(body), "the cut session is over", st, body)
        s.sock.close()
    finally:
        srv.stop()


def limits():
    """Past --max-sessions, then past --max-streams: 503, Retry-After and a
    JSON-RPC body; the first stream is untouched."""
    srv = Server("--legacy-sse", "--max-sessions", "1")
    try:
        s, url, _ = open_legacy(srv.port)
        g = Stream(srv.port)
        expect(g.status == 503 and g.headers.get("Retry-After") and rpc_error(g.body),
               "a second session past --max-sessions 1: 503", g.status, g.headers)
        st, _, _ = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        expect(st == 202 and s.until_answer(2), "the first session still answers")
        s.drop()
    finally:
        srv.stop()
    srv = Server("--legacy-sse", "--max-streams", "1")
    try:
        s, url, _ = open_legacy(srv.port)
        g = Stream(srv.port)
        err = rpc_error(g.body) if g.status != 200 else None
        expect(g.status == 503 and g.headers.get("Retry-After") and err and
               "streams" in err.get("message", ""),
               "a second stream past --max-streams 1: 503", g.status, g.headers)
        st, _, _ = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        expect(st == 202 and s.until_answer(2), "the first session still answers")
        s.drop()
    finally:
        srv.stop()


def bearer():
    """--bearer: the GET and every POST need the token."""
    srv = Server("--legacy-sse", "--bearer", "s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    try:
        g = Stream(srv.port)
        expect(g.status == 401 and g.headers.get("WWW-Authenticate") and rpc_error(g.body),
               "GET without the token: 401", g.status, g.headers)
        s, url, _ = open_legacy(srv.port, auth)
        st, hd, body = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 2,
                                                       "method": "ping"})
        expect(st == 401 and hd.get("WWW-Authenticate") and rpc_error(body),
               "POST without the token: 401", st, hd)
        st, _, _ = request(srv.port, "POST", url, {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                           auth)
        expect(st == 202 and s.until_answer(3)[-1].get("result") == {}, "with it: served", st)
        s.drop()
    finally:
        srv.stop()


# A real Ed25519 public key whose private half was thrown away: enough for
# the server to start as a protected resource, never to accept a token.
FIXED_JWKS = {"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "fixed", "use": "sig",
                        "x": "ECXBkBndr6p4ho6GYdzx8qPg8-SQUYd7ynV7s771u3E"}]}


def oauth_challenge():
    """As an OAuth 2.1 protected resource, the legacy GET and POST get the
    same 401 challenges as /mcp: no token, and a token that is no JWT."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(FIXED_JWKS, f)
    try:
        srv = Server("--legacy-sse", "--auth-resource", "http://127.0.0.1/mcp",
                     "--auth-jwks", f.name, "--auth-issuer", "https://as.example.test")
        try:
            for hdrs, want in (({}, "resource_metadata="),
                               ({"Authorization": "Bearer abc.def.ghi"}, "invalid_token")):
                g = Stream(srv.port, hdrs)
                www = g.headers.get("WWW-Authenticate", "")
                expect(g.status == 401 and want in www and rpc_error(g.body),
                       f"GET /sse ({hdrs or 'no token'}): 401 with {want}", g.status, www)
                st, hd, body = request(srv.port, "POST", "/messages?sessionId=" + "a" * 32,
                                       {"jsonrpc": "2.0", "id": 1, "method": "ping"}, hdrs)
                www = hd.get("WWW-Authenticate", "")
                expect(st == 401 and want in www and rpc_error(body),
                       f"POST /messages ({hdrs or 'no token'}): 401 with {want}", st, www)
        finally:
            srv.stop()
    finally:
        os.unlink(f.name)


def shutdown_ends_stream():
    """SIGTERM with a stream open: the server exits 0 and the stream ends
    cleanly (its last chunk, not a reset)."""
    srv = Server("--legacy-sse")
    s, url, _ = open_legacy(srv.port)
    srv.stop()
    while s.next() is not None:
        pass
    expect(s.clean_end, "the stream ended cleanly")


def many_streams_then_shutdown():
    """Eight clients at once, each with a slow call in flight; half hang up,
    then the server is stopped with the others open.  Every handler that
    started ends exactly once (transport_closed for those that hung up,
    shutdown for the rest), and the server exits 0 (a race test: run it
    in a loop and under ThreadSanitizer)."""
    srv = Server("--legacy-sse", "--trace", "--grace-ms", "3000", "--workers", "10")
    streams, errors = [None] * 8, []

    def client(k):
        try:
            s, url, _ = open_legacy(srv.port)
            st, _, _ = request(srv.port, "POST", url, {
                "jsonrpc": "2.0", "id": 100 + k, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"ms": 600000}}})
            expect(st == 202, "the call is accepted", st)
            streams[k] = s
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"client {k}: {e}")

    stopped = False
    try:
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT_S)
        expect(not errors, "every client got going", errors)
        for k in range(8):
            expect(srv.wait_line(f"started {100 + k}"), f"handler {100 + k} started")
        for k in range(0, 8, 2):
            streams[k].drop()
        for k in range(0, 8, 2):
            expect(srv.wait_line(f"cleanup {100 + k} transport_closed"),
                   f"handler {100 + k} ended with transport_closed", srv.lines[-5:])
        stopped = True
        srv.stop()
        for k in range(1, 8, 2):
            ends = [x for x in srv.lines if x and x.startswith(f"cleanup {100 + k} ")]
            expect(ends == [f"cleanup {100 + k} shutdown"], f"handler {100 + k}: one end, shutdown",
                   ends)
            while streams[k].next() is not None:
                pass
            expect(streams[k].clean_end, f"stream {k} ended cleanly")
        for k in range(0, 8, 2):
            ends = [x for x in srv.lines if x and x.startswith(f"cleanup {100 + k} ")]
            expect(len(ends) == 1, f"handler {100 + k}: one end", ends)
    finally:
        if not stopped:
            srv.stop()


class Legacy2024:
    """A 2024-11-05 session over the legacy transport whose every message
    from the server is kept, and, with MCP_SCHEMA_RECORD set, recorded
    for make check-schema with the method it answers."""

    def __init__(self, port):
        self.port = port
        self.s, self.url, init = open_legacy(port)
        self.n = 100
        self.msgs = [init]
        self.sent = {}
        self._record(init, "initialize")

    def _record(self, m, method):
        path = os.environ.get("MCP_SCHEMA_RECORD")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({"rev": "2024-11-05", "method": method, "msg": m}) + "\n")

    def call(self, method, params=None, meta=None):
        """The answer to one request; what came before it is kept too."""
        self.n += 1
        p = dict(params or {})
        if meta:
            p["_meta"] = meta
        st, _, body = request(self.port, "POST", self.url,
                              {"jsonrpc": "2.0", "id": self.n, "method": method, "params": p})
        expect(st == 202, f"{method} accepted", st, body)
        out = self.s.until_answer(self.n)
        for m in out:
            self._record(m, method if m.get("id") == self.n and "method" not in m else None)
        self.msgs += out
        expect("result" in out[-1], f"{method} answered with a result", out[-1])
        return out[-1]["result"]


def rev_2024_over_legacy_sse():
    """A 2024-11-05 client on the legacy transport gets only what that
    revision has (the walk of tests/stdio/test_rev2024.py over every
    message; make check-schema validates the recording against the
    2024-11-05 schema): no completions capability, no titles, annotations
    or output schemas, audio as a text note, no progress message."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stdio"))
    from test_rev2024 import later_fields  # noqa: E402 - shared walk of later members
    srv = Server("--legacy-sse")
    try:
        c = Legacy2024(srv.port)
        caps = c.msgs[0]["result"]["capabilities"]
        expect("completions" not in caps and "tools" in caps, "2024-11-05 capabilities", caps)
        tools = c.call("tools/list")["tools"]
        expect(all("annotations" not in t for t in tools), "no tool annotations", tools[:3])
        audio = c.call("tools/call", {"name": "test_audio_content", "arguments": {}})
        expect([b["type"] for b in audio["content"]] == ["text"] and
               "2024-11-05" in audio["content"][0]["text"], "audio as a text note", audio)
        c.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        c.call("tools/call", {"name": "progress", "arguments": {"steps": 2, "interval_ms": 1}},
               meta={"progressToken": "p"})
        c.call("prompts/list")
        c.call("resources/list")
        c.call("resources/templates/list")
        c.call("ping")
        prog = [m for m in c.msgs if m.get("method") == "notifications/progress"]
        expect(len(prog) == 2 and all("message" not in m["params"] for m in prog),
               "progress without a message", prog)
        bad = [f"{i}: {b}" for i, m in enumerate(c.msgs) for b in later_fields(m)]
        expect(not bad, "no later-revision member reaches the 2024-11-05 client", bad[:8])
        c.s.drop()
    finally:
        srv.stop()


def mcp_call_falls_back():
    """libmcp's own client against libmcp's own legacy server: mcp-call
    --http URL/sse finds no Streamable HTTP there (405), falls back to
    HTTP+SSE, negotiates 2024-11-05 (--era) and calls a tool; --transport
    streamable does not fall back."""
    mcp_call = os.environ.get("MCP_CALL")
    if not mcp_call:
        raise Fail("MCP_CALL is not set")
    srv = Server("--legacy-sse")
    try:
        url = f"http://127.0.0.1:{srv.port}/sse"
        r = subprocess.run([mcp_call, "--http", url, "--era", "2024-11-05", "--verbose", "call", "echo",
                            '{"text":"over the oldest transport"}'],
                           capture_output=True, timeout=WAIT_S * 2, check=False)
        out, err = r.stdout.decode(), r.stderr.decode()
        expect(r.returncode == 0 and "over the oldest transport" in out,
               "mcp-call falls back and calls echo", r.returncode, out, err[-600:])
        expect("HTTP+SSE" in err and "2024-11-05" in err,
               "--verbose names the transport and the revision", err[-600:])
        r = subprocess.run([mcp_call, "--http", url, "--transport", "streamable", "tools"],
                           capture_output=True, timeout=WAIT_S * 2, check=False)
        expect(r.returncode != 0 and "405" in r.stderr.decode(),
               "--transport streamable does not fall back", r.returncode, r.stderr.decode()[-600:])
    finally:
        srv.stop()


SCENARIOS = [off_by_default, endpoint_and_calls, notifications_on_stream, refusals,
             drop_mid_call, slow_reader_cut, limits, bearer, oauth_challenge,
             shutdown_ends_stream, many_streams_then_shutdown, rev_2024_over_legacy_sse,
             mcp_call_falls_back]

if __name__ == "__main__":
    sys.exit(tap.run(SCENARIOS, sys.argv[1:],
                     skip_reason=None if BIN else "MCP_EVERYTHING is not set"))
