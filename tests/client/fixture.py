#!/usr/bin/env python3
"""fixture.py MODE - a small misbehaving MCP server on stdio, for the
client's adversarial tests (tests/unit/test_client.c).  It answers
initialize (legacy era) and then behaves as MODE says:

  exit-after N    answers nothing after initialize; once N tools/call
                  requests are in, exits with status 3 (calls in flight)
  garbage         every tools/call gets, before its real answer: an answer
                  for an unknown id, a line that is not JSON, an answer with
                  a string id, one with a null id; after it: a duplicate
  flood N         every tools/call gets N progress and N log notifications
                  (for its progress token), then its answer
  sample          every tools/call asks sampling/createMessage and answers
                  the call once the client answers (never, if it does not)
  hang            answers initialize, then reads and never answers
"""
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "hang"
arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out = sys.stdout


def send(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def raw(text):
    out.write(text + "\n")
    out.flush()


calls = 0
next_id = 1000
waiting = {}  # our request id -> the client's call id
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method = msg.get("method")
    mid = msg.get("id")
    if method is None:
        # An answer to our sampling request: answer the call it served.
        cid = waiting.pop(mid, None)
        if cid is not None:
            send({"jsonrpc": "2.0", "id": cid,
                  "result": {"content": [{"type": "text", "text": "sampled"}]}})
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "fixture-" + mode, "version": "1"}}})
        continue
    if mid is None:
        continue
    if method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        continue
    if method != "tools/call":
        send({"jsonrpc": "2.0", "id": mid,
              "error": {"code": -32601, "message": "Method not found"}})
        continue
    calls += 1
    token = msg.get("params", {}).get("_meta", {}).get("progressToken")
    result = {"content": [{"type": "text", "text": "ok %d" % calls}]}
    if mode == "exit-after":
        if calls >= arg:
            sys.exit(3)
    elif mode == "garbage":
        send({"jsonrpc": "2.0", "id": 987654321, "result": {"content": []}})
        raw("this is not JSON {")
        send({"jsonrpc": "2.0", "id": str(mid), "result": {"content": []}})
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}})
        send({"jsonrpc": "2.0", "id": mid, "result": result})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
            {"type": "text", "text": "duplicate"}]}})
    elif mode == "flood":
        for i in range(arg):
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1, "total": arg}})
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "flood %d" % i}})
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif mode == "sample":
        next_id += 1
        waiting[next_id] = mid
        send({"jsonrpc": "2.0", "id": next_id, "method": "sampling/createMessage",
              "params": {"messages": [{"role": "user",
                                       "content": {"type": "text", "text": "hi"}}],
                         "maxTokens": 10}})
    # hang: nothing
