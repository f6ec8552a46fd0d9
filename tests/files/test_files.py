#!/usr/bin/env python3
"""test_files.py - drives examples/mcp-files over pipes on a scratch tree:
resources (text and blob), the files:// template and its refusals,
completion, the search tool with progress and cancellation, the prompt,
and an orderly exit.  Standard library only; "N passed, M failed".

Usage: MCP_FILES=path/to/mcp-files test_files.py
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("MCP_FILES") or (sys.argv[1] if len(sys.argv) > 1 else None)
passed, failed = 0, []


def check(name, cond, detail=""):
    global passed
    if cond:
        passed += 1
        print(f"ok - {name}")
    else:
        failed.append(name)
        print(f"not ok - {name} {str(detail)[:300]}")


def make_tree(root):
    os.makedirs(os.path.join(root, "src/lib"))
    os.makedirs(os.path.join(root, "bulk"))
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("hello world\nnothing here\nHELLO caps\n")
    with open(os.path.join(root, "src/lib/util.h"), "w") as f:
        f.write("#define UTIL_HELLO 1\n")
    with open(os.path.join(root, "blob.bin"), "wb") as f:
        f.write(bytes(range(256)))
    for i in range(200):
        with open(os.path.join(root, f"bulk/f{i:03d}.txt"), "w") as f:
            f.write(f"filler {i}\n" * 200)
    os.symlink("/etc/passwd", os.path.join(root, "escape"))
    os.mkfifo(os.path.join(root, "fifo"))


def make_slow(root):
    """slow/: 20 one-line files, then six of just under 4 MiB (the server's
    default size limit) that take the search tens of milliseconds."""
    os.makedirs(os.path.join(root, "slow"))
    for i in range(20):
        with open(os.path.join(root, f"slow/a{i:02d}.txt"), "w") as f:
            f.write("x\n")
    chunk = "abcdefgh\n" * (4000 * 1024 // 9)
    for i in range(6):
        with open(os.path.join(root, f"slow/b{i:02d}.txt"), "w") as f:
            f.write(chunk)


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        print("skip: set MCP_FILES")
        return 77
    root = tempfile.mkdtemp(prefix="mcp-files-test-")
    make_tree(root)
    p = subprocess.Popen([BIN, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    msgs, cv = [], threading.Condition()

    def reader():
        for raw in p.stdout:
            with cv:
                msgs.append(json.loads(raw))
                cv.notify_all()
    threading.Thread(target=reader, daemon=True).start()
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()

    def send(*ms):
        """Writes the messages in one write."""
        p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in ms))
        p.stdin.flush()

    def wait_for(pred, timeout=20):
        end = time.monotonic() + timeout
        with cv:
            while True:
                for m in msgs:
                    if pred(m):
                        return m
                if not cv.wait(max(0, end - time.monotonic())):
                    return None

    def answer(rid, timeout=20):
        return wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout) or {}

    def req(rid, method, params):
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return answer(rid)

    r = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    caps = r.get("result", {}).get("capabilities", {})
    check("initialize: resources, prompts, tools, completions advertised",
          all(k in caps for k in ("resources", "prompts", "tools", "completions")), caps)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    uris, cursor, rid = [], None, 10
    while True:
        r = req(rid, "resources/list", {"cursor": cursor} if cursor else {})
        rid += 1
        uris += [x["uri"] for x in r["result"]["resources"]]
        cursor = r["result"].get("nextCursor")
        if not cursor:
            break
    names = {u.rsplit("/", 1)[-1] for u in uris}
    check("resources/list has the regular files, not the FIFO or the escaping link",
          {"notes.txt", "util.h", "blob.bin"} <= names and "fifo" not in names and
          "escape" not in names and len(uris) == 203, sorted(names)[:10])
    notes = next(u for u in uris if u.endswith("/notes.txt"))
    r = req(20, "resources/read", {"uri": notes})
    check("text file reads as text", r["result"]["contents"][0].get("text", "").startswith("hello"), r)
    blob = next(u for u in uris if u.endswith("/blob.bin"))
    r = req(21, "resources/read", {"uri": blob})
    check("binary file reads as a base64 blob",
          base64.b64decode(r["result"]["contents"][0]["blob"]) == bytes(range(256)), r)
    r = req(22, "resources/read", {"uri": "files://src%2Flib%2Futil.h"})
    check("template reads a nested file", "UTIL_HELLO" in r.get("result", {}).get(
        "contents", [{}])[0].get("text", ""), r)
    for i, bad in enumerate(["files://..%2F..%2Fetc%2Fpasswd", "files://escape", "files://fifo"]):
        r = req(30 + i, "resources/read", {"uri": bad})
        check(f"template refuses {bad}", "error" in r, r)
    r = req(40, "resources/read", {"uri": "files://missing.txt"})
    check("missing file is -32002", r.get("error", {}).get("code") == -32002, r)
    r = req(41, "completion/complete", {"ref": {"type": "ref/resource", "uri": "files://{name}"},
                                       "argument": {"name": "name", "value": "bulk"}})
    c = r.get("result", {}).get("completion", {})
    check("completion caps at 100 and reports the total",
          len(c.get("values", [])) == 100 and c.get("total") == 200 and c.get("hasMore"), c)

    send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
          "params": {"name": "search", "arguments": {"query": "hello"},
                     "_meta": {"progressToken": "s"}}})
    r = answer(50)
    with cv:
        progress = [m["params"]["progress"] for m in msgs
                    if m.get("method") == "notifications/progress" and
                    m["params"].get("progressToken") == "s"]
    matches = r.get("result", {}).get("structuredContent", {}).get("matches", [])
    check("search finds the matches (case-insensitive)",
          {m["path"] for m in matches} >= {"notes.txt", "src/lib/util.h"}, matches[:3])
    check("search reports increasing progress", progress and progress == sorted(set(progress)),
          progress[:10])

    # Cancelled while queued.  The request and its cancel go in one write
    # (under PIPE_BUF, so the pipe delivers them together): the server reads
    # both before it hands the request to a worker, which must then skip it.
    # This outcome does not depend on timing.
    send({"jsonrpc": "2.0", "id": 60, "method": "tools/call",
          "params": {"name": "search", "arguments": {"query": "zzz-never"},
                     "_meta": {"progressToken": "c"}}},
         {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 60}})
    r = req(61, "prompts/get", {"name": "summarize_file", "arguments": {"path": "notes.txt"}})
    check("prompt embeds the file", any(m["content"].get("type") == "resource"
                                        for m in r.get("result", {}).get("messages", [])), r)
    time.sleep(0.3)
    with cv:
        late = [m for m in msgs if m.get("id") == 60 or
                m.get("params", {}).get("progressToken") == "c"]
    check("a search cancelled while queued writes nothing", not late, late)

    # Cancelled while running: the cancel goes out when the first progress
    # notification (after 20 of 26 files) comes in, while the search still
    # has six large files to grep.  After the server has read the cancel it
    # must write nothing for the request (P2), even though the handler may
    # still be finishing its current file.  Whether the cancel gets there
    # before the search ends is a race the client can lose on a loaded
    # machine (the server then answers, as the spec allows), so it has five
    # tries; a server that answers cancelled requests answers all five.
    # (What the handler does after the cancel is not visible on the wire;
    # only that nothing more is written.)
    make_slow(root)
    outcomes = []
    for k in range(5):
        rid, tok = 70 + k, f"r{k}"
        send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "zzz-never", "path": "slow"},
                         "_meta": {"progressToken": tok}}})
        first = wait_for(lambda m: m.get("method") == "notifications/progress" and
                         m["params"].get("progressToken") == tok or m.get("id") == rid)
        if first and "method" in first:
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": rid}})
        req(80 + k, "ping", {})
        time.sleep(0.3)
        with cv:
            answered = any(m.get("id") == rid for m in msgs)
        outcomes.append("answered" if answered else "stopped")
        if not answered:
            break
    check("a search cancelled while running writes no answer", outcomes[-1] == "stopped", outcomes)

    p.stdin.close()
    try:
        code = p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        code = "hung"
    check("exits 0 at end of input", code == 0, code)
    shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
