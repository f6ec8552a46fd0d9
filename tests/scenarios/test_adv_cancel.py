#!/usr/bin/env python3
"""test_adv_cancel.py - adversarial scenarios, cancellation and
server-to-client requests: cancel of running and queued requests, cancels
racing completion by the thousand, stale, repeated, unknown-then-reused
and malformed cancels, cancel of initialize, handlers that ignore their
token, cancel while a handler waits on the client; server-to-client
timeouts, late, duplicate and mistyped answers, answers racing close and
cancel, requests attempted after close, routing under concurrency.

Every server started is checked against DESIGN.md's invariants on all it
wrote (advlib.py).  Usage: MCP_EVERYTHING=... test_adv_cancel.py [--list]
[--repeat N] [NAME...]
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import (INITIALIZED, AdvServer, Fail, T, call_msg, cancel_msg, init_msg,  # noqa: E402
                    hold_ms, line, n_iter, run)

# Scenarios that expose a library bug, with the bug: they run, their
# failure is reported "# TODO" (XFAIL) and does not fail make check.
EXPECTED_FAILURES = {
}

CAPS = {"roots": {}, "sampling": {}, "elicitation": {"form": {}}}


def _no_answer(s, *ids):
    for rid in ids:
        if s.answers_for(rid):
            raise Fail(f"an answer was written for {rid!r}: {s.answers_for(rid)[0]}")


def _text(m):
    return m["result"]["content"][0]["text"]


def _outcomes_add_up(s, requests):
    """P8: every tools/call ended in exactly one way."""
    st = s.stats()
    total = st["completed"] + st["cancelled_peer"] + st["dropped_queued"] + \
        st["cancelled_transport"]
    if total != requests:
        raise Fail(f"{requests} requests, outcomes add up to {total}: {st}")


# ---- cancellation -------------------------------------------------------------------

def cancel_running_sleep_and_progress():
    """Peer cancel of running handlers (a sleep and a progress stream):
    nothing more is written for either, each cleans up once with
    peer_cancelled, and the progress stream stops for good."""
    s = AdvServer("--workers", "4")
    s.init()
    s.call(1, "sleep", {"ms": 600000})
    s.call(2, "progress", {"steps": 100000, "interval_ms": 5}, {"progressToken": "pc"})
    s.wait_err("started 1")
    s.wait_count(lambda m: m.get("method") == "notifications/progress", 3, what="progress")
    s.cancel(1)
    s.cancel(2)
    s.wait_cleanup(1, "peer_cancelled")
    s.wait_cleanup(2, "peer_cancelled")
    # The trace comes on stderr, the messages on stdout: a progress line
    # written before the cleanup may still be in the pipe.  A ping's
    # answer, written after, flushes them through.
    s.request("flush", "ping")
    s.answer("flush")
    n = len(s.notifications("notifications/progress"))
    time.sleep(T(0.3))
    if len(s.notifications("notifications/progress")) != n:
        raise Fail("progress kept coming after the handler's cleanup")
    s.call(3, "echo", {"text": "alive"})
    if _text(s.answer(3)) != "alive":
        raise Fail("connection unusable after cancel")
    s.finish()
    _no_answer(s, 1, 2)


def cancel_handler_ignoring_token():
    """A handler blind to its token (spin, plain sleep) is cancelled: it
    runs to the end and returns a normal result, which is suppressed
    (P2: whatever the handler returns); its worker is then free.
    The handlers are busy for 300 ms; a client stalled for longer sends
    its cancel after they returned, and the answers are then rightly
    written (cleanup reason "completed").  So each try is judged by the
    reason: peer_cancelled must mean no answer, completed an answer; and
    at least one of five tries must see both cancels land."""
    s = AdvServer("--workers", "2")
    s.init()
    tries, peer = [], 0
    for k in range(5):
        ids = (10 * k + 1, 10 * k + 2)
        s.call(ids[0], "spin", {"ms": hold_ms(300)})
        s.call(ids[1], "sleep", {"ms": hold_ms(300), "cancellable": False})
        for rid in ids:
            s.wait_err(f"started {rid}")
        for rid in ids:
            s.cancel(rid, racy=True)
        for rid in ids:
            s.wait_cleanup(rid)
        reasons = [s.cleanups(rid) for rid in ids]
        tries.append(reasons)
        for rid, r in zip(ids, reasons):
            if r == ["peer_cancelled"]:
                s.cancelled[json.dumps(rid)] = "strict"
                peer += 1
            elif r == ["completed"]:
                s.answer(rid)
            else:
                raise Fail(f"cleanups of {rid}: {r}")
        if reasons == [["peer_cancelled"]] * 2:
            break
    if tries[-1] != [["peer_cancelled"]] * 2:
        raise Fail(f"no try saw both cancels land: {tries}")
    s.call(3, "echo", {"text": "next"})
    s.answer(3)
    s.finish()   # its invariant check: no answer for a strictly cancelled id
    if s.stats()["cancelled_peer"] != peer:
        raise Fail(f"{peer} peer_cancelled cleanups, stats {s.stats()}")


def cancel_queued_never_runs():
    """Fifty requests queued behind a busy worker, all cancelled: none of
    their handlers starts, nothing is written for them, they count as
    dropped while queued; the busy one is still answered.  The one worker
    is held by a roots call whose roots/list the test answers only after
    the cancels: one reader reads them in order, so the queue cannot
    drain early however slow the machine."""
    s = AdvServer("--workers", "1")
    s.init(caps={"roots": {}})
    s.call(1, "roots", {"timeout_ms": 600000})
    r = _roots_request(s)
    s.send(*(call_msg(100 + i, "sleep", {"ms": 10}) for i in range(50)))
    s.send(*(cancel_msg(100 + i) for i in range(50)))
    for i in range(50):
        s.cancelled[json.dumps(100 + i)] = "strict"
    s.send({"jsonrpc": "2.0", "id": r["id"], "result": {"roots": []}})
    if "result" not in s.answer(1):
        raise Fail(f"the roots call failed: {s.answer(1)}")
    s.call(2, "echo", {"text": "after"})
    s.answer(2)
    s.finish()
    started = [ln for ln in s.trace_lines("started") if ln != "started 1" and ln != "started 2"]
    if started:
        raise Fail(f"cancelled queued requests ran: {started[:3]}")
    st = s.stats()
    if st["dropped_queued"] != 50:
        raise Fail(f"stats {st}")
    _outcomes_add_up(s, 52)


def cancel_racing_completion_thousands():
    """Thousands of cancels racing completion, in every order: cancel in
    the same write as its request, in the next write, after a short
    delay, and before the request (unknown then: ignored, so that
    request must be answered).  Zero or one answer for the racy ones,
    exactly one for the early-cancelled ones, outcomes add up (P8)."""
    s = AdvServer("--workers", "4")
    s.init()
    rng = random.Random(5)
    total = n_iter(4000, 200)
    must = []
    sent = 0
    i = 0
    while i < total:
        chunk = []
        later = []
        for _ in range(min(200, total - i)):
            rid = i
            i += 1
            tool, args = (("echo", {"text": "r"}) if rng.random() < 0.5
                          else ("sleep", {"ms": rng.choice((0, 0, 1, 2))}))
            mode = rng.randrange(4)
            if mode == 3:
                chunk.append(cancel_msg(rid))       # before: unknown, ignored
                chunk.append(call_msg(rid, tool, args))
                must.append(rid)
            else:
                chunk.append(call_msg(rid, tool, args))
                s.cancelled[json.dumps(rid)] = "racy"
                (chunk if mode == 0 else later).append(cancel_msg(rid))
        s.send(*chunk)
        if later:
            if rng.random() < 0.5:
                time.sleep(0.001)
            s.send(*later)
        sent += len(chunk)
    s.call("last", "echo", {"text": "end"})
    s.answer("last", timeout=60)
    for rid in must:
        s.answer(rid, timeout=30)
    s.finish()
    _outcomes_add_up(s, total + 1)


def cancel_stale_after_completion():
    """A cancel for a request already answered is ignored and not
    remembered: reusing the id afterwards works, and so does a second
    stale cancel after a cancelled request ended."""
    s = AdvServer()
    s.init()
    s.call(5, "echo", {"text": "first"})
    s.answer(5)
    s.send(cancel_msg(5))
    before = s.count_output()
    s.call(5, "sleep", {"ms": 100})
    m = s.wait_for(lambda m: m.get("id") == 5 and "result" in m, start=before,
                   what="answer to the reused id")
    if _text(m) != "slept 100":
        raise Fail(f"reused id: {m}")
    s.call(6, "sleep", {"ms": 600000})
    s.wait_err("started 6")
    s.cancel(6)
    s.wait_cleanup(6, "peer_cancelled")
    s.send(cancel_msg(6), cancel_msg(6))
    s.cancelled.pop(json.dumps(6))
    before = s.count_output()
    s.call(6, "echo", {"text": "again"})
    m = s.wait_for(lambda m: m.get("id") == 6, start=before, what="answer to reused 6")
    if _text(m) != "again":
        raise Fail(f"{m}")
    s.finish()
    if s.stats()["cancelled_peer"] != 1:
        raise Fail(f"stats {s.stats()}")


def cancel_repeated_for_one_request():
    """Twenty cancels for one running request in one write, five more
    later: one cleanup, one cancelled_peer, no output for any of them,
    and the id is reusable afterwards."""
    s = AdvServer()
    s.init()
    s.call(1, "sleep", {"ms": 600000})
    s.wait_err("started 1")
    s.send(*(cancel_msg(1, f"r{i}") for i in range(20)))
    s.cancelled[json.dumps(1)] = "strict"
    s.wait_cleanup(1, "peer_cancelled")
    s.send(*(cancel_msg(1) for _ in range(5)))
    s.call(2, "echo", {"text": "x"})
    s.answer(2)
    if len(s.cleanups(1)) != 1:
        raise Fail(f"cleanups: {s.cleanups(1)}")
    s.cancelled.pop(json.dumps(1))
    before = s.count_output()
    s.call(1, "echo", {"text": "reused"})
    if _text(s.wait_for(lambda m: m.get("id") == 1, start=before, what="reused 1")) != "reused":
        raise Fail("reuse after repeated cancels")
    s.finish()
    if s.stats()["cancelled_peer"] != 1:
        raise Fail(f"stats {s.stats()}")
    # Before the reuse, only the echo 2 was answered: nothing for 1.
    with s.cv:
        ones = [m for m in s.msgs if m and m.get("id") == 1]
    if len(ones) != 1:
        raise Fail(f"answers for 1: {ones}")


def cancel_unknown_then_reused_id():
    """Cancels for ids never seen (int and string forms) are ignored and
    not remembered: requests that use those ids later are all answered;
    a cancel for "7" does not touch request 7."""
    s = AdvServer()
    s.init()
    s.send(*(cancel_msg(100 + i) for i in range(100)))
    s.send(*(cancel_msg(str(100 + i)) for i in range(100)))
    s.send(*(call_msg(100 + i, "echo", {"text": str(i)}) for i in range(100)))
    for i in range(100):
        if _text(s.answer(100 + i)) != str(i):
            raise Fail(f"answer to {100 + i}")
    s.call(7, "sleep", {"ms": 300})
    s.wait_err("started 7")
    s.send(cancel_msg("7"), cancel_msg(7.0), cancel_msg([7]))
    if _text(s.answer(7)) != "slept 300":
        raise Fail("request 7 was cancelled by a cancel of another id form")
    s.finish()
    if s.stats()["cancelled_peer"]:
        raise Fail(f"stats {s.stats()}")


def cancel_with_malformed_params():
    """notifications/cancelled with malformed params of every kind is
    ignored (P2) and never answered, except where the envelope itself is
    invalid (-32600, id null); the request it seemed to aim at runs to
    completion."""
    s = AdvServer()
    s.init()
    s.call(1, "sleep", {"ms": 700})
    s.wait_err("started 1")
    base = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    silent = [dict(base), dict(base, params={}), dict(base, params=[]), dict(base, params=[1]),
              dict(base, params={"requestId": None}), dict(base, params={"requestId": 1.0}),
              dict(base, params={"requestId": "1"}), dict(base, params={"requestId": True}),
              dict(base, params={"requestId": [1]}), dict(base, params={"requestId": {"id": 1}}),
              dict(base, params={"requestid": 1}), dict(base, params={"id": 1}),
              dict(base, params={"requestId": 1e300}), dict(base, params={"requestId": -1}),
              dict(base, params={"requestId": "x" * 10000})]
    before = s.count_output()
    s.send(*silent)
    s.send_raw(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.00}}\n'
               b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e0}}\n')
    s.send_raw(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"1"}\n'
               b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":1}\n'
               b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":null}\n')
    s.send({"jsonrpc": "2.0", "id": "as-request", "method": "notifications/cancelled",
            "params": {"requestId": 1}})
    m = s.answer(1, timeout=10)
    if _text(m) != "slept 700":
        raise Fail(f"request 1 was disturbed: {m}")
    s.finish()
    out = s.snapshot()[before:]
    envelope = [x for x in out if x.get("id") is None]
    if len(envelope) != 3 or any(x["error"]["code"] != -32600 for x in envelope):
        raise Fail(f"envelope errors: {envelope}")
    as_req = s.answers_for("as-request")
    if len(as_req) != 1 or "error" not in as_req[0]:
        raise Fail(f"a cancel sent as a request: {as_req}")
    if s.cleanups(1) != ["completed"]:
        raise Fail(f"cleanups of 1: {s.cleanups(1)}")


def cancel_of_initialize():
    """initialize cannot be cancelled (P2): a cancel right behind it in
    the same write changes nothing, it is answered exactly once and the
    session works; the same for integer id 0."""
    for rid in ("i", 0):
        s = AdvServer()
        s.send(init_msg(rid), cancel_msg(rid), INITIALIZED, call_msg(1, "echo", {"text": "ok"}))
        a = s.answer(rid)
        if "result" not in a:
            raise Fail(f"initialize: {a}")
        s.answer(1)
        s.finish()
        if len(s.answers_for(rid)) != 1:
            raise Fail("initialize answered twice")


def cancel_while_waiting_on_client():
    """A handler blocked on roots/list, sampling and elicitation is
    cancelled: each outstanding server-to-client request gets its own
    notifications/cancelled (by the server's id), nothing is written for
    the tool calls, and the late answers are ignored silently."""
    s = AdvServer("--workers", "4")
    s.init(caps=CAPS)
    s.call(1, "roots", {"timeout_ms": 600000})
    s.call(2, "test_sampling", {"prompt": "hi"})
    s.call(3, "test_elicitation", {"message": "who?"})
    s.wait_count(lambda m: "method" in m and "id" in m, 3, what="server requests")
    reqs = {m["method"]: m["id"] for m in s.server_requests()}
    for rid in (1, 2, 3):
        s.cancel(rid)
    for rid in (1, 2, 3):
        s.wait_cleanup(rid, "peer_cancelled")
    s.wait_count(lambda m: m.get("method") == "notifications/cancelled", 3,
                 what="notifications/cancelled")
    got = sorted(m["params"]["requestId"] for m in s.notifications("notifications/cancelled"))
    if got != sorted(reqs.values()):
        raise Fail(f"cancelled {got}, want {sorted(reqs.values())}")
    before = s.count_output()
    for sid in reqs.values():
        s.send({"jsonrpc": "2.0", "id": sid, "result": {"roots": []}})
    s.call(4, "echo", {"text": "x"})
    s.answer(4)
    if s.count_output() != before + 1:
        raise Fail(f"output for late answers: {s.snapshot()[before:]}")
    s.finish()
    _no_answer(s, 1, 2, 3)


def cancel_then_eof_same_write():
    """A cancel and EOF in one write: the cancel is processed first, so
    the handler ends with peer_cancelled, nothing is written, exit 0."""
    for _ in range(n_iter(10, 2)):
        s = AdvServer()
        s.init()
        s.call(1, "sleep", {"ms": 600000})
        s.wait_err("started 1")
        s.cancel(1)
        s.close_stdin()
        s.finish()
        if s.cleanups(1) != ["peer_cancelled"]:
            raise Fail(f"cleanups {s.cleanups(1)}")


def cancel_inside_2025_03_26_batch():
    """2025-03-26 batches: a cancel inside the batch for a request of the
    same batch, and one for a request of an earlier batch: the batch
    answer is one array without the cancelled requests."""
    s = AdvServer()
    s.init(version="2025-03-26")
    s.send([call_msg(1, "sleep", {"ms": 600000}), call_msg(2, "echo", {"text": "b"})])
    s.wait_err("started 1")
    s.send([call_msg(3, "sleep", {"ms": 600000}), cancel_msg(3), cancel_msg(1),
            call_msg(4, "echo", {"text": "d"})])
    s.cancelled[json.dumps(1)] = "strict"
    s.cancelled[json.dumps(3)] = "racy"
    arrays = []
    end = time.monotonic() + T(10)
    while len(arrays) < 2 and time.monotonic() < end:
        arrays = [m for m in s.snapshot() if isinstance(m, list)]
        time.sleep(0.02)
    ids = sorted(sorted(x["id"] for x in a) for a in arrays)
    if ids != [[2], [4]]:
        raise Fail(f"batch answers {arrays}")
    s.finish()


# ---- server-to-client requests -------------------------------------------------------

def _roots_request(s, start=0):
    return s.wait_for(lambda m: m.get("method") == "roots/list" and "id" in m, start=start,
                      what="roots/list")


def s2c_timeout_then_late_answer():
    """roots/list the client never answers: after timeout_ms the server
    cancels its own request (notifications/cancelled, reason timeout)
    and the tool reports the failure; the late answer is ignored; the
    next roots/list has a fresh id and works."""
    s = AdvServer()
    s.init(caps={"roots": {}})
    s.call(1, "roots", {"timeout_ms": 200})
    r = _roots_request(s)
    a = s.answer(1)
    if not a["result"].get("isError"):
        raise Fail(f"timed-out roots: {a}")
    c = s.wait_for(lambda m: m.get("method") == "notifications/cancelled", what="cancel")
    if c["params"]["requestId"] != r["id"]:
        raise Fail(f"cancelled {c}, want request {r['id']}")
    before = s.count_output()
    s.send({"jsonrpc": "2.0", "id": r["id"], "result": {"roots": []}})
    s.call(2, "roots", {"timeout_ms": 10000})
    r2 = _roots_request(s, start=before)
    if r2["id"] == r["id"]:
        raise Fail("the server reused its request id")
    s.send({"jsonrpc": "2.0", "id": r2["id"], "result": {"roots": [{"uri": "file:///b"}]}})
    if "file:///b" not in _text(s.answer(2)):
        raise Fail(f"second roots: {s.answer(2)}")
    s.finish()


def s2c_duplicate_answers():
    """The client answers one roots/list three times (two in one write,
    one after the tool answered): the first wins, the rest are ignored
    without output."""
    s = AdvServer()
    s.init(caps={"roots": {}})
    s.call(1, "roots", {"timeout_ms": 10000})
    r = _roots_request(s)
    s.send({"jsonrpc": "2.0", "id": r["id"], "result": {"roots": [{"uri": "file:///first"}]}},
           {"jsonrpc": "2.0", "id": r["id"], "result": {"roots": [{"uri": "file:///second"}]}})
    if "file:///first" not in _text(s.answer(1)):
        raise Fail(f"{s.answer(1)}")
    before = s.count_output()
    s.send({"jsonrpc": "2.0", "id": r["id"], "error": {"code": -1, "message": "late"}})
    s.call(2, "echo", {"text": "x"})
    s.answer(2)
    if s.count_output() != before + 1:
        raise Fail(f"output for a duplicate answer: {s.snapshot()[before:]}")
    s.finish()


def s2c_answers_with_wrong_id_types():
    """Answers to roots/list whose id has the wrong type or value (string,
    float, array, object, null, bool, unknown, negative, huge) never
    resolve the pending request and are never answered; the right
    answer then does."""
    s = AdvServer()
    s.init(caps={"roots": {}})
    s.call(1, "roots", {"timeout_ms": 20000})
    r = _roots_request(s)
    rid = r["id"]
    before = s.count_output()
    res = {"roots": [{"uri": "file:///wrong"}]}
    for bad in (str(rid), float(rid), [rid], {"id": rid}, None, True, rid + 1000, -rid,
                2 ** 63 - 1, str(rid) + " "):
        s.send({"jsonrpc": "2.0", "id": bad, "result": res})
    s.send_raw(b'{"jsonrpc":"2.0","id":%d.0,"result":{"roots":[]}}\n' % rid)
    s.send_raw(b'{"jsonrpc":"2.0","id":%de0,"result":{"roots":[]}}\n' % rid)
    s.send_raw(b'{"jsonrpc":"2.0","result":{"roots":[]}}\n')
    time.sleep(T(0.3))
    if s.answers_for(1) or s.count_output() != before:
        raise Fail(f"a mistyped answer had an effect: {s.snapshot()[before:]}")
    s.send({"jsonrpc": "2.0", "id": rid, "result": {"roots": [{"uri": "file:///right"}]}})
    if "file:///right" not in _text(s.answer(1)):
        raise Fail(f"{s.answer(1)}")
    s.finish()


def s2c_error_and_malformed_answers():
    """The client answers roots/list with an error, with a result that is
    not an object, and with no jsonrpc member: the tool fails cleanly
    each time (isError), with exactly one answer."""
    s = AdvServer()
    s.init(caps={"roots": {}})
    bodies = [{"error": {"code": -32601, "message": "no roots here"}},
              {"result": 5},
              {"result": None},
              {"error": "not an object"}]
    for k, body in enumerate(bodies):
        before = s.count_output()
        s.call(k, "roots", {"timeout_ms": 10000})
        r = _roots_request(s, start=before)
        s.send(dict({"jsonrpc": "2.0", "id": r["id"]}, **body))
        a = s.answer(k)
        if not a.get("result", {}).get("isError"):
            raise Fail(f"answer {body}: {a}")
    before = s.count_output()
    s.call(9, "roots", {"timeout_ms": 10000})
    r = _roots_request(s, start=before)
    s.send({"id": r["id"], "result": {"roots": []}})
    a = s.answer(9)
    if len(s.answers_for(9)) != 1:
        raise Fail(f"{a}")
    s.finish()


def s2c_answer_racing_close():
    """The client answers roots/list and closes stdin in one write, many
    times: the answer is read before EOF, so the handler gets it and its
    result is written (P1), exactly once."""
    for i in range(n_iter(40, 4)):
        s = AdvServer()
        s.init(caps={"roots": {}})
        s.call(1, "roots", {"timeout_ms": 60000})
        r = _roots_request(s)
        s.send_raw(line({"jsonrpc": "2.0", "id": r["id"],
                         "result": {"roots": [{"uri": f"file:///{i}"}]}}))
        s.close_stdin()
        s.finish()
        a = s.answers_for(1)
        if len(a) != 1 or f"file:///{i}" not in _text(a[0]):
            raise Fail(f"run {i}: answer {a}")


def s2c_cancel_racing_answer():
    """A cancel of the tool call and the answer to its roots/list in one
    write, both orders, many times: cancel first means nothing at all is
    written for the call; answer first means zero or one answer; never
    a crash, never two."""
    s = AdvServer("--workers", "4")
    s.init(caps={"roots": {}})
    for i in range(n_iter(100, 10)):
        before = s.count_output()
        s.call(i, "roots", {"timeout_ms": 60000})
        r = _roots_request(s, start=before)
        ans = line({"jsonrpc": "2.0", "id": r["id"], "result": {"roots": []}})
        if i % 2:
            s.cancelled[json.dumps(i)] = "strict"
            s.send_raw(line(cancel_msg(i)) + ans)
        else:
            s.cancelled[json.dumps(i)] = "racy"
            s.send_raw(ans + line(cancel_msg(i)))
        s.wait_cleanup(i)
    s.call("z", "echo", {"text": "z"})
    s.answer("z")
    s.finish()


def s2c_request_after_close():
    """A roots call still queued when EOF arrives runs with its token
    fired: the roots/list request is never written (no request to a
    client that has gone), nothing is answered, exit is prompt.  The one
    worker is held by a sleep that only the close can end, so the roots
    calls are still queued when EOF is read, however slow the machine."""
    s = AdvServer("--workers", "1", "--grace-ms", "3000")
    s.init(caps={"roots": {}})
    s.call(1, "sleep", {"ms": 600000})
    s.wait_err("started 1")
    s.call(2, "roots", {"timeout_ms": 600000})
    s.call(3, "roots", {"timeout_ms": 600000})
    s.close_stdin()
    c, took = s.wait_exit()
    if took > T(2.0):
        raise Fail(f"exit took {took:.2f} s")
    s.finish()
    if s.server_requests("roots/list"):
        raise Fail("roots/list written after close")
    _no_answer(s, 2, 3)
    for rid in (2, 3):
        if s.cleanups(rid) != ["transport_closed"]:
            raise Fail(f"cleanups of {rid}: {s.cleanups(rid)}")


def s2c_routing_under_concurrency():
    """Forty handlers each waiting on its own roots/list, answered in
    reverse order with distinct roots: every handler gets its own
    answer, the server's ids are distinct."""
    n = 40
    s = AdvServer("--workers", "48")
    s.init(caps={"roots": {}})
    ids = {}
    for k in range(n):
        before = s.count_output()
        s.call(k, "roots", {"timeout_ms": 60000})
        ids[k] = _roots_request(s, start=before)["id"]
    if len(set(ids.values())) != n:
        raise Fail("server request ids collide")
    s.send(*({"jsonrpc": "2.0", "id": ids[k], "result": {"roots": [{"uri": f"file:///r{k}"}]}}
             for k in reversed(range(n))))
    for k in range(n):
        if f"file:///r{k}\"" not in _text(s.answer(k)):
            raise Fail(f"handler {k} got {_text(s.answer(k))}")
    s.finish()


def s2c_cancel_never_names_an_unsent_request():
    """A roots call is cancelled while its roots/list still waits in the
    writer's queue (the client is not reading; 16 MiB of answers are
    ahead of it): the queued roots/list is rightly discarded (P2), and
    then no notifications/cancelled may name it either, since the client
    never saw that request."""
    s = AdvServer("--workers", "4", read=False)
    s.send(init_msg(caps={"roots": {}}), INITIALIZED)
    s.send(*(call_msg(f"big{k}", "echo", {"text": "b", "pad_bytes": 8 << 20}) for k in range(2)))
    s.wait_err('cleanup "big1"')
    s.call(1, "roots", {"timeout_ms": 60000})
    s.wait_err("started 1")
    time.sleep(T(0.5))             # its roots/list is queued behind the big answers
    s.cancel(1)
    s.wait_cleanup(1, "peer_cancelled")
    s.close_stdin()
    for raw in s.p.stdout:         # now read everything, as the harness would
        s.lines.append((time.monotonic(), raw))
        try:
            s.msgs.append(json.loads(raw))
        except ValueError:
            s.msgs.append(None)
    s.finish()


def task_trace_names_the_request_id():
    """--trace names a request by its JSON id from start to cleanup (the
    fixture contract), also for a 2025-11-25 task-augmented call, whose
    answer (the task) goes out before the handler ends."""
    s = AdvServer()
    s.init()
    s.request(1, "tools/call", {"name": "sleep", "arguments": {"ms": 50}, "task": {"ttl": 60000}})
    s.answer(1)
    s.wait_err("cleanup ")
    s.finish()
    if s.cleanups(1) != ["completed"]:
        raise Fail(f"trace: {s.trace_lines('started')} {s.trace_lines('cleanup')}")


SCENARIOS = [
    cancel_running_sleep_and_progress,
    cancel_handler_ignoring_token,
    cancel_queued_never_runs,
    cancel_racing_completion_thousands,
    cancel_stale_after_completion,
    cancel_repeated_for_one_request,
    cancel_unknown_then_reused_id,
    cancel_with_malformed_params,
    cancel_of_initialize,
    cancel_while_waiting_on_client,
    cancel_then_eof_same_write,
    cancel_inside_2025_03_26_batch,
    s2c_timeout_then_late_answer,
    s2c_duplicate_answers,
    s2c_answers_with_wrong_id_types,
    s2c_error_and_malformed_answers,
    s2c_answer_racing_close,
    s2c_cancel_racing_answer,
    s2c_request_after_close,
    s2c_routing_under_concurrency,
    s2c_cancel_never_names_an_unsent_request,
    task_trace_names_the_request_id,
]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
