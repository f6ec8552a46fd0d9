#!/usr/bin/env python3
"""demo.py - a short, real MCP session with mcp-everything over pipes
(make demo), run through the test harness in verbose mode: initialize, list
the tools, call echo, cancel a sleep, and cut a second sleep off by closing
stdin.  Prints every line sent (>>), received (<<), and the server's trace
on stderr (!!).  Fails if either sleep gets an answer or the exit is not 0."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def note(text):
    print(f"\n-- {text}", flush=True)


def main():
    if not harness.BIN:
        sys.exit("usage: MCP_EVERYTHING=path/to/mcp-everything demo.py")
    harness.VERBOSE = True
    s = harness.Server("--trace", "--stats")
    note("initialize")
    s.init()
    note("list the tools")
    s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = [t["name"] for t in s.answer(2)["result"]["tools"]]
    print(f"   ({len(tools)} tools: {', '.join(tools[:6])}, ...)", flush=True)
    note("call echo")
    s.call(3, "echo", {"text": "hello from libmcp"})
    s.answer(3)
    note("a 60 s sleep, cancelled by the client: nothing is written for it")
    s.call(4, "sleep", {"ms": 60000})
    s.wait_err("started 4")
    s.cancel(4)
    s.wait_err("cleanup 4 peer_cancelled")
    note("another 60 s sleep, cut off by closing stdin: the server exits promptly")
    s.call(5, "sleep", {"ms": 60000})
    s.wait_err("started 5")
    s.close_stdin()
    code, took = s.wait_exit()
    s.check_invariants()
    answered = [m for m in s.msgs if m and m.get("id") in (4, 5)]
    print(f"\n-- the server exited with status {code}, {took:.3f} s after end of input", flush=True)
    return 0 if code == 0 and not answered else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except harness.Fail as e:
        sys.exit(f"demo failed: {e}")
