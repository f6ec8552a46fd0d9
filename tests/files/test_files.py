#!/usr/bin/env python3
"""test_files.py - drives examples/mcp-files over pipes on a scratch tree:
resources (text and blob), the files:// template and its refusals,
completion, the search tool with progress and cancellation, the prompt,
and an orderly exit; then --skills DIR: the skills it serves (entries,
digests, directory reads, both eras) and the trees it refuses to start
with (a link out of a skill, a FIFO).  Standard library only; prints TAP,
one test point per check (tests/lib/tap.py).

Usage: MCP_FILES=path/to/mcp-files test_files.py
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("MCP_FILES") or (sys.argv[1] if len(sys.argv) > 1 else None)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

# Every check is one TAP test point (tests/lib/tap.py); the plan comes last.
POINTS = tap.Points()
check = POINTS.check


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


def make_skills(root):
    """skills/: two skills, one under a prefix directory, with a hidden
    file and a link inside the skill."""
    def put(rel, text):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    put("skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Fill PDF forms\n"
        "license: MIT\n---\n# PDF\nSee templates/.\n")
    put("skills/pdf-tools/templates/invoice.md", "invoice\n")
    put("skills/pdf-tools/templates/eu/vat.md", "vat\n")
    put("skills/pdf-tools/.cache", "hidden\n")
    os.symlink("templates/invoice.md", os.path.join(root, "skills/pdf-tools/latest.md"))
    put("skills/team/review/SKILL.md", "---\nname: review\ndescription: 'Review code'\n---\nR\n")


class Stdio:
    """A server over pipes, with its answers by id."""

    def __init__(self, args):
        self.p = subprocess.Popen([BIN, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.msgs, self.cv, self.err = [], threading.Condition(), []
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _out(self):
        for raw in self.p.stdout:
            with self.cv:
                self.msgs.append(json.loads(raw))
                self.cv.notify_all()

    def _err(self):
        for raw in self.p.stderr:
            self.err.append(raw.decode(errors="replace"))

    def req(self, rid, method, params, timeout=20):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                       "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for m in self.msgs:
                    if m.get("id") == rid and "method" not in m:
                        return m
                if not self.cv.wait(max(0, end - time.monotonic())):
                    return {}

    def close(self):
        self.p.stdin.close()
        try:
            return self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


def skills_checks(root):
    make_skills(root)
    sk = os.path.join(root, "skills")
    s = Stdio(["--skills", sk, os.path.join(root, "src")])
    r = s.req(1, "server/discover", {"_meta": MODERN})
    ext = r.get("result", {}).get("capabilities", {}).get("extensions", {})
    check("--skills: the skills extension is declared with directoryRead",
          ext.get("io.modelcontextprotocol/skills", {}).get("directoryRead") is True, r)
    r = s.req(2, "skills/list", {"_meta": MODERN})
    entries = {e["uri"]: e for e in r.get("result", {}).get("skills", [])}
    check("--skills: skills/list has both skills, the prefix from the directories",
          set(entries) == {"skill://pdf-tools/SKILL.md", "skill://team/review/SKILL.md"},
          list(entries))
    pdf = entries.get("skill://pdf-tools/SKILL.md", {})
    files = {f["uri"]: f for f in pdf.get("resources", [])}
    want = {"skill://pdf-tools/SKILL.md", "skill://pdf-tools/templates/invoice.md",
            "skill://pdf-tools/templates/eu/vat.md", "skill://pdf-tools/latest.md"}
    check("--skills: every file listed once, the hidden one left out, the inside link kept",
          set(files) == want, sorted(files))
    with open(os.path.join(sk, "pdf-tools/SKILL.md"), "rb") as f:
        raw = f.read()
    md = files.get("skill://pdf-tools/SKILL.md", {})
    check("--skills: SKILL.md's digest and size are of its bytes",
          md.get("digest") == "sha256:" + hashlib.sha256(raw).hexdigest() and
          md.get("size") == len(raw), md)
    check("--skills: the frontmatter is carried as JSON",
          pdf.get("frontmatter") == {"name": "pdf-tools", "description": "Fill PDF forms",
                                     "license": "MIT"}, pdf.get("frontmatter"))
    r = s.req(3, "resources/read", {"uri": "skill://pdf-tools/latest.md", "_meta": MODERN})
    check("--skills: a skill file reads as its content",
          r.get("result", {}).get("contents", [{}])[0].get("text") == "invoice\n", r)
    r = s.req(4, "resources/directory/read", {"uri": "skill://pdf-tools/templates",
                                              "_meta": MODERN})
    kids = {k["uri"]: k.get("mimeType") for k in r.get("result", {}).get("resources", [])}
    check("--skills: a directory read lists files and subdirectories",
          kids == {"skill://pdf-tools/templates/invoice.md": "text/markdown",
                   "skill://pdf-tools/templates/eu": "inode/directory"}, kids)
    r = s.req(5, "skills/get", {"uri": "skill://pdf-tools/templates/invoice.md",
                                "_meta": MODERN})
    check("--skills: skills/get of a file that is not a skill is -32602",
          r.get("error", {}).get("code") == -32602, r)
    # The legacy era: the same methods in a 2025-11-25 session.
    r = s.req(6, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "1"}})
    check("--skills: declared at initialize too",
          "io.modelcontextprotocol/skills" in r.get("result", {}).get("capabilities", {})
          .get("extensions", {}), r)
    s.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    r = s.req(7, "skills/get", {"uri": "skill://team/review/SKILL.md"})
    check("--skills: skills/get in a 2025-11-25 session (no cache attributes there)",
          r.get("result", {}).get("skill", {}).get("frontmatter", {}).get("description") ==
          "Review code" and "ttlMs" not in r.get("result", {}), r)
    check("--skills: exits 0 at end of input", s.close() == 0)

    # Trees it refuses: a link that leads out, a FIFO.
    os.symlink("/etc/passwd", os.path.join(sk, "team/review/passwd"))
    s = Stdio(["--skills", sk, os.path.join(root, "src")])
    code = s.close()
    check("--skills: a link out of a skill stops the start with the reason",
          code == 1 and any("leads out" in ln for ln in s.err), (code, s.err[-2:]))
    os.unlink(os.path.join(sk, "team/review/passwd"))
    os.mkfifo(os.path.join(sk, "pdf-tools/templates/pipe"))
    s = Stdio(["--skills", sk, os.path.join(root, "src")])
    code = s.close()
    check("--skills: a FIFO in a skill stops the start, never opened",
          code == 1 and any("FIFO" in ln for ln in s.err), (code, s.err[-2:]))


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("set MCP_FILES")
    root = tempfile.mkdtemp(prefix="mcp-files-test-")
    try:
        make_tree(root)
        POINTS.guard(serving_a_tree, root)
        POINTS.guard(skills_checks, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return POINTS.finish()


def serving_a_tree(root):
    """Resources, the template, completion, search with progress and
    cancellation, the prompt, and the exit at end of input."""
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


if __name__ == "__main__":
    sys.exit(main())
