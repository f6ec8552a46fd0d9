#!/usr/bin/env python3
"""test_task_caps.py - one user cannot take every task slot: beside the
server's cap (--max-tasks), each party has its own
(--max-tasks-per-principal): a principal with authorization, a session
without it.  Over real sockets against mcp-everything --http:

  - two HTTP sessions without authorization (2025-11-25 tasks): one fills
    its cap and is refused busy, naming the cap per session; the other is
    still served; then the server's own cap refuses, naming it;
  - two principals (2026-07-28 tasks over sessionless HTTP, EdDSA tokens
    signed here with the `cryptography` module; skipped without it): one
    fills its cap and is refused naming the cap per principal, the other
    is still served.

Every task sleeps long (the tool "sleep" or "slow_compute"), so a place
is never freed during the test.
"""
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

BIN = os.environ.get("MCP_EVERYTHING")
TASKS_EXT = "io.modelcontextprotocol/tasks"
ISSUER = "https://as.example.test"
BUSY = -32050


class Server:
    def __init__(self, *args):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.p = subprocess.Popen([BIN, "--http", "127.0.0.1:%d" % self.port] + list(args),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.p.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise tap.Fail("the HTTP server did not start")

    def stop(self):
        self.p.kill()
        self.p.wait()

    def post(self, msg, headers):
        """POSTs one message: (status, response headers, the JSON-RPC
        answer of msg's id or None)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        h.update({k: v for k, v in headers.items() if v is not None})
        c.request("POST", "/mcp", json.dumps(msg), h)
        r = c.getresponse()
        body = r.read().decode(errors="replace")
        hd = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        answer = None
        texts = [body] if not hd.get("content-type", "").startswith("text/event-stream") else \
            [ln[5:].strip() for ln in body.splitlines() if ln.startswith("data:")]
        for t in texts:
            try:
                m = json.loads(t)
            except ValueError:
                continue
            if isinstance(m, dict) and m.get("id") == msg.get("id"):
                answer = m
        return r.status, hd, answer


def error_of(answer):
    return (answer or {}).get("error") or {}


# ---- sessions without authorization (2025-11-25) ----------------------------------------

LEGACY = "2025-11-25"


def open_session(srv):
    st, hd, ans = srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "caps", "version": "1"}}}, {})
    sid = hd.get("mcp-session-id")
    if st != 200 or not sid or "result" not in (ans or {}):
        raise tap.Fail("initialize: %s %s" % (st, ans))
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    return h


def legacy_task(srv, h, rid):
    st, _, ans = srv.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 600000}, "task": {"ttl": 600000}}}, h)
    return ans


def started(ans):
    return bool(((ans or {}).get("result") or {}).get("task", {}).get("taskId"))


def sessions_each_have_their_cap():
    # Each task's handler holds a worker while it sleeps: enough of them
    # that the pool is never what refuses.
    srv = Server("--workers", "16", "--max-tasks", "5", "--max-tasks-per-principal", "2")
    try:
        a, b = open_session(srv), open_session(srv)
        for rid in (1, 2):
            ans = legacy_task(srv, a, rid)
            if not started(ans):
                raise tap.Fail("session A's task %d did not start: %s" % (rid, ans))
        ans = legacy_task(srv, a, 3)
        err = error_of(ans)
        tap.diag("A's third task: %s" % err)
        if err.get("code") != BUSY or "of this session (at most 2 each)" not in \
                err.get("message", ""):
            raise tap.Fail("session A past its cap: %s" % ans)
        # The other session is still served, up to its own cap.
        for rid in (4, 5):
            ans = legacy_task(srv, b, rid)
            if not started(ans):
                raise tap.Fail("session B was refused while A holds its cap: %s" % ans)
        if error_of(legacy_task(srv, b, 6)).get("code") != BUSY:
            raise tap.Fail("session B past its cap was served")
        # A third session meets the server's cap (5): one place is left.
        c = open_session(srv)
        if not started(legacy_task(srv, c, 7)):
            raise tap.Fail("session C's first task was refused")
        err = error_of(legacy_task(srv, c, 8))
        tap.diag("C past the server's cap: %s" % err)
        if err.get("code") != BUSY or "the server keeps at most 5" not in err.get("message", ""):
            raise tap.Fail("past the server's cap: %s" % err)
    finally:
        srv.stop()


# ---- principals (2026-07-28, sessionless) ------------------------------------------------

def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def principals_each_have_their_cap():
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives import serialization
    except ImportError:
        raise tap.Skip("the Python module cryptography is not installed")
    key = Ed25519PrivateKey.generate()
    pub = key.public_key().public_bytes(serialization.Encoding.Raw,
                                        serialization.PublicFormat.Raw)
    tmp = tempfile.mkdtemp(prefix="task-caps.")
    jwks = os.path.join(tmp, "jwks.json")
    with open(jwks, "w") as f:
        json.dump({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "use": "sig",
                             "x": b64(pub)}]}, f)
    srv = Server("--auth-resource", "http://127.0.0.1/mcp", "--auth-jwks", jwks,
                 "--auth-issuer", ISSUER, "--workers", "16", "--max-tasks", "100",
                 "--max-tasks-per-principal", "2")
    resource = "http://127.0.0.1/mcp"

    def token(sub):
        head = b64(json.dumps({"alg": "EdDSA", "typ": "at+jwt", "kid": "k1"}).encode())
        now = int(time.time())
        body = b64(json.dumps({"iss": ISSUER, "sub": sub, "aud": resource, "iat": now,
                               "exp": now + 3600, "client_id": "caps"}).encode())
        sig = key.sign(("%s.%s" % (head, body)).encode())
        return "%s.%s.%s" % (head, body, b64(sig))

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "caps", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXT: {}}}}

    def task(tok, rid):
        st, _, ans = srv.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
            "name": "slow_compute", "arguments": {"seconds": 600}, "_meta": meta}},
            {"Authorization": "Bearer " + tok, "MCP-Protocol-Version": "2026-07-28",
             "Mcp-Method": "tools/call", "Mcp-Name": "slow_compute"})
        # A busy refusal is 503 with its JSON-RPC error.
        if st not in (200, 503):
            raise tap.Fail("HTTP %d for %d: %s" % (st, rid, ans))
        return ans

    try:
        alice, bob = token("alice"), token("bob")
        for rid in (1, 2):
            ans = task(alice, rid)
            if ((ans or {}).get("result") or {}).get("resultType") != "task":
                raise tap.Fail("alice's task %d did not start: %s" % (rid, ans))
        ans = task(alice, 3)
        err = error_of(ans)
        tap.diag("alice's third task: %s" % err)
        if err.get("code") != BUSY or "of this principal (at most 2 each)" not in \
                err.get("message", ""):
            raise tap.Fail("alice past her cap: %s" % ans)
        ans = task(bob, 4)
        if ((ans or {}).get("result") or {}).get("resultType") != "task":
            raise tap.Fail("bob was refused while alice holds her cap: %s" % ans)
    finally:
        srv.stop()


SCENARIOS = [sessions_each_have_their_cap, principals_each_have_their_cap]

if __name__ == "__main__":
    if not BIN:
        sys.exit(tap.skip_all("MCP_EVERYTHING is not set"))
    sys.exit(tap.run(SCENARIOS, sys.argv[1:]))
