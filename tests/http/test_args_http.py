#!/usr/bin/env python3
"""test_args_http.py - tool arguments and results checked against their
schemas (issue 18), over Streamable HTTP: `mcp-everything --http` on real
sockets, the six `add` calls of the issue each with its exact answer, in a
session (JSON and SSE answers) and as stateless 2026-07-28 requests; the
output schema check; a forged list cursor.  Standard library only; prints
TAP, one test point per check (tests/lib/tap.py); exits 0/1 (77 to skip).

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything test_args_http.py
"""
import http.client
import json
import os
import sys

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import httpsrv  # noqa: E402
import tap  # noqa: E402

# Every check is one TAP test point (tests/lib/tap.py); the plan comes last.
POINTS = tap.Points()
check = POINTS.check


def start_server(*args):
    return httpsrv.start_server(BIN, *args)


def stop_server(srv, name):
    code, err = httpsrv.stop_server(srv)
    check(name, httpsrv.clean_exit(code, err), f"exit {code}: {err[-300:]}")
    return err


def post(port, body, session=None, accept="application/json", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Content-Type": "application/json", "Accept": accept}
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), data


def message_of(status, data, accept):
    """The one JSON-RPC message of a JSON or SSE answer."""
    if accept == "application/json":
        return json.loads(data) if status == 200 else None
    msgs = [json.loads(line[6:]) for line in data.splitlines()
            if line.startswith("data: ") and line[6:].strip()]
    return msgs[-1] if msgs else None


def open_session(port):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "test_args_http", "version": "1"}}}
    _, hd, _ = post(port, init)
    sid = hd.get("Mcp-Session-Id")
    post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def tool_error(text):
    return {"content": [{"type": "text", "text": "Input validation error: " + text}],
            "isError": True}


ADD_CASES = [
    ({"b": 3}, tool_error('(root): missing required property "a" (required)')),
    ({"a": "two", "b": 3}, tool_error("/a: expected number, got string (type)")),
    ({"a": "2", "b": 3}, tool_error("/a: expected number, got string (type)")),
    ({"a": 1, "b": 2, "c": "extra"},
     tool_error('/c: property "c" is not allowed (additionalProperties)')),
    (None, tool_error('(root): missing required property "a" (required)')),
    ({"a": None, "b": True}, tool_error("/a: expected number, got null (type)")),
]

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def call_add(port, sid, rid, args, accept, meta=None):
    params = {"name": "add"}
    if args is not None:
        params["arguments"] = args
    if meta:
        params["_meta"] = meta
    headers = {}
    if meta:
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                   "Mcp-Name": "add"}
    status, _, data = post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                  "params": params}, sid, accept, headers)
    return status, message_of(status, data, accept)


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("set MCP_EVERYTHING to the fixture binary")
    POINTS.guard(add_calls_and_schemas)
    return POINTS.finish()


def add_calls_and_schemas():
    """The `add` calls in a session (JSON and SSE) and stateless, the output
    schema, a forged cursor."""
    srv, port = start_server()
    sid = open_session(port)
    check("a session opens", bool(sid), sid)
    rid = 10
    for accept in ("application/json", "application/json, text/event-stream"):
        kind = "SSE" if "event-stream" in accept else "JSON"
        for args, want in ADD_CASES:
            rid += 1
            status, m = call_add(port, sid, rid, args, accept)
            check(f"{kind} add {json.dumps(args)}: a tool error naming path and rule",
                  status == 200 and m and m.get("id") == rid and m.get("result") == want,
                  f"{status} {m}")
        rid += 1
        status, m = call_add(port, sid, rid, {"a": 40, "b": 2}, accept)
        check(f"{kind} add 40 + 2 = 42", m and m.get("result") == {
            "content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}},
              f"{status} {m}")
    # Stateless 2026-07-28 requests (no session): the same checks.
    for args, want in ADD_CASES:
        rid += 1
        status, m = call_add(port, None, rid, args, "application/json", MODERN_META)
        res = (m or {}).get("result", {})
        check(f"2026-07-28 add {json.dumps(args)}",
              status == 200 and res.get("content") == want["content"] and
              res.get("isError") is True and res.get("resultType") == "complete",
              f"{status} {m}")
    # The output schema: a server fault, -32603 naming path and rule.
    status, _, data = post(port, {"jsonrpc": "2.0", "id": 90, "method": "tools/call",
                                  "params": {"name": "bad_output", "arguments": {}}}, sid)
    m = message_of(status, data, "application/json")
    check("structuredContent that breaks outputSchema is -32603",
          m and m.get("error") == {"code": -32603, "message": "Internal error: the tool's "
                                   "result does not match its outputSchema: /sum: expected "
                                   "number, got string (type)"}, f"{status} {m}")
    # A forged cursor: base64("libmcp:tools:1").
    status, _, data = post(port, {"jsonrpc": "2.0", "id": 91, "method": "tools/list",
                                  "params": {"cursor": "bGlibWNwOnRvb2xzOjE="}}, sid)
    m = message_of(status, data, "application/json")
    check("a forged cursor is -32602",
          m and m.get("error", {}).get("code") == -32602, f"{status} {m}")
    stop_server(srv, "the server exits in order")


if __name__ == "__main__":
    sys.exit(main())
