#!/usr/bin/env python3
"""harness.py - the bundled test harness: runs a server command over real
pipes, sends scripted messages (or raw bytes), waits for expected messages
with timeouts, closes stdin or stops reading stdout at chosen moments, and
checks everything the server printed with the one invariant checker,
tests/lib/invariants.py (Server.check_invariants): complete JSON-RPC 2.0
lines, at most one answer per request, nothing after a strict peer cancel,
well-formed errors, the server's own request ids, progress order, no
sanitizer report.

Used by test_stdio.py (the scenarios), test_eof_roots_loop.py (the race
loops), test_modern.py, test_args.py, demo.py (make demo, verbose) and, through
AdvServer, by tests/scenarios/advlib.py.  The scenarios report through
tests/lib/tap.py.  Standard library only.  Timeouts are generous upper
bounds: they catch a hang, they never measure speed.
"""
import json
import os
import shlex
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import invariants  # noqa: E402
from tap import Fail, Skip  # noqa: E402,F401  (re-exported for the scenario files)

BIN = os.environ.get("MCP_EVERYTHING")
# Options added to every server a suite starts (make check-cluster runs
# the task and HTTP suites again with "--store redis://...").
EXTRA_ARGS = shlex.split(os.environ.get("MCP_EVERYTHING_ARGS", ""))
LATEST = "2025-11-25"
VERBOSE = False


def short(line, limit=160):
    return line if len(line) <= limit else line[:limit] + " ..."


# A sanitizer build reports on the server's stderr; any report fails.
SAN_PATTERNS = invariants.SAN_PATTERNS


class Server:
    """One mcp-everything process over pipes, with its output collected."""

    def __init__(self, *args, read=True, binary=None):
        # binary: another libmcp server (examples/mcp-files) driven the
        # same way; the suite-wide EXTRA_ARGS are mcp-everything's.
        cmd = [binary, *args] if binary else [BIN, *args, *EXTRA_ARGS]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []          # (time, raw bytes) of every stdout line
        self.msgs = []           # parsed messages, same order
        self.err = []
        self.cv = threading.Condition()
        self.cancelled = {}      # id text -> "strict" | "racy"
        self.sent = {}           # id text -> method, for schema recording
        self.requests_sent = {}  # id text -> requests sent with that id
        self.progress_of = {}    # json(progressToken) -> json(request id)
        self.unsent_cancel_ok = False  # see BUG-7 in test_adv_cancel.py
        self.parse_limit = 1 << 20     # longer lines sent are not parsed for counting
        self.rev = None          # the negotiated revision once initialized
        self.stdout_done = False
        self.readers = []
        if read:                 # read=False: a client that never reads stdout
            self.readers.append(threading.Thread(target=self._read_out, daemon=True))
        self.readers.append(threading.Thread(target=self._read_err, daemon=True))
        for t in self.readers:
            t.start()

    def _read_out(self):
        for raw in self.p.stdout:
            if VERBOSE:
                print("<< " + short(raw.decode(errors="replace").rstrip("\n")), flush=True)
            with self.cv:
                self.lines.append((time.monotonic(), raw))
                try:
                    self.msgs.append(json.loads(raw))
                except ValueError:
                    self.msgs.append(None)
                self._record(self.msgs[-1])
                self.cv.notify_all()
        with self.cv:
            self.stdout_done = True
            self.cv.notify_all()

    def _read_err(self):
        for raw in self.p.stderr:
            if VERBOSE:
                print("!! " + raw.decode(errors="replace").rstrip("\n"), flush=True)
            with self.cv:
                self.err.append(raw.decode(errors="replace").rstrip("\n"))
                self.cv.notify_all()

    def _record(self, m):
        """With MCP_SCHEMA_RECORD set, append what the server wrote (and the
        method it answers) for tests/schema/validate.mjs."""
        path = os.environ.get("MCP_SCHEMA_RECORD")
        if not path or m is None or self.rev is None:
            return
        if isinstance(m, list):  # a batch answer: each element on its own
            for one in m:
                self._record(one)
            return
        method = None
        if isinstance(m, dict) and "method" not in m and m.get("id") is not None:
            method = self.sent.get(json.dumps(m["id"]))
        if isinstance(m, dict) and "result" in m and method is None:
            return               # an answer to raw input we did not track
        with open(path, "a") as f:
            f.write(json.dumps({"rev": self.rev, "method": method, "msg": m}) + "\n")

    def _count_requests(self, data):
        """Counts the requests in what we send, per id, so a legal reuse of
        an id after its answer is not mistaken for a double answer."""
        for ln in data.split(b"\n"):
            if not ln.strip() or len(ln) > self.parse_limit:
                continue
            try:
                v = json.loads(ln)
            except (ValueError, RecursionError):
                continue
            for one in (v if isinstance(v, list) else [v]):
                # A request, valid or not: anything with an id that is
                # not a response may be answered under that id.
                if isinstance(one, dict) and "id" in one and \
                        ("method" in one or not ("result" in one or "error" in one)):
                    k = json.dumps(one["id"])
                    self.requests_sent[k] = self.requests_sent.get(k, 0) + 1

    def _note_progress(self, one):
        if not isinstance(one, dict) or "id" not in one:
            return
        params = one.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            self.progress_of[json.dumps(meta["progressToken"])] = json.dumps(one["id"])

    def send_raw(self, data):
        self._count_requests(data)
        if VERBOSE:
            for line in data.decode(errors="replace").splitlines():
                print(">> " + short(line), flush=True)
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, *msgs):
        for m in msgs:
            for one in (m if isinstance(m, list) else [m]):
                if isinstance(one, dict) and "method" in one and "id" in one:
                    self.sent[json.dumps(one["id"])] = one["method"]
                self._note_progress(one)
        self.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

    def call(self, rid, tool, args=None, meta=None):
        params = {"name": tool, "arguments": args or {}}
        if meta:
            params["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    def cancel(self, rid, racy=False):
        self.cancelled[json.dumps(rid)] = "racy" if racy else "strict"
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": rid, "reason": "test"}})

    def wait_for(self, pred, timeout=10, what="a message", start=0):
        """The first message from index `start` on that satisfies pred."""
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for m in self.msgs[start:]:
                    if m is not None and pred(m):
                        return m
                left = end - time.monotonic()
                if left <= 0:
                    raise Fail(f"timed out waiting for {what}; last: {self.msgs[-3:]}")
                self.cv.wait(left)

    def answer(self, rid, timeout=10, start=0):
        return self.wait_for(lambda m: "method" not in m and m.get("id") == rid and
                             type(m.get("id")) is type(rid), timeout, f"the answer to {rid!r}",
                             start)

    def wait_err(self, text, timeout=10):
        end = time.monotonic() + timeout
        with self.cv:
            while not any(text in line for line in self.err):
                left = end - time.monotonic()
                if left <= 0:
                    raise Fail(f"stderr never said {text!r}; tail: {self.err[-5:]}")
                self.cv.wait(left)

    def none_for(self, pred, seconds, what):
        time.sleep(seconds)
        with self.cv:
            bad = [m for m in self.msgs if m is not None and pred(m)]
        if bad:
            raise Fail(f"unexpected {what}: {bad[:2]}")

    def init(self, version=LATEST, caps=None):
        self.rev = version
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": version, "capabilities": caps or {},
                              "clientInfo": {"name": "test_stdio", "version": "1"}}})
        m = self.answer("init")
        if m.get("result", {}).get("protocolVersion") != version:
            raise Fail(f"initialize: {m}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close_stdin(self):
        if VERBOSE:
            print(">> (close stdin)", flush=True)
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass

    def wait_exit(self, timeout=10):
        t0 = time.monotonic()
        try:
            code = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Fail(f"did not exit within {timeout} s")
        took = time.monotonic() - t0
        for t in self.readers:   # everything it printed is in before checks
            t.join(5)
        return code, took

    def check_invariants(self):
        """The checks of tests/lib/invariants.py on everything printed so
        far (call it once the server has exited)."""
        with self.cv:
            lines = [raw for _, raw in self.lines]
            msgs, err = list(self.msgs), list(self.err)
        invariants.check_output(lines, msgs, err, self.requests_sent, self.cancelled,
                                self.progress_of, self.unsent_cancel_ok)

    def stats(self):
        with self.cv:
            st = invariants.stats_line(list(self.err))
        if st is None:
            raise Fail("no stats line on stderr")
        return st

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
