#!/usr/bin/env python3
"""harness.py - the bundled test harness: runs a server command over real
pipes, sends scripted messages (or raw bytes), waits for expected messages
with timeouts, closes stdin or stops reading stdout at chosen moments, and
checks the invariants of DESIGN.md on everything the server printed:

  1. every stdout line is one complete JSON-RPC 2.0 message;
  2. at most one answer per request id (ids compared as exact JSON);
  3. nothing for a request after its peer cancel (unless the cancel was
     sent as racy, where zero or one answer is allowed).

Used by test_stdio.py (the scenarios), test_eof_roots_loop.py (the race
loops) and demo.py (make demo, verbose).  Standard library only.  Timeouts
are generous upper bounds: they catch a hang, they never measure speed.
"""
import json
import os
import subprocess
import sys
import threading
import time

BIN = os.environ.get("MCP_EVERYTHING")
LATEST = "2025-11-25"
VERBOSE = False


def short(line, limit=160):
    return line if len(line) <= limit else line[:limit] + " ..."


# A sanitizer build reports on the server's stderr; any report fails.
SAN_PATTERNS = ("ERROR: AddressSanitizer", "WARNING: ThreadSanitizer", "ERROR: LeakSanitizer",
                "runtime error:", "UndefinedBehaviorSanitizer")

class Fail(Exception):
    pass


class Server:
    """One mcp-everything process over pipes, with its output collected."""

    def __init__(self, *args, read=True):
        self.p = subprocess.Popen([BIN, *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []          # (time, raw bytes) of every stdout line
        self.msgs = []           # parsed messages, same order
        self.err = []
        self.cv = threading.Condition()
        self.cancelled = {}      # id text -> "strict" | "racy"
        self.sent = {}           # id text -> method, for schema recording
        self.sent_count = {}     # id text -> requests sent with that id
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

    def send_raw(self, data):
        for ln in data.split(b"\n"):      # requests per id, for check_invariants
            try:
                v = json.loads(ln) if ln.strip() else None
            except (ValueError, RecursionError):
                continue
            for one in (v if isinstance(v, list) else [v]):
                # A request, valid or not: anything with an id that is
                # not a response may be answered under that id.
                if isinstance(one, dict) and "id" in one and \
                        ("method" in one or not ("result" in one or "error" in one)):
                    k = json.dumps(one["id"])
                    self.sent_count[k] = self.sent_count.get(k, 0) + 1
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
        """DESIGN.md invariants 1-3 on everything printed, and no sanitizer
        report on stderr."""
        with self.cv:
            lines, msgs = list(self.lines), list(self.msgs)
            san = [ln for ln in self.err if any(p in ln for p in SAN_PATTERNS)]
        if san:
            raise Fail(f"sanitizer report on stderr: {san[0]}")
        answers = {}
        for (_, raw), m in zip(lines, msgs):
            if m is None or not isinstance(m, (dict, list)):
                raise Fail(f"stdout line is not JSON: {raw[:120]!r}")
            for one in (m if isinstance(m, list) else [m]):
                if one.get("jsonrpc") != "2.0":
                    raise Fail(f"not JSON-RPC 2.0: {one}")
                if "method" in one:
                    if not isinstance(one["method"], str):
                        raise Fail(f"bad method: {one}")
                    continue
                if "id" not in one or (("result" in one) == ("error" in one)):
                    raise Fail(f"malformed response: {one}")
                if one["id"] is None:
                    continue
                key = json.dumps(one["id"])
                answers[key] = answers.get(key, 0) + 1
        # An id may be answered once per request that carried it: a
        # duplicate in flight is refused under its id, beside the answer
        # of the request it duplicates.
        dup = {k: n for k, n in answers.items() if n > max(1, self.sent_count.get(k, 0))}
        if dup:
            raise Fail(f"more than one answer for ids {dup}")
        for key, mode in self.cancelled.items():
            if mode == "strict" and key in answers:
                raise Fail(f"an answer was written for cancelled request {key}")

    def stats(self):
        for line in reversed(self.err):
            if line.startswith("stats "):
                return json.loads(line[6:])
        raise Fail("no stats line on stderr")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
