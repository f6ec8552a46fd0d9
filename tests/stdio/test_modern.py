#!/usr/bin/env python3
"""test_modern.py - the 2026-07-28 (stateless) era over stdio, beside the
legacy one on the same process.

A 2026-07-28 request carries its protocol version and the client's
capabilities in params._meta; the server answers it from that envelope,
whether or not the connection was initialized.  These scenarios drive the
real binary over pipes through the bundled harness (whose invariants are
checked on everything printed): the probe-then-fallback sequence, the
envelope ladder, cancellation, logging by request, capabilities by
request, and the era-specific result shapes.

Usage: MCP_EVERYTHING=path/to/mcp-everything test_modern.py [NAME...]
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)

MODERN = "2026-07-28"


def meta(caps=None, version=MODERN, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
         "io.modelcontextprotocol/clientInfo": {"name": "test_modern", "version": "1"}}
    m.update(extra)
    return m


class ModernServer(Server):
    """Records each answer under the era of the request it answers, so
    make check-schema validates modern answers against the 2026-07-28
    schema and legacy ones against the negotiated revision."""

    def __init__(self, *args):
        self.modern_ids = set()
        super().__init__(*args)

    def _record(self, m):
        if isinstance(m, dict) and json.dumps(m.get("id")) in self.modern_ids:
            saved, self.rev = self.rev, MODERN
            try:
                super()._record(m)
            finally:
                self.rev = saved
        elif self.rev is not None:
            super()._record(m)

    def modern(self, rid, method, params=None, _meta=None):
        p = dict(params or {})
        p["_meta"] = _meta if _meta is not None else meta()
        self.modern_ids.add(json.dumps(rid))
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": p})


def expect_error(s, rid, code):
    m = s.answer(rid)
    if m.get("error", {}).get("code") != code:
        raise Fail(f"id {rid}: expected error {code}, got {m}")
    return m["error"]


def expect_modern_result(s, rid):
    m = s.answer(rid)
    r = m.get("result")
    if not isinstance(r, dict) or r.get("resultType") != "complete":
        raise Fail(f"id {rid}: no modern result: {m}")
    si = r.get("_meta", {}).get("io.modelcontextprotocol/serverInfo", {})
    if si.get("name") != "mcp-everything":
        raise Fail(f"id {rid}: no serverInfo in _meta: {r.get('_meta')}")
    return r


# ---- scenarios -------------------------------------------------------------

def probe_then_fallback():
    """A client probes with server/discover, then falls back to initialize
    on the same connection; both eras are served, interleaved."""
    s = ModernServer()
    s.modern(1, "server/discover")
    r = expect_modern_result(s, 1)
    if r.get("supportedVersions") != [MODERN]:  # 2025 revisions go through initialize
        raise Fail(f"supportedVersions: {r.get('supportedVersions')}")
    if not isinstance(r.get("ttlMs"), int) or r.get("cacheScope") not in ("public", "private"):
        raise Fail(f"discover caching hints: {r}")
    if "tools" not in r.get("capabilities", {}):
        raise Fail(f"capabilities: {r.get('capabilities')}")
    s.init()
    s.call(2, "echo", {"text": "legacy"})
    s.modern(3, "tools/call", {"name": "echo", "arguments": {"text": "modern"}})
    legacy = s.answer(2)["result"]
    modern = expect_modern_result(s, 3)
    if "resultType" in legacy or "_meta" in legacy:
        raise Fail(f"modern fields leaked into a legacy answer: {legacy}")
    if modern["content"][0]["text"] != "modern":
        raise Fail(f"modern echo: {modern}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def modern_without_initialize():
    """A 2026-07-28 client never initializes: lists, calls, reads and
    completions are served from each request's envelope."""
    s = ModernServer()
    s.modern(1, "tools/list")
    r = expect_modern_result(s, 1)
    if not any(t["name"] == "echo" for t in r["tools"]) or "ttlMs" not in r:
        raise Fail(f"tools/list: {str(r)[:200]}")
    s.modern(2, "resources/read", {"uri": "test://static-text"})
    r = expect_modern_result(s, 2)
    if r["contents"][0]["text"] == "" or r.get("cacheScope") not in ("public", "private"):
        raise Fail(f"resources/read: {r}")
    s.modern(3, "prompts/get", {"name": "test_simple_prompt"})
    expect_modern_result(s, 3)
    s.modern(4, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
    expect_modern_result(s, 4)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def envelope_ladder():
    """Each rung of the ladder has its code, on the request's own id, and
    the connection stays usable."""
    s = ModernServer()
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}})
    expect_error(s, 1, -32602)
    s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}})
    expect_error(s, 2, -32602)
    s.modern(3, "tools/list", _meta=meta(version="2099-01-01"))
    e = expect_error(s, 3, -32022)
    if e.get("data", {}).get("requested") != "2099-01-01" or MODERN not in e["data"]["supported"]:
        raise Fail(f"-32022 data: {e}")
    s.modern(4, "tools/list", _meta=meta(version="2025-11-25"))
    expect_error(s, 4, -32022)  # a legacy version goes through initialize
    for rid, method in ((5, "initialize"), (6, "ping"), (7, "logging/setLevel"),
                        (8, "resources/subscribe"), (9, "no/such/method")):
        s.modern(rid, method)
        expect_error(s, rid, -32601)
    s.modern(10, "tools/list", _meta=meta(**{"io.modelcontextprotocol/logLevel": "loud"}))
    expect_error(s, 10, -32602)
    s.modern(11, "tools/call", {"name": "echo", "arguments": {"text": "still here"}})
    expect_modern_result(s, 11)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def cancel_modern_request():
    """notifications/cancelled works for a 2026-07-28 request: nothing is
    written for it afterwards, and its handler sees peer_cancelled."""
    s = ModernServer("--trace")
    s.modern(1, "tools/call", {"name": "sleep", "arguments": {"ms": 60000}})
    s.wait_err("started 1")
    s.cancel(1)
    s.wait_err("cleanup 1 peer_cancelled")
    s.none_for(lambda m: m.get("id") == 1, 0.3, "answer after cancel")
    s.modern(2, "tools/call", {"name": "echo", "arguments": {"text": "after"}})
    expect_modern_result(s, 2)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def logging_by_request():
    """A 2026-07-28 request is logged only when its _meta asks for a level,
    and only at that level or above."""
    s = ModernServer()

    before = len([m for m in s.msgs if m and m.get("method") == "notifications/message"])
    s.modern(1, "tools/call", {"name": "test_logging_tool", "arguments": {}})
    expect_modern_result(s, 1)
    n1 = len([m for m in s.msgs if m and m.get("method") == "notifications/message"])
    if n1 != before:
        raise Fail("log messages without io.modelcontextprotocol/logLevel")
    s.modern(2, "tools/call", {"name": "test_logging_tool", "arguments": {}},
             _meta=meta(**{"io.modelcontextprotocol/logLevel": "info"}))
    expect_modern_result(s, 2)
    n2 = len([m for m in s.msgs if m and m.get("method") == "notifications/message"])
    if n2 - n1 != 3:
        raise Fail(f"logLevel info: {n2 - n1} messages, expected 3")
    s.modern(3, "tools/call", {"name": "test_logging_tool", "arguments": {}},
             _meta=meta(**{"io.modelcontextprotocol/logLevel": "error"}))
    expect_modern_result(s, 3)
    n3 = len([m for m in s.msgs if m and m.get("method") == "notifications/message"])
    if n3 != n2:
        raise Fail("info messages sent to a request that asked for error")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def capabilities_by_request():
    """Capabilities are per request: a tool that needs sampling gets -32021
    naming it, whatever an earlier request or the legacy session declared."""
    s = ModernServer()
    s.init(caps={"sampling": {}})
    s.modern(1, "tools/call", {"name": "test_missing_capability", "arguments": {}})
    e = expect_error(s, 1, -32021)
    if e.get("data", {}).get("requiredCapabilities") != {"sampling": {}}:
        raise Fail(f"-32021 data: {e}")
    s.modern(2, "tools/call", {"name": "roots", "arguments": {}})
    r = expect_modern_result(s, 2)  # the fixture reports ENOTSUP as a tool error
    if not r.get("isError"):
        raise Fail(f"roots without the capability: {r}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def resource_not_found_per_era():
    """An unknown resource is -32602 for a 2026-07-28 request and -32002
    for a legacy one, on the same connection."""
    s = ModernServer()
    s.init()
    s.modern(1, "resources/read", {"uri": "test://nope"})
    e = expect_error(s, 1, -32602)
    if e.get("data", {}).get("uri") != "test://nope":
        raise Fail(f"data.uri: {e}")
    s.send({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": {"uri": "test://nope"}})
    expect_error(s, 2, -32002)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def eof_with_modern_handler():
    """End of input with a 2026-07-28 handler running: it is cancelled
    (transport_closed), nothing is written for it, the process exits."""
    s = ModernServer("--trace", "--grace-ms", "1500")
    s.modern(1, "tools/call", {"name": "sleep", "arguments": {"ms": 60000}})
    s.wait_err("started 1")
    s.close_stdin()
    code, took = s.wait_exit()
    if code != 0:
        raise Fail(f"exit {code}")
    if "cleanup 1 transport_closed" not in s.err:
        raise Fail(f"trace: {s.err[-4:]}")
    s.check_invariants()


def input_required_round_trip():
    """A handler asks for input: a 2026-07-28 client gets input_required
    and retries with inputResponses; a wrong or missing answer is asked
    for again; extra answers are ignored."""
    s = ModernServer()
    caps = {"elicitation": {}}
    tool = {"name": "test_input_required_result_elicitation", "arguments": {}}
    s.modern(1, "tools/call", tool, _meta=meta(caps))
    r = expect_modern_result_type(s, 1, "input_required")
    req = r.get("inputRequests", {}).get("user_name", {})
    if req.get("method") != "elicitation/create" or "requestedSchema" not in req.get("params", {}):
        raise Fail(f"inputRequests: {r}")
    answer = {"action": "accept", "content": {"name": "Alice"}}
    s.modern(2, "tools/call", dict(tool, inputResponses={"user_name": answer, "extra": {}}),
             _meta=meta(caps))
    r = expect_modern_result_type(s, 2, "complete")
    if r["content"][0]["text"] != "Hello, Alice!":
        raise Fail(f"round 2: {r}")
    s.modern(3, "tools/call", dict(tool, inputResponses={"wrong_key": answer}), _meta=meta(caps))
    expect_modern_result_type(s, 3, "input_required")
    s.modern(4, "tools/call", dict(tool, inputResponses="not an object"), _meta=meta(caps))
    expect_error(s, 4, -32602)
    s.modern(5, "tools/call", tool)  # no elicitation capability declared
    e = expect_error(s, 5, -32021)
    if e.get("data", {}).get("requiredCapabilities") != {"elicitation": {}}:
        raise Fail(f"-32021 data: {e}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def expect_modern_result_type(s, rid, kind):
    m = s.answer(rid)
    r = m.get("result")
    if not isinstance(r, dict) or r.get("resultType") != kind:
        raise Fail(f"id {rid}: expected resultType {kind}: {m}")
    return r


def sealed_request_state():
    """The requestState is sealed and bound: the multi-round tool carries
    its state across rounds; a tampered state, or one sealed for another
    tool, is -32602 with the same message."""
    s = ModernServer()
    caps = {"elicitation": {}}
    tool = {"name": "test_input_required_result_multi_round", "arguments": {}}
    s.modern(1, "tools/call", tool, _meta=meta(caps))
    r1 = expect_modern_result_type(s, 1, "input_required")
    st1 = r1.get("requestState")
    if not isinstance(st1, str) or "round-1" in st1:
        raise Fail(f"state not sealed: {r1}")
    s.modern(2, "tools/call", dict(tool, requestState=st1, inputResponses={
        "step1": {"action": "accept", "content": {"name": "Ada"}}}), _meta=meta(caps))
    r2 = expect_modern_result_type(s, 2, "input_required")
    if "step2" not in r2.get("inputRequests", {}) or r2.get("requestState") == st1:
        raise Fail(f"round 2: {r2}")
    s.modern(3, "tools/call", dict(tool, requestState=r2["requestState"], inputResponses={
        "step2": {"action": "accept", "content": {"color": "green"}}}), _meta=meta(caps))
    r3 = expect_modern_result_type(s, 3, "complete")
    if r3["content"][0]["text"] != "Ada likes green":
        raise Fail(f"round 3: {r3}")
    flipped = st1[:-3] + ("A" if st1[-3] != "A" else "B") + st1[-2:]
    messages = set()
    for rid, state, name in ((4, flipped, tool["name"]), (5, "garbage", tool["name"]),
                             (6, st1, "test_input_required_result_tampered_state")):
        s.modern(rid, "tools/call", {"name": name, "arguments": {}, "requestState": state,
                                     "inputResponses": {}}, _meta=meta(caps))
        messages.add(expect_error(s, rid, -32602)["message"])
    if len(messages) != 1:
        raise Fail(f"verification failures are told apart: {messages}")
    s.modern(7, "tools/call", dict(tool, arguments={"x": 1}, requestState=st1,
                                   inputResponses={}), _meta=meta(caps))
    expect_error(s, 7, -32602)  # bound to the arguments too
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def state_expiry_and_key_rotation():
    """A sealed state expires; it is accepted by another process that has
    its key (a load balancer's other backend), and during a rotation by one
    that has it as the previous key, but not by a process with another key."""
    k1, k2 = "11" * 32, "22" * 32
    caps = {"elicitation": {}}
    tool = {"name": "test_input_required_result_request_state", "arguments": {}}
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}

    def first_state(*args):
        s = ModernServer(*args)
        s.modern(1, "tools/call", tool, _meta=meta(caps))
        st = expect_modern_result_type(s, 1, "input_required")["requestState"]
        return s, st

    # The TTL leaves room for four server starts on a slow (sanitizer)
    # build; the expiry is checked after it has surely passed.
    ttl = 6.0
    a, st = first_state("--state-key", k1, "--state-ttl-ms", str(int(ttl * 1000)))
    issued = time.monotonic()
    for args, ok in ((("--state-key", k1), True), (("--state-key", k2, "--state-key-old", k1), True),
                     (("--state-key", k2), False), ((), False)):
        b = ModernServer(*args)
        b.modern(2, "tools/call", dict(tool, requestState=st, inputResponses=answer),
                 _meta=meta(caps))
        if ok:
            r = expect_modern_result_type(b, 2, "complete")
            if "state-ok" not in r["content"][0]["text"]:
                raise Fail(f"{args}: {r}")
        else:
            expect_error(b, 2, -32602)
        b.close_stdin()
        b.wait_exit()
        b.check_invariants()
    time.sleep(max(0.0, issued + ttl + 0.3 - time.monotonic()))
    a.modern(3, "tools/call", dict(tool, requestState=st, inputResponses=answer), _meta=meta(caps))
    expect_error(a, 3, -32602)  # expired
    a.close_stdin()
    a.wait_exit()
    a.check_invariants()


def legacy_bridge():
    """The same re-entry handlers serve a legacy client: the library sends
    real server-to-client requests over the connection and calls the
    handler again with the answers, round after round."""
    s = ModernServer()
    s.init(caps={"elicitation": {}, "roots": {}})
    s.call(1, "test_input_required_result_multi_round")
    answered = set()
    for n, content in enumerate(({"name": "Grace"}, {"color": "blue"})):
        req = s.wait_for(lambda m: m.get("method") == "elicitation/create" and
                         json.dumps(m.get("id")) not in answered,
                         what=f"elicitation round {n + 1}")
        answered.add(json.dumps(req["id"]))
        s.send({"jsonrpc": "2.0", "id": req["id"],
                "result": {"action": "accept", "content": content}})
    r = s.answer(1)
    if r.get("result", {}).get("content", [{}])[0].get("text") != "Grace likes blue":
        raise Fail(f"bridged result: {r}")
    if "resultType" in r["result"]:
        raise Fail("modern fields in a legacy answer")
    s.call(2, "test_input_required_result_list_roots")
    req = s.wait_for(lambda m: m.get("method") == "roots/list", what="roots/list")
    s.send({"jsonrpc": "2.0", "id": req["id"],
            "result": {"roots": [{"uri": "file:///work", "name": "work"}]}})
    r = s.answer(2)
    if "file:///work" not in r.get("result", {}).get("content", [{}])[0].get("text", ""):
        raise Fail(f"bridged roots: {r}")
    s.call(3, "test_input_required_result_sampling")  # sampling not declared
    r = s.answer(3)
    if "error" not in r:
        raise Fail(f"sampling without the capability: {r}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def input_required_on_a_prompt():
    """prompts/get may answer input_required too."""
    s = ModernServer()
    caps = {"elicitation": {}}
    p = {"name": "test_input_required_result_prompt"}
    s.modern(1, "prompts/get", p, _meta=meta(caps))
    expect_modern_result_type(s, 1, "input_required")
    s.modern(2, "prompts/get", dict(p, inputResponses={"user_context": {
        "action": "accept", "content": {"context": "tests"}}}), _meta=meta(caps))
    r = expect_modern_result_type(s, 2, "complete")
    if "tests" not in json.dumps(r.get("messages")):
        raise Fail(f"prompt: {r}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def listen_streams():
    """subscriptions/listen: the acknowledgement comes first, only the
    requested kinds arrive, each tagged with the listen request's id; a
    cancelled listen hears nothing more; shutdown ends the others with the
    listen result."""
    s = ModernServer("--trace")
    s.modern("tools", "subscriptions/listen",
             {"notifications": {"toolsListChanged": True, "bogusKind": True}})
    s.modern("prompts", "subscriptions/listen", {"notifications": {"promptsListChanged": True}})
    for sub in ("tools", "prompts"):
        ack = s.wait_for(lambda m, sub=sub: m.get("method") == "notifications/subscriptions/"
                         "acknowledged" and m["params"]["_meta"].get(
                             "io.modelcontextprotocol/subscriptionId") == sub, what=f"ack {sub}")
        if "bogusKind" in ack["params"]["notifications"]:
            raise Fail(f"acknowledged an unknown kind: {ack}")
    s.modern(1, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    expect_modern_result(s, 1)
    s.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed",
               what="tools/list_changed")
    s.modern(2, "tools/call", {"name": "test_trigger_prompt_change", "arguments": {}})
    expect_modern_result(s, 2)
    s.wait_for(lambda m: m.get("method") == "notifications/prompts/list_changed",
               what="prompts/list_changed")
    with s.cv:
        changes = [m for m in s.msgs if m and m.get("method", "").endswith("/list_changed")]
    tags = {m["method"]: m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
            for m in changes}
    if tags != {"notifications/tools/list_changed": "tools",
                "notifications/prompts/list_changed": "prompts"} or len(changes) != 2:
        raise Fail(f"deliveries: {changes}")
    s.cancel("tools")
    s.modern(3, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    expect_modern_result(s, 3)
    s.none_for(lambda m: m.get("method") == "notifications/tools/list_changed" and
               m not in changes, 0.3, "a change after the listen was cancelled")
    s.p.send_signal(15)
    end = s.answer("prompts")
    r = end.get("result", {})
    if r.get("resultType") != "complete" or \
            r.get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") != "prompts":
        raise Fail(f"listen result on shutdown: {end}")
    code, _ = s.wait_exit()
    if code != 0 or any(m and m.get("id") == "tools" for m in s.msgs):
        raise Fail(f"exit {code}, or an answer for the cancelled listen")
    s.check_invariants()


def listen_ends_silently_on_eof():
    """End of input closes a listen stream without an answer."""
    s = ModernServer()
    s.modern("L", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    s.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    s.close_stdin()
    code, _ = s.wait_exit()
    if code != 0 or any(m and m.get("id") == "L" for m in s.msgs):
        raise Fail(f"exit {code}, or an answer to the listen after EOF")
    s.check_invariants()


# ---- parked handlers: the blocking client calls of a 2026-07-28 request ----

ROOTS_CAPS = {"roots": {}}


def _parked_input(r):
    """The one input a parked handler asks for: (key, requestState)."""
    reqs = r.get("inputRequests", {})
    if len(reqs) != 1:
        raise Fail(f"a parked handler asks for one input: {r}")
    key, req = next(iter(reqs.items()))
    if req.get("method") != "roots/list" or not isinstance(r.get("requestState"), str):
        raise Fail(f"inputRequests: {r}")
    return key, r["requestState"]


def _retry(s, rid, args, key, answer, state):
    s.modern(rid, "tools/call", {"name": "roots", "arguments": args,
                                 "inputResponses": {key: answer}, "requestState": state},
             _meta=meta(ROOTS_CAPS))


def parked_handler_resumed():
    """A handler blocked in mcp_ctx_list_roots for a 2026-07-28 request is
    parked: its request is answered input_required, each retry hands the
    input over and is answered with what the handler says next (asked
    twice here: input_required again, then the result).  A replayed
    state, or a retry with other arguments, is -32602."""
    s = ModernServer("--trace")
    args = {"times": 2}
    s.modern(1, "tools/call", {"name": "roots", "arguments": args}, _meta=meta(ROOTS_CAPS))
    key1, st1 = _parked_input(expect_modern_result_type(s, 1, "input_required"))
    s.wait_err("started 1")
    _retry(s, 2, {"times": 3}, key1, {"roots": []}, st1)   # other arguments
    expect_error(s, 2, -32602)
    _retry(s, 3, args, key1, {"roots": [{"uri": "file:///a"}]}, st1)
    key2, st2 = _parked_input(expect_modern_result_type(s, 3, "input_required"))
    if key2 == key1 or st2 == st1:
        raise Fail(f"second round reuses the first's key or state: {key2} {st2[:20]}")
    _retry(s, 4, args, key1, {"roots": []}, st1)            # replay of round 1
    expect_error(s, 4, -32602)
    _retry(s, 5, args, key2, {"roots": [{"uri": "file:///b"}]}, st2)
    r = expect_modern_result_type(s, 5, "complete")
    if "file:///b" not in r["content"][0]["text"] or r.get("isError"):
        raise Fail(f"final answer: {r}")
    s.wait_err("cleanup 1 completed")
    s.close_stdin()
    if s.wait_exit()[0] != 0:
        raise Fail("exit status")
    s.check_invariants()
    if any("#park" in line for line in s.err):
        raise Fail(f"the trace shows an internal key: {[x for x in s.err if '#park' in x]}")


def parked_handler_expires():
    """A parked handler waits its TTL for the input, then its call fails
    (MCP_ETIMEDOUT) and a late retry is -32602; nothing more is written
    for the first request."""
    s = ModernServer("--trace", "--park-ttl-ms", "200")
    s.modern(1, "tools/call", {"name": "roots", "arguments": {}}, _meta=meta(ROOTS_CAPS))
    key, st = _parked_input(expect_modern_result_type(s, 1, "input_required"))
    s.wait_err("cleanup 1 completed")
    _retry(s, 2, {}, key, {"roots": []}, st)
    expect_error(s, 2, -32602)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()
    if len([m for m in s.msgs if isinstance(m, dict) and m.get("id") == 1]) != 1:
        raise Fail("request 1 answered more than once")


def parked_handlers_cap():
    """With --max-parked 1 a second handler cannot park: its call fails
    (MCP_EBUSY, the tool reports it) while the first still resumes."""
    s = ModernServer("--max-parked", "1")
    s.modern(1, "tools/call", {"name": "roots", "arguments": {}}, _meta=meta(ROOTS_CAPS))
    key, st = _parked_input(expect_modern_result_type(s, 1, "input_required"))
    s.modern(2, "tools/call", {"name": "roots", "arguments": {}}, _meta=meta(ROOTS_CAPS))
    r = expect_modern_result_type(s, 2, "complete")
    if not r.get("isError") or "roots/list failed" not in r["content"][0]["text"]:
        raise Fail(f"second handler: {r}")
    _retry(s, 3, {}, key, {"roots": [{"uri": "file:///c"}]}, st)
    r = expect_modern_result_type(s, 3, "complete")
    if "file:///c" not in r["content"][0]["text"]:
        raise Fail(f"resumed: {r}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def parked_handlers_cancelled_on_shutdown():
    """End of input with parked handlers: each is cancelled like any
    other request (transport_closed), nothing more is written, and the
    process exits 0."""
    s = ModernServer("--trace", "--grace-ms", "3000")
    for rid in (1, 2, 3):
        s.modern(rid, "tools/call", {"name": "roots", "arguments": {}}, _meta=meta(ROOTS_CAPS))
        expect_modern_result_type(s, rid, "input_required")
    s.close_stdin()
    code, _ = s.wait_exit()
    if code != 0:
        raise Fail(f"exit {code}")
    for rid in (1, 2, 3):
        if f"cleanup {rid} transport_closed" not in s.err:
            raise Fail(f"trace for {rid}: {s.err[-6:]}")
    if len(s.msgs) != 3:
        raise Fail(f"written after the close: {s.msgs[3:]}")
    s.check_invariants()


def parked_retry_cancelled():
    """The client cancels the retry that is waiting for the resumed
    handler: nothing is written for the retry, and the parked handler is
    cancelled too (peer_cancelled)."""
    s = ModernServer("--trace")
    args = {"sleep_ms": 60000}
    s.modern(1, "tools/call", {"name": "roots", "arguments": args}, _meta=meta(ROOTS_CAPS))
    key, st = _parked_input(expect_modern_result_type(s, 1, "input_required"))
    _retry(s, 2, args, key, {"roots": []}, st)
    s.wait_err("started 2")
    time.sleep(0.1)
    s.cancel(2)
    s.wait_err("cleanup 1 peer_cancelled")
    s.wait_err("cleanup 2 peer_cancelled")
    s.none_for(lambda m: m.get("id") == 2, 0.3, "answer after cancel")
    s.modern(3, "tools/call", {"name": "echo", "arguments": {"text": "after"}})
    expect_modern_result(s, 3)
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


SCENARIOS = [listen_streams, listen_ends_silently_on_eof, probe_then_fallback, modern_without_initialize, envelope_ladder,
             cancel_modern_request, logging_by_request, capabilities_by_request,
             resource_not_found_per_era, eof_with_modern_handler, input_required_round_trip,
             sealed_request_state, state_expiry_and_key_rotation, legacy_bridge,
             input_required_on_a_prompt, parked_handler_resumed, parked_handler_expires,
             parked_handlers_cap, parked_handlers_cancelled_on_shutdown, parked_retry_cancelled]


def main(argv):
    """One TAP test point per scenario (tests/lib/tap.py)."""
    skip = None if BIN and os.access(BIN, os.X_OK) else "MCP_EVERYTHING is not set to the built binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
