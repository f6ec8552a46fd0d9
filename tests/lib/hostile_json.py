"""hostile_json.py - the inbound JSON of issue 25 (items 1-4) that json-c
would have altered, and what mcp-everything must answer to each: shared by
tests/stdio/test_json_input.py (pipes) and tests/http/test_json_input_http.py
(sockets, in a session and --stateless), so both transports are held to
one table.

A case is (name, line, want): `line` is the raw JSON text of one request
(str; \\u0000 escapes, numbers beyond 64 bits and 1e400 written as text,
which json.dumps could not), `want` one of
  ("error", code, id, text)   an error answer under `id` (None: null) whose
                              message contains `text`
  ("result", id, check)       a result under `id`; check(result) -> None
                              when it is right, else what is wrong
Every answer line must be strict JSON: no NaN, no Infinity (strict_loads).
Standard library only.
"""
import json

NUL = "\\u0000"  # the six characters of the escape, as they go on the wire


def strict_loads(raw):
    """json.loads that refuses NaN and Infinity, as a strict client does."""
    def refuse(word):
        raise ValueError(f"not JSON: {word}")
    return json.loads(raw, parse_constant=refuse)


def req(rid, method, params=None, extra=""):
    """The text of a request; `extra` is spliced in as more members."""
    body = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    text = json.dumps(body, separators=(",", ":"))
    return text[:-1] + extra + "}" if extra else text


def call(rid, tool, args_text):
    """tools/call of `tool` with arguments given as raw JSON text."""
    return ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s",'
            '"arguments":%s}}' % (json.dumps(rid), tool, args_text))


def sum_is(want):
    def check(res):
        got = res.get("structuredContent", {}).get("sum")
        if got != want or res.get("isError"):
            return f"sum {got!r}, want {want!r}"
        return None
    return check


def tool_error_says(text):
    def check(res):
        blocks = res.get("content") or [{}]
        if res.get("isError") is not True or text not in blocks[0].get("text", ""):
            return f"not a tool error saying {text!r}"
        return None
    return check


def text_is(want):
    def check(res):
        blocks = res.get("content") or [{}]
        if blocks[0].get("text") != want or res.get("isError"):
            return f"text {blocks[0].get('text')!r}, want {want!r}"
        return None
    return check


NUL_NAME = "a member name of the message holds U+0000"
NUL_KEY = "a member name holds U+0000"

# Item 1: U+0000 in every kind of name, key, id and method.
NUL_CASES = [
    ("NUL in an argument name (schema bypass)",
     call(101, "add", '{"a":1,"b":2,"a%sevil":40}' % NUL), ("error", -32602, 101, NUL_KEY)),
    ("NUL in a name nested in the arguments",
     call(102, "echo", '{"text":"x","l":[{"k%s":1}]}' % NUL), ("error", -32602, 102, NUL_KEY)),
    ("NUL in a _meta name",
     '{"jsonrpc":"2.0","id":103,"method":"tools/list","params":{"_meta":{"k%s":1}}}' % NUL,
     ("error", -32602, 103, NUL_KEY)),
    ("NUL in a params name",
     '{"jsonrpc":"2.0","id":104,"method":"tools/list","params":{"cursor%s":"x"}}' % NUL,
     ("error", -32602, 104, NUL_KEY)),
    ("NUL in an envelope member name",
     req(105, "ping", {}, ',"x%s":1' % NUL), ("error", -32600, None, NUL_NAME)),
    ("NUL in a name that would replace the id",
     req(106, "ping", {}, ',"id%s":7' % NUL), ("error", -32600, None, NUL_NAME)),
    ("NUL in the method",
     req(107, "ping" + "\x00" + "junk"), ("error", -32601, 107, "U+0000")),
    ("NUL at the end of a method",
     req(108, "tools/list" + "\x00"), ("error", -32601, 108, "U+0000")),
    ("NUL in jsonrpc",
     '{"jsonrpc":"2.0%sjunk","id":109,"method":"ping"}' % NUL,
     ("error", -32600, 109, '"jsonrpc" must be "2.0"')),
    ("NUL in a tool name",
     req(110, "tools/call", {"name": "echo\x00junk", "arguments": {"text": "x"}}),
     ("error", -32602, 110, "without U+0000")),
    ("NUL in a prompt name",
     req(111, "prompts/get", {"name": "test_simple_prompt\x00x"}),
     ("error", -32602, 111, "without U+0000")),
    ("NUL in a resource uri",
     req(112, "resources/read", {"uri": "test://static-text\x00x"}),
     ("error", -32602, 112, "without U+0000")),
    ("NUL in a subscription uri",
     req(113, "resources/subscribe", {"uri": "test://static-text\x00x"}),
     ("error", -32602, 113, "U+0000")),
    ("NUL in a task id",
     req(114, "tasks/get", {"taskId": "abc\x00x"}), ("error", -32602, 114, "U+0000")),
    # Strings that may hold U+0000 are carried whole, with their length.
    ("a string id with NUL comes back as sent",
     req("a\x00b", "ping"), ("result", "a\x00b", lambda res: None if res == {} else res)),
    ("echo of a string with NUL is exact",
     call(115, "echo", '{"text":"a%sb"}' % NUL), ("result", 115, text_is("a\x00b"))),
]

# Item 2: nothing non-finite is written.
NONFINITE_CASES = [
    ("1e400 is no finite sum", call(201, "add", '{"a":1e400,"b":2}'),
     ("result", 201, tool_error_says("not a finite number"))),
    ("-1e400 is no finite sum", call(202, "add", '{"a":-1e400,"b":2}'),
     ("result", 202, tool_error_says("not a finite number"))),
    ("1e400 - 1e400 is NaN", call(203, "add", '{"a":1e400,"b":-1e400}'),
     ("result", 203, tool_error_says("not a finite number"))),
    ("an overflowing sum", call(204, "add", '{"a":1.5e308,"b":1.5e308}'),
     ("result", 204, tool_error_says("not a finite number"))),
    ("the largest finite sum still adds", call(205, "add", '{"a":1.5e308,"b":0}'),
     ("result", 205, sum_is(1.5e308))),
]

# Item 3: integers beyond 64 bits are the nearest double, never clamped.
BIGINT_CASES = [
    ("10^20 is 1e20", call(301, "add", '{"a":100000000000000000000,"b":2}'),
     ("result", 301, sum_is(1e20))),
    ("-2^64 is -2^64", call(302, "add", '{"a":-18446744073709551616,"b":0}'),
     ("result", 302, sum_is(-18446744073709551616.0))),
    ("2^64 is 2^64", call(303, "add", '{"a":18446744073709551616,"b":0}'),
     ("result", 303, sum_is(18446744073709551616.0))),
    ("2^64 - 1 still reads", call(304, "add", '{"a":18446744073709551615,"b":0}'),
     ("result", 304, sum_is(18446744073709551615.0))),
    ("a huge integer against a bounded integer schema",
     call(305, "sleep", '{"ms":100000000000000000000000}'),
     ("result", 305, tool_error_says("must be at most 86400000"))),
    ("a huge negative integer against a minimum",
     call(306, "sleep", '{"ms":-100000000000000000000000}'),
     ("result", 306, tool_error_says("must be at least 0"))),
    ("an id beyond 64 bits is still refused",
     '{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}',
     ("error", -32600, None, "cannot be echoed as sent")),
]

MAX_VALUES = 1048576           # the default of mcp_server_set_max_values
WEIGHT = {"0": 1, '""': 1, "null": 1, "[]": 2, "{}": 8}
AROUND = 31  # the values around the array: 3 objects (8 each), the array (2), 5 strings and the id


def values_line(rid, k, element="0"):
    """An echo call holding an array of k copies of `element`: AROUND +
    k * WEIGHT[element] values in all, as the server counts them."""
    arr = ",".join([element] * k)
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
            '"arguments":{"text":"x","junk":[%s]}}}' % (rid, arr))


def most_of(element, limit=MAX_VALUES):
    """The most copies of `element` values_line may hold under `limit`."""
    return (limit - AROUND) // WEIGHT[element]


REFUSED = "more than 1048576 JSON values"

# Item 4: the value bound at its edge and far past it, for each kind of
# value and its weight.
LIMIT_CASES = [
    ("exactly the limit of numbers is served", values_line(401, most_of("0")),
     ("result", 401, text_is("x"))),
    ("one number past the limit is refused", values_line(402, most_of("0") + 1),
     ("error", -32600, None, REFUSED)),
    ("as many empty objects as fit are served", values_line(403, most_of("{}"), "{}"),
     ("result", 403, text_is("x"))),
    ("one object more is refused (an object counts 8)", values_line(404, most_of("{}") + 1, "{}"),
     ("error", -32600, None, REFUSED)),
    ("as many empty arrays as fit are served", values_line(405, most_of("[]"), "[]"),
     ("result", 405, text_is("x"))),
    ("one array more is refused (an array counts 2)", values_line(406, most_of("[]") + 1, "[]"),
     ("error", -32600, None, REFUSED)),
    ("strings count too", values_line(407, most_of('""') + 1, '""'),
     ("error", -32600, None, REFUSED)),
    ("null counts too", values_line(408, most_of("null") + 1, "null"),
     ("error", -32600, None, REFUSED)),
    ("a million empty objects are refused", values_line(409, 1000000, "{}"),
     ("error", -32600, None, REFUSED)),
    ("after a refusal the next request is served", call(410, "echo", '{"text":"after"}'),
     ("result", 410, text_is("after"))),
]

ALL_CASES = NUL_CASES + NONFINITE_CASES + BIGINT_CASES + LIMIT_CASES


def verdict(m, want):
    """None when the answer `m` (parsed) is what `want` says, else why not."""
    if m is None:
        return "no answer"
    if want[0] == "error":
        _, code, rid, text = want
        err = m.get("error")
        if not err or err.get("code") != code or m.get("id") != rid or \
                text not in err.get("message", ""):
            return f"want error {code} under {rid!r} saying {text!r}, got {m}"
        return None
    _, rid, check = want
    if m.get("id") != rid or "result" not in m:
        return f"want a result under {rid!r}, got {str(m)[:300]}"
    why = check(m["result"])
    return f"{why}: {str(m)[:300]}" if why else None
