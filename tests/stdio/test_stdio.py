#!/usr/bin/env python3
"""test_stdio.py - scenario tests of mcp-everything over real pipes.

Each scenario spawns the real binary through the harness (harness.py),
talks newline-delimited JSON-RPC to it, and checks the invariants of
DESIGN.md on everything it printed plus its own expectations.

Usage: MCP_EVERYTHING=path/to/mcp-everything test_stdio.py [--list] [--repeat N] [NAME...]
Prints TAP: one test point per scenario (tests/lib/tap.py).
Timeouts are generous upper bounds (the machine is shared): they catch a
hang, they do not measure speed.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, LATEST, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)


# ---- scenarios -------------------------------------------------------------

def eof_cancel_aware_handler():
    """EOF while a cancellation-aware handler runs: prompt exit, one cleanup
    with reason transport_closed, nothing written for it.  (The grace is
    long so that a server that waits for it, 30 s, is far from a correct
    one, a few ms, whatever the load: the bound only has to fall between.)"""
    s = Server("--trace", "--grace-ms", "30000")
    s.init()
    s.call(1, "sleep", {"ms": 600000})
    s.wait_err("started 1")
    s.close_stdin()
    code, took = s.wait_exit()
    if code != 0 or took > 5.0:
        raise Fail(f"exit {code} after {took:.2f} s")
    cleanups = [l for l in s.err if l.startswith("cleanup 1 ")]
    if cleanups != ["cleanup 1 transport_closed"]:
        raise Fail(f"cleanup lines: {cleanups}")
    if any(m and m.get("id") == 1 for m in s.msgs):
        raise Fail("an answer was written for the cut-off request")
    s.check_invariants()


def eof_two_handlers_blocked_on_roots():
    """Two handlers blocked on roots/list the client never answers, then
    EOF: both wake, no crash, prompt exit (well before the 30 s grace)."""
    s = Server("--trace", "--stats", "--grace-ms", "30000")
    s.init(caps={"roots": {}})
    s.call(1, "roots", {"timeout_ms": 600000})
    s.call(2, "roots", {"timeout_ms": 600000})
    s.wait_for(lambda m: m.get("method") == "roots/list" and m["id"] != s.msgs[0].get("id"),
               what="roots/list")
    with s.cv:
        n = sum(1 for m in s.msgs if m and m.get("method") == "roots/list")
    if n < 2:
        s.wait_for(lambda m: sum(1 for x in s.msgs if x and x.get("method") == "roots/list") >= 2,
                   what="two roots/list requests")
    s.close_stdin()
    code, took = s.wait_exit()
    if code != 0 or took > 5.0:
        raise Fail(f"exit {code} after {took:.2f} s")
    st = s.stats()
    if st["abandoned"] or st["inflight_left"] or st["pending_left"]:
        raise Fail(f"stats {st}")
    if sorted(l for l in s.err if l.startswith("cleanup")) != [
            "cleanup 1 transport_closed", "cleanup 2 transport_closed"]:
        raise Fail(f"cleanups: {[l for l in s.err if l.startswith('cleanup')]}")
    s.check_invariants()


def waiter_not_polling_token_wakes_on_close():
    """A handler waiting on a server-to-client answer wakes on close even
    with a huge timeout (the pending table is failed, not only tokens)."""
    s = Server("--trace", "--grace-ms", "5000")
    s.init(caps={"roots": {}})
    s.call(7, "roots", {"timeout_ms": 3600000})
    s.wait_for(lambda m: m.get("method") == "roots/list", what="roots/list")
    s.close_stdin()
    code, took = s.wait_exit()
    if code != 0 or took > 2.0:
        raise Fail(f"exit {code} after {took:.2f} s (grace 5 s: it must not wait for it)")
    if any(m and m.get("id") == 7 for m in s.msgs):
        raise Fail("an answer was written after close")
    s.check_invariants()


def peer_cancel_running_and_queued():
    """Peer cancel of a running and of a queued request: nothing written for
    either; the next request works."""
    s = Server("--trace", "--workers", "1")
    s.init()
    s.call(1, "sleep", {"ms": 60000})
    s.wait_err("started 1")
    s.call(2, "sleep", {"ms": 60000})   # queued behind 1 (one worker)
    s.cancel(2)
    s.cancel(1)
    s.wait_err("cleanup 1 peer_cancelled")
    s.call(3, "echo", {"text": "after"})
    m = s.answer(3)
    if m["result"]["content"][0]["text"] != "after":
        raise Fail(f"echo after cancel: {m}")
    s.none_for(lambda m: m.get("id") in (1, 2), 0.3, "answer for a cancelled request")
    if any(l.startswith("started 2") for l in s.err):
        raise Fail("the queued request's handler ran although it was cancelled first")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def cancel_racing_completion():
    """Cancels racing completion, hundreds of times: zero or one answer per
    id, never two; the connection stays usable."""
    s = Server("--workers", "2")
    s.init()
    batch = []
    for i in range(600):
        tool, args = ("echo", {"text": "x"}) if i % 2 else ("sleep", {"ms": i % 3})
        batch.append({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}})
        batch.append({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": i}})
        s.cancelled[json.dumps(i)] = "racy"
    s.send(*batch)
    s.call("last", "echo", {"text": "still here"})
    s.answer("last", timeout=30)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def one_shot_pipe():
    """initialize, initialized and two echo calls written at once, stdin
    closed: all three answered."""
    s = Server()
    s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": {}}},
           {"jsonrpc": "2.0", "method": "notifications/initialized"},
           {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "a"}}},
           {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "b"}}})
    s.close_stdin()
    code, _ = s.wait_exit()
    for rid in (0, 1, 2):
        s.answer(rid, timeout=5)
    if code != 0:
        raise Fail(f"exit {code}")
    s.check_invariants()


def client_stops_reading_then_closes():
    """The client stops reading stdout (the pipe fills) and closes stdin:
    the server still exits: the blocked flush is given up after the 200 ms
    grace (plus the writer's flush window); one that never gives up hangs."""
    s = Server("--grace-ms", "200", read=False)   # the pipe fills up
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": {}}}
    s.send(init)
    for i in range(1, 6):
        s.call(i, "echo", {"text": "x", "pad_bytes": 1000000})
    time.sleep(0.5)
    s.close_stdin()
    code, took = s.wait_exit(timeout=20)
    if took > 5.0:
        raise Fail(f"took {took:.2f} s to exit (grace 0.2 s)")
    if code != 0:
        raise Fail(f"exit {code}")


def client_closes_read_end():
    """The client closes its read end and keeps sending: no SIGPIPE death,
    the server notices the write error and exits 0."""
    s = Server(read=False)
    s.p.stdout.close()           # our read end is gone: the server gets EPIPE
    try:
        s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": LATEST, "capabilities": {}}})
        for i in range(20):
            s.call(i + 1, "echo", {"text": "x"})
            time.sleep(0.01)
    except BrokenPipeError:
        pass                     # the server already left, as it should
    code, _ = s.wait_exit()
    if code != 0:
        raise Fail(f"exit status {code} (negative: killed by signal {-code})")


def malformed_input():
    """Malformed input gets the right error (or silence) and the connection
    stays usable."""
    s = Server("--max-message", "4096")
    s.init()
    # (line, code, the id of the answer): an invalid request is answered
    # under its own id when that id is valid, null only when it cannot be
    # read or is invalid (JSON-RPC 2.0 section 5).
    cases = [
        (b"{not json}\n", -32700, None),
        (b'{"jsonrpc":"2.0","id":5,"method":"ping","x":"\xff"}\n', -32700, None),
        (b"\xc3\x28 outside\n", -32700, None),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}\n', -32600, 1),
        (b'{"id":1,"method":"ping"}\n', -32600, 1),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n', -32600, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', -32600, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', -32600, None),
        (b'{"jsonrpc":"2.0","id":{},"method":"ping"}\n', -32600, None),
        (b'{"jsonrpc":"2.0","id":[],"method":"ping"}\n', -32600, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', -32600, None),
        (b'{"jsonrpc":"2.0","id":1,"method":7}\n', -32600, 1),
        (b'{"jsonrpc":"2.0","method":"x","params":3}\n', -32600, None),
        (b"[" * 200 + b"]" * 200 + b"\n", -32600, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' + b"y" * 8000 + b'"}\n', -32600,
         None),
    ]
    for raw, code, rid in cases:
        before = len(s.msgs)
        s.send_raw(raw)
        m = s.wait_for(lambda m: "method" not in m and m.get("id") == rid and "error" in m,
                       what=f"error for {raw[:40]!r}", start=before)
        if m["error"]["code"] != code:
            raise Fail(f"{raw[:40]!r}: got {m['error']}, want {code}")
        s.call(f"after-{before}", "echo", {"text": "ok"})
        s.answer(f"after-{before}")
    # unknown method: -32601 on the request's id; unknown notification and a
    # response-shaped message: silence; CRLF and blank lines accepted.
    s.send_raw(b'{"jsonrpc":"2.0","id":"u","method":"no/such"}\r\n\r\n\n')
    if s.answer("u")["error"]["code"] != -32601:
        raise Fail("unknown method")
    before = len(s.msgs)
    s.send_raw(b'{"jsonrpc":"2.0","method":"notifications/no_such"}\n'
               b'{"jsonrpc":"2.0","id":424242,"result":{}}\n')
    s.call("z", "echo", {"text": "z"})
    s.answer("z")
    if len(s.msgs) != before + 1:
        raise Fail(f"unexpected output: {s.msgs[before:]}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def id_fidelity():
    """Ids are echoed exactly; "0" and 0 differ; a duplicate in-flight id is
    refused under that id without touching the first request."""
    s = Server("--trace")
    s.init()
    ids = [0, "", "0", 9007199254740993, "ünï→code"]
    for i in ids:
        s.call(i, "echo", {"text": repr(i)})
    for i in ids:
        m = s.answer(i)
        if m["result"]["content"][0]["text"] != repr(i):
            raise Fail(f"id {i!r} got {m}")
    raw = [l for _, l in s.lines if b"9007199254740993" in l]
    if not raw or b'"id":9007199254740993' not in raw[0]:
        raise Fail(f"2^53+1 not echoed exactly: {raw[:1]}")
    s.call(42, "sleep", {"ms": 60000})
    s.wait_err("started 42")
    s.call(42, "echo", {"text": "dup"})
    m = s.wait_for(lambda m: m.get("id") == 42 and "error" in m, what="duplicate error")
    if m["error"]["code"] != -32600:
        raise Fail(f"duplicate: {m}")
    s.cancel(42)                 # the first is untouched and still cancellable
    s.wait_err("cleanup 42 peer_cancelled")
    before = len(s.msgs)
    s.call(42, "echo", {"text": "reused"})   # legal reuse after it ended
    if s.answer(42, start=before)["result"]["content"][0]["text"] != "reused":
        raise Fail("reuse after completion")
    s.cancelled.pop(json.dumps(42))
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def ping_while_workers_busy():
    """ping is answered while every worker is busy."""
    s = Server("--trace", "--workers", "1")
    s.init()
    s.call(1, "sleep", {"ms": 60000})
    s.wait_err("started 1")
    s.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    s.answer("p", timeout=5)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def handlers_blocked_outside_the_library_do_not_starve_the_queue():
    """The pool keeps no more workers runnable than CPUs, but a handler
    blocked in a call the library cannot see (a plain sleep) must not hold
    the queue: with as many such handlers as CPUs (and more), an echo sent
    behind them is answered while they all still sleep.  The sleeps last
    30 s, so no load makes them end first; at EOF they are abandoned after
    a 100 ms grace."""
    ncpu = os.cpu_count() or 1
    blocked = ncpu + 1
    s = Server("--trace", "--stats", "--workers", str(blocked + 2), "--grace-ms", "100")
    s.init()
    for i in range(blocked):
        s.call(100 + i, "sleep", {"ms": 30000, "cancellable": False})
    for i in range(blocked):
        s.wait_err(f"started {100 + i}")
    s.call(1, "echo", {"text": "through"})
    s.answer(1, timeout=20)
    with s.cv:
        msgs = list(s.msgs)
    at = next(k for k, m in enumerate(msgs) if isinstance(m, dict) and m.get("id") == 1)
    early = [m for m in msgs[:at] if isinstance(m, dict) and
             isinstance(m.get("id"), int) and m["id"] >= 100 and "result" in m]
    if early:
        raise Fail(f"the echo was answered only after a sleep ended: {early[0]}")
    s.close_stdin()
    code, _ = s.wait_exit()
    if code != 0 or s.stats()["abandoned"] != blocked:
        raise Fail(f"exit {code}, stats {s.stats()}")
    s.check_invariants()


def deep_queue_requests_keep_ids_and_params():
    """Past a queue depth of 256 the engine keeps a queued request as its
    line and parses it again on the worker (a tree costs ~30 times the
    line).  600 echo calls queued behind a busy worker, with ids and texts
    that need escapes, non-ASCII, integers and strings: every one is
    answered once, with its exact id and its own text."""
    s = Server("--trace", "--workers", "1")
    s.init()
    s.call(1, "spin", {"ms": 1500})
    s.wait_err("started 1")
    calls = []
    for i in range(600):
        rid = i + 1000 if i % 2 else f"q\"{i}\\é\u2028"
        text = f"t{i} \"quoted\" \\ ü \U0001F600 " + "x" * (i % 50)
        calls.append((rid, text))
    s.send(*[{"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": "echo", "arguments": {"text": text}}} for rid, text in calls])
    for rid, text in calls:
        a = s.answer(rid, timeout=60)
        got = a["result"]["content"][0]["text"]
        if got != text:
            raise Fail(f"answer to {rid!r}: {got!r}, sent {text!r}")
    s.answer(1, timeout=60)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def sigterm_with_handler_running():
    """SIGTERM with a handler running: orderly exit 0, well before the 30 s
    grace (the handler is cancellation-aware)."""
    s = Server("--trace", "--grace-ms", "30000")
    s.init()
    s.call(1, "sleep", {"ms": 600000})
    s.wait_err("started 1")
    s.p.send_signal(signal.SIGTERM)
    code, took = s.wait_exit()
    if code != 0 or took > 5.0:
        raise Fail(f"exit {code} after {took:.2f} s")
    s.wait_err("cleanup 1 shutdown")
    s.check_invariants()


def spin_abandoned_at_deadline():
    """A handler that ignores cancellation is abandoned at the deadline; the
    process still exits promptly and counts it.  A correct exit takes the
    300 ms grace plus teardown (and, under ThreadSanitizer, the 1 s it
    sleeps at exit while the abandoned thread lives); one that waits for
    the spin takes 60 s."""
    s = Server("--trace", "--grace-ms", "300", "--stats")
    s.init()
    s.call(1, "spin", {"ms": 60000})
    s.wait_err("started 1")
    s.close_stdin()
    code, took = s.wait_exit(timeout=20)
    if code != 0 or took > 10.0:
        raise Fail(f"exit {code} after {took:.2f} s")
    s.wait_err("stats ")
    if s.stats()["abandoned"] != 1:
        raise Fail(f"stats {s.stats()}")
    s.check_invariants()


def progress_before_answer():
    """Progress notifications, increasing, all before the answer."""
    s = Server()
    s.init()
    s.call(1, "progress", {"steps": 3, "interval_ms": 5}, {"progressToken": "tok"})
    s.answer(1)
    with s.cv:
        seen = [m for m in s.msgs if m and (m.get("id") == 1 or
                                             m.get("method") == "notifications/progress")]
    values = [m["params"]["progress"] for m in seen[:-1]]
    if values != [1, 2, 3] or seen[-1].get("id") != 1:
        raise Fail(f"order: {seen}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def batches_per_revision():
    """A batch is one -32600 unless the session negotiated 2025-03-26, where
    it is answered as one array."""
    s = Server()
    s.init()
    s.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    m = s.wait_for(lambda m: m.get("id") is None and "error" in m, what="batch refusal")
    if m["error"]["code"] != -32600:
        raise Fail(f"{m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()
    old = Server()
    old.init(version="2025-03-26")
    old.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "b"}}}])
    arr = old.wait_for(lambda m: isinstance(m, list), what="batch answer")
    if sorted(x["id"] for x in arr) != [1, 2]:
        raise Fail(f"batch answer {arr}")
    old.close_stdin()
    old.wait_exit()


def every_method_and_error_path():
    """Every server-side method of 2025-11-25 over pipes, with its error
    paths; with MCP_SCHEMA_RECORD set, every answer is schema-checked."""
    s = Server()
    s.init(caps={"roots": {}, "sampling": {}, "elicitation": {"form": {}}})
    n = [100]

    def req(method, params=None):
        n[0] += 1
        s.send({"jsonrpc": "2.0", "id": n[0], "method": method, "params": params or {}})
        return s.answer(n[0])

    def ok(method, params=None, key=None):
        m = req(method, params)
        if "result" not in m or (key and key not in m["result"]):
            raise Fail(f"{method}: {m}")
        return m["result"]

    def err(method, params, code):
        m = req(method, params)
        if m.get("error", {}).get("code") != code:
            raise Fail(f"{method} {params}: want {code}, got {m}")

    ok("ping")
    ok("logging/setLevel", {"level": "debug"})
    err("logging/setLevel", {"level": "loud"}, -32602)
    ok("tools/list", key="tools")
    err("tools/list", {"cursor": "bogus"}, -32602)
    err("tools/call", {"name": "no_such_tool"}, -32602)
    err("tools/call", {"name": "echo", "arguments": 5}, -32602)
    ok("resources/list", key="resources")
    ok("resources/templates/list", key="resourceTemplates")
    ok("resources/read", {"uri": "test://static-text"}, "contents")
    ok("resources/read", {"uri": "test://template/7/data"}, "contents")
    err("resources/read", {"uri": "test://missing"}, -32002)
    err("resources/read", {}, -32602)
    ok("resources/subscribe", {"uri": "test://watched-resource"})
    ok("resources/unsubscribe", {"uri": "test://watched-resource"})
    err("resources/subscribe", {"uri": "test://missing"}, -32002)
    ok("prompts/list", key="prompts")
    ok("prompts/get", {"name": "test_simple_prompt"}, "messages")
    err("prompts/get", {"name": "no_such_prompt"}, -32602)
    err("prompts/get", {"name": "test_prompt_with_arguments", "arguments": {}}, -32602)
    ok("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                               "argument": {"name": "arg1", "value": "t"}}, "completion")
    err("completion/complete", {"ref": {"type": "ref/prompt", "name": "nope"},
                                "argument": {"name": "a", "value": ""}}, -32602)
    err("no/such/method", {}, -32601)
    # Server-to-client requests, answered by this client.
    for tool, args, method, result in (
            ("test_sampling", {"prompt": "hi"}, "sampling/createMessage",
             {"role": "assistant", "model": "m", "content": {"type": "text", "text": "sampled"}}),
            ("test_elicitation", {"message": "who?"}, "elicitation/create",
             {"action": "accept", "content": {"username": "a", "email": "a@b.c"}}),
            ("roots", {}, "roots/list", {"roots": [{"uri": "file:///r", "name": "r"}]})):
        n[0] += 1
        rid = n[0]
        s.call(rid, tool, args)
        q = s.wait_for(lambda m, method=method: m.get("method") == method, what=method)
        s.send({"jsonrpc": "2.0", "id": q["id"], "result": result})
        if "result" not in s.answer(rid):
            raise Fail(f"{tool}: {s.answer(rid)}")
    # Tasks: a task-augmented sleep, polled, fetched, listed; another cancelled.
    created = ok("tools/call", {"name": "sleep", "arguments": {"ms": 20}, "task": {"ttl": 60000}},
                 "task")
    tid = created["task"]["taskId"]
    ok("tasks/get", {"taskId": tid}, "status")
    if "content" not in ok("tasks/result", {"taskId": tid}):
        raise Fail("tasks/result did not return the call's result")
    ok("tasks/list", key="tasks")
    long = ok("tools/call", {"name": "sleep", "arguments": {"ms": 60000}, "task": {}}, "task")
    if ok("tasks/cancel", {"taskId": long["task"]["taskId"]})["status"] != "cancelled":
        raise Fail("tasks/cancel")
    err("tasks/cancel", {"taskId": tid}, -32602)
    err("tasks/get", {"taskId": "nope"}, -32602)
    err("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}}, -32601)
    s.close_stdin()
    code, _ = s.wait_exit()
    if code != 0:
        raise Fail(f"exit {code}")
    s.check_invariants()


SCENARIOS = [every_method_and_error_path, eof_cancel_aware_handler, eof_two_handlers_blocked_on_roots,
             waiter_not_polling_token_wakes_on_close, peer_cancel_running_and_queued,
             cancel_racing_completion, one_shot_pipe, client_stops_reading_then_closes,
             client_closes_read_end, malformed_input, id_fidelity, ping_while_workers_busy,
             sigterm_with_handler_running, spin_abandoned_at_deadline, progress_before_answer,
             batches_per_revision, handlers_blocked_outside_the_library_do_not_starve_the_queue,
             deep_queue_requests_keep_ids_and_params]


def main(argv):
    """Runs the scenarios (argv: [--list] [--repeat N] [NAME...]), one TAP
    test point each (tests/lib/tap.py)."""
    skip = None if BIN and os.access(BIN, os.X_OK) else "set MCP_EVERYTHING to the fixture binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
