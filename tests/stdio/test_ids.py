#!/usr/bin/env python3
"""test_ids.py - the id of an answer to an invalid request, over real pipes.

JSON-RPC 2.0 section 5: the response id MUST be the request's id, and null
only when it cannot be determined.  So an invalid request whose id is
itself valid (a string or an integer the server can echo) is answered
under that id, whatever else is wrong with it: a wrong "jsonrpc", a
"method" that is not a string, "params" that are neither an object nor an
array, an id already in flight.  A client waiting on that id then fails
at once with the reason instead of waiting for its timeout.  Only a
missing or invalid id gives null.  A duplicate in flight leaves the
first request untouched and cancellable.

Usage: MCP_EVERYTHING=path/to/mcp-everything test_ids.py [NAME...]
Prints "ok - NAME" / "not ok - NAME" and a final "N passed, M failed".
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)

MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


def expect_one(s, before, rid, code, what):
    """The one answer written since `before`: error `code` under `rid`."""
    m = s.wait_for(lambda m: "method" not in m and "id" in m, what=what, start=before)
    if m.get("id") != rid or type(m.get("id")) is not type(rid) or \
            m.get("error", {}).get("code") != code:
        raise Fail(f"{what}: want {code} under id {json.dumps(rid)}, got {m}")
    return m


def invalid_request_with_valid_id():
    """Each way to break the envelope of a request that carries a valid id
    is answered -32600 under that id: strings and integers alike, on a
    session before and after initialize."""
    s = Server()
    cases = [
        (b'{"jsonrpc":"1.0","id":"a","method":"ping"}', "a"),
        (b'{"id":"b","method":"ping"}', "b"),
        (b'{"jsonrpc":2,"id":3,"method":"ping"}', 3),
        (b'{"jsonrpc":"2.0","id":4,"method":7}', 4),
        (b'{"jsonrpc":"2.0","id":"m","method":null}', "m"),
        (b'{"jsonrpc":"2.0","id":5}', 5),
        (b'{"jsonrpc":"2.0","id":"p","method":"ping","params":"x"}', "p"),
        (b'{"jsonrpc":"2.0","id":-9,"method":"tools/call","params":null}', -9),
        (b'{"jsonrpc":"2.0","id":"","method":"ping","params":3}', ""),
    ]
    for stage in ("before initialize", "after initialize"):
        if stage == "after initialize":
            s.init()
        for raw, rid in cases:
            before = len(s.msgs)
            s.send_raw(raw + b"\n")
            m = expect_one(s, before, rid, -32600, f"{raw!r} {stage}")
            if not m["error"]["message"].startswith("Invalid Request: "):
                raise Fail(f"{raw!r}: no reason given: {m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def invalid_or_missing_id_gives_null():
    """Only an id that is missing or invalid gives null: a notification
    with bad params, a null, fractional, boolean or structured id, an
    integer beyond 64 bits."""
    s = Server()
    s.init()
    for raw in (b'{"jsonrpc":"2.0","method":"notifications/x","params":1}',
                b'{"jsonrpc":"1.0","method":"ping"}',
                b'{"jsonrpc":"1.0","id":null,"method":"ping"}',
                b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
                b'{"jsonrpc":"2.0","id":true,"method":7}',
                b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping","params":2}',
                b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}'):
        before = len(s.msgs)
        s.send_raw(raw + b"\n")
        expect_one(s, before, None, -32600, f"{raw!r}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def duplicate_in_flight_under_its_id():
    """A duplicate of an id in flight, on the worker path (tools/call), the
    reader path (ping) and as a 2026-07-28 request, is refused -32600
    under that id with the id in data; the first request is untouched,
    still cancellable, and never answered once cancelled; the id is free
    again after."""
    s = Server("--trace")
    s.init()
    s.call(9, "sleep", {"ms": 600000})
    s.wait_err("started 9")
    for what, msg in (
            ("tools/call", {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "dup"}}}),
            ("ping", {"jsonrpc": "2.0", "id": 9, "method": "ping"}),
            ("2026-07-28 tools/list", {"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                                       "params": {"_meta": MODERN}})):
        before = len(s.msgs)
        s.send(msg)
        m = expect_one(s, before, 9, -32600, f"duplicate via {what}")
        if m["error"].get("data", {}).get("id") != 9 or \
                "already in flight" not in m["error"]["message"]:
            raise Fail(f"duplicate via {what}: {m}")
    s.cancel(9)
    s.wait_err("cleanup 9 peer_cancelled")
    before = len(s.msgs)
    s.call(9, "echo", {"text": "again"})
    m = s.answer(9, start=before)
    if m.get("result", {}).get("content", [{}])[0].get("text") != "again":
        raise Fail(f"the id was not free after the first ended: {m}")
    s.cancelled.pop(json.dumps(9))
    refusals = [m for m in s.msgs if isinstance(m, dict) and m.get("id") == 9 and "error" in m]
    if len(refusals) != 3:
        raise Fail(f"the cancelled request was answered, or a refusal is missing: {refusals}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def batch_element_under_its_id():
    """Inside a 2025-03-26 batch, an invalid element with a valid id and a
    duplicate of an id in flight are answered in the array under their
    ids; an element that is not an object has none."""
    s = Server()
    s.init(version="2025-03-26")
    s.send([{"jsonrpc": "2.0", "id": "ok", "method": "ping"},
            {"jsonrpc": "1.0", "id": "bad", "method": "ping"},
            {"jsonrpc": "2.0", "id": "d", "method": "tools/call",
             "params": {"name": "sleep", "arguments": {"ms": 200}}},
            {"jsonrpc": "2.0", "id": "d", "method": "ping"},
            7])
    arr = s.wait_for(lambda m: isinstance(m, list), what="the batch's answer")
    got = sorted((json.dumps(e.get("id")), e.get("error", {}).get("code", 0)) for e in arr)
    want = sorted([('"ok"', 0), ('"bad"', -32600), ('"d"', 0), ('"d"', -32600),
                   ("null", -32600)])
    if got != want:
        raise Fail(f"batch: {arr}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


SCENARIOS = [invalid_request_with_valid_id, invalid_or_missing_id_gives_null,
             duplicate_in_flight_under_its_id, batch_element_under_its_id]


def main(argv):
    """Runs the scenarios (argv: [--list] [--repeat N] [NAME...]), one TAP
    test point each (tests/lib/tap.py)."""
    skip = None if BIN and os.access(BIN, os.X_OK) else "set MCP_EVERYTHING to the fixture binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
