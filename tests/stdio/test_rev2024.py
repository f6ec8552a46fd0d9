#!/usr/bin/env python3
"""test_rev2024.py - a client of protocol revision 2024-11-05, the first MCP
revision, against mcp-everything (and mcp-files) over real pipes.

The server must answer initialize with 2024-11-05 and then write only what
that revision has: no completions capability, no tool titles, annotations
or output schemas, no structuredContent, no audio or resource_link content,
no progress message, no elicitation, no batches.  The official schema of
2024-11-05 allows extra members almost everywhere, so validating the
output (make check-schema records this file) cannot see such fields: every
scenario here also walks everything the server wrote and fails on any of
them (later_fields).

Usage: MCP_EVERYTHING=path/to/mcp-everything [MCP_FILES=path/to/mcp-files]
       test_rev2024.py [--list] [--repeat N] [NAME...]
Prints TAP: one test point per scenario (tests/lib/tap.py).
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Fail, Server  # noqa: E402
import tap  # noqa: E402  (on the path through harness)

REV = "2024-11-05"
FILES = os.environ.get("MCP_FILES")

# What a 2024-11-05 server may put in its capabilities: the schema's own
# members, and the extensions object of MCP Apps and skills, which the
# library offers in every revision (doc/design.md).
CAPS_2024 = {"experimental", "logging", "prompts", "resources", "tools", "extensions"}
# Members that came with later revisions, wherever they appear.
LATER_KEYS = {
    "structuredContent": "2025-06-18",
    "outputSchema": "2025-06-18",
    "title": "2025-06-18",
    "icons": "2025-11-25",
    "execution": "2025-11-25",
    "completions": "2025-03-26 (as a capability)",
}
LATER_CONTENT = {"audio": "2025-03-26", "resource_link": "2025-06-18"}
LATER_METHODS = {"elicitation/create": "2025-06-18", "notifications/tasks/status": "2025-11-25",
                 "notifications/elicitation/complete": "2025-11-25"}
# Subtrees whose members are not protocol fields: a tool's JSON Schema may
# say "title", a log's data and any _meta are the application's.
OPAQUE = {"inputSchema", "requestedSchema", "_meta", "data", "experimental", "extensions",
          "arguments"}


def later_fields(m, path="$"):
    """The places in message `m` that a 2024-11-05 peer cannot be sent."""
    bad = []
    if isinstance(m, list):
        for i, x in enumerate(m):
            bad += later_fields(x, f"{path}[{i}]")
        return bad
    if not isinstance(m, dict):
        return bad
    for k, v in m.items():
        if k in LATER_KEYS:
            bad.append(f"{path}.{k} (from {LATER_KEYS[k]})")
        if k == "type" and v in LATER_CONTENT:
            bad.append(f"{path} content type {v} (from {LATER_CONTENT[v]})")
        if k not in OPAQUE:
            bad += later_fields(v, f"{path}.{k}")
    return bad


def check_all_2024(s):
    """Everything s's server wrote: no batch answer, no request or
    notification of a later revision, no later member; a tool never has
    annotations and progress never a message."""
    with s.cv:
        msgs = [m for m in s.msgs if m is not None]
    bad = []
    for i, m in enumerate(msgs):
        if isinstance(m, list):
            bad.append(f"msg {i}: a batch answer {json.dumps(m)[:120]}")
            continue
        if m.get("method") in LATER_METHODS:
            bad.append(f"msg {i}: {m['method']} (from {LATER_METHODS[m['method']]})")
        if m.get("method") == "notifications/progress" and "message" in m.get("params", {}):
            bad.append(f"msg {i}: a progress message (from 2025-03-26)")
        for t in (m.get("result") or {}).get("tools", []):
            if "annotations" in t:
                bad.append(f"msg {i}: tool {t.get('name')} has annotations (from 2025-03-26)")
        bad += [f"msg {i}: {b}" for b in later_fields(m)]
    if bad:
        raise Fail("later-revision output to a 2024-11-05 client:\n  " + "\n  ".join(bad[:12]))
    return len(msgs)


class Client:
    """A 2024-11-05 session: numbered requests, answers waited for."""

    def __init__(self, *args, caps=None, binary=None):
        self.s = Server(*args, binary=binary)
        self.n = 100
        self.s.init(version=REV, caps=caps)

    def req(self, method, params=None, meta=None):
        self.n += 1
        p = dict(params or {})
        if meta:
            p["_meta"] = meta
        self.s.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": p})
        return self.s.answer(self.n, timeout=20)

    def ok(self, method, params=None, meta=None):
        m = self.req(method, params, meta)
        if "result" not in m:
            raise Fail(f"{method} {params}: {m}")
        return m["result"]

    def err(self, method, params, code):
        m = self.req(method, params)
        if m.get("error", {}).get("code") != code:
            raise Fail(f"{method} {params}: want error {code}, got {m}")
        return m["error"]

    def done(self):
        self.s.close_stdin()
        code, _ = self.s.wait_exit()
        if code != 0:
            raise Fail(f"exit {code}; stderr tail {self.s.err[-5:]}")
        self.s.check_invariants()
        return check_all_2024(self.s)


# ---- scenarios -------------------------------------------------------------

def initialize_answers_2024():
    """initialize with 2024-11-05 is answered 2024-11-05, with only the
    capabilities of that revision (no completions though completion
    functions are registered, no tasks)."""
    c = Client(caps={"roots": {"listChanged": True}, "sampling": {}})
    res = c.s.msgs[0]["result"]
    if res["protocolVersion"] != REV:
        raise Fail(f"protocolVersion {res['protocolVersion']}")
    caps = res["capabilities"]
    extra = set(caps) - CAPS_2024
    if extra:
        raise Fail(f"capabilities of later revisions: {sorted(extra)} in {caps}")
    for want in ("tools", "resources", "prompts", "logging"):
        if want not in caps:
            raise Fail(f"capability {want} missing: {caps}")
    if set(res) - {"protocolVersion", "capabilities", "serverInfo", "instructions", "_meta"}:
        raise Fail(f"InitializeResult members {sorted(res)}")
    if set(res["serverInfo"]) != {"name", "version"}:
        raise Fail(f"serverInfo {res['serverInfo']} (title came with 2025-06-18)")
    c.done()


def lists_without_later_fields():
    """tools/list, prompts/list, resources/list and templates/list: no
    title, outputSchema, annotations or execution, though the fixture's
    tools have titles and dice an output schema."""
    c = Client()
    tools = c.ok("tools/list")["tools"]
    names = {t["name"] for t in tools}
    for want in ("echo", "dice", "test_audio_content"):
        if want not in names:
            raise Fail(f"tool {want} not listed: {sorted(names)}")
    for t in tools:
        extra = set(t) - {"name", "description", "inputSchema", "_meta"}
        if extra:
            raise Fail(f"tool {t['name']} has {sorted(extra)}")
    for p in c.ok("prompts/list")["prompts"]:
        if set(p) - {"name", "description", "arguments"}:
            raise Fail(f"prompt {p}")
        for a in p.get("arguments", []):
            if set(a) - {"name", "description", "required"}:
                raise Fail(f"prompt argument {a}")
    for r in c.ok("resources/list")["resources"]:
        if set(r) - {"uri", "name", "description", "mimeType", "size", "annotations", "_meta"}:
            raise Fail(f"resource {r}")
    for t in c.ok("resources/templates/list")["resourceTemplates"]:
        if set(t) - {"uriTemplate", "name", "description", "mimeType", "annotations", "_meta"}:
            raise Fail(f"template {t}")
    c.done()


def tool_results_downgraded():
    """Audio becomes a text note that names its type; a tool with an output
    schema answers with its text content only; text, image and embedded
    resources pass unchanged; an unknown tool is -32602."""
    c = Client()
    audio = c.ok("tools/call", {"name": "test_audio_content", "arguments": {}})
    content = audio["content"]
    if len(content) != 1 or content[0]["type"] != "text" or \
            "audio/wav" not in content[0]["text"] or REV not in content[0]["text"]:
        raise Fail(f"audio result {audio}")
    dice = c.ok("tools/call", {"name": "dice", "arguments": {"count": 3}})
    if "structuredContent" in dice or not dice["content"] or \
            not dice["content"][0]["text"].startswith("rolled"):
        raise Fail(f"dice result {dice}")
    mixed = c.ok("tools/call", {"name": "test_multiple_content_types", "arguments": {}})
    if [b["type"] for b in mixed["content"]] != ["text", "image", "resource"]:
        raise Fail(f"mixed result {mixed}")
    emb = c.ok("tools/call", {"name": "test_embedded_resource", "arguments": {}})
    if not any(b["type"] == "resource" and "uri" in b["resource"] for b in emb["content"]):
        raise Fail(f"embedded resource result {emb}")
    echo = c.ok("tools/call", {"name": "echo", "arguments": {"text": "first revision"}})
    if echo["content"] != [{"type": "text", "text": "first revision"}]:
        raise Fail(f"echo {echo}")
    bad = c.ok("tools/call", {"name": "test_error_handling", "arguments": {}})
    if bad.get("isError") is not True:
        raise Fail(f"tool error {bad}")
    c.err("tools/call", {"name": "no_such_tool", "arguments": {}}, -32602)
    c.done()


def prompts_resources_completion():
    """prompts/get with image and embedded resource, resources read and
    subscribe, and completion/complete answered although 2024-11-05 has no
    completions capability to announce it."""
    c = Client()
    img = c.ok("prompts/get", {"name": "test_prompt_with_image"})
    if img["messages"][0]["content"]["type"] != "image":
        raise Fail(f"image prompt {img}")
    emb = c.ok("prompts/get", {"name": "test_prompt_with_embedded_resource",
                               "arguments": {"resourceUri": "test://static-text"}})
    if not any(m["content"]["type"] == "resource" for m in emb["messages"]):
        raise Fail(f"embedded resource prompt {emb}")
    args = c.ok("prompts/get", {"name": "test_prompt_with_arguments",
                                "arguments": {"arg1": "a", "arg2": "b"}})
    if not args["messages"]:
        raise Fail(f"prompt with arguments {args}")
    text = c.ok("resources/read", {"uri": "test://static-text"})["contents"][0]
    if "text" not in text:
        raise Fail(f"static text {text}")
    blob = c.ok("resources/read", {"uri": "test://static-binary"})["contents"][0]
    if "blob" not in blob:
        raise Fail(f"static binary {blob}")
    c.ok("resources/read", {"uri": "test://template/5/data"})
    c.ok("resources/subscribe", {"uri": "test://watched-resource"})
    c.ok("resources/unsubscribe", {"uri": "test://watched-resource"})
    comp = c.ok("completion/complete", {"ref": {"type": "ref/prompt",
                                                "name": "test_prompt_with_arguments"},
                                        "argument": {"name": "arg1", "value": ""}})
    if not isinstance(comp["completion"]["values"], list) or not comp["completion"]["values"]:
        raise Fail(f"completion {comp}")
    c.ok("completion/complete", {"ref": {"type": "ref/resource",
                                         "uri": "test://template/{id}/data"},
                                 "argument": {"name": "id", "value": ""}})
    c.err("completion/complete", {"ref": {"type": "ref/prompt", "name": "nope"},
                                  "argument": {"name": "x", "value": ""}}, -32602)
    if "completions" in c.s.msgs[0]["result"]["capabilities"]:
        raise Fail("completions capability announced")
    c.done()


def logging_progress_ping():
    """logging/setLevel and log notifications; progress notifications
    without their message (the tool passes one); ping."""
    c = Client()
    c.ok("logging/setLevel", {"level": "debug"})
    c.err("logging/setLevel", {"level": "loud"}, -32602)
    c.ok("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    logs = [m for m in c.s.msgs if m and m.get("method") == "notifications/message"]
    if len(logs) < 3 or any(set(m["params"]) - {"level", "logger", "data"} for m in logs):
        raise Fail(f"log notifications {logs}")
    res = c.ok("tools/call", {"name": "test_tool_with_progress", "arguments": {}},
               meta={"progressToken": "p1"})
    if not res["content"]:
        raise Fail(f"progress tool {res}")
    prog = [m for m in c.s.msgs if m and m.get("method") == "notifications/progress"]
    if len(prog) < 2:
        raise Fail(f"progress notifications {prog}")
    for m in prog:
        if set(m["params"]) - {"progressToken", "progress", "total"}:
            raise Fail(f"progress params {m['params']}")
    if c.ok("ping") != {}:
        raise Fail("ping")
    c.done()


def batch_refused():
    """A JSON-RPC batch (2025-03-26 only) is one -32600 with a null id that
    says so, and none of its elements runs."""
    c = Client()
    c.s.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "b"}}}])
    m = c.s.wait_for(lambda m: isinstance(m, dict) and m.get("id") is None and "error" in m,
                     what="the batch refusal")
    if m["error"]["code"] != -32600 or "batch" not in m["error"]["message"]:
        raise Fail(f"batch refusal {m}")
    c.ok("ping")                 # ordered after the batch: its elements would be in
    if any(isinstance(x, (list, dict)) and isinstance(x, dict) and x.get("id") in (1, 2)
           for x in c.s.msgs):
        raise Fail("an element of the refused batch was answered")
    c.done()


def elicitation_not_offered_sampling_kept():
    """A client that (wrongly) declares elicitation is never sent
    elicitation/create: the tool learns elicitation is not supported.
    Sampling and roots, which 2024-11-05 has, still reach the client."""
    c = Client(caps={"elicitation": {}, "sampling": {}, "roots": {}})
    res = c.req("tools/call", {"name": "test_elicitation",
                               "arguments": {"message": "name?"}})
    if "result" in res and not res["result"].get("isError"):
        raise Fail(f"elicitation tool succeeded: {res}")
    c.n += 1
    rid = c.n
    c.s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}})
    q = c.s.wait_for(lambda m: m.get("method") == "sampling/createMessage",
                     what="sampling/createMessage")
    if set(q["params"]) - {"messages", "maxTokens", "systemPrompt", "includeContext",
                           "temperature", "stopSequences", "metadata", "modelPreferences"}:
        raise Fail(f"sampling params {q['params']}")
    c.s.send({"jsonrpc": "2.0", "id": q["id"],
              "result": {"role": "assistant", "model": "m",
                         "content": {"type": "text", "text": "sampled"}}})
    m = c.s.answer(rid, timeout=20)
    if "sampled" not in json.dumps(m.get("result")):
        raise Fail(f"sampling tool {m}")
    c.n += 1
    rid = c.n
    c.s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": "roots", "arguments": {}}})
    q = c.s.wait_for(lambda m: m.get("method") == "roots/list", what="roots/list")
    c.s.send({"jsonrpc": "2.0", "id": q["id"],
              "result": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}})
    if "file:///tmp" not in json.dumps(c.s.answer(rid, timeout=20)):
        raise Fail("roots tool did not see the roots")
    c.done()


def unknown_old_version_gets_newest():
    """A revision older than 2024-11-05 is not one: it is answered with
    the newest negotiable revision, as before."""
    s = Server()
    s.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2024-10-07", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
    m = s.answer("init")
    if m["result"]["protocolVersion"] != "2025-11-25":
        raise Fail(f"initialize 2024-10-07: {m}")
    s.close_stdin()
    s.wait_exit()
    s.check_invariants()


def files_server_annotations_structured_progress():
    """mcp-files, whose tools carry titles, annotations and output schemas
    and whose search reports progress with a message: a 2024-11-05 client
    sees none of them, and search answers with its text."""
    if not FILES or not os.access(FILES, os.X_OK):
        raise tap.Skip("set MCP_FILES to examples/mcp-files")
    root = tempfile.mkdtemp(prefix="rev2024-")
    try:
        for i in range(3):
            with open(os.path.join(root, f"f{i}.txt"), "w") as f:
                f.write(f"line one\nneedle {i}\n")
        c = Client(root, binary=FILES)
        tools = c.ok("tools/list")["tools"]
        if not tools or any(set(t) - {"name", "description", "inputSchema"} for t in tools):
            raise Fail(f"mcp-files tools {tools}")
        res = c.ok("tools/call", {"name": "search", "arguments": {"query": "needle"}},
                   meta={"progressToken": 7})
        if "structuredContent" in res or "needle" not in json.dumps(res["content"]):
            raise Fail(f"search {res}")
        prog = [m for m in c.s.msgs if m and m.get("method") == "notifications/progress"]
        if not prog or any("message" in m["params"] for m in prog):
            raise Fail(f"search progress {prog}")
        c.done()
    finally:
        shutil.rmtree(root, ignore_errors=True)


SCENARIOS = [initialize_answers_2024, lists_without_later_fields, tool_results_downgraded,
             prompts_resources_completion, logging_progress_ping, batch_refused,
             elicitation_not_offered_sampling_kept, unknown_old_version_gets_newest,
             files_server_annotations_structured_progress]


def main(argv):
    skip = None if BIN and os.access(BIN, os.X_OK) else "set MCP_EVERYTHING to the fixture binary"
    return tap.run(SCENARIOS, argv, skip_reason=skip)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
