#!/usr/bin/env python3
"""test_adv_input.py - adversarial scenarios, ids and malformed input:
exact echo of every valid id form, rejection of every invalid one, ids out
of range, duplicate in-flight ids on every path, legal reuse, separate id
namespaces in both directions; invalid JSON, non-JSON literals, invalid
UTF-8 inside and outside strings, BOM, CRLF and blank lines, byte-at-a-time
writes, hundreds of messages in one write, lines split at every offset,
oversized lines at and past the limit, deep nesting, huge objects,
duplicate keys, numbers out of range, envelope violations of every kind,
batches in and out of 2025-03-26, parse-error floods, notifications and
lifecycle order.

Silence is checked with a probe: a ping sent after the case is answered
by the reader in order, so anything the case provoked on the reader comes
before the probe's answer.  Parse errors are rate-limited (P3: 20 per
second, burst 20), so cases that provoke them are paced.

Usage: MCP_EVERYTHING=... test_adv_input.py [--list] [--repeat N] [NAME...]
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import (INITIALIZED, VALGRIND, AdvServer, Fail, T, call_msg, init_msg,  # noqa: E402
                    line, n_iter, req, run, SANITIZER)

# Scenarios that expose a library bug, with the bug: they run, their
# failure is reported "# TODO" (XFAIL) and does not fail make check.
EXPECTED_FAILURES = {
}

PACE = 0.06   # between cases that provoke a parse error (rate limit P3)


class Probe:
    """Sends one case and collects what the reader answered for it."""

    def __init__(self, s):
        self.s = s
        self.n = 0

    def __call__(self, raw):
        s = self.s
        self.n += 1
        rid = f"probe-{self.n}"
        before = s.count_output()
        s.send_raw(raw + line(req(rid, "ping")))
        s.wait_for(lambda m: isinstance(m, dict) and m.get("id") == rid, start=before,
                   what=f"probe {rid}")
        with s.cv:
            out = [m for m in s.msgs[before:] if not (isinstance(m, dict) and m.get("id") == rid)]
        return out


def _text(m):
    return m["result"]["content"][0]["text"]


def _want_error(out, code, what, rid=None):
    """One error `code`, under id `rid` (None: null)."""
    if len(out) != 1 or not isinstance(out[0], dict) or \
            out[0].get("error", {}).get("code") != code or out[0].get("id") != rid or \
            type(out[0].get("id")) is not type(rid):
        raise Fail(f"{what}: want one {code} with id {json.dumps(rid)}, got {out}")


def _answer_id(raw):
    """The id an invalid message is answered under (JSON-RPC 2.0 section
    5): its own when that is a string or an integer, else null."""
    rid = json.loads(raw).get("id") if raw.startswith(b"{") else None
    return rid if type(rid) in (str, int) else None


def _in_flight_refusals(s):
    """Every answer refusing an id as already in flight, whatever its id."""
    return [m for m in s.snapshot() if isinstance(m, dict) and
            "already in flight" in m.get("error", {}).get("message", "")]


# ---- ids --------------------------------------------------------------------------

VALID_IDS = [
    b"0", b"-1", b"1", b"2147483648", b"9007199254740993", b"9223372036854775807",
    b"-9223372036854775808", b"9223372036854775808", b"18446744073709551615", b"-0",
    b'""', b'"0"', b'" "', b'"null"', b'"1.5"', b'"true"', b'"-0"',
    '"ünï→code"'.encode(), b'"\\ud83d\\ude00"', '"😀"'.encode(), b'"a\\u0000b"',
    b'"\\u0001\\t\\n\\r"', b'"\\"\\\\"', b'"\\/"', b'"' + b"k" * 4096 + b'"',
    b'"' + b"\\u00e9" * 2000 + b'"',
    '"\uffff\U0010ffff\ufeff"'.encode(), b'"\\u00e9"', '"é"'.encode(),
]


def ids_exact_echo_of_every_valid_form():
    """Every valid id form (integers to the int64 and uint64 edges, -0,
    empty and look-alike strings, unicode raw and escaped, NUL, control
    characters, quotes, escaped slash, 4 KB) is answered with exactly
    that id, on the reader path (ping) and the worker path (tools/call);
    integers are echoed digit for digit.  (No --trace: the fixture's trace
    lines are cut at 511 bytes, which would merge the lines of long ids.)"""
    s = AdvServer(trace=False)
    s.init()
    for k, raw_id in enumerate(VALID_IDS):
        want = json.loads(raw_id)
        for method in ("ping", "tools/call"):
            params = (b'{"name":"echo","arguments":{"text":"%d"}}' % k) if method != "ping" \
                else b"{}"
            before = s.count_output()
            s.send_raw(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"' + method.encode() +
                       b'","params":' + params + b"}\n")
            m = s.wait_for(lambda m: "id" in m and "method" not in m, start=before,
                           what=f"answer to id {raw_id[:40]!r}")
            if m["id"] != want or type(m["id"]) is not type(want) or "error" in m:
                raise Fail(f"id {raw_id[:40]!r} via {method}: answered {m}")
            if isinstance(want, int):
                with s.cv:
                    raw = s.lines[-1][1] if s.lines else b""
                    raws = [r for _, r in s.lines[before:]]
                text = raw_id if raw_id != b"-0" else b"0"
                if not any(b'"id":' + text + b"," in r for r in raws):
                    raise Fail(f"integer id {raw_id!r} not echoed digit for digit: {raw[:80]!r}")
    s.finish()


def ids_out_of_range_integers():
    """Integer ids beyond what json-c can hold (2^64, -2^63-1, 10^30)
    must be rejected (-32600) or echoed exactly; never answered under a
    different id, and two distinct such ids must never collide."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw_id in (b"18446744073709551616", b"-9223372036854775809",
                   b"1000000000000000000000000000000"):
        out = probe(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"ping"}\n')
        if len(out) != 1:
            raise Fail(f"id {raw_id!r}: {out}")
        m = out[0]
        if m.get("id") is None:
            if m.get("error", {}).get("code") != -32600:
                raise Fail(f"id {raw_id!r}: {m}")
        elif m["id"] != json.loads(raw_id):
            raise Fail(f"id {raw_id.decode()} answered as id {m['id']}")
    # Two distinct out-of-range ids in flight at once.
    s.send_raw(b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call",'
               b'"params":{"name":"sleep","arguments":{"ms":300}}}\n'
               b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call",'
               b'"params":{"name":"sleep","arguments":{"ms":300}}}\n')
    time.sleep(T(0.6))
    dup = _in_flight_refusals(s)
    if dup:
        raise Fail(f"distinct ids 2^64 and 2^64+1 collided: {dup[0]}")
    s.finish()


def ids_lone_surrogate_escapes():
    """An id holding a lone UTF-16 surrogate escape must be rejected
    (-32600) or echoed as that same escape; two different lone-surrogate
    ids must not collide."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    out = probe(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n')
    if len(out) != 1 or (out[0].get("id") is not None and out[0]["id"] != "\ud800"):
        raise Fail(f"id \"\\ud800\" answered as {out}")
    s.send_raw(b'{"jsonrpc":"2.0","id":"\\udbff","method":"tools/call",'
               b'"params":{"name":"sleep","arguments":{"ms":300}}}\n'
               b'{"jsonrpc":"2.0","id":"\\udc00","method":"tools/call",'
               b'"params":{"name":"sleep","arguments":{"ms":300}}}\n')
    time.sleep(T(0.6))
    dup = _in_flight_refusals(s)
    if dup:
        raise Fail(f"ids \"\\udbff\" and \"\\udc00\" collided: {dup[0]}")
    s.finish()


INVALID_IDS = [b"null", b"1.5", b"1.0", b"1e3", b"-0.0", b"1E400", b"true", b"false", b"{}",
               b'{"a":1}', b"[]", b"[1]", b"[[]]", b'["1"]', b"0.0", b"-1e-400"]


def ids_invalid_forms_rejected():
    """null, fractions, integral floats, exponents, overflowing floats,
    booleans, objects and arrays as request ids: one -32600 with id
    null each, on the reader and worker paths, and no handler runs."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw_id in INVALID_IDS:
        for method, params in ((b"ping", b"{}"),
                               (b"tools/call", b'{"name":"sleep","arguments":{"ms":1}}')):
            out = probe(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"' + method +
                        b'","params":' + params + b"}\n")
            _want_error(out, -32600, f"id {raw_id!r} via {method!r}")
    s.finish()
    if s.trace_lines("started"):
        raise Fail(f"a handler ran for an invalid id: {s.trace_lines('started')[:2]}")


def ids_duplicate_in_flight_on_every_path():
    """While request 42 runs, 42 again via tools/call, ping, tools/list,
    a 2026-07-28 request and initialize is refused with -32600 under id
    42 (JSON-RPC 2.0 section 5: the id is valid); "42" and 42.0-free
    forms are different ids; "s" written as "\\u0073" is the same id as
    "s"; a queued request's id is taken too; the first requests stay
    untouched and cancellable."""
    s = AdvServer("--workers", "2")
    s.init()
    probe = Probe(s)
    s.call(42, "sleep", {"ms": 600000})
    s.call("s", "sleep", {"ms": 600000})
    s.wait_err("started 42")
    s.wait_err('started "s"')
    modern = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}
    for what, msg in (("tools/call", call_msg(42, "echo", {"text": "dup"})),
                      ("ping", req(42, "ping")), ("tools/list", req(42, "tools/list")),
                      ("modern tools/list", req(42, "tools/list", {"_meta": modern})),
                      ("initialize", init_msg(42))):
        _want_error(probe(line(msg)), -32600, f"duplicate 42 via {what}", 42)
    _want_error(probe(b'{"jsonrpc":"2.0","id":"\\u0073","method":"ping"}\n'), -32600,
                'duplicate "\\u0073"', "s")
    out = probe(line(req("42", "ping")))
    if len(out) != 1 or out[0].get("id") != "42" or "result" not in out[0]:
        raise Fail(f'"42" is not 42: {out}')
    # A queued request's id is taken too (both workers are busy).
    s.call(7, "echo", {"text": "queued"})
    _want_error(probe(line(call_msg(7, "echo", {"text": "dup"}))), -32600, "duplicate queued 7",
                7)
    s.cancel(42)
    s.cancel("s")
    s.wait_cleanup(42, "peer_cancelled")
    m = s.wait_for(lambda m: m.get("id") == 7 and "result" in m, what="the answer to queued 7")
    if _text(m) != "queued":
        raise Fail(f"queued 7: {m}")
    # 42 and "s" themselves, cancelled, are never answered: what came under
    # their ids are the refusals of their duplicates (checked here, not as
    # strict cancels).
    s.cancelled.pop(json.dumps(42))
    s.cancelled.pop(json.dumps("s"))
    s.finish()
    for rid in (42, "s"):
        if any("already in flight" not in m.get("error", {}).get("message", "")
               for m in s.answers_for(rid)):
            raise Fail(f"cancelled {rid!r} was answered: {s.answers_for(rid)}")
    # The duplicate's refusal and the first request's answer, nothing more.
    if sorted("result" in m for m in s.answers_for(7)) != [False, True]:
        raise Fail(f"answers for 7: {s.answers_for(7)}")


def ids_legal_reuse_sequential():
    """One id reused a thousand times in a row, each time right after its
    answer, alternating the worker path and the reader path: every use
    answered exactly once, never refused as a duplicate."""
    s = AdvServer()
    s.init()
    for k in range(n_iter(1000, 50)):
        before = s.count_output()
        if k % 2:
            s.request("same", "ping")
        else:
            s.call("same", "echo", {"text": str(k)})
        m = s.wait_for(lambda m: m.get("id") in ("same", None), start=before,
                       what=f"use {k} of the id")
        if "error" in m:
            raise Fail(f"use {k}: {m}")
        if not k % 2 and _text(m) != str(k):
            raise Fail(f"use {k}: {m}")
    s.finish()


def ids_separate_namespaces_both_directions():
    """The server's outbound ids and the client's request ids never mix:
    a client request whose id equals the server's pending roots/list id
    is served as a request and leaves roots/list pending; a client
    cancel naming that id cancels nothing of the server's; a client
    answer whose id equals a client request in flight touches only the
    server's request of that id."""
    s = AdvServer("--workers", "4")
    s.init(caps={"roots": {}})
    s.call("r", "roots", {"timeout_ms": 60000})
    rr = s.wait_for(lambda m: m.get("method") == "roots/list", what="roots/list")
    sid = rr["id"]
    s.call(sid, "echo", {"text": "client request"})
    if _text(s.answer(sid)) != "client request":
        raise Fail("a client request with the server's id")
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": sid + 1000}})
    if s.answers_for("r") or s.notifications("notifications/cancelled"):
        raise Fail("roots/list was resolved or cancelled by a client request id")
    # A client request in flight with id N+1, N+1 also being the id the
    # server uses for its next roots/list.
    nxt = sid + 1
    s.call(nxt, "sleep", {"ms": 600000})
    s.wait_err(f"started {nxt}")
    before = s.count_output()
    s.call("r2", "roots", {"timeout_ms": 60000})
    rr2 = s.wait_for(lambda m: m.get("method") == "roots/list", start=before, what="roots/list 2")
    if rr2["id"] != nxt:
        raise Fail(f"server ids not sequential ({rr2['id']} after {sid}); scenario assumption")
    s.send({"jsonrpc": "2.0", "id": nxt, "result": {"roots": [{"uri": "file:///two"}]}})
    if "file:///two" not in _text(s.answer("r2")):
        raise Fail(f"r2: {s.answer('r2')}")
    if s.answers_for(nxt) or s.cleanups(nxt):
        raise Fail("the answer to the server's request touched the client's request")
    s.send({"jsonrpc": "2.0", "id": sid, "result": {"roots": [{"uri": "file:///one"}]}})
    if "file:///one" not in _text(s.answer("r")):
        raise Fail(f"r: {s.answer('r')}")
    s.cancel(nxt)
    s.wait_cleanup(nxt, "peer_cancelled")
    s.finish()


# ---- malformed JSON -------------------------------------------------------------------

INVALID_JSON = [b"{", b"}", b"{not json}", b'{"a":}', b'{"a" 1}', b'{"a":1,,"b":2}',
                b"nul", b"tru", b"'single'", b'{"jsonrpc":"2.0",}', b'[1,]', b'{"a":1}}',
                b'{"a":[1}', b'{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}',
                b'{"jsonrpc":"2.0","id":1,"method":"ping"}garbage', b'{"a":"unterminated}',
                b'{"a":"bad \\q escape"}', b'{"a":"\\u12"}', b'{"a":007}', b'{"a":0x10}',
                b'{"a":+1}', b'{"a":.5}', b'{"a":-}', b'{"a":tRue}', b'{"a":nan}',
                b'/* comment */ {"jsonrpc":"2.0","id":1,"method":"ping"}', b"\x00",
                b'{"a":1}\x00', b"\x1b[31m", b"\"str", b"{{}}", b'{"a"}', b"[", b":"]


def malformed_invalid_json_variants():
    """Thirty-odd kinds of invalid JSON (truncated, extra tokens, bad
    escapes, leading zeros, hex, comments, NUL bytes, terminal escapes,
    two values on one line): one -32700 with id null each, nothing runs,
    the connection stays usable."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw in INVALID_JSON:
        time.sleep(PACE)
        _want_error(probe(raw + b"\n"), -32700, f"{raw[:40]!r}")
    s.call("after", "echo", {"text": "ok"})
    s.answer("after")
    s.finish()
    if [ln for ln in s.trace_lines("started") if ln != 'started "after"']:
        raise Fail("a handler ran for invalid JSON")


def malformed_top_level_scalars_are_invalid_requests():
    """A line that is complete JSON but not an object (1, -5, 3.5, null,
    true, "s") is an Invalid Request (-32600, as in the JSON-RPC 2.0
    examples), with or without trailing whitespace."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw in (b'"s"', b"1", b"-5", b"3.5", b"null", b"true", b"false", b"1 ", b"null\t"):
        time.sleep(PACE)
        _want_error(probe(raw + b"\n"), -32600, f"top-level {raw!r}")
    s.finish()


def malformed_non_json_literals_rejected():
    """Literals JSON does not have (NaN, Infinity, -Infinity, "1."), and
    raw control characters inside strings, make a line invalid JSON:
    -32700, not served."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw in (b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{"x":NaN}}',
                b'{"jsonrpc":"2.0","id":"b","method":"ping","params":{"x":Infinity}}',
                b'{"jsonrpc":"2.0","id":"c","method":"ping","params":{"x":-Infinity}}',
                b'{"jsonrpc":"2.0","id":"d","method":"ping","params":{"x":1.}}',
                b'{"jsonrpc":"2.0","id":"e\x01","method":"ping"}',
                b'{"jsonrpc":"2.0","id":"f","method":"ping","params":{"x":"tab\there"}}'):
        time.sleep(PACE)
        _want_error(probe(raw + b"\n"), -32700, f"{raw[:60]!r}")
    s.finish()


BAD_UTF8 = [b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
            b"\xed\xbf\xbf", b"\xf0\x80\x80\xaf", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80", b"\xfe",
            b"\xff", b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3\x28",
            b"\xe2\x28\xa1", b"\xf0\x28\x8c\xbc"]
GOOD_UTF8 = ["\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\ufffd", "\ufffe", "\uffff",
             "\U00010000", "\U0010ffff", "a\u0301", "\u200b\u2028\u2029"]


def malformed_invalid_utf8_inside_and_outside_strings():
    """Every kind of ill-formed UTF-8 (overlongs, surrogates, past
    U+10FFFF, F5-FF, lone continuation bytes, truncated sequences) inside
    the id, the method, the arguments, and outside strings (between
    tokens, line start, line end): -32700 each (P3).  Well-formed edge
    code points (U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFE, U+FFFF,
    U+10000, U+10FFFF, U+2028) are echoed byte for byte."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for k, bad in enumerate(BAD_UTF8):
        for where in range(5):
            if where == 0:
                raw = b'{"jsonrpc":"2.0","id":"x' + bad + b'","method":"ping"}'
            elif where == 1:
                raw = b'{"jsonrpc":"2.0","id":1,"method":"pi' + bad + b'ng"}'
            elif where == 2:
                raw = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                       b'"arguments":{"text":"' + bad + b'"}}}')
            elif where == 3:
                raw = b'{"jsonrpc":"2.0",' + bad + b'"id":1,"method":"ping"}'
            else:
                raw = bad + b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + (bad if k % 2 else b"")
            time.sleep(PACE)
            _want_error(probe(raw + b"\n"), -32700, f"{bad!r} at place {where}")
    for k, good in enumerate(GOOD_UTF8):
        rid = f"good-{k}"
        s.call(rid, "echo", {"text": good})
        m = s.answer(rid)
        if _text(m) != good:
            raise Fail(f"{good!r} echoed as {_text(m)!r}")
        with s.cv:
            raws = [r for _, r in s.lines if rid.encode() in r]
        if good.encode("utf-8", "surrogatepass") not in raws[-1] and \
                json.dumps(good)[1:-1].encode() not in raws[-1]:
            raise Fail(f"{good!r} not in the answer's bytes: {raws[-1][:100]!r}")
    s.finish()
    if [ln for ln in s.trace_lines("started") if "good-" not in ln]:
        raise Fail("a handler ran for an ill-formed line")


def malformed_bom_handling():
    """A UTF-8 byte order mark: before a message it makes the line either
    a parse error or is ignored (RFC 8259 allows both), exactly one
    outcome; inside a string it is an ordinary character, echoed; alone
    on a line or between tokens it is a parse error or ignored, and the
    connection stays usable."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    bom = b"\xef\xbb\xbf"
    out = probe(bom + line(req("bom", "ping")))
    if len(out) != 1 or not (out[0].get("id") == "bom" or
                             (out[0].get("id") is None and out[0]["error"]["code"] == -32700)):
        raise Fail(f"BOM before a message: {out}")
    time.sleep(PACE)
    s.call("in", "echo", {"text": "\ufeffx\ufeff"})
    if _text(s.answer("in")) != "\ufeffx\ufeff":
        raise Fail("BOM inside a string")
    for raw in (bom, bom + bom, b'{"jsonrpc":"2.0",' + bom + b'"id":1,"method":"ping"}'):
        time.sleep(PACE)
        out = probe(raw + b"\n")
        if len(out) > 1 or (out and out[0].get("error", {}).get("code") != -32700):
            raise Fail(f"{raw!r}: {out}")
    s.finish()


def framing_crlf_blank_and_whitespace_lines():
    """CRLF endings, stray CRs before LF, blank lines, lines of spaces and
    tabs, ten thousand empty lines, whitespace around the message: no
    output for the empty ones, every request answered once."""
    s = AdvServer()
    s.init()
    msgs = [line(req(f"w{k}", "ping")) for k in range(6)]
    data = (b"\n\n\r\n \t \r\n" + msgs[0][:-1] + b"\r\n" + b"\r\n" * 3 +
            b"   " + msgs[1][:-1] + b"   \t\r\n" + b"\n" * 10000 +
            msgs[2][:-1] + b"\r\r\n" + b" \r\n\t\n" + msgs[3] + b"\r\n" + b"\t" + msgs[4] +
            b"\r" * 3 + b"\n" + msgs[5])
    before = s.count_output()
    s.send_raw(data)
    for k in range(6):
        s.answer(f"w{k}")
    time.sleep(T(0.2))
    if s.count_output() != before + 6:
        raise Fail(f"output: {s.snapshot()[before:]}")
    s.finish()


def framing_byte_at_a_time():
    """A whole session written one byte per write (initialize,
    initialized, a tool call, a cancel, a ping): parsed and answered as
    if written at once."""
    s = AdvServer()
    data = b"".join([line(init_msg()), line(INITIALIZED),
                     line(call_msg(1, "echo", {"text": "slow\u00e9\U0001f600"})),
                     line(call_msg(2, "sleep", {"ms": 600000})),
                     line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 2}}), line(req(3, "ping"))])
    s.cancelled[json.dumps(2)] = "racy"
    fd = s.p.stdin.fileno()
    for k in range(len(data)):
        os.write(fd, data[k:k + 1])
        if k % 97 == 0:
            time.sleep(0.001)
    s.requests_sent.update({json.dumps(i): 1 for i in (1, 2, 3)})
    if _text(s.answer(1)) != "slow\u00e9\U0001f600":
        raise Fail(f"echo: {s.answer(1)}")
    s.answer(3)
    s.finish()


def framing_split_at_every_offset():
    """One request split into two writes at every possible offset, each
    time with a pause between the halves: always answered once."""
    s = AdvServer()
    s.init()
    fd = s.p.stdin.fileno()
    step = 1 if SANITIZER == "no" and not VALGRIND else 7
    base = line(call_msg("split-000", "echo", {"text": "h\u00e9\U0001f600llo"}))
    for off in range(1, len(base), step):
        rid = f"split-{off:03d}"
        data = base.replace(b"split-000", rid.encode())
        os.write(fd, data[:off])
        time.sleep(0.002)
        os.write(fd, data[off:])
        if _text(s.answer(rid)) != "h\u00e9\U0001f600llo":
            raise Fail(f"split at {off}")
    s.requests_sent.update({json.dumps(f"split-{o:03d}"): 1 for o in range(len(base))})
    s.finish()


def framing_hundreds_of_messages_in_one_write():
    """Five hundred mixed messages in a single write (tool calls, pings,
    list requests, notifications, cancels of unknown ids, garbage lines
    under the rate limit): exactly the expected answers, each once."""
    s = AdvServer()
    s.init()
    rng = random.Random(11)
    parts, want = [], set()
    garbage = 0
    for k in range(500):
        r = rng.random()
        if r < 0.45:
            parts.append(line(call_msg(k, "echo", {"text": str(k)})))
            want.add(k)
        elif r < 0.7:
            parts.append(line(req(k, "ping")))
            want.add(k)
        elif r < 0.8:
            parts.append(line(req(k, "tools/list")))
            want.add(k)
        elif r < 0.9:
            parts.append(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 100000 + k}}))
        elif r < 0.95 or garbage >= 10:
            parts.append(line({"jsonrpc": "2.0", "method": "notifications/whatever"}))
        else:
            parts.append(b"{garbage\n")
            garbage += 1
    s.send_raw(b"".join(parts))
    for k in sorted(want):
        s.answer(k, timeout=20)
    time.sleep(T(0.2))
    errs = s.errors_null_id()
    if len(errs) != garbage:
        raise Fail(f"{len(errs)} errors for {garbage} garbage lines")
    s.finish()


# ---- limits -------------------------------------------------------------------------------

def _sized(n, rid):
    pre = b'{"jsonrpc":"2.0","id":"%s","method":"ping","params":{"p":"' % rid.encode()
    post = b'"}}'
    return pre + b"y" * (n - len(pre) - len(post)) + post


def limits_oversized_lines_at_and_past_the_limit():
    """--max-message 4096: lines of max-1 and max bytes are served (with LF
    or CRLF), max+1 and beyond get one -32600 each; a 1 MiB line, an
    oversized line followed in the same write by a valid one, an
    oversized line whose newline comes in a later write, and two in a row
    each give exactly one error and the reader resynchronises at the
    next newline."""
    s = AdvServer("--max-message", "4096")
    s.init()
    probe = Probe(s)
    for n in (4094, 4095, 4096, 4097, 4098, 5000):
        for end in (b"\n", b"\r\n"):
            rid = f"n{n}{'c' if len(end) == 2 else 'l'}"
            out = probe(_sized(n, rid) + end)
            if n <= 4096:
                if len(out) != 1 or out[0].get("id") != rid:
                    raise Fail(f"{n} bytes {end!r}: {out}")
            else:
                _want_error(out, -32600, f"{n} bytes")
    _want_error(probe(b"z" * (1 << 20) + b"\n"), -32600, "1 MiB")
    _want_error(probe(_sized(9000, "big") + b"\n"), -32600, "oversized then valid")
    fd = s.p.stdin.fileno()
    before = s.count_output()
    os.write(fd, b'{"jsonrpc":"2.0","id":"later","method":"ping","params":{"p":"')
    for _ in range(10):
        os.write(fd, b"q" * 1000)
        time.sleep(0.002)
    # The error may come as soon as the limit is passed, before the newline.
    probe(b'"}}\n')
    _want_error(s.snapshot()[before:-1], -32600, "oversized over several writes")
    out = probe(_sized(6000, "a1") + b"\n" + _sized(7000, "a2") + b"\n")
    if len(out) != 2 or any(m.get("error", {}).get("code") != -32600 for m in out):
        raise Fail(f"two oversized in a row: {out}")
    s.send_raw(_sized(8000, "eof"))   # oversized and no newline, then EOF
    s.close_stdin()
    s.finish()
    if s.answers_for("eof") or s.trace_lines("started"):
        raise Fail("an oversized line was served")


def limits_default_16mib_boundary():
    """The default 16 MiB limit: an echo request just under it is served
    and its 16 MiB answer arrives intact; one byte over gets -32600 and
    the next request is served."""
    if VALGRIND:
        return
    s = AdvServer()
    s.init()
    limit = 16 << 20
    pre = b'{"jsonrpc":"2.0","id":"max","method":"tools/call","params":{"name":"echo",' \
          b'"arguments":{"text":"'
    post = b'"}}}'
    body = b"m" * (limit - len(pre) - len(post))
    s.send_raw(pre + body + post + b"\n")
    a = s.answer("max", timeout=60)
    if len(_text(a)) != len(body):
        raise Fail(f"answer of {len(_text(a))} bytes, want {len(body)}")
    s.send_raw(pre.replace(b'"max"', b'"over"') + body + b"m" + post + b"\n")
    s.request("next", "ping")
    s.answer("next", timeout=60)
    errs = s.errors_null_id()
    if len(errs) != 1 or errs[0]["error"]["code"] != -32600:
        raise Fail(f"over the limit: {errs}")
    s.finish()


def limits_deep_nesting():
    """Nesting at the limit (128 levels in all) is served, one more level
    is -32600; 100,000 levels of arrays or objects are refused without
    a crash; nesting characters inside a string do not count."""
    s = AdvServer()
    s.init()
    probe = Probe(s)

    def nested(depth, o=b"[", c=b"]"):
        return o * depth + c * depth

    for d, ok in ((126, True), (127, False), (200, False)):
        out = probe(b'{"jsonrpc":"2.0","id":"d%d","method":"ping","params":{"x":%s}}\n'
                    % (d, nested(d)))
        if ok and (len(out) != 1 or out[0].get("id") != f"d{d}"):
            raise Fail(f"depth {d}: {out}")
        if not ok:
            _want_error(out, -32600, f"depth {d}")
    for deep in (nested(100000), b'{"a":' * 100000 + b"1" + b"}" * 100000,
                 b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 100000):
        out = probe(deep + b"\n")
        time.sleep(PACE)
        if len(out) != 1 or out[0].get("error", {}).get("code") not in (-32600, -32700):
            raise Fail(f"100000 levels: {out}")
    s.call("str", "echo", {"text": "[" * 50000 + "{" * 50000})
    if len(_text(s.answer("str"))) != 100000:
        raise Fail("brackets inside a string")
    s.finish()


def limits_huge_objects():
    """Big but legal messages: 200,000 keys in the arguments, an array of
    a million numbers, a 10 MiB string echoed back intact, 50,000
    sibling arrays: each served once."""
    if VALGRIND:
        return
    s = AdvServer()
    s.init()
    keys = {f"k{k}": k for k in range(200000)}
    keys["text"] = "many keys"
    s.call("keys", "echo", keys)
    s.call("array", "echo", {"text": "array", "a": list(range(1000000))})
    big = "".join(chr(0x41 + k % 26) for k in range(26)) * ((10 << 20) // 26)
    s.call("big", "echo", {"text": big})
    s.call("wide", "echo", {"text": "wide", "w": [[]] * 50000})
    if _text(s.answer("keys", timeout=60)) != "many keys":
        raise Fail("keys")
    if _text(s.answer("array", timeout=60)) != "array":
        raise Fail("array")
    if _text(s.answer("big", timeout=60)) != big:
        raise Fail("10 MiB string not echoed intact")
    if _text(s.answer("wide", timeout=60)) != "wide":
        raise Fail("wide")
    s.finish()


def malformed_duplicate_keys():
    """Duplicate members (id, method, jsonrpc, params, arguments): each
    line gets exactly one outcome and the connection stays usable; a
    duplicate id never yields two answers."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    cases = [b'{"jsonrpc":"2.0","id":"d1","id":"d2","method":"ping"}',
             b'{"jsonrpc":"2.0","id":"d3","method":"nope","method":"ping"}',
             b'{"jsonrpc":"1.0","jsonrpc":"2.0","id":"d4","method":"ping"}',
             b'{"jsonrpc":"2.0","jsonrpc":"1.0","id":"d5","method":"ping"}',
             b'{"jsonrpc":"2.0","id":"d6","method":"ping","params":3,"params":{}}',
             b'{"jsonrpc":"2.0","id":"d7","method":"ping","id":null}']
    for raw in cases:
        out = probe(raw + b"\n")
        if len(out) != 1:
            raise Fail(f"{raw!r}: {out}")
    before = s.count_output()
    s.send_raw(b'{"jsonrpc":"2.0","id":"d8","method":"tools/call","params":{"name":"echo",'
               b'"arguments":{"text":"first","text":"second"}}}\n')
    m = s.wait_for(lambda m: m.get("id") == "d8", start=before, what="d8")
    if _text(m) not in ("first", "second"):
        raise Fail(f"d8: {m}")
    s.finish()


def malformed_numbers_out_of_range_in_arguments():
    """Tool arguments with numbers of the wrong kind or out of range
    (1e400, -1, 1.5, 2^63, 2^64, 10^20, strings, booleans): refused by the
    tool's input schema before its handler runs, as a tool error on the
    request's id naming the argument (SEP-1303: isError, not -32602),
    never a crash or an endless sleep."""
    s = AdvServer()
    s.init()
    vals = [b"1e400", b"-1e400", b"-1", b"1.5", b"9223372036854775807", b"9223372036854775808",
            b"18446744073709551616", b"100000000000000000000", b'"5"', b"true",
            b"86400001", b"-9223372036854775809"]
    for k, v in enumerate(vals):
        for tool, key in (("sleep", b"ms"), ("echo", b"pad_bytes"), ("progress", b"steps")):
            rid = f"{tool}-{k}"
            extra = b',"text":"t"' if tool == "echo" else b""
            before = s.count_output()
            s.send_raw(b'{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"%s",'
                       b'"arguments":{"%s":%s%s}}}\n' % (rid.encode(), tool.encode(), key, v, extra))
            m = s.wait_for(lambda m: m.get("id") == rid, start=before, what=rid)
            res = m.get("result", {})
            text = (res.get("content") or [{}])[0].get("text", "")
            if res.get("isError") is not True or \
                    not text.startswith(f"Input validation error: /{key.decode()}: "):
                raise Fail(f"{tool} {key.decode()}={v.decode()}: {m}")
    s.finish()


# ---- envelopes and batches -----------------------------------------------------------------

ENVELOPES = [
    # (raw line, expected: int code (under the line's id when it is a valid
    # id, else null), "answered", or None for silence)
    (b'{"id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":"1.0","id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":2.0,"id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0 ","id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":null,"id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":["2.0"],"id":"e","method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":"e"}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":7}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":null}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":true}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":{}}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":["ping"]}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":"ping","params":3}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":"ping","params":"s"}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":"ping","params":true}', -32600),
    (b'{"jsonrpc":"2.0","id":"e","method":"ping","params":null}', -32600),
    (b'{"jsonrpc":"2.0","method":"notifications/x","params":3}', -32600),
    (b'{"method":"notifications/x"}', -32600),
    (b'{"jsonrpc":"2.0","method":5}', -32600),
    (b"{}", -32600),
    (b'{"jsonrpc":"2.0"}', -32600),
    (b'{"jsonrpc":"2.0","params":{}}', -32600),
    (b'{"jsonrpc":"2.0","result":{}}', None),
    (b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}', None),
    (b'{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"m"}}', None),
    (b'{"jsonrpc":"2.0","id":77,"result":{},"error":{}}', None),
    (b'{"jsonrpc":"2.0","id":"e1","method":""}', "answered"),
    (b'{"jsonrpc":"2.0","id":"e2","method":"ping","extra":{"x":[1]}}', "answered"),
    (b'{"jsonrpc":"2.0","id":"e3","method":"ping","params":[]}', "answered"),
    (b'{"jsonrpc":"2.0","id":"e4","method":"ping","result":{}}', "answered"),
    (b'{"jsonrpc":"2.0","id":"e5","method":"PING"}', "answered"),
    (b'{"jsonrpc":"2.0","id":"e6","method":"ping\\u0000"}', "answered"),
]


def envelope_violations_of_every_kind():
    """Every way to break the JSON-RPC envelope (jsonrpc missing, wrong
    value or type; method missing or not a string; params a scalar or
    null; empty objects), each one -32600, under the message's id when
    that id is valid and null otherwise (JSON-RPC 2.0 section 5); response-shaped
    messages are never answered; odd but valid envelopes (empty or
    unknown method, extra members, array params) get one answer on their
    id."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    for raw, want in ENVELOPES:
        out = probe(raw + b"\n")
        if want is None:
            if out:
                raise Fail(f"{raw!r} was answered: {out}")
        elif want == "answered":
            rid = json.loads(raw)["id"]
            if len(out) != 1 or out[0].get("id") != rid:
                raise Fail(f"{raw!r}: {out}")
        else:
            _want_error(out, want, f"{raw!r}", _answer_id(raw))
    s.finish()


def batches_outside_2025_03_26():
    """In 2025-11-25 and 2025-06-18 sessions, and before initialize, a
    top-level array of any shape is one -32600 with id null and none of
    its elements runs or is answered."""
    for version in ("2025-11-25", "2025-06-18", None):
        s = AdvServer()
        if version:
            s.init(version=version)
        probe = Probe(s)
        shapes = [[], [1], [req("b1", "ping")], [[req("b2", "ping")]],
                  [{"jsonrpc": "2.0", "method": "notifications/x"}],
                  [call_msg(f"b{k}", "echo", {"text": "x"}) for k in range(300)],
                  [init_msg("b-init", "2025-03-26")]]
        for shape in shapes:
            _want_error(probe(line(shape)), -32600, f"batch {json.dumps(shape)[:50]}")
        s.finish()
        if s.trace_lines("started"):
            raise Fail(f"{version}: a batch element ran")


def batches_in_2025_03_26_every_shape():
    """2025-03-26 batches: empty (-32600), scalars only (an array of
    -32600s), mixed valid and invalid elements, notifications only (no
    output), 300 calls (one array of 300), a duplicate id inside the
    batch, answers to the server's own request inside a batch (routed,
    not answered), a nested array element."""
    s = AdvServer()
    s.init(version="2025-03-26", caps={"roots": {}})
    probe = Probe(s)
    _want_error(probe(b"[]\n"), -32600, "empty batch")
    out = probe(line([1, 2, 3]))
    if len(out) != 1 or not isinstance(out[0], list) or len(out[0]) != 3 or \
            any(e["error"]["code"] != -32600 for e in out[0]):
        raise Fail(f"batch of scalars: {out}")
    out = probe(line([req("m1", "ping"), {"jsonrpc": "1.0", "id": "m2", "method": "ping"},
                      req("m3", "no/such"), [req("m4", "ping")]]))
    arr = out[0] if out and isinstance(out[0], list) else None
    if not arr or sorted(str(e.get("id")) for e in arr) != ["None", "m1", "m2", "m3"]:
        raise Fail(f"mixed batch: {out}")
    if probe(line([{"jsonrpc": "2.0", "method": "notifications/x"}, INITIALIZED])):
        raise Fail("a batch of notifications was answered")
    before = s.count_output()
    s.send([call_msg(f"c{k}", "echo", {"text": str(k)}) for k in range(300)])
    arr = s.wait_for(lambda m: isinstance(m, list), start=before, what="batch of 300")
    if sorted(e["id"] for e in arr) != sorted(f"c{k}" for k in range(300)):
        raise Fail(f"batch of 300: {len(arr)} answers")
    before = s.count_output()
    s.send([call_msg("dup", "sleep", {"ms": 100}), call_msg("dup", "echo", {"text": "x"})])
    arr = s.wait_for(lambda m: isinstance(m, list), start=before, what="dup batch")
    ids = sorted(str(e.get("id")) for e in arr)
    if ids != ["dup", "dup"] or sum("error" in e for e in arr) != 1:
        raise Fail(f"duplicate inside a batch: {arr}")
    before = s.count_output()
    s.call("roots", "roots", {"timeout_ms": 10000})
    rr = s.wait_for(lambda m: m.get("method") == "roots/list", start=before, what="roots/list")
    s.send([{"jsonrpc": "2.0", "id": rr["id"], "result": {"roots": [{"uri": "file:///b"}]}},
            req("after-roots", "ping")])
    if "file:///b" not in s.answer("roots")["result"]["content"][0]["text"]:
        raise Fail("an answer inside a batch was not routed")
    s.finish()


def batches_elements_race_reader_and_workers():
    """2025-03-26 batches of many quick calls, over and over: the reader
    must let go of each element before a worker owns it (json-c objects
    are not thread-safe, STYLE.md), so ThreadSanitizer stays silent and
    every batch gets one complete array."""
    s = AdvServer("--workers", "4")
    s.init(version="2025-03-26")
    for b in range(n_iter(40, 10)):
        before = s.count_output()
        s.send([call_msg(f"b{b}-{k}", "echo", {"text": "x"}) for k in range(300)])
        arr = s.wait_for(lambda m: isinstance(m, list), start=before, what=f"batch {b}")
        if len(arr) != 300:
            raise Fail(f"batch {b}: {len(arr)} answers")
    s.finish()


def parse_error_flood_is_rate_limited():
    """Five thousand garbage lines in one write: the -32700 answers are
    rate-limited (burst 20, then 20 per second), the reader keeps up,
    and the next request is served at once; a flood of two thousand
    invalid envelopes is answered in full (only parse errors are
    limited)."""
    s = AdvServer()
    s.init()
    t0 = time.monotonic()
    s.send_raw(b"{garbage}\n" * 5000)
    s.request("after", "ping")
    s.answer("after")
    took = time.monotonic() - t0
    n = len(s.errors_null_id())
    if n < 1 or n > 20 + 20 * took + 2:
        raise Fail(f"{n} parse errors answered in {took:.2f} s")
    before = s.count_output()
    s.send_raw(b"{}\n" * 2000)
    s.wait_count(lambda m: m.get("id") is None and "error" in m, n + 2000,
                 what="invalid-request errors")
    if s.count_output() != before + 2000:
        raise Fail("the envelope flood")
    s.finish()


def notifications_are_never_answered():
    """Notifications of every kind, known, unknown, repeated, with odd
    params, the client's own progress and log messages: no output at
    all."""
    s = AdvServer()
    s.init()
    probe = Probe(s)
    notes = [INITIALIZED, INITIALIZED, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
             {"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": "x", "progress": 1}},
             {"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "hi"}},
             {"jsonrpc": "2.0", "method": "notifications/no_such", "params": [1, 2]},
             {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo",
                                                                   "arguments": {"text": "n"}}},
             {"jsonrpc": "2.0", "method": "ping"}, {"jsonrpc": "2.0", "method": "initialize",
                                                    "params": {}},
             {"jsonrpc": "2.0", "method": ""}]
    out = probe(b"".join(line(n) for n in notes))
    if out:
        raise Fail(f"notifications answered: {out}")
    s.finish()
    if s.trace_lines("started"):
        raise Fail("a tools/call notification ran a handler")


def lifecycle_out_of_order():
    """Requests before initialize (-32600 on their id, ping allowed),
    initialize with bad params (-32602, and a good one still works),
    initialize twice (-32600), an unknown protocol version (negotiated
    down to the newest)."""
    s = AdvServer()
    probe = Probe(s)
    for method in ("tools/call", "tools/list", "resources/list", "logging/setLevel",
                   "prompts/get", "completion/complete"):
        out = probe(line(req(f"pre-{method}", method, {})))
        if len(out) != 1 or out[0].get("id") != f"pre-{method}" or \
                out[0].get("error", {}).get("code") != -32600:
            raise Fail(f"{method} before initialize: {out}")
    for params in ({}, {"protocolVersion": 5}, {"protocolVersion": LATEST_, "capabilities": []},
                   None, [LATEST_]):
        out = probe(line(req("bad-init", "initialize", params)))
        if len(out) != 1 or out[0].get("error", {}).get("code") not in (-32602, -32600):
            raise Fail(f"initialize {params}: {out}")
    out = probe(line(init_msg("i1", "1999-01-01")))
    if out[0]["result"]["protocolVersion"] != LATEST_:
        raise Fail(f"unknown version: {out}")
    out = probe(line(init_msg("i2")))
    if out[0].get("error", {}).get("code") != -32600:
        raise Fail(f"second initialize: {out}")
    s.send(INITIALIZED)
    s.call("ok", "echo", {"text": "ok"})
    s.answer("ok")
    s.finish()


LATEST_ = "2025-11-25"


SCENARIOS = [
    ids_exact_echo_of_every_valid_form,
    ids_out_of_range_integers,
    ids_lone_surrogate_escapes,
    ids_invalid_forms_rejected,
    ids_duplicate_in_flight_on_every_path,
    ids_legal_reuse_sequential,
    ids_separate_namespaces_both_directions,
    malformed_invalid_json_variants,
    malformed_top_level_scalars_are_invalid_requests,
    malformed_non_json_literals_rejected,
    malformed_invalid_utf8_inside_and_outside_strings,
    malformed_bom_handling,
    framing_crlf_blank_and_whitespace_lines,
    framing_byte_at_a_time,
    framing_split_at_every_offset,
    framing_hundreds_of_messages_in_one_write,
    limits_oversized_lines_at_and_past_the_limit,
    limits_default_16mib_boundary,
    limits_deep_nesting,
    limits_huge_objects,
    malformed_duplicate_keys,
    malformed_numbers_out_of_range_in_arguments,
    envelope_violations_of_every_kind,
    batches_outside_2025_03_26,
    batches_in_2025_03_26_every_shape,
    batches_elements_race_reader_and_workers,
    parse_error_flood_is_rate_limited,
    notifications_are_never_answered,
    lifecycle_out_of_order,
]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
