#!/usr/bin/env python3
"""test_adv_http_scale.py - Streamable HTTP at scale, over real sockets
against the real mcp-everything --http: sessions and streams that hold no
thread, fairness between sessions on the shared pool, every limit reached
with its status, requests racing SIGTERM, a slow SSE reader, and the HTTP
defects each in its class (ambiguous framing, ids that cannot be echoed,
headers checked on every method, a dropped connection seen at once, a
peer-cancelled request's POST that ends).

Each scenario asserts what it sees (thread counts from /proc, answers,
statuses, trace lines), never how fast.  Loop counts scale down for
sanitizer builds (advlib.n_iter).

Usage: MCP_EVERYTHING=... test_adv_http_scale.py [--list] [NAME...]
"""
import http.client
import json
import os
import random
import resource
import selectors
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import SANITIZER, VALGRIND, Fail, T, n_iter, proc_status, run  # noqa: E402
from test_adv_soak_http import HttpServer  # noqa: E402

EXPECTED_FAILURES = {
}

LATEST = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"


def _raise_nofile():
    """Thousands of client sockets need descriptors (the server raises its
    own soft limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _init_body(rid=1, caps=None):
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": caps or {},
                       "clientInfo": {"name": "scale", "version": "1"}}}


def _call(rid, tool, args=None, meta=None):
    p = {"name": tool, "arguments": args or {}}
    if meta:
        p["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": p}


class Conn:
    """One keep-alive HTTP/1.1 connection (http.client)."""

    def __init__(self, port, timeout=30):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=T(timeout))

    def request(self, method, body=None, sid=None, accept="application/json", headers=None):
        h = {"Accept": accept}
        if body is not None:
            h["Content-Type"] = "application/json"
        if sid:
            h["Mcp-Session-Id"] = sid
        h.update(headers or {})
        data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
        self.c.request(method, "/mcp", data, h)
        r = self.c.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace")

    def close(self):
        self.c.close()


def _open_session(conn, caps=None):
    st, hd, body = conn.request("POST", _init_body(caps=caps))
    sid = hd.get("Mcp-Session-Id")
    if st != 200 or not sid:
        raise Fail(f"initialize answered {st} {body[:200]}")
    st, _, _ = conn.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    if st != 202:
        raise Fail(f"initialized answered {st}")
    return sid


def _raw(port, method, headers, body=b"", timeout=10):
    """A socket that has sent one request (not read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=T(timeout))
    if isinstance(body, str):
        body = body.encode()
    head = f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    if body and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
        head += f"Content-Length: {len(body)}\r\n"
    s.sendall(head.encode() + b"\r\n" + body)
    return s


def _read_head(s):
    """Reads a response's status line and headers: (status, headers, rest)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise Fail(f"connection closed before a response: {data[:200]!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hd = {}
    for ln in lines[1:]:
        k, v = ln.split(":", 1)
        hd[k.strip().lower()] = v.strip()
    return status, hd, rest


def _read_all(s, limit=1 << 26):
    """Reads until EOF (or a reset): (bytes, how it ended)."""
    out = b""
    try:
        while len(out) < limit:
            chunk = s.recv(65536)
            if not chunk:
                return out, "eof"
            out += chunk
    except ConnectionResetError:
        return out, "reset"
    except socket.timeout:
        return out, "timeout"
    return out, "limit"


def _sse_data(text):
    """The JSON messages of an SSE body (chunked framing tolerated)."""
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("data: {"):
            try:
                out.append(json.loads(ln[6:]))
            except ValueError:
                pass
    return out


def _wait_err(srv, text, timeout=10):
    """Waits for a stderr line (a trace line) that starts with `text`."""
    end = time.monotonic() + T(timeout)
    while time.monotonic() < end:
        if any(ln.startswith(text) for ln in list(srv.err)):
            return True
        time.sleep(0.01)
    return False


def _ended(data):
    return data.endswith(b"\r\n0\r\n\r\n") or data == b"0\r\n\r\n"


def _read_response_end(s, start=b"", limit=1 << 26):
    """Reads a streamed (chunked) response, `start` already read, until its
    last chunk or EOF: (bytes, "end" | "eof" | "reset" | "timeout")."""
    out = start
    if _ended(out):
        return out, "end"
    try:
        while len(out) < limit:
            chunk = s.recv(65536)
            if not chunk:
                return out, "eof"
            out += chunk
            if _ended(out):
                return out, "end"
    except ConnectionResetError:
        return out, "reset"
    except socket.timeout:
        return out, "timeout"
    return out, "limit"


def _threads(srv):
    return proc_status(srv.p.pid, "Threads")


def _stop_ok(srv, bound=10.0):
    st = srv.stop(bound=bound)
    if st["inflight_left"] or st["pending_left"] or st["abandoned"]:
        raise Fail(f"stats at exit {st}")
    return st


# ---- sessions and streams that hold no thread ------------------------------------

def idle_sessions_keep_threads_flat():
    """5,000 sessions opened and left idle: the thread count does not move
    (today's transport had two threads per session), every session is
    served, and a sample of them still answers."""
    n = n_iter(5000, 200)
    srv = HttpServer("--max-sessions", str(n + 10))
    conns = [Conn(srv.port) for _ in range(4)]
    try:
        # The count after the first sessions is the baseline: a runtime may
        # start a thread of its own once (ThreadSanitizer does), and what
        # matters is that the count does not move with the number of
        # sessions.
        first = n // 10
        sids = [_open_session(conns[i % 4]) for i in range(first)]
        base = _threads(srv)
        rss0 = proc_status(srv.p.pid, "VmRSS")
        sids += [_open_session(conns[i % 4]) for i in range(first, n)]
        if len(set(sids)) != n:
            raise Fail("session ids repeat")
        after = _threads(srv)
        rss1 = proc_status(srv.p.pid, "VmRSS")
        print(f"#   {n} idle sessions: threads {base} -> {after}, RSS {rss0} -> {rss1} kB "
              f"({(rss1 - rss0) * 1024 // (n - first)} B each)", flush=True)
        if after != base:
            raise Fail(f"threads grew with sessions: {base} -> {after}")
        for k, sid in enumerate(random.sample(sids, 20)):
            st, _, body = conns[0].request("POST", {"jsonrpc": "2.0", "id": 1000 + k,
                                                    "method": "ping"}, sid)
            if st != 200 or json.loads(body).get("id") != 1000 + k:
                raise Fail(f"an idle session answered {st} {body[:200]}")
        _stop_ok(srv)
    finally:
        for c in conns:
            c.close()
        srv.kill()


def sse_streams_broadcast_then_delete():
    """2,000 sessions each holding a GET stream: no thread per stream; a
    tool added (test_trigger_tool_change) reaches every stream as
    notifications/tools/list_changed; DELETE of every session ends every
    stream; threads are back where they started."""
    n = n_iter(2000, 100)
    if _raise_nofile() < n + 100:
        raise Fail("RLIMIT_NOFILE too low for the scenario")
    srv = HttpServer("--max-sessions", str(n + 10), "--max-streams", str(n + 10),
                     "--max-connections", str(n + 100))
    conn = Conn(srv.port)
    socks = []
    try:
        sids = [_open_session(conn) for _ in range(n)]

        def open_streams(part):
            for sid in part:
                s = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid})
                socks.append(s)
                st, hd, rest = _read_head(s)
                if st != 200 or hd.get("content-type") != "text/event-stream":
                    raise Fail(f"GET stream answered {st} {hd}")
        # As above: the baseline once the first streams are open.
        open_streams(sids[:n // 10])
        base = _threads(srv)
        open_streams(sids[n // 10:])
        held = _threads(srv)
        print(f"#   {n} GET streams: threads {base} -> {held}", flush=True)
        if held != base:
            raise Fail(f"threads grew with streams: {base} -> {held}")
        st, _, body = conn.request("POST", _call(7, "test_trigger_tool_change"), sids[0])
        if st != 200:
            raise Fail(f"test_trigger_tool_change answered {st} {body[:200]}")
        sel = selectors.DefaultSelector()
        got = {}
        for i, s in enumerate(socks):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, i)
            got[i] = b""
        todo = set(range(n))
        end = time.monotonic() + T(60)
        while todo and time.monotonic() < end:
            for key, _ in sel.select(timeout=1):
                i = key.data
                try:
                    got[i] += key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if b"notifications/tools/list_changed" in got[i]:
                    todo.discard(i)
                    sel.unregister(key.fileobj)
        if todo:
            raise Fail(f"{len(todo)} of {n} streams did not get list_changed")
        for sid in sids:
            st, _, _ = conn.request("DELETE", sid=sid)
            if st != 200:
                raise Fail(f"DELETE answered {st}")
        for i, s in enumerate(socks):
            s.setblocking(True)
            s.settimeout(T(10))
            _, how = _read_response_end(s, got[i])
            if how not in ("end", "eof", "reset"):
                raise Fail(f"stream {i} did not end after DELETE ({how})")
        after = srv.wait_back({"fds": 10 ** 9, "threads": base}, timeout=10)
        if after["threads"] != base:
            raise Fail(f"threads {base} -> {after['threads']}")
        _stop_ok(srv)
    finally:
        for s in socks:
            s.close()
        conn.close()
        srv.kill()


def slow_sse_reader_is_cut_off():
    """A client that stops reading its SSE stream holds no worker (the
    handler finishes), costs bounded memory, and is disconnected once it
    owes more than the stream backlog; it resumes with Last-Event-ID and
    gets the answer."""
    srv = HttpServer("--trace", "--stream-backlog", "65536")
    conn = Conn(srv.port)
    try:
        sid = _open_session(conn)
        rss0 = proc_status(srv.p.pid, "VmRSS")
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(T(30))
        s.connect(("127.0.0.1", srv.port))
        steps = 30000
        body = json.dumps(_call(5, "progress", {"steps": steps, "interval_ms": 0},
                                {"progressToken": "p"})).encode()
        s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {sid}\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        # The handler ends although nobody reads: no worker is held.
        if not _wait_err(srv, "cleanup 5 completed", timeout=60):
            raise Fail("the progress handler did not finish while its reader stalled")
        st, _, body2 = conn.request("POST", _call(6, "echo", {"text": "x"}), sid)
        if st != 200 or json.loads(body2)["id"] != 6:
            raise Fail(f"the session stopped answering: {st} {body2[:100]}")
        rss1 = proc_status(srv.p.pid, "VmRSS")
        produced = steps * 120
        print(f"#   {steps} progress events (~{produced >> 20} MiB) to a stalled reader: "
              f"RSS {rss0} -> {rss1} kB", flush=True)
        if SANITIZER == "no" and not VALGRIND and (rss1 - rss0) * 1024 > produced // 2:
            raise Fail(f"memory not bounded: RSS grew {rss1 - rss0} kB")
        data, how = _read_all(s)
        s.close()
        text = data.decode("utf-8", "replace")
        if '"id":5' in text:
            raise Fail("the stalled reader was not cut off before the answer")
        ids = [ln[4:].strip() for ln in text.splitlines() if ln.startswith("id: ")]
        if not ids:
            raise Fail(f"no event reached the reader before the cut ({how})")
        rs = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                                    "Last-Event-ID": ids[-1]})
        st, _, rest = _read_head(rs)
        more, _ = _read_response_end(rs, rest)
        rs.close()
        msgs = _sse_data(more.decode("utf-8", "replace"))
        if st != 200 or not msgs or msgs[-1].get("id") != 5 or "result" not in msgs[-1]:
            raise Fail(f"the resumption did not end with the answer: {st} {msgs[-1:]}")
        _stop_ok(srv)
    finally:
        conn.close()
        srv.kill()


# ---- fairness and limits ------------------------------------------------------

def one_session_cannot_starve_another():
    """Session A sends 150 long calls at once; with 4 workers it holds at
    most 3 (the per-session cap), 100 wait in it and the rest get 429 with
    Retry-After; session B's call is answered meanwhile.  DELETE of A ends
    every one of its POSTs."""
    if _raise_nofile() < 400:
        raise Fail("RLIMIT_NOFILE too low for the scenario")
    srv = HttpServer("--trace", "--workers", "4", "--session-queue", "100",
                     "--grace-ms", "60000")
    conn = Conn(srv.port)
    socks = []
    try:
        sid_a = _open_session(conn)
        sid_b = _open_session(conn)
        n = 150
        for i in range(n):
            body = json.dumps(_call(f"a{i}", "sleep", {"ms": 600000}))
            socks.append(_raw(srv.port, "POST", {"Content-Type": "application/json",
                                                  "Accept": "application/json",
                                                  "Mcp-Session-Id": sid_a}, body))
        # Refusals come at once; the rest wait for their answer.
        busy = 0
        end = time.monotonic() + T(30)
        sel = selectors.DefaultSelector()
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        waiting = list(socks)
        while time.monotonic() < end and busy < n - 103:
            for key, _ in sel.select(timeout=0.5):
                s = key.fileobj
                sel.unregister(s)
                st, hd, rest = _read_head(s)
                waiting.remove(s)
                msg = json.loads(rest.decode() or "{}")
                if st != 429 or hd.get("retry-after") != "1" or \
                        msg.get("error", {}).get("code") != -32050:
                    raise Fail(f"a call past the session's queue got {st} {hd} {msg}")
                busy += 1
        sel.close()
        # The refusals can all be in before the third call under the cap
        # has started, or before its trace line was read: wait for it.
        end = time.monotonic() + T(30)
        while time.monotonic() < end and \
                sum(1 for ln in list(srv.err) if ln.startswith('started "a')) < 3:
            time.sleep(0.01)
        started = [ln for ln in srv.err if ln.startswith('started "a')]
        if busy != n - 103 or len(started) != 3:
            raise Fail(f"cap: {len(started)} started (want 3), {busy} refused (want {n - 103})")
        st, _, body = conn.request("POST", _call("b1", "echo", {"text": "b"}), sid_b)
        if st != 200 or json.loads(body).get("id") != "b1":
            raise Fail(f"session B was starved: {st} {body[:200]}")
        started = [ln for ln in srv.err if ln.startswith('started "a')]
        if len(started) != 3:
            raise Fail(f"A's calls ran past the cap: {len(started)}")
        st, _, _ = conn.request("DELETE", sid=sid_a)
        if st != 200:
            raise Fail(f"DELETE of A answered {st}")
        for s in waiting:
            s.settimeout(T(20))
            st, hd, rest = _read_head(s)
            if st != 404:
                raise Fail(f"a POST of the deleted session got {st}, not 404")
        _stop_ok(srv)
    finally:
        for s in socks:
            s.close()
        conn.close()
        srv.kill()


def nonblocking_tool_that_blocks_stalls_no_one_twice():
    """Issue 29: a tool declared non-blocking (mcp-everything --nonblocking)
    runs on the HTTP thread that read its call.  One that breaks the
    promise (spin, 300 ms) is answered, reported by the trace hook and
    counted; its later calls run on a worker, so while one of them spins
    for 5 s the other session's calls of an honest non-blocking tool,
    and its pings, are answered.  Stateless calls of it run inline too."""
    srv = HttpServer("--trace", "--workers", "2", "--nonblocking", "spin",
                     "--nonblocking", "echo")
    conn = Conn(srv.port)
    stuck = None
    try:
        sid_a = _open_session(conn)
        sid_b = _open_session(conn)
        st, _, body = conn.request("POST", _call("a1", "spin", {"ms": 300}), sid_a)
        if st != 200 or "result" not in json.loads(body):
            raise Fail(f"the first spin answered {st} {body[:200]}")
        if not _wait_err(srv, 'nonblocking_overran "a1" spin'):
            raise Fail(f"no nonblocking_overran trace: {srv.err[-5:]}")
        stuck = _raw(srv.port, "POST", {"Content-Type": "application/json",
                                         "Accept": "application/json",
                                         "Mcp-Session-Id": sid_a},
                     json.dumps(_call("a2", "spin", {"ms": int(T(5) * 1000)})))
        end = time.monotonic() + T(10)
        while time.monotonic() < end and not any('started "a2"' in ln for ln in srv.err):
            time.sleep(0.01)
        for i in range(20):
            st, _, body = conn.request("POST", _call(f"b{i}", "echo", {"text": str(i)}), sid_b)
            if st != 200 or json.loads(body)["result"]["content"][0]["text"] != str(i):
                raise Fail(f"session B's echo answered {st} {body[:200]}")
            st, _, body = conn.request("POST", {"jsonrpc": "2.0", "id": f"p{i}",
                                                "method": "ping"}, sid_b)
            if st != 200 or json.loads(body).get("id") != f"p{i}":
                raise Fail(f"session B's ping answered {st} {body[:200]}")
        stuck.setblocking(False)
        try:
            early = stuck.recv(1)
        except BlockingIOError:
            early = None
        if early is not None:
            raise Fail("the 5 s spin answered while B was served (it never ran)")
        stuck.setblocking(True)
        stuck.settimeout(T(20))
        st, _, rest = _read_head(stuck)
        if st != 200:
            raise Fail(f"the 5 s spin answered {st} {rest[:200]}")
        sl = Conn(srv.port)
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "scale", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}
        st, _, body = sl.request("POST", _call("s1", "echo", {"text": "sl"}, meta),
                                 headers={"MCP-Protocol-Version": "2026-07-28",
                                          "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
        sl.close()
        if st != 200 or "result" not in json.loads(body):
            raise Fail(f"a stateless echo answered {st} {body[:200]}")
        stats = srv.stop(bound=30)
        if stats["ran_here_overran"] != 1 or stats["ran_here_refused"] != 0 or \
                stats["ran_here"] != 22:
            raise Fail(f"ran_here counters: {stats}")
        if stats["inflight_left"] or stats["pending_left"]:
            raise Fail(f"stats at exit {stats}")
    finally:
        if stuck:
            stuck.close()
        conn.close()
        srv.kill()


def limits_each_with_status():
    """Connections, sessions and streams past their limits get 503 with
    Retry-After and a JSON-RPC body; nesting past the depth limit is 400
    -32600 naming the limit (the limit stdio applies too); an unknown
    session is 404; a body over the size limit 413.  The server goes on
    serving the others."""
    srv = HttpServer("--max-connections", "8", "--max-sessions", "3", "--max-streams", "2",
                     "--max-message", "65536")
    conns = []
    try:
        c = Conn(srv.port)
        conns.append(c)
        sids = [_open_session(c) for _ in range(3)]
        st, hd, body = c.request("POST", _init_body())
        if st != 503 or hd.get("Retry-After") != "1" or \
                json.loads(body)["error"]["code"] != -32050:
            raise Fail(f"the 4th session got {st} {hd} {body[:200]}")
        gets = []
        for sid in sids[:2]:
            s = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid})
            st, _, _ = _read_head(s)
            gets.append(s)
            if st != 200:
                raise Fail(f"a GET within the limit got {st}")
        s = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sids[2]})
        st, hd, _ = _read_head(s)
        s.close()
        if st != 503 or hd.get("retry-after") != "1":
            raise Fail(f"the 3rd GET stream got {st} {hd}")
        for s in gets:
            s.close()
        c.close()
        conns.remove(c)
        c = Conn(srv.port)
        conns.append(c)
        deep = {"v": 1}
        for _ in range(200):
            deep = {"v": deep}
        st, _, body = c.request("POST", _call(9, "echo", {"text": "x", "deep": deep}), sids[0])
        err = json.loads(body).get("error", {})
        if st != 400 or err.get("code") != -32600 or "128" not in err.get("message", ""):
            raise Fail(f"nesting past the limit got {st} {body[:200]}")
        deep = {"v": 1}
        for _ in range(60):
            deep = {"v": deep}
        st, _, body = c.request("POST", _call(10, "echo", {"text": "x", "deep": deep}), sids[0])
        if st != 200 or json.loads(body).get("id") != 10:
            raise Fail(f"60 levels (within the limit) got {st} {body[:200]}")
        st, _, _ = c.request("POST", {"jsonrpc": "2.0", "id": 11, "method": "ping"}, "f" * 32)
        if st != 404:
            raise Fail(f"an unknown session got {st}")
        st, _, _ = c.request("POST", json.dumps({"x": "y" * 70000}), sids[0])
        if st != 413:
            raise Fail(f"a body over the limit got {st}")
        c = Conn(srv.port)
        conns.append(c)
        st, _, body = c.request("POST", {"jsonrpc": "2.0", "id": 12, "method": "ping"}, sids[1])
        if st != 200:
            raise Fail(f"the server stopped serving after its limits: {st} {body}")
        _stop_ok(srv)
    finally:
        for c in conns:
            c.close()
        srv.kill()
    _connections_past_the_limit()


def _connections_past_the_limit():
    """8 calls in flight fill --max-connections 8; the next connection is
    told 503 with Retry-After and Connection: close.  (An idle connection
    would not be: past the limit the one idle or sending its header longest
    makes room.)  Each call reports progress at once, so its SSE head is
    the evidence that the server holds it: a fixed sleep was not, under a
    sanitizer, where a call whose header the server had not yet read was
    the one to make room.  This server has no stream limit, since each
    call's SSE response is a stream."""
    srv = HttpServer("--max-connections", "8")
    calls = []
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        c.close()
        steps = max(1, int(T(4) * 1000) // 20)
        for i in range(8):
            e = _raw(srv.port, "POST", {"Content-Type": "application/json",
                                        "Accept": ACCEPT_BOTH, "Mcp-Session-Id": sid},
                     json.dumps(_call(100 + i, "progress", {"steps": steps, "interval_ms": 20},
                                      {"progressToken": 100 + i})))
            calls.append(e)
            st, hd, _ = _read_head(e)
            if st != 200 or not hd.get("content-type", "").startswith("text/event-stream"):
                raise Fail(f"call {i + 1} of 8 (within the connection limit) got {st} {hd}")
        s = _raw(srv.port, "POST", {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                                    "Mcp-Session-Id": sid},
                 json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        st, hd, _ = _read_head(s)
        _read_all(s)
        s.close()
        if st != 503 or hd.get("retry-after") != "1" or hd.get("connection") != "close":
            raise Fail(f"a connection past the limit got {st} {hd}")
        for e in calls:
            e.close()
        calls = []
        # The server sees the closed calls and serves again.
        deadline = time.monotonic() + T(10)
        while True:
            c = Conn(srv.port)
            try:
                st, _, _ = c.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, sid)
            except OSError:
                st = None
            finally:
                c.close()
            if st == 200:
                break
            if time.monotonic() > deadline:
                raise Fail(f"after the calls closed, a ping still got {st}")
            time.sleep(0.05)
        _stop_ok(srv)
    finally:
        for e in calls:
            e.close()
        srv.kill()


def stateless_requests_race_sigterm():
    """1,000 stateless requests from 16 clients, SIGTERM in the middle:
    every request the server read (its handler started) gets its answer or
    503 with a JSON-RPC body; the rest are answered 503 the same way, or
    refused at the socket once the daemon stops; none is left hanging; the process
    exits 0 within its grace."""
    n = n_iter(1000, 100)
    srv = HttpServer("--stateless", "--grace-ms", "2000", "--trace")
    outcome = {}
    lock = threading.Lock()
    sent = [0]
    term_at = n // 3

    def client(k):
        for i in range(k, n, 16):
            with lock:
                sent[0] += 1
                if sent[0] == term_at:
                    srv.p.send_signal(signal.SIGTERM)
            tool = ("sleep", {"ms": 50}) if i % 5 == 0 else ("echo", {"text": f"r{i}"})
            try:
                c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=T(20))
                c.request("POST", "/mcp", json.dumps(_call(i, *tool)),
                          {"Content-Type": "application/json", "Accept": "application/json",
                           "MCP-Protocol-Version": LATEST, "Connection": "close"})
                r = c.getresponse()
                body = r.read().decode()
                c.close()
            except ConnectionRefusedError:
                outcome[i] = "refused"
                continue
            except (OSError, http.client.HTTPException) as e:
                outcome[i] = f"cut: {e!r}"
                continue
            try:
                msg = json.loads(body)
            except ValueError:
                msg = {}
            if r.status == 200 and msg.get("id") == i and "result" in msg:
                outcome[i] = "answered"
            elif r.status == 503 and msg.get("error", {}).get("code") in (-32050, -32000):
                outcome[i] = "busy"
            else:
                outcome[i] = f"bad: {r.status} {body[:120]}"

    threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(T(60))
        if any(t.is_alive() for t in threads):
            raise Fail("a request was left hanging")
        code = srv.p.wait(timeout=T(10))
        srv.t.join(5)
        ran = {int(ln.split()[1]) for ln in srv.err if ln.startswith("started ")}
        kinds = {}
        for v in outcome.values():
            kinds[v.split(":")[0]] = kinds.get(v.split(":")[0], 0) + 1
        print(f"#   {n} stateless requests around SIGTERM: {kinds}", flush=True)
        wrong = [f"{i}: {v}" for i, v in outcome.items()
                 if v.startswith("bad") or (i in ran and v not in ("answered", "busy"))]
        if wrong:
            raise Fail(f"{len(wrong)} requests ended badly: {wrong[:5]}")
        if len(outcome) != n or kinds.get("answered", 0) < term_at - 16:
            raise Fail(f"outcomes {kinds} for {n} requests")
        if code != 0:
            raise Fail(f"exit status {code}")
    finally:
        srv.kill()


# ---- the HTTP defects, each in its class -----------------------------------------

def ambiguous_framing_refused():
    """Two Content-Length headers, or Content-Length with Transfer-Encoding:
    400 and the connection closed (RFC 9112 section 6.3), and the handler
    never runs."""
    srv = HttpServer("--trace")
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        body = json.dumps(_call(1, "echo", {"text": "smuggled"}))
        for name, headers in (
                ("two Content-Length", {"Content-Length": str(len(body)),
                                        "Content-length": str(len(body))}),
                ("Content-Length and Transfer-Encoding",
                 {"Content-Length": str(len(body)), "Transfer-Encoding": "chunked"})):
            h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                 "Mcp-Session-Id": sid}
            h.update(headers)
            payload = body if "Transfer-Encoding" not in headers else \
                f"{len(body):x}\r\n{body}\r\n0\r\n\r\n"
            s = _raw(srv.port, "POST", h, payload)
            st, hd, _ = _read_head(s)
            _, how = _read_all(s)
            s.close()
            if st != 400 or hd.get("connection") != "close" or how not in ("eof", "reset"):
                raise Fail(f"{name}: {st} {hd} ({how})")
        if any(ln.startswith("started 1") for ln in srv.err):
            raise Fail("a request with an ambiguous length reached its handler")
        c.close()
        _stop_ok(srv)
    finally:
        srv.kill()


def unechoable_ids_get_an_answer():
    """A request id the engine cannot echo (an integer beyond 64 bits, a
    lone surrogate escape) gets 400 with a JSON-RPC error, in a session and
    without one; the POST never hangs."""
    srv = HttpServer()
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        for raw_id in ("18446744073709551616", '"\\ud800"'):
            body = '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % raw_id
            for s_id in (sid, None):
                st, _, resp = c.request("POST", body, s_id, accept=ACCEPT_BOTH)
                msg = json.loads(resp)
                if st != 400 or msg.get("error", {}).get("code") != -32600 or msg["id"] is not None:
                    raise Fail(f"id {raw_id} ({'session' if s_id else 'none'}): {st} {resp[:200]}")
        c.close()
        _stop_ok(srv)
    finally:
        srv.kill()


def headers_checked_on_every_method():
    """An unsupported MCP-Protocol-Version is 400 on GET and DELETE too; a
    POST whose Accept names neither JSON nor SSE is 406."""
    srv = HttpServer()
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        for method in ("GET", "DELETE"):
            st, _, body = c.request(method, None, sid, accept="text/event-stream",
                                    headers={"MCP-Protocol-Version": "1999-01-01"})
            if st != 400 or json.loads(body)["error"]["code"] != -32600:
                raise Fail(f"{method} with a bad MCP-Protocol-Version: {st} {body[:200]}")
        st, _, body = c.request("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid,
                                accept="text/html")
        if st != 406:
            raise Fail(f"Accept: text/html got {st}")
        st, _, body = c.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, sid)
        if st != 200:
            raise Fail(f"the session stopped answering: {st}")
        c.close()
        _stop_ok(srv)
    finally:
        srv.kill()


def dropped_connection_seen_at_once():
    """A client whose GET stream dropped while quiet gets its next GET
    (not 409 until the server next writes); a POST stream dropped while
    its handler is quiet can be resumed with Last-Event-ID at once."""
    srv = HttpServer("--trace")
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        s = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid})
        if _read_head(s)[0] != 200:
            raise Fail("first GET refused")
        s.close()
        end = time.monotonic() + T(5)
        while True:
            s = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid})
            st = _read_head(s)[0]
            s.close()
            if st == 200:
                break
            if st != 409 or time.monotonic() > end:
                raise Fail(f"a GET after the stream dropped got {st}")
            time.sleep(0.02)
        body = json.dumps(_call(7, "sleep", {"ms": 600000}))
        s = _raw(srv.port, "POST", {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                                    "Mcp-Session-Id": sid}, body)
        st, _, rest = _read_head(s)
        while b"id: " not in rest:
            rest += s.recv(4096)
        event = rest.decode().split("id: ", 1)[1].split("\n", 1)[0].strip()
        if not _wait_err(srv, "started 7"):
            raise Fail("sleep did not start")
        s.close()
        end = time.monotonic() + T(5)
        while True:
            r = _raw(srv.port, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                                       "Last-Event-ID": event})
            st = _read_head(r)[0]
            r.close()
            if st == 200:
                break
            if st != 409 or time.monotonic() > end:
                raise Fail(f"resuming a quiet POST stream got {st}")
            time.sleep(0.02)
        c.close()
        _stop_ok(srv)
    finally:
        srv.kill()


def peer_cancel_ends_the_post():
    """A request the client cancels: its POST (SSE or JSON) ends without an
    answer, its id can be used again at once, and the session can then
    idle-expire (its requests no longer keep it busy)."""
    srv = HttpServer("--trace", "--session-idle-ms", "1000")
    try:
        c = Conn(srv.port)
        sid = _open_session(c)
        for k, accept in enumerate((ACCEPT_BOTH, "application/json")):
            rid = 20 + k
            body = json.dumps(_call(rid, "sleep", {"ms": 600000}))
            s = _raw(srv.port, "POST", {"Content-Type": "application/json", "Accept": accept,
                                        "Mcp-Session-Id": sid}, body)
            if not _wait_err(srv, f"started {rid}"):
                raise Fail("sleep did not start")
            st, _, _ = c.request("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                          "params": {"requestId": rid}}, sid)
            if st != 202:
                raise Fail(f"the cancel got {st}")
            s.settimeout(T(10))
            st, hd, rest = _read_head(s)
            more, how = (b"", "len") if "content-length" in hd else _read_response_end(s, rest)
            s.close()
            if how not in ("len", "end"):
                raise Fail(f"the cancelled request's POST did not end ({how})")
            if f'"id":{rid}'.encode() in rest + more:
                raise Fail(f"a cancelled request was answered ({accept})")
            if accept == "application/json" and st != 202:
                raise Fail(f"a cancelled JSON POST ended with {st}")
            if not _wait_err(srv, f"cleanup {rid} peer_cancelled"):
                raise Fail("the handler did not see peer_cancelled")
            st, _, body = c.request("POST", {"jsonrpc": "2.0", "id": rid, "method": "ping"}, sid)
            if st != 200 or "result" not in json.loads(body):
                raise Fail(f"the id of a cancelled request is still in flight: {st} {body}")
        c.close()
        c = Conn(srv.port)
        end = time.monotonic() + T(10)
        while True:
            time.sleep(0.25)
            st, _, _ = c.request("POST", {"jsonrpc": "2.0", "id": 99, "method": "ping"}, sid)
            if st == 404:
                break
            if time.monotonic() > end:
                raise Fail("the session never idle-expired after its requests were cancelled")
            c.close()
            c = Conn(srv.port)
            time.sleep(1.5)
        c.close()
        _stop_ok(srv)
    finally:
        srv.kill()


SCENARIOS = [idle_sessions_keep_threads_flat, sse_streams_broadcast_then_delete,
             slow_sse_reader_is_cut_off, one_session_cannot_starve_another,
             limits_each_with_status, stateless_requests_race_sigterm,
             ambiguous_framing_refused, unechoable_ids_get_an_answer,
             headers_checked_on_every_method, dropped_connection_seen_at_once,
             peer_cancel_ends_the_post, nonblocking_tool_that_blocks_stalls_no_one_twice]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
