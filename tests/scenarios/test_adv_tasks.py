#!/usr/bin/env python3
"""test_adv_tasks.py - the engine's promises inside tasks, over real pipes
and sockets against the real mcp-everything: the 2026-07-28 tasks
extension (SEP-2663) and the 2025-11-25 tasks beside it, W3C trace
context passed on (SEP-414), MCP Apps' listing, and skills (SEP-2640) in
both eras.  With MCP_SCHEMA_RECORD set, what the stdio servers wrote is
recorded for make check-schema, each message under the revision of the
request it answers (2026-07-28 for those of requests with their own
_meta, and for the notifications of a server that never initialized).

What each scenario asserts:
  - end of input or SIGTERM with tasks running: every task handler sees the
    reason (its trace "cleanup" line), the process exits within the grace
    period, and nothing reaches the client about a 2026-07-28 task after
    the close (its answer went to the task, never to the wire);
  - a task cancelled while its handler waits for input (the re-entry
    style, and a blocking mcp_ctx_elicit) is cancelled exactly like a
    request: the wait wakes, the handler sees peer_cancelled, tasks/get
    says cancelled;
  - a task's result fetched over HTTP by another connection after the
    POST that started it, and its connection, have gone; a shutdown of an
    HTTP server with such tasks running cancels them with "shutdown";
  - input rounds: partial tasks/update, keys that are not outstanding
    ignored, the TTL bounding the wait, the task limit refused as busy;
  - notifications/tasks on a subscriptions/listen stream;
  - traceparent/tracestate of a request reach the _meta of what the server
    asks the client for it, invalid ones never do.

Usage: MCP_EVERYTHING=... test_adv_tasks.py [--list] [NAME...]
"""
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from advlib import (INITIALIZED, AdvServer, Fail, T, call_msg, init_msg,  # noqa: E402,F401
                    req, run)
from test_adv_soak_http import HttpServer  # noqa: E402
from test_adv_http_scale import Conn  # noqa: E402

EXPECTED_FAILURES = {
}

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TS = "vendor=opaque,other@sys=x"


def meta(caps=None, extra=None):
    m = {"io.modelcontextprotocol/protocolVersion": MODERN,
         "io.modelcontextprotocol/clientInfo": {"name": "adv-tasks", "version": "1"},
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else
         {"elicitation": {}, "extensions": {TASKS: {}}}}
    m.update(extra or {})
    return m


def mcall(rid, tool, args=None, caps=None, extra=None):
    return req(rid, "tools/call", {"name": tool, "arguments": args or {},
                                   "_meta": meta(caps, extra)})


def mreq(rid, method, params=None, caps=None):
    p = dict(params or {})
    p["_meta"] = meta(caps)
    return req(rid, method, p)


def result(s, rid, timeout=10):
    m = s.answer(rid, timeout)
    if "result" not in m:
        raise Fail(f"answer to {rid} is an error: {m}")
    return m["result"]


def error_code(s, rid):
    m = s.answer(rid)
    if "error" not in m:
        raise Fail(f"answer to {rid} is not an error: {m}")
    return m["error"]["code"]


def new_task(s, rid, tool, args=None, extra=None):
    s.send(mcall(rid, tool, args, extra=extra))
    r = result(s, rid)
    if r.get("resultType") != "task" or "taskId" not in r or "task" in r:
        raise Fail(f"{tool} did not answer a flat CreateTaskResult: {r}")
    for k in ("status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"):
        if k not in r:
            raise Fail(f"CreateTaskResult without {k}: {r}")
    return r["taskId"]


class Ids:
    """Fresh request ids for polls."""
    def __init__(self, start=1000):
        self.n = start

    def __call__(self):
        self.n += 1
        return self.n


def get(s, ids, tid):
    rid = ids()
    s.send(mreq(rid, "tasks/get", {"taskId": tid}))
    return result(s, rid)


def until(s, ids, tid, pred, what, timeout=10):
    end = time.monotonic() + T(timeout)
    while True:
        t = get(s, ids, tid)
        if pred(t):
            return t
        if time.monotonic() > end:
            raise Fail(f"task {tid} never {what}: {t}")
        time.sleep(0.05)


class EraServer(AdvServer):
    """Records each message under its era (see the top of the file)."""

    def __init__(self, *args, **kw):
        self.modern_ids = set()
        super().__init__(*args, **kw)

    def send(self, *msgs):
        for m in msgs:
            if isinstance(m, dict) and "id" in m and \
                    "io.modelcontextprotocol/protocolVersion" in \
                    ((m.get("params") or {}).get("_meta") or {}):
                self.modern_ids.add(json.dumps(m["id"]))
        super().send(*msgs)

    def _record(self, m):
        modern = isinstance(m, dict) and (json.dumps(m.get("id")) in self.modern_ids or
                                          ("id" not in m and self.rev is None))
        if modern:
            saved, self.rev = self.rev, MODERN
            try:
                super()._record(m)
            finally:
                self.rev = saved
        elif self.rev is not None:
            super()._record(m)


def modern_stdio(*args):
    return EraServer(*args, task_keys=True)


# ---- stdio ----------------------------------------------------------------------------

def modern_task_lifecycle_and_gating():
    """A 2026-07-28 task over stdio from start to result, with the
    extension's gating: no task and -32021 without the extension, no
    tasks/result or tasks/list, idempotent cancel acks."""
    s = modern_stdio()
    ids = Ids()
    tid = new_task(s, 1, "slow_compute", {"seconds": 0.3, "label": "x"})
    t = until(s, ids, tid, lambda t: t["status"] == "completed", "completed")
    if t.get("resultType") != "complete" or "requestState" in t:
        raise Fail(f"tasks/get: {t}")
    text = t["result"]["content"][0]["text"]
    if "computed x" not in text or "related-task" in json.dumps(t["result"].get("_meta", {})):
        raise Fail(f"inlined result: {t['result']}")
    # Without the extension: a plain call of an optional tool, -32021 for
    # a required one and for the tasks methods.
    plain = {"elicitation": {}}
    s.send(mcall(2, "slow_compute", {"seconds": 0}, caps=plain))
    r = result(s, 2)
    if r.get("resultType") != "complete" or "taskId" in r or not r.get("content"):
        raise Fail(f"slow_compute without the extension: {r}")
    s.send(mcall(3, "failing_job", caps=plain))
    m = s.answer(3)
    if m.get("error", {}).get("code") != -32021 or \
            TASKS not in m["error"].get("data", {}).get("requiredCapabilities", {}) \
            .get("extensions", {}):
        raise Fail(f"a required task tool without the extension: {m}")
    for i, method in enumerate(("tasks/get", "tasks/update", "tasks/cancel")):
        params = {"taskId": tid, "inputResponses": {}}
        s.send(mreq(10 + i, method, params, caps=plain))
        if error_code(s, 10 + i) != -32021:
            raise Fail(f"{method} without the extension")
    for i, method in enumerate(("tasks/result", "tasks/list")):
        s.send(mreq(20 + i, method, {"taskId": tid}))
        if error_code(s, 20 + i) != -32601:
            raise Fail(f"{method} exists for 2026-07-28")
    # cancel: an empty ack, also on a finished task; unknown ids -32602.
    s.send(mreq(30, "tasks/cancel", {"taskId": tid}))
    ack = result(s, 30)
    if ack.get("resultType") != "complete" or set(ack) - {"resultType", "_meta"}:
        raise Fail(f"cancel ack of a finished task: {ack}")
    s.send(mreq(31, "tasks/get", {"taskId": "no-such-task"}))
    if error_code(s, 31) != -32602:
        raise Fail("unknown task id")
    # A tool error completes the task; a JSON-RPC error fails it.
    t1, t2 = new_task(s, 40, "failing_job"), new_task(s, 41, "protocol_error_job")
    a = until(s, ids, t1, lambda t: t["status"] in ("completed", "failed", "cancelled"), "ended")
    b = until(s, ids, t2, lambda t: t["status"] in ("completed", "failed", "cancelled"), "ended")
    if a["status"] != "completed" or a["result"].get("isError") is not True:
        raise Fail(f"failing_job: {a}")
    if b["status"] != "failed" or "result" in b or not isinstance(b["error"].get("code"), int):
        raise Fail(f"protocol_error_job: {b}")
    s.finish()


def eof_with_tasks_running():
    """End of input with a 2026-07-28 task and a 2025-11-25 task running:
    both handlers see transport_closed at once, the process exits well
    within the grace period, and nothing about the 2026-07-28 task is
    written after the close."""
    s = modern_stdio("--grace-ms", "5000")
    s.init()
    tid = new_task(s, 1, "slow_compute", {"seconds": 600})
    s.request(2, "tools/call", {"name": "sleep", "arguments": {"ms": 600000},
                                "task": {"ttl": 60000}})
    legacy = result(s, 2)["task"]["taskId"]
    s.wait_err('started 1')
    s.wait_err('started 2')
    before = s.count_output()
    t0 = time.monotonic()
    s.close_stdin()
    s.wait_cleanup(1, "transport_closed", timeout=3)
    s.wait_cleanup(2, "transport_closed", timeout=3)
    s.wait_exit(5)
    if time.monotonic() - t0 > T(3):
        raise Fail("the tasks held the exit past their cancellation")
    after = s.snapshot()[before:]
    for m in after:
        if m.get("method") != "notifications/tasks/status" or \
                m["params"].get("taskId") != legacy:
            raise Fail(f"written after the close: {m} (task {tid})")
    s.finish()


def sigterm_with_tasks_running():
    """SIGTERM with a 2026-07-28 task running over stdio: its handler sees
    shutdown, the exit is orderly (status 0, tables empty)."""
    s = modern_stdio()
    new_task(s, 1, "slow_compute", {"seconds": 600})
    s.wait_err("started 1")
    s.p.send_signal(signal.SIGTERM)
    s.wait_cleanup(1, "shutdown", timeout=3)
    s.finish()


def cancel_while_waiting_for_input():
    """A task waiting for input, in both styles (a handler that returned
    MCP_EINPUT, one blocked in mcp_ctx_elicit), and a 2025-11-25 task
    blocked in an elicitation sent to the client: tasks/cancel wakes it
    with peer_cancelled, at once, and tasks/get says cancelled."""
    s = modern_stdio()
    ids = Ids()
    for rid, tool in ((1, "confirm_delete"), (2, "approve")):
        tid = new_task(s, rid, tool, {"filename": "f", "change": "c"})
        t = until(s, ids, tid, lambda t: t["status"] == "input_required", "asked")
        reqs = t.get("inputRequests") or {}
        if len(reqs) != 1 or list(reqs.values())[0].get("method") != "elicitation/create":
            raise Fail(f"{tool}: inputRequests {reqs}")
        rc = ids()
        s.send(mreq(rc, "tasks/cancel", {"taskId": tid}))
        result(s, rc)
        s.wait_cleanup(rid, "peer_cancelled", timeout=2)
        t = get(s, ids, tid)
        if t["status"] != "cancelled" or "inputRequests" in t:
            raise Fail(f"{tool} after cancel: {t}")
    s.finish()
    # 2025-11-25: the task's elicitation is a real request to the client,
    # tagged with the task; tasks/cancel wakes the handler the same way,
    # and the server withdraws what it asked.
    l = EraServer()
    l.init(caps={"elicitation": {}})
    l.request(1, "tools/call", {"name": "approve", "arguments": {"change": "c"},
                                "task": {"ttl": 60000}})
    tid = result(l, 1)["task"]["taskId"]
    ask = l.wait_for(lambda m: m.get("method") == "elicitation/create" and "id" in m,
                     what="elicitation/create")
    rel = ask["params"].get("_meta", {}).get("io.modelcontextprotocol/related-task", {})
    if rel.get("taskId") != tid:
        raise Fail(f"the task's elicitation is not tagged with it: {ask}")
    l.wait_for(lambda m: m.get("method") == "notifications/tasks/status" and
               m["params"].get("status") == "input_required", what="input_required status")
    l.request(2, "tasks/cancel", {"taskId": tid})
    result(l, 2)
    l.wait_cleanup(1, "peer_cancelled", timeout=2)
    l.wait_for(lambda m: m.get("method") == "notifications/cancelled" and
               m["params"].get("requestId") == ask["id"], what="the withdrawn elicitation")
    l.finish()


def input_rounds_partial_ttl_and_limit():
    """tasks/update with one of two keys keeps the task input_required
    with the other; keys never issued are ignored; both answered, it
    completes.  A task whose input never comes ends at its TTL (timeout),
    and still shows how it ended; past --max-tasks a call is refused busy."""
    s = modern_stdio("--task-ttl-ms", "1500", "--max-tasks", "3")
    ids = Ids()
    tid = new_task(s, 1, "multi_input")
    t = until(s, ids, tid, lambda t: len(t.get("inputRequests") or {}) == 2, "asked twice")
    k1, k2 = sorted(t["inputRequests"])
    yes = {"action": "accept", "content": {"confirm": True}}
    s.send(mreq(2, "tasks/update", {"taskId": tid,
                                    "inputResponses": {k1: yes, "never-issued": yes}}))
    ack = result(s, 2)
    if ack.get("resultType") != "complete" or "status" in ack:
        raise Fail(f"update ack: {ack}")
    t = get(s, ids, tid)
    if t["status"] != "input_required" or list(t["inputRequests"]) != [k2]:
        raise Fail(f"after a partial update: {t}")
    s.send(mreq(3, "tasks/update", {"taskId": tid, "inputResponses": {k2: yes}}))
    result(s, 3)
    t = until(s, ids, tid, lambda t: t["status"] == "completed", "completed")
    if "both steps confirmed" not in t["result"]["content"][0]["text"]:
        raise Fail(f"result: {t}")
    # The TTL bounds a wait for input: the task ends, its handler sees why.
    tid2 = new_task(s, 4, "confirm_delete", {"filename": "g"})
    s.wait_cleanup(4, "timeout", timeout=5)
    t = get(s, ids, tid2)
    if t["status"] != "cancelled":
        raise Fail(f"a task past its TTL: {t}")
    s.finish()
    # The limit counts the tasks kept, running or finished within their
    # TTL: a cancelled one still holds its place.
    s = modern_stdio("--max-tasks", "2")
    a = new_task(s, 5, "slow_compute", {"seconds": 30})
    new_task(s, 6, "slow_compute", {"seconds": 30})
    s.send(mcall(7, "slow_compute", {"seconds": 30}))
    m = s.answer(7)
    if m.get("error", {}).get("code") != -32050:
        raise Fail(f"past --max-tasks: {m}")
    s.send(mreq(8, "tasks/cancel", {"taskId": a}))
    result(s, 8)
    s.send(mcall(9, "slow_compute", {"seconds": 30}))
    if s.answer(9).get("error", {}).get("code") != -32050:
        raise Fail("a cancelled task within its TTL freed its place")
    s.finish()


def status_notifications_on_listen():
    """subscriptions/listen with taskIds: acknowledged with the known ids
    only, then one notifications/tasks per status change (working after
    the input came, completed with the result inlined), tagged with the
    subscription; without the extension -32021."""
    s = modern_stdio()
    ids = Ids()
    tid = new_task(s, 1, "confirm_delete", {"filename": "n"})
    t = until(s, ids, tid, lambda t: t["status"] == "input_required", "asked")
    s.send(mreq(2, "subscriptions/listen",
                {"notifications": {"taskIds": [tid, "unknown-task"]}}))
    ack = s.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged",
                     what="the acknowledgement")
    if ack["params"]["notifications"].get("taskIds") != [tid]:
        raise Fail(f"acknowledged: {ack}")
    key = list(t["inputRequests"])[0]
    s.send(mreq(3, "tasks/update", {"taskId": tid, "inputResponses": {
        key: {"action": "accept", "content": {"confirm": True}}}}))
    s.wait_for(lambda m: m.get("method") == "notifications/tasks" and
               m["params"].get("status") == "working", what="working")
    done = s.wait_for(lambda m: m.get("method") == "notifications/tasks" and
                      m["params"].get("status") == "completed", what="completed")
    p = done["params"]
    if p.get("taskId") != tid or "deleted n" not in p["result"]["content"][0]["text"] or \
            p["_meta"].get("io.modelcontextprotocol/subscriptionId") != 2:
        raise Fail(f"completion notification: {done}")
    s.send(mreq(4, "subscriptions/listen", {"notifications": {"taskIds": [tid]}},
                caps={"elicitation": {}}))
    if error_code(s, 4) != -32021:
        raise Fail("taskIds without the extension")
    s.cancel(2)
    s.finish()


def trace_context_passed_on():
    """traceparent and tracestate of a request reach the _meta of the
    input requests of its task and of its input_required result, and of
    a 2025-11-25 server-to-client request; an invalid traceparent is never
    passed on, an invalid tracestate is dropped alone."""
    s = modern_stdio()
    ids = Ids()
    tid = new_task(s, 1, "confirm_delete", {"filename": "t"},
                   extra={"traceparent": TP, "tracestate": TS})
    t = until(s, ids, tid, lambda t: t["status"] == "input_required", "asked")
    m = list(t["inputRequests"].values())[0]["params"].get("_meta", {})
    if m.get("traceparent") != TP or m.get("tracestate") != TS:
        raise Fail(f"task input request _meta: {m}")
    # An input_required result (not a task): the MRTR fixture.
    s.send(mcall(2, "test_input_required_result_elicitation", caps={"elicitation": {}},
                 extra={"traceparent": TP, "tracestate": "BAD KEY=v"}))
    r = result(s, 2)
    m = list(r["inputRequests"].values())[0]["params"].get("_meta", {})
    if m.get("traceparent") != TP or "tracestate" in m:
        raise Fail(f"input_required _meta (invalid tracestate must go): {m}")
    bad = ["00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  # trailing
           "<script>"]
    for i, v in enumerate(bad):
        s.send(mcall(10 + i, "test_input_required_result_elicitation",
                     caps={"elicitation": {}}, extra={"traceparent": v, "tracestate": TS}))
        r = result(s, 10 + i)
        m = list(r["inputRequests"].values())[0]["params"].get("_meta", {})
        if "traceparent" in m or "tracestate" in m:
            raise Fail(f"invalid traceparent {v!r} passed on: {m}")
    rc = ids()
    s.send(mreq(rc, "tasks/cancel", {"taskId": tid}))
    result(s, rc)
    s.finish()
    # 2025-11-25: the roots/list the server sends for a request.
    l = EraServer()
    l.init(caps={"roots": {}})
    l.send(call_msg(1, "roots", {"timeout_ms": 5000}, {"traceparent": TP}))
    ask = l.wait_for(lambda m: m.get("method") == "roots/list" and "id" in m,
                     what="roots/list")
    if (ask.get("params") or {}).get("_meta", {}).get("traceparent") != TP:
        raise Fail(f"roots/list without the request's traceparent: {ask}")
    l.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": []}})
    l.answer(1)
    l.finish()


def apps_listing():
    """MCP Apps: the UI resource is served with its profile and _meta.ui,
    the tool links to it, and the extension is declared."""
    s = EraServer()
    s.init()
    caps = s.answers_for("init")[0]["result"]["capabilities"]
    if "io.modelcontextprotocol/ui" not in caps.get("extensions", {}):
        raise Fail(f"capabilities: {caps}")
    s.request(1, "tools/list")
    tools = {t["name"]: t for t in result(s, 1)["tools"]}
    ui = tools["dice"].get("_meta", {}).get("ui", {})
    if ui.get("resourceUri") != "ui://mcp-everything/dice" or \
            sorted(ui.get("visibility", [])) != ["app", "model"]:
        raise Fail(f"dice _meta: {tools['dice']}")
    s.request(2, "resources/read", {"uri": "ui://mcp-everything/dice"})
    c = result(s, 2)["contents"][0]
    if c["mimeType"] != "text/html;profile=mcp-app" or \
            not c["text"].startswith("<!DOCTYPE html>") or \
            c["_meta"]["ui"]["csp"]["resourceDomains"] != ["https://fonts.gstatic.com"]:
        raise Fail(f"UI resource: {c}")
    s.finish()


def skills_both_eras():
    """The fixture skills answer skills/list, skills/get and directory
    reads in both eras (with the 2026-07-28 cache attributes only there),
    and their files read back as listed."""
    s = EraServer()
    s.init()
    for rid, era in ((1, "modern"), (2, "legacy")):
        if era == "modern":
            s.send(mreq(rid, "skills/list", {}, caps={}))
        else:
            s.request(rid, "skills/list", {})
        r = result(s, rid)
        uris = [e["uri"] for e in r["skills"]]
        if uris != ["skill://git-workflow/SKILL.md", "skill://acme/billing/refunds/SKILL.md"] or \
                (("ttlMs" in r) != (era == "modern")):
            raise Fail(f"{era} skills/list: {r}")
    s.send(mreq(3, "skills/get", {"uri": "skill://git-workflow/SKILL.md"}, caps={}))
    entry = result(s, 3)["skill"]
    fm = entry["frontmatter"]
    if fm.get("metadata") != {"version": "1.2", "reviewed": True} or \
            not fm["description"].startswith("Follow this team's Git conventions"):
        raise Fail(f"frontmatter: {fm}")
    s.send(mreq(4, "resources/directory/read", {"uri": "skill://git-workflow/templates"},
                caps={}))
    kids = {k["uri"]: k["mimeType"] for k in result(s, 4)["resources"]}
    if kids.get("skill://git-workflow/templates/regional") != "inode/directory" or \
            "skill://git-workflow/templates/pull-request.md" not in kids:
        raise Fail(f"directory read: {kids}")
    s.request(5, "resources/read", {"uri": "skill://git-workflow/references/commits.md"})
    text = result(s, 5)["contents"][0]["text"]
    size = [f for f in entry["resources"]
            if f["uri"].endswith("/references/commits.md")][0]["size"]
    if len(text.encode()) != size:
        raise Fail("a file's size differs from its entry")
    s.request(6, "resources/directory/read", {"uri": "skill://git-workflow/SKILL.md"})
    if error_code(s, 6) != -32602:
        raise Fail("a file read as a directory")
    s.finish()


# ---- HTTP --------------------------------------------------------------------------

def _post(port, body, headers=None, close=True):
    c = Conn(port)
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": body["method"]}
    p = body.get("params") or {}
    if body["method"] == "tools/call":
        h["Mcp-Name"] = p["name"]
    elif body["method"].startswith("tasks/"):
        h["Mcp-Name"] = p["taskId"]
    if close:
        h["Connection"] = "close"
    h.update(headers or {})
    st, hd, text = c.request("POST", body, accept="application/json, text/event-stream",
                             headers=h)
    c.close()
    if st != 200:
        raise Fail(f"{body['method']} answered {st}: {text[:300]}")
    if hd.get("Content-Type", "").startswith("text/event-stream"):
        text = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")][-1]
    return json.loads(text)


def _http_get(port, tid):
    return _post(port, mreq(7, "tasks/get", {"taskId": tid}))["result"]


def _http_until(port, tid, pred, what, timeout=10):
    end = time.monotonic() + T(timeout)
    while True:
        t = _http_get(port, tid)
        if pred(t):
            return t
        if time.monotonic() > end:
            raise Fail(f"task {tid} never {what}: {t}")
        time.sleep(0.05)


def http_result_after_its_connection_is_gone():
    """Over HTTP without a session the POST that starts a task, its
    ephemeral session and its TCP connection all end at once; the task
    runs on, and other connections fetch its result and its input."""
    srv = HttpServer("--trace", "--instance", "be1")
    tid = _post(srv.port, mcall(1, "slow_compute", {"seconds": 0.5, "label": "after"}))
    tid = tid["result"]["taskId"]
    if not tid.startswith("be1."):
        raise Fail(f"task id without the instance tag: {tid}")
    t = _http_until(srv.port, tid, lambda t: t["status"] == "completed", "completed")
    if "computed after" not in t["result"]["content"][0]["text"]:
        raise Fail(f"result: {t}")
    # Input over HTTP: asked on one connection, answered on another.
    tid2 = _post(srv.port, mcall(2, "confirm_delete", {"filename": "h"}))["result"]["taskId"]
    t = _http_until(srv.port, tid2, lambda t: t["status"] == "input_required", "asked")
    key = list(t["inputRequests"])[0]
    _post(srv.port, mreq(3, "tasks/update", {"taskId": tid2, "inputResponses": {
        key: {"action": "accept", "content": {"confirm": True}}}}))
    t = _http_until(srv.port, tid2, lambda t: t["status"] == "completed", "completed")
    if "deleted h" not in t["result"]["content"][0]["text"]:
        raise Fail(f"result: {t}")
    # The routing header must name the task.
    c = Conn(srv.port)
    st, _, text = c.request("POST", mreq(4, "tasks/get", {"taskId": tid}),
                            headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tasks/get",
                                     "Mcp-Name": "be1.another"})
    c.close()
    if st != 400 or json.loads(text)["error"]["code"] != -32020:
        raise Fail(f"a mismatched Mcp-Name: {st} {text[:200]}")
    st = srv.stop()
    if st["inflight_left"] or st["abandoned"]:
        raise Fail(f"stats at exit {st}")


def http_shutdown_with_tasks_running():
    """SIGTERM with tasks of sessionless requests running (in the server's
    task host): each handler sees shutdown, the exit is orderly, nothing
    is abandoned.  One waits for input, one works."""
    srv = HttpServer("--trace", "--grace-ms", "3000")
    tid = _post(srv.port, mcall(1, "slow_compute", {"seconds": 600}))["result"]["taskId"]
    tid2 = _post(srv.port, mcall(2, "approve", {"change": "x"}))["result"]["taskId"]
    _http_until(srv.port, tid2, lambda t: t["status"] == "input_required", "asked")
    _http_until(srv.port, tid, lambda t: t["status"] == "working", "working")
    t0 = time.monotonic()
    st = srv.stop(bound=5.0)
    if time.monotonic() - t0 > T(3):
        raise Fail("the shutdown waited for the tasks instead of cancelling them")
    for rid in (1, 2):
        if f"cleanup {rid} shutdown" not in srv.err:
            raise Fail(f"task of request {rid}: no 'cleanup {rid} shutdown' in {srv.err[-10:]}")
    if st["inflight_left"] or st["abandoned"]:
        raise Fail(f"stats at exit {st}")


def http_cancel_and_trace_header():
    """Over HTTP: a task blocked in mcp_ctx_elicit is cancelled by a
    tasks/cancel from another connection (peer_cancelled); the W3C
    traceparent header of a POST whose _meta has none reaches the task's
    input request, an invalid one does not."""
    srv = HttpServer("--trace")
    hdr = {"traceparent": TP, "tracestate": TS}
    tid = _post(srv.port, mcall(1, "approve", {"change": "y"}), headers=hdr)["result"]["taskId"]
    t = _http_until(srv.port, tid, lambda t: t["status"] == "input_required", "asked")
    m = list(t["inputRequests"].values())[0]["params"].get("_meta", {})
    if m.get("traceparent") != TP or m.get("tracestate") != TS:
        raise Fail(f"trace headers not passed on: {m}")
    _post(srv.port, mreq(2, "tasks/cancel", {"taskId": tid}))
    end = time.monotonic() + T(3)
    while "cleanup 1 peer_cancelled" not in srv.err:
        if time.monotonic() > end:
            raise Fail(f"no 'cleanup 1 peer_cancelled': {srv.err[-10:]}")
        time.sleep(0.02)
    if _http_get(srv.port, tid)["status"] != "cancelled":
        raise Fail("not cancelled")
    tid2 = _post(srv.port, mcall(3, "approve", {"change": "z"}),
                 headers={"traceparent": "00-zz"})["result"]["taskId"]
    t = _http_until(srv.port, tid2, lambda t: t["status"] == "input_required", "asked")
    if "traceparent" in list(t["inputRequests"].values())[0]["params"].get("_meta", {}):
        raise Fail("an invalid traceparent header was passed on")
    _post(srv.port, mreq(4, "tasks/cancel", {"taskId": tid2}))
    st = srv.stop()
    if st["inflight_left"] or st["abandoned"]:
        raise Fail(f"stats at exit {st}")


def hooks_see_checked_trace_context_and_task_methods():
    """With request hooks installed (--access-log) every method runs between
    them, tasks/get and tasks/cancel included; the hooks see a request's
    traceparent only when it is well formed, so a client cannot write into
    the log through it."""
    s = EraServer("--access-log", task_keys=True)
    ids = Ids()
    tid = new_task(s, 1, "confirm_delete", {"filename": "h"}, extra={"traceparent": TP})
    s.wait_err(f"hook before method=tools/call name=confirm_delete sub=- client=- "
               f"traceparent={TP}")
    until(s, ids, tid, lambda t: t["status"] == "input_required", "asked")
    s.wait_err("hook after method=tasks/get name=- sub=- outcome=completed code=0")
    # The call's after-hook brackets its handler's run, which a task
    # prolongs beyond the CreateTaskResult: not yet.
    if any(l.startswith("hook after method=tools/call name=confirm_delete") for l in s.err):
        raise Fail(f"after-hook before the task's handler ended: {s.err[-6:]}")
    rc = ids()
    s.send(mreq(rc, "tasks/cancel", {"taskId": tid}))
    result(s, rc)
    s.wait_err("hook after method=tasks/cancel name=- sub=- outcome=completed code=0")
    s.wait_err("hook after method=tools/call name=confirm_delete sub=- outcome=peer_cancelled "
               "code=0")
    line = [l for l in s.err if l.startswith("hook after method=tools/call name=confirm_delete")]
    if len(line) != 1 or not line[0].endswith(f"traceparent={TP}"):
        raise Fail(f"the task's after-hook, once, with its traceparent: {line}")
    # An invalid one: never in the log, not even cut short.
    evil = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 sub=root"
    s.send(mcall(2, "test_input_required_result_elicitation", caps={"elicitation": {}},
                 extra={"traceparent": evil}))
    result(s, 2)
    s.wait_err("hook after method=tools/call name=test_input_required_result_elicitation")
    mine = [l for l in s.err if "name=test_input_required_result_elicitation" in l]
    if len(mine) != 2 or not all(l.endswith("traceparent=-") for l in mine) or \
            any("sub=root" in l for l in mine):
        raise Fail(f"an invalid traceparent reached the hooks: {mine}")
    s.finish()


SCENARIOS = [
    modern_task_lifecycle_and_gating,
    eof_with_tasks_running,
    sigterm_with_tasks_running,
    cancel_while_waiting_for_input,
    input_rounds_partial_ttl_and_limit,
    status_notifications_on_listen,
    trace_context_passed_on,
    hooks_see_checked_trace_context_and_task_methods,
    apps_listing,
    skills_both_eras,
    http_result_after_its_connection_is_gone,
    http_shutdown_with_tasks_running,
    http_cancel_and_trace_header,
]

if __name__ == "__main__":
    sys.exit(run(SCENARIOS, EXPECTED_FAILURES, sys.argv[1:]))
