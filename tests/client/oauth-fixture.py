#!/usr/bin/env python3
"""oauth-fixture.py - an authorization server and an MCP resource server in
one process on 127.0.0.1, for tests/unit/test_oauth.c.  It prints its port,
then serves until stdin closes.  It counts what a client did (GET /stats):
authorizations, token grants by type, and how often the resource saw each
JSON-RPC id with a valid token, so a test can prove a request was sent once.

Tokens expire after TOKEN_TTL seconds; refresh tokens rotate and a reused
one is refused (invalid_grant), so two refreshes in parallel show up as a
failure.  The tool "admin" needs scope mcp:admin (403 insufficient_scope).
POST /revoke makes every access token issued so far invalid; POST
/revoke?all=1 every refresh token too.
"""
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_TTL = int(sys.argv[1]) if len(sys.argv) > 1 else 3600
lock = threading.Lock()
state = {
    "authorizations": 0, "auth_scopes": [], "grants": {}, "seen": {},
    "tokens": {}, "refresh": {}, "codes": {}, "n": 0, "unauthorized": 0, "bad_tokens": [],
}


def new_token(scope):
    state["n"] += 1
    at = "at-%d" % state["n"]
    rt = "rt-%d" % state["n"]
    state["tokens"][at] = {"scope": scope, "exp": time.time() + TOKEN_TTL}
    state["refresh"][rt] = scope
    return {"access_token": at, "token_type": "Bearer", "expires_in": TOKEN_TTL,
            "refresh_token": rt, "scope": scope}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_port

    def send(self, code, body, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == "/.well-known/oauth-protected-resource/mcp":
            return self.send(200, {"resource": self.base() + "/mcp",
                                   "authorization_servers": [self.base()],
                                   "scopes_supported": ["mcp:read"]})
        if u.path == "/.well-known/oauth-authorization-server":
            b = self.base()
            return self.send(200, {
                "issuer": b, "authorization_endpoint": b + "/authorize",
                "token_endpoint": b + "/token", "registration_endpoint": b + "/register",
                "code_challenge_methods_supported": ["S256"],
                "scopes_supported": ["mcp:read", "mcp:admin", "offline_access"],
                "authorization_response_iss_parameter_supported": True,
                "token_endpoint_auth_methods_supported": ["client_secret_basic"]})
        if u.path == "/authorize":
            with lock:
                state["authorizations"] += 1
                state["auth_scopes"].append(q.get("scope", ""))
                code = "code-%d" % state["authorizations"]
                state["codes"][code] = (q.get("scope", ""), q.get("code_challenge"))
            loc = q["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": q.get("state", ""), "iss": self.base()})
            return self.send(302, None, [("Location", loc)])
        if u.path == "/stats":
            with lock:
                return self.send(200, {k: state[k] for k in
                                       ("authorizations", "auth_scopes", "grants", "seen",
                                        "unauthorized", "bad_tokens")})
        self.send(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n).decode()
        u = urllib.parse.urlparse(self.path)
        if u.path == "/register":
            return self.send(201, {"client_id": "cid-1", "client_secret": "csecret-1",
                                   "token_endpoint_auth_method": "client_secret_basic"})
        if u.path == "/revoke":
            with lock:
                state["tokens"].clear()
                if "all" in u.query:
                    state["refresh"].clear()
            return self.send(200, {})
        if u.path == "/token":
            f = dict(urllib.parse.parse_qsl(raw))
            gt = f.get("grant_type")
            with lock:
                state["grants"][gt] = state["grants"].get(gt, 0) + 1
                if gt == "authorization_code" and f.get("code") in state["codes"]:
                    scope, _ = state["codes"].pop(f["code"])
                    return self.send(200, new_token(scope))
                if gt == "refresh_token" and f.get("refresh_token") in state["refresh"]:
                    scope = state["refresh"].pop(f["refresh_token"])
                    return self.send(200, new_token(scope))
            return self.send(400, {"error": "invalid_grant"})
        if u.path != "/mcp":
            return self.send(404, {"error": "not found"})
        msg = json.loads(raw)
        auth = self.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else None
        www = 'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % self.base()
        with lock:
            t = state["tokens"].get(tok)
            if not t or t["exp"] < time.time():
                state["unauthorized"] += 1
                if tok and not tok.startswith("at-"):
                    state["bad_tokens"].append(tok)
                return self.send(401, {"error": "invalid_token"},
                                 [("WWW-Authenticate", www + ', error="invalid_token"')])
            if "id" in msg:
                k = str(msg["id"]) + ":" + msg.get("method", "")
                state["seen"][k] = state["seen"].get(k, 0) + 1
        method = msg.get("method")
        if method == "tools/call" and msg["params"]["name"] == "admin" and \
                "mcp:admin" not in t["scope"].split():
            return self.send(403, {"error": "insufficient_scope"}, [(
                "WWW-Authenticate", www + ', error="insufficient_scope", scope="mcp:admin"')])
        if "id" not in msg:
            return self.send(202, None)
        if method == "initialize":
            res = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "oauth-fixture", "version": "1"}}
        elif method == "tools/list":
            res = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}},
                             {"name": "admin", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            res = {"content": [{"type": "text", "text": "ok " + t["scope"]}]}
        else:
            return self.send(200, {"jsonrpc": "2.0", "id": msg["id"],
                                   "error": {"code": -32601, "message": "no"}})
        self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": res})


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that closes a kept-alive connection is no news


srv = Server(("127.0.0.1", 0), H)
srv.daemon_threads = True
threading.Thread(target=srv.serve_forever, daemon=True).start()
sys.stdout.write("%d\n" % srv.server_port)
sys.stdout.flush()
sys.stdin.read()
