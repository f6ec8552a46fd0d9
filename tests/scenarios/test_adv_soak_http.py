#!/usr/bin/env python3
"""test_adv_soak_http.py - lifecycle soak over Streamable HTTP: one
mcp-everything --http process serves 1,000 sessions one after another
(initialize, initialized, a tool call, DELETE; some over fresh TCP
connections, some answered on SSE, some with a call cut off by the
DELETE), then sessions abandoned in every way a client can abandon them
(never deleted, a request in flight whose client disconnected, a GET
stream dropped).  Open descriptors (/proc/PID/fd), threads
(/proc/PID/status Threads) and RSS must come back to the baseline after
the DELETEd sessions; the abandoned ones must not stop an orderly exit
(SIGTERM: status 0, empty tables, no sanitizer report).

With a fixture that offers --session-idle-ms (feature-detected from
--help), abandoned sessions must also expire and give their threads and
descriptors back.

Usage: MCP_EVERYTHING=... test_adv_soak_http.py [--list] [NAME...]
(ADV_SOAK_SESSIONS overrides the 1,000.)
"""
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import (BIN, sanitizer_lines, SANITIZER, VALGRIND, Fail, T, fd_count, n_iter,  # noqa: E402
                    proc_status, run)
import test_adv_load  # noqa: E402  (malloc_trim through gdb)

EXPECTED_FAILURES = {}

LATEST = "2025-11-25"


class HttpServer:
    """mcp-everything --http on a free port, stderr collected."""

    def __init__(self, *args):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        # make check-cluster adds "--store redis://..." to every server.
        extra = shlex.split(os.environ.get("MCP_EVERYTHING_ARGS", ""))
        self.p = subprocess.Popen([BIN, "--http", f"127.0.0.1:{self.port}", "--stats", *args, *extra],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        self.err = []
        self.t = threading.Thread(target=self._read_err, daemon=True)
        self.t.start()
        end = time.monotonic() + T(10)
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.p.kill()
        raise Fail("the HTTP server did not start listening")

    def _read_err(self):
        for raw in self.p.stderr:
            self.err.append(raw.decode(errors="replace").rstrip("\n"))

    def sample(self):
        pid = self.p.pid
        return {"fds": fd_count(pid), "threads": proc_status(pid, "Threads"),
                "rss": proc_status(pid, "VmRSS")}

    def settled_sample(self, keys=("fds", "threads"), timeout=10):
        """A sample taken once the counts have stayed the same for 0.5 s
        (ended sessions are reaped every 250 ms), or the lowest seen
        within the time bound."""
        end = time.monotonic() + T(timeout)
        last, same, low = self.sample(), 0, None
        while time.monotonic() < end and same < 5:
            time.sleep(0.1)
            cur = self.sample()
            same = same + 1 if all(cur[k] == last[k] for k in keys) else 0
            if low is None or all(cur[k] <= low[k] for k in keys):
                low = cur
            last = cur
        return last if same >= 5 else low

    def wait_back(self, base, keys=("fds", "threads"), timeout=10):
        """Waits until the sampled counts are back at `base`."""
        end = time.monotonic() + T(timeout)
        cur = self.sample()
        while time.monotonic() < end:
            cur = self.sample()
            if all(cur[k] <= base[k] for k in keys):
                return cur
            time.sleep(0.05)
        return cur

    def stop(self, bound=3.0):
        self.p.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            code = self.p.wait(T(max(10, bound * 3)))
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Fail("the HTTP server did not exit after SIGTERM")
        took = time.monotonic() - t0
        self.t.join(5)
        bad = sanitizer_lines(self.err)
        if bad:
            raise Fail(f"sanitizer report: {bad[0]}\n" + "\n".join(self.err[-30:]))
        if code != 0:
            raise Fail(f"exit status {code}; stderr: {self.err[-5:]}")
        if took > T(bound):
            raise Fail(f"SIGTERM to exit took {took:.2f} s")
        st = [ln for ln in self.err if ln.startswith("stats ")]
        if not st:
            raise Fail("no stats line")
        return json.loads(st[-1][6:])

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Client:
    """A keep-alive HTTP client for one server (reconnects when needed)."""

    def __init__(self, port):
        self.port = port
        self.c = None

    def request(self, method, body=None, sid=None, accept="application/json", fresh=False,
                timeout=30):
        if fresh or self.c is None:
            if self.c:
                self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=T(timeout))
        h = {"Accept": accept}
        if body is not None:
            h["Content-Type"] = "application/json"
        if sid:
            h["Mcp-Session-Id"] = sid
        data = json.dumps(body) if body is not None else None
        try:
            self.c.request(method, "/mcp", data, h)
            r = self.c.getresponse()
            text = r.read().decode()
        except (ConnectionError, http.client.HTTPException, OSError):
            self.c.close()
            self.c = None
            raise
        return r.status, dict(r.getheaders()), text

    def close(self):
        if self.c:
            self.c.close()
            self.c = None


def _init(cl, fresh=False):
    st, hd, body = cl.request("POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                       "params": {"protocolVersion": LATEST, "capabilities": {},
                                                  "clientInfo": {"name": "soak", "version": "1"}}},
                              fresh=fresh)
    sid = hd.get("Mcp-Session-Id") or hd.get("mcp-session-id")
    if st != 200 or not sid:
        raise Fail(f"initialize: {st} {hd} {body[:200]}")
    st, _, _ = cl.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    if st != 202:
        raise Fail(f"initialized: {st}")
    return sid


def _open_get(port, sid):
    """A socket that has sent a GET for `sid`'s stream (not read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=T(10))
    s.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Accept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\r\n").encode())
    return s


def _sse_messages(text):
    return [json.loads(ln[6:]) for ln in text.splitlines()
            if ln.startswith("data: ") and ln[6:].strip()]


def _cycle(cl, i):
    """One session's life: initialize, initialized, a call, DELETE."""
    fresh = i % 7 == 0
    sid = _init(cl, fresh=fresh)
    call = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"soak {i}"}}}
    if i % 10 == 3:
        st, hd, body = cl.request("POST", call, sid, accept="application/json, text/event-stream")
        msgs = _sse_messages(body)
        ok = st == 200 and msgs and msgs[-1].get("id") == i + 1
    else:
        st, hd, body = cl.request("POST", call, sid)
        ok = st == 200 and json.loads(body).get("id") == i + 1
    if not ok:
        raise Fail(f"session {i}: call answered {st} {body[:200]}")
    if i % 13 == 5:
        # A call still running when the session is deleted: its POST ends
        # (no answer), the handler is cancelled.
        cut = Client(cl.port)
        res = {}

        def pending():
            try:
                res["r"] = cut.request("POST", {"jsonrpc": "2.0", "id": "cut", "method": "tools/call",
                                                "params": {"name": "sleep",
                                                           "arguments": {"ms": 600000}}}, sid)
            except (OSError, http.client.HTTPException) as e:
                res["r"] = (0, {}, str(e))
        t = threading.Thread(target=pending, daemon=True)
        t.start()
        time.sleep(0.02)
        st, _, _ = cl.request("DELETE", sid=sid)
        t.join(T(10))
        cut.close()
        if t.is_alive():
            raise Fail(f"session {i}: the POST cut off by DELETE never ended")
        if res["r"][0] == 200 and '"result"' in res["r"][2]:
            raise Fail(f"session {i}: a call cut off by DELETE was answered: {res['r']}")
    else:
        st, _, _ = cl.request("DELETE", sid=sid)
    if st != 200:
        raise Fail(f"session {i}: DELETE {st}")
    st, _, _ = cl.request("POST", call, sid)
    if st != 404:
        raise Fail(f"session {i}: a deleted session answered {st}")


def _trimmed_rss(srv):
    if test_adv_load._malloc_trim(srv.p.pid):
        time.sleep(0.2)
        return proc_status(srv.p.pid, "VmRSS"), True
    return proc_status(srv.p.pid, "VmRSS"), False


def _supports(option):
    try:
        out = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in out


def http_soak_1000_sessions():
    """1,000 sessions created and torn down in one process (initialize,
    initialized, a call, DELETE; every 7th over a fresh TCP connection,
    every 10th answered on SSE, every 13th with a call cut off by the
    DELETE): descriptors and threads back to the baseline exactly, RSS
    back near it."""
    count = int(os.environ.get("ADV_SOAK_SESSIONS") or n_iter(1000, 50))
    srv = HttpServer("--grace-ms", "1000")
    cl = Client(srv.port)
    try:
        for i in range(20):
            _cycle(cl, -1000 - i)
        cl.close()
        base = srv.settled_sample()
        base_rss, _ = _trimmed_rss(srv)
        t0 = time.monotonic()
        peak_threads = 0
        for i in range(count):
            _cycle(cl, i)
            if i % 50 == 0:
                peak_threads = max(peak_threads, srv.sample()["threads"] or 0)
        took = time.monotonic() - t0
        cl.close()
        after = srv.wait_back(base)
        rss, trimmed = _trimmed_rss(srv)
        print(f"#   {count} sessions in {took:.1f} s; baseline fds {base['fds']} threads "
              f"{base['threads']} rss {base_rss // 1024} MiB; after fds {after['fds']} threads "
              f"{after['threads']} rss {rss // 1024} MiB{' (trimmed)' if trimmed else ''}; "
              f"peak threads {peak_threads}", flush=True)
        if after["fds"] > base["fds"] or after["threads"] > base["threads"]:
            raise Fail(f"not back to baseline: {after} vs {base}")
        slack = (16 << 10) if trimmed else (64 << 10)
        if SANITIZER == "no" and not VALGRIND and rss > base_rss + slack:
            raise Fail(f"RSS {rss} kB after the soak, baseline {base_rss} kB")
        st = srv.stop()
        if st["inflight_left"] or st["pending_left"] or st["abandoned"]:
            raise Fail(f"stats {st}")
    finally:
        cl.close()
        srv.kill()


def http_abandoned_sessions():
    """Sessions abandoned every way a client can: never deleted, a
    request in flight whose client vanished mid-SSE, a GET stream
    dropped, a session initialized but never 'initialized'.  They hold
    their threads until they end; SIGTERM still ends every one in order
    and the process exits 0 promptly with empty tables.  With
    --session-idle-ms they also expire on their own and descriptors and
    threads come back to the baseline."""
    idle = _supports("--session-idle-ms")
    args = ["--grace-ms", "1000"] + (["--session-idle-ms", "1000"] if idle else [])
    srv = HttpServer(*args)
    cl = Client(srv.port)
    socks = []
    try:
        _cycle(cl, 0)
        cl.close()
        base = srv.settled_sample()
        n = n_iter(40, 8)
        for k in range(n):
            c = Client(srv.port)
            if k % 4 == 3:
                c.request("POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                   "params": {"protocolVersion": LATEST, "capabilities": {},
                                              "clientInfo": {"name": "a", "version": "1"}}})
                c.close()
                continue
            sid = _init(c)
            c.close()
            if k % 4 == 1:
                # A request in flight, its client gone mid-stream.
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=T(10))
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": "progress",
                                              "arguments": {"steps": 1000000, "interval_ms": 50},
                                              "_meta": {"progressToken": "p"}}})
                s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           f"Content-Type: application/json\r\n"
                           f"Accept: application/json, text/event-stream\r\n"
                           f"Mcp-Session-Id: {sid}\r\nContent-Length: {len(body)}\r\n\r\n"
                           f"{body}").encode())
                s.recv(100)
                s.close()
            elif k % 4 == 2:
                socks.append(_open_get(srv.port, sid))
        for s in socks:
            s.close()
        held = srv.sample()
        print(f"#   {n} abandoned sessions: threads {base['threads']} -> {held['threads']}, "
              f"fds {base['fds']} -> {held['fds']}", flush=True)
        if idle:
            after = srv.wait_back(base, timeout=10)
            if after["fds"] > base["fds"] or after["threads"] > base["threads"]:
                raise Fail(f"abandoned sessions did not expire: {after} vs {base}")
        st = srv.stop(bound=3.0)
        if st["inflight_left"] or st["pending_left"] or st["abandoned"]:
            raise Fail(f"stats {st}")
    finally:
        for s in socks:
            s.close()
        cl.close()
        srv.kill()


def closed_streams_give_back_their_descriptors():
    """A GET stream opened at once on a new session, and a GET for a
    session that expired, both closed by their client while the first
    session expires: the server gets back to the descriptors it had.
    (libmicrohttpd 0.9.75 left a connection closed by a reader error right
    after its resume unreleased until its thread woke again: about one run
    in three kept a descriptor, and the idle server never woke.)"""
    runs = n_iter(8, 3)
    left = []
    for _ in range(runs):
        srv = HttpServer("--session-idle-ms", "1000", "--grace-ms", "1000")
        try:
            cl = Client(srv.port)
            base = srv.settled_sample(keys=("fds",))
            socks = []
            for delay in (0, 1.2):
                sid = _init(cl, fresh=True)
                time.sleep(delay)
                socks.append(_open_get(srv.port, sid))
            for s in socks:
                s.close()
            cl.close()
            cur = srv.wait_back(base, keys=("fds",), timeout=10)
            left.append(cur["fds"] - base["fds"])
            srv.stop()
        finally:
            srv.kill()
    print(f"#   descriptors left after each of {runs} runs: {left}")
    if any(n > 0 for n in left):
        raise Fail(f"descriptors left open after the streams closed: {left}")


SCENARIOS = [http_soak_1000_sessions, http_abandoned_sessions,
             closed_streams_give_back_their_descriptors]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
