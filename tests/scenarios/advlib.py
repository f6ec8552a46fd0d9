#!/usr/bin/env python3
"""advlib.py - shared machinery of the adversarial scenario suite
(tests/scenarios/test_adv_*.py): a subclass of the bundled harness's
Server that checks more of DESIGN.md on everything the server wrote, the
scaling knobs for sanitized and valgrind runs, /proc probes, and the
scenario runner with its expected-failure list.

What every scenario gets checked on every server it started, once the
server has exited (AdvServer.finish, called by the runner for servers a
scenario left running):

  invariant 1  every stdout line is one complete JSON-RPC 2.0 message
               (harness), every error has an integer code and a string
               message, a null id only on errors;
  invariant 2  at most one answer per request id (harness);
  invariant 3  nothing for a request after its strict peer cancel (harness);
  invariant 4  no sanitizer report on stderr (ASan, UBSan, LSan, TSan);
               valgrind runs check their own log files;
  invariant 5  with --trace: every "started X" has its "cleanup X REASON"
               with a known reason (minus the abandoned ones);
  invariant 6  with --stats: inflight_left == pending_left == 0 unless the
               scenario expects abandoned handlers; responses_written equals
               the responses this client read;
  P7           the server's own request ids are integers, never reused, and
               its notifications/cancelled name only ids it sent, once each;
  P10          progress for a token is strictly increasing and written
               before the answer of the request that carried the token.

Environment:
  MCP_EVERYTHING       the fixture binary (or a wrapper, e.g. valgrind)
  MCP_ADV_SANITIZER    no | address | thread (set by local.mk from configure)
  MCP_ADV_VALGRIND     1 when the binary runs under valgrind
  ADV_SCALE            multiplier for loop counts (default by build kind)
  ADV_TIME_SCALE       multiplier for time bounds (default by build kind)
  ADV_STRICT_XFAIL     1: an expected failure that passes fails the run
Standard library only.
"""
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "stdio"))
import harness  # noqa: E402
from harness import LATEST, Fail, Server  # noqa: E402,F401

BIN = harness.BIN
SANITIZER = os.environ.get("MCP_ADV_SANITIZER", "no") or "no"
VALGRIND = os.environ.get("MCP_ADV_VALGRIND", "") not in ("", "0")
_KIND = "valgrind" if VALGRIND else SANITIZER
_DEFAULT_SCALE = {"no": 1.0, "address": 0.5, "thread": 0.25, "valgrind": 0.05}
_DEFAULT_TIME = {"no": 1.0, "address": 2.0, "thread": 4.0, "valgrind": 20.0}
SCALE = float(os.environ.get("ADV_SCALE") or _DEFAULT_SCALE.get(_KIND, 1.0))
TIME = float(os.environ.get("ADV_TIME_SCALE") or _DEFAULT_TIME.get(_KIND, 1.0))

SAN_PATTERNS = ("ERROR: AddressSanitizer", "WARNING: ThreadSanitizer", "ERROR: LeakSanitizer",
                "runtime error:", "UndefinedBehaviorSanitizer", "ThreadSanitizer: ",
                "AddressSanitizer: ")
REASONS = {"completed", "peer_cancelled", "transport_closed", "shutdown", "timeout",
           "session_deleted", "session_expired"}


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
    """harness.Server plus the checks listed at the top of this file.

    trace/stats add --trace/--stats; abandoned: how many handlers the
    scenario expects to be abandoned at the deadline (None: any)."""

    def __init__(self, *args, trace=True, stats=True, read=True, abandoned=0,
                 count_check=True, task_keys=False, unsent_cancel_ok=False):
        extra = (["--trace"] if trace else []) + (["--stats"] if stats else [])
        self.progress_of = {}       # json(progressToken) -> json(request id)
        self.abandoned_expected = abandoned
        self.count_check = count_check and read
        self.finished = False
        self.exit_code = None
        self.broken_pipe = False
        self.traced = trace
        self.with_stats = stats
        self.task_keys = task_keys  # map "#task:TID" trace keys to their request
        self.requests_sent = {}     # json(id) -> requests sent with that id
        self.unsent_cancel_ok = unsent_cancel_ok  # see BUG-7 in test_adv_cancel.py
        self.parse_limit = 1 << 20  # longer lines are not parsed for counting
        super().__init__(*args, *extra, read=read)
        CURRENT.append(self)

    # -- sending ------------------------------------------------------------
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

    def send_raw(self, data):
        self._count_requests(data)
        try:
            super().send_raw(data)
        except (BrokenPipeError, ValueError):
            # The server left (as some scenarios want); remember it.
            self.broken_pipe = True
            raise

    def send(self, *msgs):
        for m in msgs:
            for one in (m if isinstance(m, list) else [m]):
                self._note_progress(one)
        super().send(*msgs)

    def _note_progress(self, one):
        if not isinstance(one, dict) or "id" not in one:
            return
        meta = (one.get("params") or {}).get("_meta") if isinstance(one.get("params"), dict) \
            else None
        if isinstance(meta, dict) and "progressToken" in meta:
            self.progress_of[json.dumps(meta["progressToken"])] = json.dumps(one["id"])

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

    def check_invariants(self):
        """The harness's invariants 1-3, with invariant 2 counted per
        request: an id legally reused after its answer may be answered
        once per request that carried it."""
        with self.cv:
            lines, msgs = list(self.lines), list(self.msgs)
        answers = {}
        for (_, raw), m in zip(lines, msgs):
            if m is None or not isinstance(m, (dict, list)):
                raise Fail(f"stdout line is not JSON: {raw[:120]!r}")
            for one in (m if isinstance(m, list) else [m]):
                if not isinstance(one, dict) or one.get("jsonrpc") != "2.0":
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
        dup = {k: (n, self.requests_sent.get(k, 0)) for k, n in answers.items()
               if n > max(1, self.requests_sent.get(k, 0))}
        if dup:
            raise Fail(f"more answers than requests for ids {dup} (answers, requests)")
        for key, mode in self.cancelled.items():
            if mode == "strict" and key in answers:
                raise Fail(f"an answer was written for cancelled request {key}")

    def check_all(self):
        self.check_invariants()
        self.check_sanitizers()
        self.check_shapes()
        self.check_progress_order()
        if self.traced:
            self.check_trace()
        if self.with_stats:
            self.check_stats()

    def check_sanitizers(self):
        with self.cv:
            bad = [ln for ln in self.err if any(p in ln for p in SAN_PATTERNS)]
        if bad:
            tail = "\n".join(self.err[-40:])
            raise Fail(f"sanitizer report: {bad[0]}\n{tail}")

    def check_shapes(self):
        out_ids = set()
        cancelled_out = set()
        for m in self.snapshot():
            for one in (m if isinstance(m, list) else [m]):
                if not isinstance(one, dict):
                    raise Fail(f"not an object: {one!r}")
                if "method" in one:
                    if "id" in one:
                        rid = one["id"]
                        if type(rid) is not int:
                            raise Fail(f"server request id is not an integer: {one}")
                        if rid in out_ids:
                            raise Fail(f"server reused its request id {rid}")
                        out_ids.add(rid)
                    elif one["method"] == "notifications/cancelled":
                        rid = (one.get("params") or {}).get("requestId")
                        if rid not in out_ids and not self.unsent_cancel_ok:
                            raise Fail(f"server cancelled a request it never sent: {one}")
                        if rid in cancelled_out:
                            raise Fail(f"server cancelled its request {rid} twice")
                        cancelled_out.add(rid)
                    continue
                if "error" in one:
                    e = one["error"]
                    if not isinstance(e, dict) or type(e.get("code")) is not int or \
                            not isinstance(e.get("message"), str):
                        raise Fail(f"malformed error object: {one}")
                elif one.get("id") is None:
                    raise Fail(f"a result with a null id: {one}")

    def check_progress_order(self):
        if not self.progress_of:
            return
        last = {}
        answered = set()
        for m in self.snapshot():
            for one in (m if isinstance(m, list) else [m]):
                if not isinstance(one, dict):
                    continue
                if one.get("method") == "notifications/progress":
                    p = one.get("params") or {}
                    tok = json.dumps(p.get("progressToken"))
                    rid = self.progress_of.get(tok)
                    if rid is None:
                        continue
                    if rid in answered:
                        raise Fail(f"progress for {tok} after the answer to {rid} (P10)")
                    v = p.get("progress")
                    if tok in last and not v > last[tok]:
                        raise Fail(f"progress for {tok} not increasing: {last[tok]} -> {v}")
                    last[tok] = v
                elif "method" not in one and "id" in one:
                    answered.add(json.dumps(one["id"]))

    def task_ids(self):
        """taskId -> json(id of the tools/call that created it)."""
        out = {}
        for m in self.snapshot():
            if isinstance(m, dict) and isinstance(m.get("result"), dict):
                t = m["result"].get("task")
                if isinstance(t, dict) and "taskId" in t:
                    out[t["taskId"]] = json.dumps(m["id"], ensure_ascii=False)
        return out

    def check_trace(self):
        starts, ends = {}, {}
        with self.cv:
            err = list(self.err)
        tasks = self.task_ids() if self.task_keys else {}
        for ln in err:
            if ln.startswith("started "):
                k = ln[len("started "):]
                starts[k] = starts.get(k, 0) + 1
            elif ln.startswith("cleanup "):
                k, _, reason = ln[len("cleanup "):].rpartition(" ")
                if reason not in REASONS:
                    raise Fail(f"cleanup with unknown reason: {ln}")
                if k.startswith("#task:") and k[6:] in tasks:
                    k = tasks[k[6:]]
                ends[k] = ends.get(k, 0) + 1
        missing = 0
        for k in set(starts) | set(ends):
            s, e = starts.get(k, 0), ends.get(k, 0)
            if e > s:
                raise Fail(f"{e} cleanups for {s} starts of {k} (invariant 5)")
            missing += s - e
        allowed = self._abandoned_count()
        if missing and (allowed is None or missing > allowed):
            raise Fail(f"{missing} handlers started and never cleaned up "
                       f"(abandoned: {allowed}) (invariant 5)")

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
        exp = self.abandoned_expected
        if exp is not None and st["abandoned"] != exp:
            raise Fail(f"abandoned {st['abandoned']}, want {exp}: {st}")
        if st["abandoned"] == 0 and (st["inflight_left"] or st["pending_left"]):
            raise Fail(f"tables not empty after shutdown (invariant 6): {st}")
        if self.count_check and not self.broken_pipe:
            seen = 0
            for m in self.snapshot():
                for one in (m if isinstance(m, list) else [m]):
                    if isinstance(one, dict) and "method" not in one:
                        seen += 1
            if seen != st["responses_written"]:
                raise Fail(f"read {seen} responses, stats say {st['responses_written']} "
                           f"written: {st}")


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
    """Runs the named scenarios (all by default).  `expected_failures`
    maps a scenario name to the bug it exposes (a string), or to a pair
    (build kinds, bug) when only some builds can see it (e.g. a data race
    only ThreadSanitizer reports): its failure is reported as XFAIL and
    does not fail the run."""
    xf = {}
    for name, why in expected_failures.items():
        if isinstance(why, tuple):
            kinds, why = why
            if _KIND not in kinds:
                continue
        xf[name] = why
    expected_failures = xf
    if not BIN or not os.access(BIN, os.X_OK):
        print("skip: set MCP_EVERYTHING to the fixture binary")
        return 77
    repeat = 1
    if argv[:1] == ["--list"]:
        for f in scenarios:
            print(f.__name__)
        return 0
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    names = {f.__name__ for f in scenarios}
    unknown = [a for a in argv if a not in names]
    if unknown:
        print(f"unknown scenario(s): {unknown}")
        return 2
    chosen = [f for f in scenarios if not argv or f.__name__ in argv]
    strict = os.environ.get("ADV_STRICT_XFAIL", "") not in ("", "0")
    print(f"# build kind {_KIND}: loop scale {SCALE}, time scale {TIME}", flush=True)
    passed = failed = xfail = xpass = 0
    t_all = time.monotonic()
    for f in chosen:
        t0 = time.monotonic()
        err = None
        for i in range(repeat):
            try:
                f()
                finish_all(True)
            except Fail as e:
                err = str(e)
            except Exception:  # a scenario bug or a protocol surprise: a failure
                err = traceback.format_exc()
            if err:
                try:
                    finish_all(False)
                except Fail:
                    pass
                if repeat > 1:
                    err = f"(run {i + 1}) {err}"
                break
        took = time.monotonic() - t0
        name = f.__name__
        if name in expected_failures:
            if err:
                xfail += 1
                print(f"xfail - {name} ({took:.1f} s): {expected_failures[name]}\n"
                      f"#   {err.splitlines()[0] if err else ''}", flush=True)
            else:
                xpass += 1
                print(f"XPASS - {name} ({took:.1f} s): listed in EXPECTED_FAILURES "
                      f"({expected_failures[name]}) but passed; remove it from the list",
                      flush=True)
        elif err:
            failed += 1
            print(f"not ok - {name} ({took:.1f} s): {err}", flush=True)
        else:
            passed += 1
            print(f"ok - {name} ({took:.1f} s)" + (f" x{repeat}" if repeat > 1 else ""),
                  flush=True)
    print(f"{passed} passed, {failed} failed, {xfail} expected failures, {xpass} unexpected "
          f"passes in {time.monotonic() - t_all:.1f} s", flush=True)
    if failed or (strict and xpass):
        return 1
    return 0
