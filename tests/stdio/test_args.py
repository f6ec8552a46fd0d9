#!/usr/bin/env python3
"""test_args.py - tool arguments and results checked against their schemas
(issue 18), over real pipes: mcp-everything's `add` tool (a and b required
numbers, nothing else) with the six calls of the issue, each with its exact
answer; the output schema check; prompt arguments; a forged list cursor.

Usage: MCP_EVERYTHING=path/to/mcp-everything test_args.py [NAME...]
Prints "ok - NAME" / "not ok - NAME" and "N passed, M failed".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)


def tool_error(text):
    """The whole result of a call refused by the input schema."""
    return {"content": [{"type": "text", "text": "Input validation error: " + text}],
            "isError": True}


# The six calls of the issue (which libmcp once passed straight to the
# handler: "3", "3", "5", "3", "0", "1"), and what each gets now.
ADD_CASES = [
    ({"b": 3}, tool_error('(root): missing required property "a" (required)')),
    ({"a": "two", "b": 3}, tool_error("/a: expected number, got string (type)")),
    ({"a": "2", "b": 3}, tool_error("/a: expected number, got string (type)")),
    ({"a": 1, "b": 2, "c": "extra"},
     tool_error('/c: property "c" is not allowed (additionalProperties)')),
    (None, tool_error('(root): missing required property "a" (required)')),
    ({"a": None, "b": True}, tool_error("/a: expected number, got null (type)")),
]


def result_of(s, rid):
    m = s.answer(rid)
    if "result" not in m:
        raise Fail(f"{rid}: not a result: {m}")
    return m["result"]


def add_calls_get_exact_answers():
    """Each of the six calls is a tool error naming the path and the rule,
    never a JSON-RPC error; the handler never runs for them (no trace
    line); a good call still adds."""
    s = Server("--trace")
    s.init()
    for i, (args, want) in enumerate(ADD_CASES):
        params = {"name": "add"}
        if args is not None:
            params["arguments"] = args
        s.send({"jsonrpc": "2.0", "id": f"add{i}", "method": "tools/call", "params": params})
        got = result_of(s, f"add{i}")
        if got != want:
            raise Fail(f"{args!r}: got {got}, want {want}")
    s.call("good", "add", {"a": 2, "b": 3.5})
    got = result_of(s, "good")
    if got != {"content": [{"type": "text", "text": "5.5"}], "structuredContent": {"sum": 5.5}}:
        raise Fail(f"a good call: {got}")
    s.wait_err('cleanup "good" completed')
    started = [ln for ln in s.err if ln.startswith("started")]
    if started != ['started "good"']:
        raise Fail(f"handlers that ran: {started}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def ranges_are_checked_too():
    """The fixture's schemas carry their ranges: a value out of range is
    refused before the handler sleeps on it."""
    s = Server()
    s.init()
    s.call(1, "sleep", {"ms": -1})
    want = tool_error("/ms: must be at least 0, got -1 (minimum)")
    if result_of(s, 1) != want:
        raise Fail(f"sleep -1: {result_of(s, 1)}")
    s.call(2, "echo", {"text": "x", "pad_bytes": 1e9})
    if not result_of(s, 2).get("isError"):
        raise Fail(f"echo pad 1e9: {result_of(s, 2)}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def modern_requests_are_checked_the_same():
    """A 2026-07-28 request (version and capabilities in its _meta) gets
    the same tool error, decorated as that revision's results are."""
    s = Server()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    s.rev = "2026-07-28"
    s.call("m1", "add", {"a": "two", "b": 3}, meta=meta)
    got = result_of(s, "m1")
    want = tool_error("/a: expected number, got string (type)")
    if got.get("content") != want["content"] or got.get("isError") is not True or \
            got.get("resultType") != "complete":
        raise Fail(f"modern: {got}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def output_schema_violation_is_a_server_fault():
    """bad_output returns a string sum against its number outputSchema:
    -32603 with the path and rule, and an invalid_output trace line.  As an
    isError result it is exempt and sent."""
    s = Server("--trace")
    s.init()
    s.call(1, "bad_output", {})
    m = s.answer(1)
    want = {"code": -32603, "message": "Internal error: the tool's result does not match its "
            "outputSchema: /sum: expected number, got string (type)"}
    if m.get("error") != want:
        raise Fail(f"bad_output: {m}")
    s.wait_err("invalid_output 1 /sum: expected number, got string (type)")
    s.call(2, "bad_output", {"as_error": True})
    got = result_of(s, 2)
    if got != {"content": [{"type": "text", "text": "three"}],
               "structuredContent": {"sum": "three"}, "isError": True}:
        raise Fail(f"as_error: {got}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def prompt_arguments_are_checked():
    """Prompt arguments are strings, the required ones present: -32602
    naming the argument and the rule."""
    s = Server()
    s.init()
    s.send({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
            "params": {"name": "test_prompt_with_arguments",
                       "arguments": {"arg1": "x", "arg2": 5}}})
    m = s.answer(1)
    want = {"code": -32602, "message": "Invalid params: /arg2: expected string, got integer "
            "(type)", "data": {"path": "/arg2", "rule": "type"}}
    if m.get("error") != want:
        raise Fail(f"arg2 5: {m}")
    s.send({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
            "params": {"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}})
    if s.answer(2).get("error", {}).get("message") != \
            'Invalid params: (root): missing required property "arg2" (required)':
        raise Fail(f"arg2 missing: {s.answer(2)}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def forged_cursor_is_refused():
    """base64("libmcp:tools:1"), the cursor that once skipped a tool, and
    a cursor of the old form for every list: -32602."""
    s = Server()
    s.init()
    for i, (method, raw) in enumerate([("tools/list", "bGlibWNwOnRvb2xzOjE="),
                                       ("prompts/list", "bGlibWNwOnByb21wdHM6MQ=="),
                                       ("resources/list", "bGlibWNwOnJlc291cmNlczow")]):
        s.send({"jsonrpc": "2.0", "id": i, "method": method, "params": {"cursor": raw}})
        m = s.answer(i)
        if m.get("error") != {"code": -32602, "message": "Invalid params: unknown cursor"}:
            raise Fail(f"{method} {raw}: {m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


SCENARIOS = [add_calls_get_exact_answers, ranges_are_checked_too,
             modern_requests_are_checked_the_same, output_schema_violation_is_a_server_fault,
             prompt_arguments_are_checked, forged_cursor_is_refused]


def main(argv):
    """One TAP test point per scenario (tests/lib/tap.py)."""
    skip = None if BIN and os.access(BIN, os.X_OK) else "set MCP_EVERYTHING to the fixture binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
