#!/usr/bin/env python3
"""test_json_input.py - inbound JSON that json-c would alter or overspend
(issue 25, items 1-4), over real pipes: U+0000 in every kind of name, key,
id and method (refused where no NUL can be meant, carried whole where it
can); non-finite numbers (never written); integers beyond 64 bits (the
nearest double, never clamped); the bound on values per message (refused
before json-c builds the tree, named with its value).  The case table is
tests/lib/hostile_json.py, shared with the HTTP test; every line the server
writes must be strict JSON (no NaN, no Infinity).

Usage: MCP_EVERYTHING=path/to/mcp-everything test_json_input.py [NAME...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)
import hostile_json as hj  # noqa: E402  (tests/lib, on the path through harness)


def answer_to(s, line, want, timeout=30):
    """Sends one raw line and returns the first new message that answers it:
    under the id it wants, or under null for a refusal without one."""
    start = len(s.msgs)
    s.send_raw(line.encode() + b"\n")
    rid = want[2] if want[0] == "error" else want[1]
    return s.wait_for(lambda m: "method" not in m and m.get("id") == rid and
                      type(m.get("id")) is type(rid), timeout, f"the answer to {line[:80]}",
                      start)


def run_cases(cases, *args):
    s = Server(*args)
    s.init()
    bad = []
    for name, line, want in cases:
        why = hj.verdict(answer_to(s, line, want), want)
        if why:
            bad.append(f"{name}: {why}")
    s.close_stdin()
    s.wait_exit()
    with s.cv:
        raws = [raw for _, raw in s.lines]
    for raw in raws:
        try:
            hj.strict_loads(raw)
        except ValueError as e:
            bad.append(f"a line that is not strict JSON ({e}): {raw[:200]!r}")
    s.check_invariants()
    if bad:
        raise Fail("; ".join(bad))


def nul_in_names_keys_ids_and_methods():
    """Item 1: every kind of name, key, id and method holding U+0000."""
    run_cases(hj.NUL_CASES)


def nul_task_id_does_not_find_the_task():
    """A real task's id with "\\u0000x" appended finds nothing (-32602);
    the id itself still finds it, so the refusal is the NUL's."""
    s = Server()
    s.init()
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 60000}}})
    m = s.answer(1)
    tid = m.get("result", {}).get("task", {}).get("taskId")
    if not tid:
        raise Fail(f"no task: {m}")
    s.send({"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": {"taskId": tid + "\x00x"}})
    m = s.answer(2)
    if m.get("error", {}).get("code") != -32602 or "U+0000" not in m["error"]["message"]:
        raise Fail(f"tasks/get of the id with NUL appended: {m}")
    s.send({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": tid}})
    m = s.answer(3)
    if m.get("result", {}).get("taskId") != tid:
        raise Fail(f"tasks/get of the id: {m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def nonfinite_numbers_never_leave():
    """Item 2: a non-finite sum is a tool error, never NaN or Infinity."""
    run_cases(hj.NONFINITE_CASES)


def integers_beyond_64_bits_are_not_clamped():
    """Item 3: the nearest double, checked against the schema as such."""
    run_cases(hj.BIGINT_CASES)


def values_per_message_are_bounded():
    """Item 4: the value bound at its edge and past it, for each kind of
    value; the connection goes on serving after a refusal."""
    run_cases(hj.LIMIT_CASES)


def batches_are_held_to_the_same_rules():
    """A 2025-03-26 batch: a NUL member name in one element refuses the
    line's requests, a non-finite sum in one element spoils only its own
    answer."""
    s = Server()
    s.init("2025-03-26")
    line = ('[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
            '"arguments":{"a":1e400,"b":1}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]')
    start = len(s.msgs)
    s.send_raw(line.encode() + b"\n")
    m = s.wait_for(lambda m: isinstance(m, list), 30, "the batch answer", start)
    by_id = {a.get("id"): a for a in m}
    if by_id.get(2, {}).get("result") != {} or \
            by_id.get(1, {}).get("result", {}).get("isError") is not True:
        raise Fail(f"batch: {m}")
    line = ('[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,'
            '"method":"ping","id%s":5}]' % hj.NUL)
    start = len(s.msgs)
    s.send_raw(line.encode() + b"\n")
    m = s.wait_for(lambda m: isinstance(m, list), 30, "the batch answer", start)
    if len(m) != 2 or any(a.get("error", {}).get("code") != -32600 or a.get("id") is not None
                          for a in m):
        raise Fail(f"batch with a NUL name: {m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def a_lower_bound_is_honoured():
    """mcp_server_set_max_values reaches the reader: with a bound of 50
    (mcp-everything --max-values), 51 values are refused naming 50."""
    run_cases([("50 values", hj.values_line(1, hj.most_of("0", 50)),
                ("result", 1, hj.text_is("x"))),
               ("51 values", hj.values_line(2, hj.most_of("0", 50) + 1),
                ("error", -32600, None, "more than 50 JSON values"))], "--max-values", "50")


SCENARIOS = [nul_in_names_keys_ids_and_methods, nul_task_id_does_not_find_the_task,
             nonfinite_numbers_never_leave, integers_beyond_64_bits_are_not_clamped,
             values_per_message_are_bounded, batches_are_held_to_the_same_rules,
             a_lower_bound_is_honoured]


def main(argv):
    """One TAP test point per scenario (tests/lib/tap.py)."""
    skip = None if BIN and os.access(BIN, os.X_OK) else "set MCP_EVERYTHING to the fixture binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
