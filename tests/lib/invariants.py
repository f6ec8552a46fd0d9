#!/usr/bin/env python3
"""invariants.py - the one checker of what a server wrote: the promises of
doc/design.md, checked on everything a server printed over a whole run.
Both runners of the stdio scenarios use it: tests/stdio/harness.py
(Server.check_invariants) and tests/scenarios/advlib.py (AdvServer.finish
adds the trace and the counters).

On stdout, always:
  invariant 1  every line is one complete JSON-RPC 2.0 message (an object,
               or a batch's array of them);
  invariant 2  at most one answer per request: an id is answered at most
               once per request the client sent with it (an id legally
               reused after its answer may be answered again);
  invariant 3  nothing for a request after its strict peer cancel (a cancel
               sent as racy allows zero or one answer);
  shapes       an error has an integer code and a string message; a result
               never has a null id;
  P7           the server's own request ids are integers, never reused, and
               its notifications/cancelled name only ids it sent, once each;
  P10          progress for a token strictly increases and is written before
               the answer of the request that carried the token.
On stderr, always:
  invariant 4  no sanitizer report (ASan, UBSan, LSan, TSan); valgrind runs
               check their own log files.
On stderr, when the server ran with --trace / --stats (check_trace,
check_stats):
  invariant 5  every "started X" has one "cleanup X REASON" with a known
               reason, minus the handlers abandoned at the deadline;
  invariant 6  inflight_left == pending_left == 0 unless handlers were
               abandoned; responses_written equals the responses read.

Each check raises tap.Fail naming what broke.  Standard library only.
"""
import json

from tap import Fail

SAN_PATTERNS = ("ERROR: AddressSanitizer", "WARNING: ThreadSanitizer", "ERROR: LeakSanitizer",
                "runtime error:", "UndefinedBehaviorSanitizer", "ThreadSanitizer: ",
                "AddressSanitizer: ")
REASONS = {"completed", "peer_cancelled", "transport_closed", "shutdown", "timeout",
           "session_deleted", "session_expired"}


def _each(msgs):
    """Every message, a batch's elements one by one."""
    for m in msgs:
        for one in (m if isinstance(m, list) else [m]):
            yield one


def sanitizer_lines(err_lines):
    """The lines of a stderr that are a sanitizer's report."""
    return [ln for ln in err_lines if any(p in ln for p in SAN_PATTERNS)]


def check_sanitizers(err_lines, tail=40):
    """Invariant 4."""
    bad = sanitizer_lines(err_lines)
    if bad:
        raise Fail(f"sanitizer report: {bad[0]}\n" + "\n".join(err_lines[-tail:]))


def check_messages(lines, msgs, requests_sent, cancelled):
    """Invariants 1-3.  lines: the raw stdout lines (bytes); msgs: their
    parses (None for a line that is not JSON); requests_sent: json(id) ->
    requests the client sent with that id; cancelled: json(id) -> "strict"
    or "racy"."""
    answers = {}
    for raw, m in zip(lines, msgs):
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
    dup = {k: (n, requests_sent.get(k, 0)) for k, n in answers.items()
           if n > max(1, requests_sent.get(k, 0))}
    if dup:
        raise Fail(f"more answers than requests for ids {dup} (answers, requests)")
    for key, mode in cancelled.items():
        if mode == "strict" and key in answers:
            raise Fail(f"an answer was written for cancelled request {key}")


def check_shapes(msgs, unsent_cancel_ok=False):
    """Error objects, null ids, and P7 (the server's own requests)."""
    out_ids = set()
    cancelled_out = set()
    for one in _each(msgs):
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
                if rid not in out_ids and not unsent_cancel_ok:
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


def check_progress_order(msgs, progress_of):
    """P10.  progress_of: json(progressToken) -> json(id of the request that
    carried it)."""
    if not progress_of:
        return
    last = {}
    answered = set()
    for one in _each(msgs):
        if not isinstance(one, dict):
            continue
        if one.get("method") == "notifications/progress":
            p = one.get("params") or {}
            tok = json.dumps(p.get("progressToken"))
            rid = progress_of.get(tok)
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


def check_output(lines, msgs, err_lines, requests_sent, cancelled, progress_of,
                 unsent_cancel_ok=False):
    """Everything checked on every server: invariants 1-4, shapes, P7, P10."""
    check_sanitizers(err_lines)
    check_messages(lines, msgs, requests_sent, cancelled)
    check_shapes(msgs, unsent_cancel_ok)
    check_progress_order(msgs, progress_of)


def task_ids(msgs):
    """taskId -> json(id of the tools/call that created it)."""
    out = {}
    for m in msgs:
        if isinstance(m, dict) and isinstance(m.get("result"), dict):
            t = m["result"].get("task")
            if isinstance(t, dict) and "taskId" in t:
                out[t["taskId"]] = json.dumps(m["id"], ensure_ascii=False)
    return out


def check_trace(err_lines, abandoned_allowed, tasks=None):
    """Invariant 5 on a --trace server's stderr.  abandoned_allowed: how
    many handlers may lack their cleanup (None: any).  tasks: taskId ->
    request key, so that a task's "#task:TID" trace lines count for the
    request that created it."""
    starts, ends = {}, {}
    tasks = tasks or {}
    for ln in err_lines:
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
    if missing and (abandoned_allowed is None or missing > abandoned_allowed):
        raise Fail(f"{missing} handlers started and never cleaned up "
                   f"(abandoned: {abandoned_allowed}) (invariant 5)")


def stats_line(err_lines):
    """The --stats line's counters, or None."""
    for ln in reversed(err_lines):
        if ln.startswith("stats "):
            return json.loads(ln[6:])
    return None


def check_stats(st, abandoned_expected, responses_seen=None):
    """Invariant 6 on a --stats line's counters.  abandoned_expected: None
    for any; responses_seen: the responses the client read (None: not
    compared, e.g. when it stopped reading)."""
    if abandoned_expected is not None and st["abandoned"] != abandoned_expected:
        raise Fail(f"abandoned {st['abandoned']}, want {abandoned_expected}: {st}")
    if st["abandoned"] == 0 and (st["inflight_left"] or st["pending_left"]):
        raise Fail(f"tables not empty after shutdown (invariant 6): {st}")
    if responses_seen is not None and responses_seen != st["responses_written"]:
        raise Fail(f"read {responses_seen} responses, stats say {st['responses_written']} "
                   f"written: {st}")


def responses_in(msgs):
    """How many responses (not requests or notifications) msgs hold."""
    return sum(1 for one in _each(msgs) if isinstance(one, dict) and "method" not in one)
