#!/usr/bin/env python3
"""test_adv_model.py - the counterexamples of the SPIN model
(tests/model/trails/), as scenarios against the real mcp-everything.

Each trail is an interleaving in which a mutated copy of the engine's
model breaks a promise.  The scenario below drives the real binary over
real pipes into that interleaving (or as close as a client can steer it,
in a loop when only timing decides) and asserts what the real code
guarantees there.  Every server started is also checked against
DESIGN.md's invariants by advlib (complete lines, one answer per id,
nothing after a strict cancel, one cleanup per started handler, empty
tables at exit, no sanitizer report).

No assertion measures time.  The scenarios wait for events (answers,
server requests, trace lines) and order them; an exit bound only catches
a hang and is kept far from every grace period involved.

Usage: MCP_EVERYTHING=path/to/mcp-everything test_adv_model.py [--list]
       [--repeat N] [NAME...]
"""
import fcntl
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import (INITIALIZED, AdvServer, Fail, call_msg, cancel_msg, hold_ms,  # noqa: E402
                    init_msg, line, n_iter, req, run)

EXPECTED_FAILURES = {
}

LONG_GRACE = "60000"   # ms: far beyond every exit bound below (T(10) s)


def _roots_requests(s, start=0):
    return [m for m in s.snapshot()[start:] if isinstance(m, dict) and
            m.get("method") == "roots/list" and "id" in m]


def _wait_roots(s, n, start=0):
    s.wait_for(lambda m: len(_roots_requests(s, start)) >= n, what=f"{n} roots/list")
    return _roots_requests(s, start)


def _roots_answer(sid, uri):
    return {"jsonrpc": "2.0", "id": sid, "result": {"roots": [{"uri": uri, "name": "m"}]}}


def _text(answer):
    return answer["result"]["content"][0]["text"]


def _index_of(s, pred):
    for i, m in enumerate(s.snapshot()):
        if isinstance(m, dict) and pred(m):
            return i
    return None


# ---- trails/live_iter.txt ---------------------------------------------------------

def eof_while_roots_waiters_remove_themselves():
    """EOF while two handlers wait on roots and one answer is in flight:
    three roots calls each have their roots/list out; the client answers
    one and closes its output in the same write.  The answered call gets
    its roots back and is answered (its answer was read before EOF); the
    two waiters wake on the close, remove themselves from the pending
    table while the shutdown fails the table's swapped-out snapshot, and
    write nothing.  The mutated model that fails the live table instead
    frees an entry under the shutdown (live_iter.txt).  Looped: which
    waiter wakes first, and whether before or after the swap, is timing."""
    for it in range(n_iter(40, 5)):
        s = AdvServer("--workers", "4", "--grace-ms", LONG_GRACE)
        s.init(caps={"roots": {}})
        for rid in (1, 2, 3):
            s.call(rid, "roots", {"timeout_ms": 3600000})
        reqs = _wait_roots(s, 3)
        chosen = reqs[it % 3]["id"]
        s.send_raw(line(_roots_answer(chosen, f"file:///run{it}")))
        s.close_stdin()
        s.finish()
        answered = [rid for rid in (1, 2, 3) if s.answers_for(rid)]
        if len(answered) != 1:
            raise Fail(f"run {it}: answered {answered}, want exactly the one whose "
                       f"roots/list got its answer before EOF")
        a = s.answers_for(answered[0])[0]
        if f"file:///run{it}" not in _text(a):
            raise Fail(f"run {it}: the answered call got {a}")
        for rid in (1, 2, 3):
            want = ["completed"] if rid == answered[0] else ["transport_closed"]
            if s.cleanups(rid) != want:
                raise Fail(f"run {it}: cleanups of {rid}: {s.cleanups(rid)}, want {want}")
        st = s.stats()
        if st["pending_failed"] > 2 or st["pending_left"] or st["inflight_left"] or \
                st["abandoned"]:
            raise Fail(f"run {it}: stats {st}")


# ---- trails/no_broadcast.txt, trails/no_broadcast_end.txt --------------------------

def eof_token_aware_handlers_end_before_the_grace():
    """Handlers that honour their token do not outlive the transport: two
    endless sleeps and a roots waiter end on EOF (transport_closed), while
    a spin that never looks at its token is the only one left at the grace
    and is abandoned.  Without the broadcast (no_broadcast.txt) all four
    would be abandoned and the sleepers never heard of the close."""
    s = AdvServer("--workers", "4", "--grace-ms", "2000", abandoned=1)
    s.init(caps={"roots": {}})
    s.call(1, "sleep", {"ms": 600000})
    s.call(2, "sleep", {"ms": 600000})
    s.call(3, "roots", {"timeout_ms": 3600000})
    s.call(4, "spin", {"ms": 600000})
    _wait_roots(s, 1)
    for rid in (1, 2, 4):
        s.wait_err(f"started {rid}")
    s.close_stdin()
    for rid in (1, 2, 3):
        s.wait_cleanup(rid, "transport_closed")
    s.finish()
    if s.cleanups(4):
        raise Fail(f"the spin was cleaned up: {s.cleanups(4)}")
    for rid in (1, 2, 3, 4):
        if s.answers_for(rid):
            raise Fail(f"an answer was written for {rid}: {s.answers_for(rid)}")
    st = s.stats()
    if st["abandoned"] != 1 or st["cancelled_transport"] != 3 or st["inflight_left"] != 1:
        raise Fail(f"stats {st}")


# ---- trails/write_first.txt, trails/no_cas.txt ---------------------------------------

def cancel_racing_answers_one_outcome_each():
    """Every request ends in exactly one outcome, decided once: each call
    is cancelled as soon as its handler has started (its "started" trace
    line), while the handler is about to return a result (sleeps of 0 to
    2 ms, half of them blind to their token, and echoes), many times.
    Whichever wins, the trace and the wire agree: a request traced
    "completed" has exactly one answer, one traced "peer_cancelled" has
    none, and the counters add up.  The mutated models that write before
    deciding or decide without a CAS answer a suppressed request
    (write_first.txt, no_cas.txt).

    The same race can, rarely (about one TSan run in a hundred), hit the
    use-after-free that the model's lifetime runs found in the code as it
    was (trails/plain_ref.txt: a cancel's lookup taking a reference from
    zero; fixed in session.c live_ref): a server reporting it fails this
    scenario."""
    s = AdvServer("--workers", "4")
    s.init()
    n = n_iter(400, 40)
    for rid in range(n):
        if rid % 3 == 2:
            tool = ("echo", {"text": f"t{rid}"})
        else:
            tool = ("sleep", {"ms": rid % 3 + (rid // 3) % 2, "cancellable": rid % 3 == 1})
        s.call(rid, *tool)
        s.wait_err(f"started {rid}")
        s.racy_cancel(rid)
    for rid in range(n):
        s.wait_cleanup(rid)
    s.finish()
    answered = 0
    for rid in range(n):
        got = s.answers_for(rid)
        cl = s.cleanups(rid)
        if len(got) > 1:
            raise Fail(f"{rid}: {len(got)} answers")
        if got:
            answered += 1
            if cl != ["completed"] or "result" not in got[0]:
                raise Fail(f"{rid}: answered ({got[0]}) but traced {cl}")
        elif cl != ["peer_cancelled"]:
            raise Fail(f"{rid}: no answer but traced {cl}")
    st = s.stats()
    if st["completed"] != answered or st["completed"] + st["cancelled_peer"] != n:
        raise Fail(f"{answered} answered of {n}; stats {st}")


# ---- trails/no_suppress.txt ----------------------------------------------------------

MAX_IOV = 512   # engine/writer.c: lines the writer thread takes at once
F_GETPIPE_SZ = 1032


def progress_stops_at_a_processed_cancel():
    """Nothing is written for a request after its peer cancel was
    processed, including what was queued before: the client stops reading
    while a progress stream with no interval runs, so the pipe fills, the
    writer thread blocks inside one batch, and the stream piles up in its
    queue; a second call's one-second sleep paces the pile-up (the
    whole stream would take about 13 s).  The client
    then cancels the stream and waits for its "cleanup ... peer_cancelled"
    (the cancel was processed and the handler stopped), and only then
    reads again.  What reaches the client of the stream is at most what
    the pipe held plus the batch the writer was blocked in; the rest of
    the pile was discarded at write time (no_suppress.txt writes it all).
    Looped: how much piles up is timing."""
    for it in range(n_iter(6, 2)):
        s = AdvServer("--workers", "2", read=False)
        tok = f"pt{it}"
        s.send_raw(line(init_msg()) + line(INITIALIZED) +
                   line(call_msg("p", "progress", {"steps": 100000, "interval_ms": 0},
                                 {"progressToken": tok})))
        s.wait_err("started \"p\"")
        s.call("pace", "sleep", {"ms": 1000, "cancellable": False})
        s.wait_cleanup("pace", "completed")
        s.cancel("p")
        s.wait_cleanup("p", "peer_cancelled")
        cap = fcntl.fcntl(s.p.stdout.fileno(), F_GETPIPE_SZ)
        reader = threading.Thread(target=s._read_out, daemon=True)
        s.readers.append(reader)
        reader.start()
        s.request("after", "ping")
        s.answer("after")
        s.finish()
        prog = [raw for (_, raw), m in zip(s.lines, s.msgs) if isinstance(m, dict) and
                m.get("method") == "notifications/progress" and
                (m.get("params") or {}).get("progressToken") == tok]
        if not prog:
            raise Fail(f"run {it}: no progress at all")
        bound = cap // min(len(raw) for raw in prog) + 2 * MAX_IOV
        if len(prog) > bound:
            raise Fail(f"run {it}: {len(prog)} progress notifications reached the client, "
                       f"more than the pipe ({cap} bytes) and the writer's batch can hold "
                       f"({bound}): lines queued before the cancel were written after it")
        if s.answers_for("p"):
            raise Fail(f"run {it}: the cancelled stream was answered")


# ---- trails/dup.txt -------------------------------------------------------------------

def duplicate_id_while_the_first_waits_on_roots():
    """P5: a second request with the id of one that waits on roots/list is
    refused (-32600, under that id); the first is untouched and stays
    cancellable, and its outstanding roots/list gets its cancel; once it
    has ended, the id is free again.  The mutated model admits both
    (dup.txt)."""
    s = AdvServer("--workers", "2")
    s.init(caps={"roots": {}})
    s.call(7, "roots", {"timeout_ms": 3600000})
    sid = _wait_roots(s, 1)[0]["id"]
    before = s.count_output()
    s.call(7, "echo", {"text": "duplicate"})
    err = s.wait_for(lambda m: "error" in m and m.get("id") == 7, start=before,
                     what="the duplicate's -32600")
    if err["error"]["code"] != -32600:
        raise Fail(f"duplicate: {err}")
    s.cancel(7)
    s.wait_cleanup(7, "peer_cancelled")
    s.wait_for(lambda m: m.get("method") == "notifications/cancelled" and
               (m.get("params") or {}).get("requestId") == sid,
               what="the cancel of the roots/list that went out")
    if s.answers_for(7) != [err]:    # the duplicate's refusal only
        raise Fail(f"answers for 7: {s.answers_for(7)}")
    s.cancelled.pop(json.dumps(7))   # the next request with id 7 is a new one
    before = s.count_output()
    s.call(7, "echo", {"text": "again"})
    if _text(s.answer(7, start=before)) != "again":
        raise Fail(f"reuse of 7: {s.answers_for(7)}")
    s.finish()
    if s.started(7) != 2 or s.stats()["rejected"] != 1:
        raise Fail(f"started 7: {s.started(7)}; stats {s.stats()}")


# ---- trails/done_before_queue.txt ------------------------------------------------------

def eof_right_behind_the_last_answers():
    """No answer is lost at the close: requests piped in with end of
    input right behind them are all answered (P1), however their answers
    race the shutdown's wait for idleness.  The mutated model that leaves
    the in-flight count before queueing the answer loses one
    (done_before_queue.txt)."""
    for it in range(n_iter(50, 5)):
        s = AdvServer("--workers", "2", "--grace-ms", LONG_GRACE)
        n = 20
        s.send_raw(line(init_msg()) + line(INITIALIZED) +
                   b"".join(line(call_msg(k, "echo", {"text": f"e{k}"})) for k in range(n)))
        s.close_stdin()
        s.finish()
        for k in range(n):
            got = s.answers_for(k)
            if len(got) != 1 or _text(got[0]) != f"e{k}":
                raise Fail(f"run {it}: answer to {k}: {got}")
        if s.stats()["completed"] != n:
            raise Fail(f"run {it}: stats {s.stats()}")


# ---- trails/forget_late.txt ------------------------------------------------------------

def id_reused_the_moment_its_answer_arrives():
    """A client that reuses an id as soon as it reads the answer is never
    refused: the id is free before the answer is written.  The mutated
    model that frees it after queueing the answer refuses the reuse
    (forget_late.txt)."""
    s = AdvServer("--workers", "2")
    s.init()
    n = n_iter(200, 20)
    for i in range(n):
        s.call("same", "echo", {"text": f"x{i}"})
        s.wait_count(lambda m: "method" not in m and m.get("id") == "same", i + 1,
                     what=f"answer {i + 1} to 'same'")
    refused = [a for a in s.answers_for("same") if "error" in a]
    if refused:
        raise Fail(f"refused: {refused[:2]}")
    got = [_text(a) for a in s.answers_for("same")]
    if got != [f"x{i}" for i in range(n)]:
        raise Fail(f"answers to 'same' out of order or wrong: {got[:5]} ...")
    s.finish()


# ---- trails/writer_ignores_inline.txt, trails/no_join.txt ------------------------------

def eof_while_the_last_answer_is_written_inline():
    """Nothing is written after the output is closed, and nothing is cut
    short: on a quiet server the worker writes its own answer inline, and
    end of input arrives in the same write as the request, so the
    shutdown closes the writer while that write may be in progress (the
    answer is larger than the pipe, so part of it may go to the writer
    thread).  The answer arrives whole, once; exit 0.  The mutated models
    close the output under the inline write or under the writer thread
    (writer_ignores_inline.txt, no_join.txt)."""
    for it in range(n_iter(60, 6)):
        s = AdvServer("--workers", "1", "--grace-ms", LONG_GRACE)
        pad = (it % 3) * 100000
        s.send_raw(line(init_msg()) + line(INITIALIZED) +
                   line(call_msg(1, "echo", {"text": "w", "pad_bytes": pad})))
        s.close_stdin()
        s.finish()
        got = s.answers_for(1)
        if len(got) != 1 or _text(got[0]) != "w" + "x" * pad:
            raise Fail(f"run {it}: answer to 1: {len(got)} answers"
                       f"{', wrong text' if got else ''}")


# ---- trails/reuse_pid.txt ---------------------------------------------------------------

def late_answer_never_reaches_the_next_roots_waiter():
    """A client's answer reaches only the waiter of the request it
    answers: the roots/list of a cancelled call went out and got its
    notifications/cancelled; the next call's roots/list has a new id;
    the client's late answer to the first is dropped and the second
    waiter gets its own answer.  The mutated model reuses the id and
    hands the late answer to the wrong waiter (reuse_pid.txt)."""
    s = AdvServer("--workers", "2")
    s.init(caps={"roots": {}})
    seen = set()
    for it in range(n_iter(10, 3)):
        a, b = f"a{it}", f"b{it}"
        start = s.count_output()
        s.call(a, "roots", {"timeout_ms": 3600000})
        first = _wait_roots(s, 1, start)[0]["id"]
        s.cancel(a)
        s.wait_cleanup(a, "peer_cancelled")
        s.wait_for(lambda m: m.get("method") == "notifications/cancelled" and
                   (m.get("params") or {}).get("requestId") == first,
                   what=f"the cancel of roots/list {first}")
        start = s.count_output()
        s.call(b, "roots", {"timeout_ms": 3600000})
        second = _wait_roots(s, 1, start)[0]["id"]
        if second == first or second in seen or first in seen:
            raise Fail(f"run {it}: roots/list id reused: {first}, {second}, seen {seen}")
        seen.update((first, second))
        s.send_raw(line(_roots_answer(first, "file:///late")) +
                   line(_roots_answer(second, "file:///right")))
        got = _text(s.answer(b))
        if "file:///right" not in got or "late" in got:
            raise Fail(f"run {it}: the second waiter got {got}")
    s.finish()


# ---- trails/idle_nolock.txt ---------------------------------------------------------------

def eof_as_the_last_handler_finishes():
    """The shutdown's wait for idleness never misses the last request's
    wake-up: end of input while the only handler (a plain sleep, blind to
    its token) is about to finish, many times.  Each server exits after
    that handler, answered, long before its 60 s grace.  The mutated model
    loses the wake-up and sleeps out the grace (idle_nolock.txt)."""
    for it in range(n_iter(60, 6)):
        s = AdvServer("--workers", "2", "--grace-ms", LONG_GRACE)
        s.init()
        s.call(1, "sleep", {"ms": it % 4, "cancellable": False})
        if it % 2:
            s.wait_err("started 1")
        s.close_stdin()
        s.finish()
        got = s.answers_for(1)
        if len(got) != 1 or s.cleanups(1) != ["completed"]:
            raise Fail(f"run {it}: answer {got}, cleanups {s.cleanups(1)}")


# ---- trails/no_grace.txt ---------------------------------------------------------------------

def blind_handler_abandoned_at_the_grace():
    """Shutdown terminates: a handler that never looks at its token (a
    ten-minute spin) is abandoned at the 300 ms grace and counted, the
    process exits long before the spin would end, nothing is written for
    it.  The mutated model waits for it for ever (no_grace.txt)."""
    s = AdvServer("--workers", "2", "--grace-ms", "300", abandoned=1)
    s.init()
    s.call(1, "spin", {"ms": 600000})
    s.call(2, "sleep", {"ms": hold_ms(600000)})
    s.wait_err("started 1")
    s.wait_err("started 2")
    s.close_stdin()
    s.finish()
    if s.answers_for(1) or s.answers_for(2) or s.cleanups(2) != ["transport_closed"]:
        raise Fail(f"answers {s.answers_for(1)} {s.answers_for(2)}, "
                   f"cleanups of 2 {s.cleanups(2)}")
    st = s.stats()
    if st["inflight_left"] != 1:
        raise Fail(f"stats {st}")


SCENARIOS = [
    eof_while_roots_waiters_remove_themselves,
    eof_token_aware_handlers_end_before_the_grace,
    cancel_racing_answers_one_outcome_each,
    progress_stops_at_a_processed_cancel,
    duplicate_id_while_the_first_waits_on_roots,
    eof_right_behind_the_last_answers,
    id_reused_the_moment_its_answer_arrives,
    eof_while_the_last_answer_is_written_inline,
    late_answer_never_reaches_the_next_roots_waiter,
    eof_as_the_last_handler_finishes,
    blind_handler_abandoned_at_the_grace,
]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
