#!/usr/bin/env python3
"""test_ids_http.py - the id of an answer to an invalid request, over
Streamable HTTP (mcp-everything --http on a real socket).

The rule is the one the pipes follow (tests/stdio/test_ids.py, JSON-RPC
2.0 section 5): an invalid request whose id is valid is answered under
that id, null only when the id is missing or invalid.  Over HTTP the
envelope is checked before anything is looked up, so the status stays
400 for an invalid message whatever its id; a duplicate of an id in
flight is refused under that id while the first request keeps its
stream and stays cancellable.

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything test_ids_http.py
Standard library only; prints TAP, one test point per check (tests/lib/tap.py).
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_http import BIN, POINTS, check, open_session, post, start_server, stop_server  # noqa: E402
import tap  # noqa: E402  (on the path through test_http)

MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}
INVALID = [
    ('{"jsonrpc":"1.0","id":"a","method":"ping"}', "a"),
    ('{"id":2,"method":"ping"}', 2),
    ('{"jsonrpc":"2.0","id":"m","method":7}', "m"),
    ('{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"x"}', "p"),
    ('{"jsonrpc":"2.0","id":5}', 5),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}', None),
    ('{"jsonrpc":"2.0","method":"ping","params":4}', None),
]


def answer_of(body):
    try:
        return json.loads(body)
    except ValueError:
        return {}


def in_a_session(port):
    sid = open_session(port)
    for raw, rid in INVALID:
        st, _, body = post(port, raw, sid)
        m = answer_of(body)
        check(f"session: {raw} -> 400, -32600 under id {json.dumps(rid)}",
              st == 400 and m.get("error", {}).get("code") == -32600 and
              "id" in m and m["id"] == rid and type(m["id"]) is type(rid), f"{st} {body}")
    return sid


def without_a_session(port):
    # A 2026-07-28 request: the envelope comes before the ladder.
    for raw, rid in INVALID[:4]:
        msg = json.loads(raw)
        if isinstance(msg.get("params"), dict) or "params" not in msg:
            msg["params"] = dict(msg.get("params") or {}, _meta=MODERN)
        st, _, body = post(port, json.dumps(msg), headers={"MCP-Protocol-Version": "2026-07-28",
                                                           "Mcp-Method": "ping"})
        m = answer_of(body)
        check(f"no session: {raw} -> 400 under id {json.dumps(rid)}",
              st == 400 and m.get("error", {}).get("code") == -32600 and m.get("id") == rid,
              f"{st} {body}")


def duplicate_in_flight(port, sid):
    first = {}

    def long_call():
        first["r"] = post(port, {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                                 "params": {"name": "sleep", "arguments": {"ms": 60000}}},
                          sid, accept="application/json")
    t = threading.Thread(target=long_call)
    t.start()
    time.sleep(0.5)
    st, _, body = post(port, {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"text": "dup"}}},
                       sid, accept="application/json")
    m = answer_of(body)
    check("a duplicate in flight is refused -32600 under its id",
          m.get("id") == 77 and m.get("error", {}).get("code") == -32600 and
          "already in flight" in m.get("error", {}).get("message", ""), f"{st} {body}")
    check("the first request is untouched by its duplicate", t.is_alive())
    st, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 77, "reason": "test"}}, sid)
    t.join(20)
    st1, _, body1 = first.get("r", (None, None, ""))
    check("the first request is still cancellable: its POST ends, unanswered",
          not t.is_alive() and answer_of(body1).get("id") != 77, f"{st1} {body1}")
    st, _, body = post(port, {"jsonrpc": "2.0", "id": 77, "method": "ping"}, sid,
                       accept="application/json")
    check("the id is free again once the first ended",
          st == 200 and answer_of(body).get("result") == {}, f"{st} {body}")


def in_a_batch(port):
    sid = open_session(port, "2025-03-26")
    st, _, body = post(port, [{"jsonrpc": "2.0", "id": "ok", "method": "ping"},
                              {"jsonrpc": "1.0", "id": "bad", "method": "ping"},
                              {"jsonrpc": "2.0", "id": "bad2", "method": "ping", "params": 1}],
                       sid)
    arr = answer_of(body) if st == 200 else []
    got = sorted((json.dumps(e.get("id")), e.get("error", {}).get("code", 0))
                 for e in arr) if isinstance(arr, list) else []
    check("2025-03-26 batch: invalid elements answered in the array under their ids",
          got == [('"bad"', -32600), ('"bad2"', -32600), ('"ok"', 0)], f"{st} {body}")


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("no mcp-everything binary")
    srv, port = start_server()
    try:
        sid = POINTS.guard(in_a_session, port)
        POINTS.guard(without_a_session, port)
        if sid is not None:
            POINTS.guard(duplicate_in_flight, port, sid)
        POINTS.guard(in_a_batch, port)
    finally:
        stop_server(srv, "the server exits 0")
    return POINTS.finish()


if __name__ == "__main__":
    sys.exit(main())
