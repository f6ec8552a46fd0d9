#!/usr/bin/env python3
"""demo.py - a short, real MCP session with mcp-everything over pipes
(make demo): initialize, list the tools, call echo, cancel a sleep, and cut
a second sleep off by closing stdin.  Prints every line sent (>>) and
received (<<), and the server's trace on stderr (!!)."""
import json
import os
import subprocess
import sys
import threading
import time

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
if not BIN:
    sys.exit("usage: MCP_EVERYTHING=path/to/mcp-everything demo.py")

p = subprocess.Popen([BIN, "--trace", "--stats"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
got = []
cv = threading.Condition()


def short(line, limit=160):
    return line if len(line) <= limit else line[:limit] + " ..."


def read_out():
    for raw in p.stdout:
        line = raw.decode().rstrip("\n")
        print("<< " + short(line), flush=True)
        with cv:
            got.append(json.loads(line))
            cv.notify_all()


def read_err():
    for raw in p.stderr:
        print("!! " + raw.decode().rstrip("\n"), flush=True)


threading.Thread(target=read_out, daemon=True).start()
t_err = threading.Thread(target=read_err, daemon=True)
t_err.start()


def send(msg, note=None):
    if note:
        print(f"\n-- {note}", flush=True)
    line = json.dumps(msg)
    print(">> " + short(line), flush=True)
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()


def wait(pred, timeout=10):
    end = time.monotonic() + timeout
    with cv:
        while not any(pred(m) for m in got):
            if not cv.wait(max(0, end - time.monotonic())):
                sys.exit("demo: the server did not answer in time")


send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "demo", "version": "1"}}}, "initialize")
wait(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, "list the tools")
wait(lambda m: m.get("id") == 2)
names = [t["name"] for t in next(m for m in got if m.get("id") == 2)["result"]["tools"]]
print(f"   ({len(names)} tools: {', '.join(names[:6])}, ...)")
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
      "params": {"name": "echo", "arguments": {"text": "hello from libmcp"}}}, "call echo")
wait(lambda m: m.get("id") == 3)
send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
      "params": {"name": "sleep", "arguments": {"ms": 60000}}},
     "a 60 s sleep, cancelled by the client: nothing is written for it")
time.sleep(0.3)
send({"jsonrpc": "2.0", "method": "notifications/cancelled",
      "params": {"requestId": 4, "reason": "user pressed stop"}})
time.sleep(0.3)
send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
      "params": {"name": "sleep", "arguments": {"ms": 60000}}},
     "another 60 s sleep, cut off by closing stdin: the server exits promptly")
time.sleep(0.3)
print(">> (close stdin)", flush=True)
t0 = time.monotonic()
p.stdin.close()
code = p.wait(10)
t_err.join(2)
print(f"\n-- the server exited with status {code} {time.monotonic() - t0:.3f} s after end of input")
sys.exit(0 if code == 0 and not any(m.get("id") in (4, 5) for m in got) else 1)
