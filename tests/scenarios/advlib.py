#!/usr/bin/env python3
"""advlib.py - shared machinery of the adversarial scenario suite
(tests/scenarios/test_adv_*.py): a subclass of the bundled harness's
Server that checks more of DESIGN.md on everything the server wrote, the
scaling knobs for sanitized and valgrind runs, /proc probes, and the
scenario runner with its expected-failure list.

What every scenario gets checked on every server it started, once the
server has exited (AdvServer.finish, called by the runner for servers a
scenario left running): everything tests/lib/invariants.py checks, the one
checker shared with the harness (invariants 1-4, error shapes, P7, P10),
plus, on the servers that ran with --trace and --stats (the default here):

  invariant 5  every "started X" has its "cleanup X REASON" with a known
               reason (minus the abandoned ones);
  invariant 6  inflight_left == pending_left == 0 unless the scenario
               expects abandoned handlers; responses_written equals the
               responses this client read.

Each scenario is one TAP test point (tests/lib/tap.py); a scenario listed
in its file's EXPECTED_FAILURES reports "# TODO" (XFAIL) when it fails.

Environment:
  MCP_EVERYTHING       the fixture binary (or a wrapper, e.g. valgrind)
  MCP_ADV_SANITIZER    no | address | thread (set by local.mk from configure)
  MCP_ADV_VALGRIND     1 when the binary runs under valgrind
  ADV_SCALE            multiplier for loop counts (default by build kind)
  ADV_TIME_SCALE       multiplier for time bounds (default by build kind)
  ADV_STRICT_XFAIL     1: an expected failure that passes fails the run (XPASS)
  MCP_TAP_DRIVER       1 under make check: the exit status leaves the verdicts
                       to the TAP lines (see tests/lib/tap.py)
Standard library only.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "stdio"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import harness  # noqa: E402
import invariants  # noqa: E402
import tap  # noqa: E402
from harness import LATEST, Fail, Server, Skip  # noqa: E402,F401
from invariants import REASONS, SAN_PATTERNS, sanitizer_lines  # noqa: E402,F401

BIN = harness.BIN
SANITIZER = os.environ.get("MCP_ADV_SANITIZER", "no") or "no"
VALGRIND = os.environ.get("MCP_ADV_VALGRIND", "") not in ("", "0")
_KIND = "valgrind" if VALGRIND else SANITIZER
_DEFAULT_SCALE = {"no": 1.0, "address": 0.5, "thread": 0.25, "valgrind": 0.05}
_DEFAULT_TIME = {"no": 1.0, "address": 2.0, "thread": 4.0, "valgrind": 20.0}
SCALE = float(os.environ.get("ADV_SCALE") or _DEFAULT_SCALE.get(_KIND, 1.0))
TIME = float(os.environ.get("ADV_TIME_SCALE") or _DEFAULT_TIME.get(_KIND, 1.0))


def n_iter(count, minimum=1):
    """A loop count scaled for the build kind (never below `minimum`)."""
    return max(minimum, int(count * SCALE))


def T(seconds):
    """A time bound scaled for the build kind."""
    return seconds * TIME


def hold_ms(ms):
    """How long a handler must stay busy for the server to read what the
    test sends meanwhile: `ms` stretched for slow build kinds (at most 5x,
    so a valgrind run of a 300 ms spin holds 1.5 s)."""
    return int(ms * min(TIME, 5.0))


def req(rid, method, params=None):
    m = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return m


def call_msg(rid, tool, args=None, meta=None):
    p = {"name": tool, "arguments": args or {}}
    if meta:
        p["_meta"] = meta
    return req(rid, "tools/call", p)


def cancel_msg(rid, reason="test"):
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": reason}}


def init_msg(rid="init", version=LATEST, caps=None):
    return req(rid, "initialize", {"protocolVersion": version, "capabilities": caps or {},
                                   "clientInfo": {"name": "adv", "version": "1"}})


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(m):
    return json.dumps(m).encode() + b"\n"


# ---- /proc probes ------------------------------------------------------------

def proc_status(pid, field):
    """A numeric field of /proc/PID/status (kB for Vm*), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


# ---- the server ------------------------------------------------------------------

CURRENT = []   # servers started by the running scenario


class AdvServer(Server):
    """harness.Server plus the trace and counter checks listed at the top of
    this file.

    trace/stats add --trace/--stats; abandoned: how many handlers the
    scenario expects to be abandoned at the deadline (None: any)."""

    def __init__(self, *args, trace=True, stats=True, read=True, abandoned=0,
                 count_check=True, task_keys=False, unsent_cancel_ok=False):
        extra = (["--trace"] if trace else []) + (["--stats"] if stats else [])
        self.abandoned_expected = abandoned
        self.count_check = count_check and read
        self.finished = False
        self.exit_code = None
        self.broken_pipe = False
        self.traced = trace
        self.with_stats = stats
        self.task_keys = task_keys  # map "#task:TID" trace keys to their request
        super().__init__(*args, *extra, read=read)
        self.unsent_cancel_ok = unsent_cancel_ok  # see BUG-7 in test_adv_cancel.py
        CURRENT.append(self)

    # -- sending ------------------------------------------------------------
    def send_raw(self, data):
        try:
            super().send_raw(data)
        except (BrokenPipeError, ValueError):
            # The server left (as some scenarios want); remember it.
            self.broken_pipe = True
            raise

    def call(self, rid, tool, args=None, meta=None):
        self.send(call_msg(rid, tool, args, meta))

    def request(self, rid, method, params=None):
        self.send(req(rid, method, params))

    def racy_cancel(self, rid):
        self.cancel(rid, racy=True)

    # -- reading --------------------------------------------------------------
    def snapshot(self):
        with self.cv:
            return list(self.msgs)

    def answers_for(self, rid):
        key = json.dumps(rid)
        out = []
        for m in self.snapshot():
            for one in (m if isinstance(m, list) else [m]):
                if isinstance(one, dict) and "method" not in one and "id" in one and \
                        json.dumps(one["id"]) == key:
                    out.append(one)
        return out

    def errors_null_id(self, start=0):
        with self.cv:
            msgs = list(self.msgs[start:])
        return [m for m in msgs if isinstance(m, dict) and "error" in m and m.get("id") is None]

    def server_requests(self, method=None):
        return [m for m in self.snapshot() if isinstance(m, dict) and "method" in m and
                "id" in m and (method is None or m["method"] == method)]

    def notifications(self, method):
        return [m for m in self.snapshot() if isinstance(m, dict) and m.get("method") == method
                and "id" not in m]

    def count_output(self):
        with self.cv:
            return len(self.msgs)

    def wait_count(self, pred, n, timeout=10, what="messages"):
        end = time.monotonic() + T(timeout)
        with self.cv:
            while True:
                got = sum(1 for m in self.msgs if m is not None and pred(m))
                if got >= n:
                    return got
                left = end - time.monotonic()
                if left <= 0:
                    raise Fail(f"timed out waiting for {n} {what} (got {got})")
                self.cv.wait(left)

    def wait_err(self, text, timeout=10):
        super().wait_err(text, T(timeout))

    def answer(self, rid, timeout=10, start=0):
        return super().answer(rid, timeout, start)   # scaled by wait_for

    def wait_for(self, pred, timeout=10, what="a message", start=0):
        def safe(m):   # batch answers are lists: predicates written for dicts skip them
            try:
                return pred(m)
            except (AttributeError, TypeError, KeyError):
                return False
        return super().wait_for(safe, T(timeout), what, start)

    def trace_lines(self, kind):
        with self.cv:
            return [ln for ln in self.err if ln.startswith(kind + " ")]

    def cleanups(self, rid):
        key = json.dumps(rid, ensure_ascii=False)
        out = []
        for ln in self.trace_lines("cleanup"):
            body = ln[len("cleanup "):]
            ident, _, reason = body.rpartition(" ")
            if ident == key:
                out.append(reason)
        return out

    def started(self, rid):
        key = json.dumps(rid, ensure_ascii=False)
        return sum(1 for ln in self.trace_lines("started") if ln[len("started "):] == key)

    def wait_cleanup(self, rid, reason=None, timeout=10):
        key = json.dumps(rid, ensure_ascii=False)
        self.wait_err(f"cleanup {key} {reason}" if reason else f"cleanup {key} ", timeout)

    # -- /proc ------------------------------------------------------------------
    @property
    def pid(self):
        return self.p.pid

    def rss_kb(self):
        return proc_status(self.pid, "VmRSS")

    def threads(self):
        return proc_status(self.pid, "Threads")

    def fds(self):
        return fd_count(self.pid)

    # -- the end ------------------------------------------------------------
    def wait_exit(self, timeout=10):
        code, took = super().wait_exit(T(timeout))
        self.exit_code = code
        return code, took

    def finish(self, code=0, timeout=10):
        """Ends the session (EOF) if still running, waits for the exit and
        runs every check.  `code` None: any exit status."""
        if self.finished:
            return
        if self.p.poll() is None:
            self.close_stdin()
        c, _ = self.wait_exit(timeout)
        self.finished = True
        self.check_sanitizers()   # first: a report explains a bad exit status
        if code is not None and c != code:
            raise Fail(f"exit status {c}, want {code}; stderr tail: {self.err[-5:]}")
        self.check_all()

    def check_all(self):
        """The shared checks, then the trace and the counters."""
        self.check_invariants()
        if self.traced:
            tasks = invariants.task_ids(self.snapshot()) if self.task_keys else None
            invariants.check_trace(self.err_snapshot(), self._abandoned_count(), tasks)
        if self.with_stats:
            self.check_stats()

    def check_sanitizers(self):
        invariants.check_sanitizers(self.err_snapshot())

    def err_snapshot(self):
        with self.cv:
            return list(self.err)

    def _abandoned_count(self):
        if not self.with_stats:
            return self.abandoned_expected
        try:
            return self.stats()["abandoned"]
        except Fail:
            return None

    def check_stats(self):
        try:
            st = self.stats()
        except Fail:
            if self.exit_code is not None and self.exit_code < 0:
                return   # killed: no stats line
            raise
        seen = None
        if self.count_check and not self.broken_pipe:
            seen = invariants.responses_in(self.snapshot())
        invariants.check_stats(st, self.abandoned_expected, seen)


def finish_all(ok):
    """After a scenario: check (ok) or just reap (failed) its servers."""
    servers = list(CURRENT)
    CURRENT.clear()
    first = None
    for s in servers:
        try:
            if ok and not s.finished:
                s.finish(code=None if s.p.poll() is not None and s.p.returncode != 0 else 0)
        except Fail as e:
            first = first or e
        finally:
            s.kill()
            try:
                for f in (s.p.stdin, s.p.stdout, s.p.stderr):
                    if f:
                        f.close()
            except OSError:
                pass
    if first:
        raise first


# ---- running scenarios ----------------------------------------------------------

def run(scenarios, expected_failures, argv):
    """Runs the named scenarios (all by default) through the TAP runner,
    each one a test point.  `expected_failures` maps a scenario name to the
    bug it exposes (a string), or to a pair (build kinds, bug) when only
    some builds can see it (e.g. a data race only ThreadSanitizer
    reports): its failure is reported "# TODO" (XFAIL) and does not fail
    the run.  The servers a scenario started are checked (or, after a
    failure, reaped) after it."""
    xf = {}
    for name, why in expected_failures.items():
        if isinstance(why, tuple):
            kinds, why = why
            if _KIND not in kinds:
                continue
        xf[name] = why
    skip = None
    if not BIN or not os.access(BIN, os.X_OK):
        skip = "set MCP_EVERYTHING to the fixture binary"
    return tap.run(scenarios, argv, expected_failures=xf, after=finish_all,
                   header=f"build kind {_KIND}: loop scale {SCALE}, time scale {TIME}",
                   skip_reason=skip)
