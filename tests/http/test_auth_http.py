#!/usr/bin/env python3
"""test_auth_http.py - mcp-everything as an OAuth 2.1 protected resource,
over real sockets: the metadata documents, the challenges, sessions bound
to the principal of their token, scopes, and the request hooks (a rate
limit and an access log) over HTTP and stdio.  Standard library only.

Two parts:
  - without tokens (plain make check): metadata at both paths, the 401
    challenge and discovery from it, malformed headers, a token in the
    query string, the Host check before the token check, and the request
    hooks over HTTP and stdio;
  - with MCP_AUTH_VECTORS naming a file written by tests/auth/make-tokens.mjs
    (make check-auth), whose keys and tokens an independent implementation
    (jose) made: every vector token over HTTP (the table of statuses and
    challenges is printed), the principal in the handler, list filtering,
    403 insufficient_scope and the step-up, session hijack, 2026-07-28 and
    stateless requests, a rate limit per principal, hooks seeing the
    principal and the trace context, 2026-07-28 tasks reachable only by
    the principal that started them.

Python cannot sign RS256 or ES256 tokens without a third-party module; the
tokens come from jose, and this file only presents them.

Prints TAP, one test point per check (tests/lib/tap.py).  Exits 0 when
every check passed, 1 otherwise, 77 (skip) when the server binary is
missing or MCP_AUTH_VECTORS names a file that is not there (0 whatever the
verdicts under make check's TAP driver, which reads them from the TAP).

Usage: MCP_EVERYTHING=PATH [MCP_AUTH_VECTORS=FILE] test_auth_http.py
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
VECTORS = os.environ.get("MCP_AUTH_VECTORS")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402
from httpsrv import StderrLines, free_port  # noqa: E402

# A real Ed25519 public key (its private half was thrown away): the
# token-less part needs a key set to start, never a valid token.
FIXED_JWKS = {"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "fixed", "use": "sig",
                        "x": "ECXBkBndr6p4ho6GYdzx8qPg8-SQUYd7ynV7s771u3E"}]}
ISSUER = "https://as.example.test"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}

# Every check is one TAP test point (tests/lib/tap.py); the plan comes last.
POINTS = tap.Points()
check = POINTS.check


class Server:
    """mcp-everything --http on a free port; its stderr lines are kept."""

    def __init__(self, *args, port=None):
        self.port = port or free_port()
        self.proc = subprocess.Popen([BIN, "--http", f"127.0.0.1:{self.port}", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.err = StderrLines(self.proc)
        self.lines = self.err.lines
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    return
                time.sleep(0.05)

    def wait_line(self, pattern, seconds=10):
        """The first stderr line matching `pattern` (a regex) within
        `seconds`, or None.  The after-hook runs once the answer is on its
        way, so its line may come after the client has the answer."""
        return self.err.wait_line(pattern, seconds)

    def stop(self, name):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "killed"
        self.err.join(5)
        check(name, code == 0, f"exit {code}; stderr tail: {self.lines[-5:]}")


def request(port, method, path="/mcp", body=None, headers=None, accept=None):
    """One HTTP exchange; returns (status, headers with lowercase names,
    body text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {}
    if body is not None:
        h["Content-Type"] = "application/json"
        h["Accept"] = accept or "application/json, text/event-stream"
    elif accept:
        h["Accept"] = accept
    for k, v in (headers or {}).items():
        if v is not None:
            h[k] = v
    try:
        c.request(method, path, None if body is None else
                  (body if isinstance(body, str) else json.dumps(body)), h)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before the body was read: its answer may be there
    try:
        r = c.getresponse()
    except (ConnectionError, http.client.HTTPException) as e:
        c.close()
        return 0, {}, f"connection closed without an answer ({e.__class__.__name__})"
    data = r.read().decode(errors="replace") if method != "HEAD" else ""
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hd, data


def answer_of(hd, body):
    """The JSON-RPC answer of a response: the JSON body, or the last message
    of an SSE stream."""
    if hd.get("content-type", "").startswith("text/event-stream"):
        msgs = [json.loads(l[6:]) for l in body.splitlines()
                if l.startswith("data: ") and l[6:].strip()]
        answers = [m for m in msgs if "result" in m or "error" in m]
        return answers[-1] if answers else None
    try:
        return json.loads(body)
    except ValueError:
        return None


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


def init_msg(rid=1, version="2025-11-25"):
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "auth-test", "version": "1"}}}


def call_msg(rid, tool, args=None, meta=None):
    params = {"name": tool, "arguments": args or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def open_session(port, token, accept="application/json"):
    """initialize with `token`; (status, session id)."""
    st, hd, _ = request(port, "POST", body=init_msg(), headers=bearer(token), accept=accept)
    sid = hd.get("mcp-session-id")
    if st == 200 and sid:
        request(port, "POST", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**bearer(token), "Mcp-Session-Id": sid})
    return st, sid


def in_session(port, token, sid, msg, accept="application/json", extra=None):
    h = {**bearer(token), "Mcp-Protocol-Version": "2025-11-25"}
    if sid:
        h["Mcp-Session-Id"] = sid
    h.update(extra or {})
    st, hd, body = request(port, "POST", body=msg, headers=h, accept=accept)
    return st, hd, answer_of(hd, body)


def text_of(ans):
    try:
        return ans["result"]["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        return None


def tool_names(ans):
    try:
        return {t["name"] for t in ans["result"]["tools"]}
    except (KeyError, TypeError):
        return set()


def challenge_params(value):
    """The auth-params of a Bearer challenge as a dict (quoted values)."""
    if not value or not value.startswith("Bearer"):
        return None
    return dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', value))


def write_json(obj):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(obj, f)
    f.close()
    return f.name


# ---- without tokens ------------------------------------------------------------

def metadata_and_challenges(jwks):
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    meta_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    srv = Server("--auth-resource", resource, "--auth-jwks", jwks, "--auth-issuer", ISSUER,
                 "--auth-scopes", "mcp:read mcp:admin", "--auth-require", "mcp:read", port=port)
    try:
        want = {"resource": resource, "authorization_servers": [ISSUER],
                "scopes_supported": ["mcp:read", "mcp:admin"],
                "bearer_methods_supported": ["header"]}
        for path in ("/.well-known/oauth-protected-resource",
                     "/.well-known/oauth-protected-resource/mcp"):
            st, hd, body = request(port, "GET", path)
            check(f"GET {path}: 200, the metadata document, no token needed",
                  st == 200 and hd.get("content-type") == "application/json" and
                  json.loads(body or "null") == want, f"{st} {hd} {body}")
            check(f"GET {path}: readable by any web origin",
                  hd.get("access-control-allow-origin") == "*", hd)
        st, _, _ = request(port, "GET", "/.well-known/oauth-protected-resource/other")
        check("a metadata path for another resource: 404", st == 404, st)
        st, hd, _ = request(port, "HEAD", "/.well-known/oauth-protected-resource/mcp")
        check("HEAD of the metadata: 200", st == 200, st)
        st, hd, _ = request(port, "OPTIONS", "/.well-known/oauth-protected-resource/mcp",
                            headers={"Origin": "https://app.example",
                                     "Access-Control-Request-Method": "GET"})
        check("OPTIONS of the metadata: 204, a CORS preflight answer",
              st == 204 and "GET" in hd.get("access-control-allow-methods", "") and
              hd.get("access-control-allow-origin") == "*", f"{st} {hd}")
        st, hd, _ = request(port, "POST", "/.well-known/oauth-protected-resource", body="{}")
        check("POST to the metadata: 405 with Allow", st == 405 and "GET" in hd.get("allow", ""),
              f"{st} {hd}")

        # The 401 a client starts from, and discovery from it alone.
        st, hd, body = request(port, "POST", body=init_msg())
        www = hd.get("www-authenticate")
        check("initialize without a token: 401 with resource_metadata and scope",
              st == 401 and www == f'Bearer resource_metadata="{meta_url}", scope="mcp:read"',
              f"{st} {www}")
        ans = answer_of(hd, body) or {}
        check("the 401's JSON-RPC body says the same (-32051, id null, data.scope)",
              ans.get("id", 1) is None and ans.get("error", {}).get("code") == -32051 and
              ans["error"].get("data", {}).get("scope") == "mcp:read", body)
        p = challenge_params(www) or {}
        m = re.match(r"http://127\.0\.0\.1:\d+(/.*)", p.get("resource_metadata", ""))
        st2, _, body2 = request(port, "GET", m.group(1)) if m else (0, None, "")
        check("the resource_metadata URL of the 401 serves the document naming the AS",
              st2 == 200 and json.loads(body2 or "{}").get("authorization_servers") == [ISSUER],
              f"{st2} {body2}")
        for method, accept in (("GET", "text/event-stream"), ("DELETE", None)):
            st, hd, _ = request(port, method, accept=accept,
                                headers={"Mcp-Session-Id": "0" * 32})
            check(f"{method} without a token: 401 (before the session lookup)",
                  st == 401 and (hd.get("www-authenticate") or "").startswith("Bearer "),
                  f"{st} {hd}")

        # Tokens only in the Authorization header (RFC 6750 2.3 is refused).
        for path, h in (("/mcp?access_token=abc.def.ghi", {}),
                        ("/mcp?access_token=abc", bearer("abc.def.ghi")),
                        ("/mcp?x=1&access%5Ftoken=abc", {})):
            st, hd, body = request(port, "POST", path, body=init_msg(), headers=h)
            p = challenge_params(hd.get("www-authenticate")) or {}
            ans = answer_of(hd, body) or {}
            check(f"token in the query string ({path}): 400 invalid_request",
                  st == 400 and p.get("error") == "invalid_request" and
                  ans.get("error", {}).get("data", {}).get("error") == "invalid_request",
                  f"{st} {hd.get('www-authenticate')} {body}")
        st, hd, _ = request(port, "POST", "/mcp?session=1", body=init_msg())
        check("another query parameter is no token: plain 401", st == 401 and
              "error=" not in hd.get("www-authenticate", "x"), f"{st} {hd}")
        cases = [("Bearer  two.spaces.x", 400, "invalid_request"),
                 ("Bearer a b", 400, "invalid_request"),
                 ("Basic dXNlcjpwYXNz", 401, None),
                 ("Bearer abc.def.ghi", 401, "invalid_token"),
                 ("Bearer " + "a" * 3000, 401, "invalid_token")]
        for value, want_st, want_err in cases:
            st, hd, _ = request(port, "POST", body=init_msg(), headers={"Authorization": value})
            p = challenge_params(hd.get("www-authenticate")) or {}
            check(f"Authorization {value[:24]!r}: {want_st} {want_err or 'plain challenge'}",
                  st == want_st and p.get("error") == want_err and
                  p.get("resource_metadata") == meta_url, f"{st} {hd.get('www-authenticate')}")

        # DNS rebinding protection comes first: no challenge for a bad Host.
        st, hd, _ = request(port, "POST", body=init_msg(), headers={"Host": "evil.example"})
        check("a foreign Host: 403 before any token check", st == 403 and
              "www-authenticate" not in hd, f"{st} {hd}")
    finally:
        srv.stop("auth server (no tokens) exits 0")

    # A resource whose path differs from the local endpoint (behind a proxy
    # that maps https://mcp.example.test/tenant/mcp to /mcp here).
    srv = Server("--auth-resource", "https://mcp.example.test/tenant/mcp", "--auth-jwks", jwks,
                 "--auth-issuer", ISSUER)
    try:
        st, hd, _ = request(srv.port, "POST", body=init_msg())
        check("the challenge names the metadata on the resource's origin and path",
              st == 401 and hd.get("www-authenticate") ==
              'Bearer resource_metadata="https://mcp.example.test/.well-known/'
              'oauth-protected-resource/tenant/mcp"', f"{st} {hd.get('www-authenticate')}")
        for path in ("/.well-known/oauth-protected-resource/tenant/mcp",
                     "/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-protected-resource"):
            st, _, body = request(srv.port, "GET", path)
            check(f"path-suffixed metadata {path}: 200", st == 200 and
                  json.loads(body or "{}").get("resource") ==
                  "https://mcp.example.test/tenant/mcp", f"{st} {body}")
    finally:
        srv.stop("auth server (tenant path) exits 0")

    srv = Server()
    try:
        st, _, _ = request(srv.port, "GET", "/.well-known/oauth-protected-resource")
        check("without --auth-resource there is no metadata: 404", st == 404, st)
        st, _, _ = request(srv.port, "POST", body=init_msg())
        check("without --auth-resource no token is asked for", st == 200, st)
    finally:
        srv.stop("plain server exits 0")


def hooks_over_http():
    """--rate-limit and --access-log on an HTTP server without authorization:
    every local caller shares one bucket."""
    srv = Server("--rate-limit", "3/3600", "--access-log")
    try:
        st, sid = open_session(srv.port, None)
        check("hooks: initialize passes the before-hook (1 of 3)", st == 200 and sid, st)
        st, _, ans = in_session(srv.port, None, sid, call_msg(2, "echo", {"text": "a"},
                                                              {"traceparent": TRACEPARENT}))
        check("hooks: a call passes (2 of 3)", st == 200 and text_of(ans) == "a", f"{st} {ans}")
        line = srv.wait_line(r"^hook before method=tools/call name=echo ")
        check("before-hook sees method, name, principal (none) and _meta traceparent",
              line == f"hook before method=tools/call name=echo sub=- client=- "
                      f"traceparent={TRACEPARENT}", line)
        line = srv.wait_line(r"^hook after method=tools/call name=echo ")
        check("after-hook sees outcome, code and duration",
              line is not None and re.fullmatch(
                  r"hook after method=tools/call name=echo sub=- outcome=completed code=0 "
                  rf"us=\d+ traceparent={TRACEPARENT}", line), line)
        check("the reader's methods are hooked too (initialize)",
              srv.wait_line(r"^hook after method=initialize name=- sub=- outcome=completed") is
              not None, srv.lines)
        st, _, ans = in_session(srv.port, None, sid, {"jsonrpc": "2.0", "id": 3,
                                                      "method": "tools/list"})
        check("hooks: tools/list passes (3 of 3)", st == 200 and "echo" in tool_names(ans), st)
        for rid, accept in ((4, "application/json"), (5, "application/json, text/event-stream")):
            st, hd, ans = in_session(srv.port, None, sid, call_msg(rid, "echo", {"text": "b"}),
                                     accept=accept)
            err = (ans or {}).get("error", {})
            check(f"over the limit ({accept}): 429 with Retry-After, -32050 with retryAfterMs",
                  st == 429 and int(hd.get("retry-after", "0")) >= 1 and
                  err.get("code") == -32050 and err.get("data", {}).get("retryAfterMs", 0) > 0 and
                  ans.get("id") == rid, f"{st} {hd} {ans}")
        line = srv.wait_line(r"^hook after method=tools/call name=echo sub=- outcome=refused")
        check("after-hook sees the refusal", line is not None and " code=-32050 " in line, line)
        st, _, ans = in_session(srv.port, None, sid, {"jsonrpc": "2.0", "id": 6,
                                                      "method": "ping"})
        check("ping is limited too (it runs between the hooks)", st == 429, f"{st} {ans}")
    finally:
        srv.stop("hooked HTTP server exits 0")


def hammer(port, token, sid, calls, threads=4):
    """Runs `calls` (a list of (message, accept)) on `threads` connections
    at once; returns [(status, content type, answer)] in the same order."""
    results = [None] * len(calls)

    def worker(k):
        for i in range(k, len(calls), threads):
            msg, accept = calls[i]
            st, hd, ans = in_session(port, token, sid, msg, accept=accept)
            results[i] = (st, hd.get("content-type", ""), ans)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return results


def held_streams():
    """A server with a before-hook holds back every SSE response until its
    request is let through.  Many at once, over and over (the start races
    the worker's admission, progress lines and the answer): each begins as
    SSE once let through, and a request answered before any handler ran
    (an unknown tool) is plain JSON."""
    srv = Server("--access-log")
    try:
        st, sid = open_session(srv.port, None)
        sse = "application/json, text/event-stream"
        calls = []
        for i in range(60):
            rid = 100 + i
            if i % 3 == 0:
                calls.append((call_msg(rid, "echo", {"text": f"t{i}"}), sse))
            elif i % 3 == 1:
                calls.append((call_msg(rid, "progress", {"steps": 2, "interval_ms": 0},
                                       {"progressToken": f"p{i}"}), sse))
            else:
                calls.append((call_msg(rid, "nosuch"), sse))
        results = hammer(srv.port, None, sid, calls)
        bad = []
        for i, (st, ctype, ans) in enumerate(results):
            want_ct = "application/json" if i % 3 == 2 else "text/event-stream"
            ok = st == 200 and ctype == want_ct and ans and ans.get("id") == 100 + i
            if i % 3 == 0:
                ok = ok and text_of(ans) == f"t{i}"
            elif i % 3 == 1:
                ok = ok and text_of(ans) == "done"
            else:
                ok = ok and ans.get("error", {}).get("code") == -32602
            if not ok:
                bad.append((i, st, ctype, ans))
        check("held SSE responses: 60 at once, each as SSE once let through, plain JSON for "
              "an answer given before any handler", sid and not bad, bad[:3])
    finally:
        srv.stop("server with a before-hook exits 0")


def hooks_over_stdio():
    """The same hooks over stdio: a JSON-RPC error, no HTTP status."""
    p = subprocess.Popen([BIN, "--rate-limit", "2/3600", "--access-log"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def send(m):
            p.stdin.write((json.dumps(m) + "\n").encode())
            p.stdin.flush()

        def recv(rid):
            while True:
                line = p.stdout.readline()
                if not line:
                    return None
                m = json.loads(line)
                if m.get("id") == rid:
                    return m
        send(init_msg(1))
        init = recv(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(call_msg(2, "whoami"))
        who = recv(2)
        send(call_msg(3, "echo", {"text": "x"}))
        limited = recv(3)
        check("stdio: initialize and a call pass the limit",
              init and "result" in init and who and "result" in who, f"{init} {who}")
        check("stdio: whoami says there is no token",
              json.loads(text_of(who) or "{}") == {"authenticated": False, "scopes": []}, who)
        err = (limited or {}).get("error", {})
        check("stdio: over the limit, the JSON-RPC error -32050 with data.retryAfterMs",
              err.get("code") == -32050 and err.get("data", {}).get("retryAfterMs", 0) > 0 and
              err["data"].get("error") == "rate_limited", limited)
        p.stdin.close()
        p.wait(15)
        log = p.stderr.read().decode(errors="replace").splitlines()
        check("stdio: the access log has a before and an after line per request",
              sum(l.startswith("hook before ") for l in log) == 3 and
              sum(l.startswith("hook after ") for l in log) == 3 and
              any(re.fullmatch(r"hook after method=tools/call name=echo sub=- outcome=refused "
                               r"code=-32050 us=\d+ traceparent=-", l) for l in log), log)
        check("stdio server exits 0", p.returncode == 0, p.returncode)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---- with tokens made by jose ---------------------------------------------------

def auth_args(v, jwks_path, *extra):
    return ("--auth-resource", v["resource"], "--auth-jwks", jwks_path, "--auth-issuer",
            v["issuer"], "--auth-scopes", "mcp:read mcp:admin", *extra)


def vector_table(v, jwks_full, jwks_single):
    """Every jose case over HTTP, each on the server configuration it asks
    for; prints the table of statuses and WWW-Authenticate values."""
    groups = {}
    for c in v["cases"]:
        key = (bool(c.get("strict")), c.get("required") or "", c.get("jwks") or "full")
        groups.setdefault(key, []).append(c)
    rows = []
    for (strict, required, which), cases in groups.items():
        if strict:
            # mcp-everything keeps the lenient typ default (no switch for
            # strict typ): these cases are tests/unit/test_auth's alone.
            rows += [(c["name"], "-", "(strict typ: unit test only)") for c in cases]
            continue
        extra = (["--auth-require", required] if required else [])
        srv = Server(*auth_args(v, jwks_single if which == "single" else jwks_full, *extra))
        try:
            for c in cases:
                h = {}
                if "header" in c:
                    if c["header"] is not None:
                        h["Authorization"] = c["header"]
                else:
                    h["Authorization"] = f"{c.get('scheme', 'Bearer')} {c['token']}"
                st, hd, body = request(srv.port, "POST", c.get("url", "/mcp"), body=init_msg(),
                                       headers=h, accept="application/json")
                www = hd.get("www-authenticate", "")
                rows.append((c["name"], st, www))
                want = c["status"]
                # A 20 KiB header is past what the HTTP layer reads at all.
                if c["name"].startswith("oversized"):
                    check(f"vector over HTTP: {c['name']}: refused ({st})", st in (401, 413, 431),
                          st)
                    continue
                ok = st == want
                p = challenge_params(www) or {}
                if want != 200:
                    ok = ok and p.get("error") == c.get("error")
                elif ok:
                    sid = hd.get("mcp-session-id")
                    _, _, ans = in_session(srv.port, None, sid, call_msg(2, "whoami"),
                                           extra={"Authorization": h["Authorization"]})
                    who = json.loads(text_of(ans) or "{}")
                    ok = (who.get("authenticated") is True and who.get("subject") == c["sub"] and
                          who.get("client_id") == c["client_id"] and
                          ("scopes" not in c or who.get("scopes") == c["scopes"]))
                    www = f"(whoami: {who.get('subject')}, {who.get('client_id')}, " \
                          f"{' '.join(who.get('scopes', []))})"
                check(f"vector over HTTP: {c['name']}: {want}", ok, f"{st} {www}")
        finally:
            srv.stop(f"server for {len(cases)} vector case(s) exits 0")
    print("\n| token (jose) | HTTP status | WWW-Authenticate |\n| --- | --- | --- |")
    for name, st, www in rows:
        print(f"| {name} | {st} | {www.replace('|', '/') or '-'} |")
    print()


def sessions_scopes_hijack(v, jwks):
    t = v["http"]
    srv = Server(*auth_args(v, jwks, "--access-log"))
    port = srv.port
    meta_url = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
    try:
        st, sid_a = open_session(port, t["alice"])
        check("alice's initialize: 200 and a session", st == 200 and sid_a, st)
        st, _, ans = in_session(port, t["alice"], sid_a, call_msg(2, "whoami"))
        who = json.loads(text_of(ans) or "{}")
        check("the principal reaches the handler over HTTP (mcp_ctx_auth_*)",
              who == {"authenticated": True, "subject": "alice", "client_id": "client-a",
                      "scopes": ["mcp:read"]}, f"{st} {ans}")
        st, _, ans = in_session(port, t["alice"], sid_a, {"jsonrpc": "2.0", "id": 3,
                                                           "method": "tools/list"})
        names = tool_names(ans)
        check("tools/list hides admin_echo from a token without mcp:admin",
              st == 200 and "whoami" in names and "echo" in names and "admin_echo" not in names,
              names)

        for rid, accept in ((4, "application/json"), (5, "application/json, text/event-stream")):
            st, hd, ans = in_session(port, t["alice"], sid_a,
                                     call_msg(rid, "admin_echo", {"text": "x"}), accept=accept)
            p = challenge_params(hd.get("www-authenticate")) or {}
            err = (ans or {}).get("error", {})
            check(f"admin_echo without mcp:admin ({accept}): 403 insufficient_scope, "
                  f"the scopes to ask for, the metadata",
                  st == 403 and p.get("error") == "insufficient_scope" and
                  p.get("scope") == "mcp:admin mcp:read" and
                  p.get("resource_metadata") == meta_url and
                  hd.get("content-type") == "application/json", f"{st} {hd}")
            check(f"the 403's JSON-RPC body says the same ({accept})",
                  ans and ans.get("id") == rid and err.get("code") == -32052 and
                  err.get("data", {}).get("error") == "insufficient_scope" and
                  err["data"].get("scope") == "mcp:admin mcp:read", ans)
        line = srv.wait_line(r"^hook after method=tools/call name=admin_echo sub=alice "
                             r"outcome=refused code=-32052 ")
        check("the after-hook sees the scope refusal", line is not None, srv.lines[-6:])

        # Step-up: the same subject with more scopes, on the same session.
        st, _, ans = in_session(port, t["alice_admin"], sid_a, {"jsonrpc": "2.0", "id": 6,
                                                                 "method": "tools/list"})
        check("after the step-up, tools/list shows admin_echo",
              st == 200 and "admin_echo" in tool_names(ans), f"{st} {tool_names(ans)}")
        st, hd, ans = in_session(port, t["alice_admin"], sid_a,
                                 call_msg(7, "admin_echo", {"text": "up"}),
                                 accept="application/json, text/event-stream")
        check("after the step-up, admin_echo answers (as SSE, as the client accepts)",
              st == 200 and hd.get("content-type") == "text/event-stream" and
              text_of(ans) == "admin: up", f"{st} {hd.get('content-type')} {ans}")

        # Hijack: bob knows alice's session id.
        st, sid_b = open_session(port, t["bob"])
        check("bob's own session works", st == 200 and sid_b and sid_b != sid_a, st)
        st, hd, ans = in_session(port, t["bob"], sid_a, call_msg(8, "whoami"))
        check("bob's token on alice's session: 404, as an unknown session",
              st == 404 and (ans or {}).get("error", {}).get("code") == -32600 and
              ans.get("id") == 8, f"{st} {ans}")
        st, _, _ = in_session(port, t["bob"], sid_a, {"jsonrpc": "2.0", "method":
                                                      "notifications/cancelled",
                                                      "params": {"requestId": 1}})
        check("bob's notification to alice's session: 404", st == 404, st)
        st, _, _ = request(port, "GET", accept="text/event-stream",
                           headers={**bearer(t["bob"]), "Mcp-Session-Id": sid_a})
        check("bob's GET of alice's stream: 404", st == 404, st)
        st, _, _ = request(port, "DELETE", headers={**bearer(t["bob"]), "Mcp-Session-Id": sid_a})
        check("bob's DELETE of alice's session: 404", st == 404, st)
        st, _, ans = in_session(port, t["alice"], sid_a, call_msg(9, "whoami"))
        # Refusals and admissions at once on one session, over and over.
        sse = "application/json, text/event-stream"
        calls = [(call_msg(200 + i, "admin_echo" if i % 2 else "whoami",
                           {"text": "x"} if i % 2 else {}), sse) for i in range(40)]
        results = hammer(port, t["alice"], sid_a, calls)
        bad = [(i, r[0], r[1]) for i, r in enumerate(results)
               if (i % 2 and (r[0] != 403 or r[1] != "application/json")) or
               (not i % 2 and (r[0] != 200 or r[1] != "text/event-stream" or
                               json.loads(text_of(r[2]) or "{}").get("subject") != "alice"))]
        check("40 calls at once, refused and let through: every status as it should be",
              not bad, bad[:3])
        check("alice's session is untouched by the attempts",
              st == 200 and json.loads(text_of(ans) or "{}").get("subject") == "alice",
              f"{st} {ans}")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/mcp", headers={**bearer(t["alice"]), "Mcp-Session-Id": sid_a,
                                          "Accept": "text/event-stream"})
        r = c.getresponse()
        check("alice's own GET stream opens", r.status == 200 and
              r.getheader("Content-Type") == "text/event-stream", r.status)
        c.close()

        # Bad tokens on a live session are refused as tokens, not sessions.
        for name in ("expired", "wrong aud"):
            case = next(x for x in v["cases"] if x["name"] == name)
            st, hd, _ = in_session(port, case["token"], sid_a, call_msg(10, "whoami"))
            p = challenge_params(hd.get("www-authenticate")) or {}
            check(f"a {name} token on alice's session: 401 invalid_token",
                  st == 401 and p.get("error") == "invalid_token", f"{st} {hd}")

        # Hooks see the principal and the trace context.
        st, sid_d = open_session(port, t["dave"])
        st, _, ans = in_session(port, t["dave"], sid_d,
                                call_msg(12, "whoami", meta={"traceparent": TRACEPARENT}))
        line = srv.wait_line(r"^hook before method=tools/call name=whoami sub=dave ")
        check("before-hook sees method, name, subject, client id and traceparent",
              line == "hook before method=tools/call name=whoami sub=dave client=client-d "
                      f"traceparent={TRACEPARENT}", line)
        line = srv.wait_line(r"^hook after method=tools/call name=whoami sub=dave ")
        check("after-hook sees outcome, code and duration",
              line is not None and re.fullmatch(
                  r"hook after method=tools/call name=whoami sub=dave outcome=completed code=0 "
                  rf"us=\d+ traceparent={TRACEPARENT}", line), line)

        # 2026-07-28: no session; the principal rides on the request's own.
        st, hd, ans = in_session(port, t["erin"], None,
                                 {"jsonrpc": "2.0", "id": 13, "method": "tools/call",
                                  "params": {"name": "whoami", "arguments": {}, "_meta": MODERN}},
                                 extra={"Mcp-Protocol-Version": "2026-07-28",
                                        "Mcp-Method": "tools/call", "Mcp-Name": "whoami"})
        check("2026-07-28: the principal reaches the handler of a sessionless request",
              st == 200 and json.loads(text_of(ans) or "{}").get("subject") == "erin",
              f"{st} {ans}")
        st, hd, ans = in_session(port, t["erin"], None,
                                 {"jsonrpc": "2.0", "id": 14, "method": "tools/list",
                                  "params": {"_meta": MODERN}},
                                 extra={"Mcp-Protocol-Version": "2026-07-28",
                                        "Mcp-Method": "tools/list"})
        check("2026-07-28: tools/list is filtered by the token's scopes",
              st == 200 and "whoami" in tool_names(ans) and "admin_echo" not in tool_names(ans),
              f"{st} {tool_names(ans)}")
        st, hd, ans = in_session(port, t["erin"], None,
                                 {"jsonrpc": "2.0", "id": 15, "method": "tools/call",
                                  "params": {"name": "admin_echo", "arguments": {"text": "x"},
                                             "_meta": {**MODERN, "progressToken": "p"}}},
                                 accept="application/json, text/event-stream",
                                 extra={"Mcp-Protocol-Version": "2026-07-28",
                                        "Mcp-Method": "tools/call", "Mcp-Name": "admin_echo"})
        p = challenge_params(hd.get("www-authenticate")) or {}
        check("2026-07-28: admin_echo without the scope, asking for progress (SSE): 403",
              st == 403 and p.get("error") == "insufficient_scope" and
              (ans or {}).get("error", {}).get("code") == -32052, f"{st} {hd} {ans}")
    finally:
        srv.stop("auth server exits 0")


def rate_limit_per_principal(v, jwks):
    t = v["http"]
    srv = Server(*auth_args(v, jwks, "--rate-limit", "3/3600"))
    try:
        st, sid = open_session(srv.port, t["carol"])  # 1 of carol's 3
        st1, _, _ = in_session(srv.port, t["carol"], sid, call_msg(2, "whoami"))  # 2
        st2, _, _ = in_session(srv.port, t["carol"], sid, call_msg(3, "whoami"))  # 3
        check("carol: three requests within her limit", st == 200 and st1 == 200 and st2 == 200,
              (st, st1, st2))
        for rid, accept in ((4, "application/json"), (5, "application/json, text/event-stream")):
            st, hd, ans = in_session(srv.port, t["carol"], sid, call_msg(rid, "whoami"),
                                     accept=accept)
            err = (ans or {}).get("error", {})
            check(f"carol over her limit ({accept}): 429, Retry-After, -32050",
                  st == 429 and int(hd.get("retry-after", "0")) >= 1 and
                  err.get("code") == -32050 and err.get("data", {}).get("retryAfterMs", 0) > 0,
                  f"{st} {hd} {ans}")
        st, sid_e = open_session(srv.port, t["erin"])
        st2, _, ans = in_session(srv.port, t["erin"], sid_e, call_msg(6, "whoami"))
        check("erin has a bucket of her own", st == 200 and st2 == 200 and
              json.loads(text_of(ans) or "{}").get("subject") == "erin", f"{st} {st2} {ans}")
    finally:
        srv.stop("rate-limited auth server exits 0")


def stateless(v, jwks):
    t = v["http"]
    srv = Server(*auth_args(v, jwks, "--stateless"))
    try:
        st, _, _ = in_session(srv.port, None, None, call_msg(1, "whoami"))
        check("stateless: no token, 401", st == 401, st)
        st, _, ans = in_session(srv.port, t["alice"], None, call_msg(2, "whoami"))
        check("stateless: the principal reaches the handler",
              st == 200 and json.loads(text_of(ans) or "{}").get("subject") == "alice",
              f"{st} {ans}")
        st, hd, ans = in_session(srv.port, t["alice"], None,
                                 call_msg(3, "admin_echo", {"text": "x"}),
                                 accept="application/json, text/event-stream")
        check("stateless: admin_echo without the scope, 403", st == 403 and
              "insufficient_scope" in hd.get("www-authenticate", ""), f"{st} {hd}")
    finally:
        srv.stop("stateless auth server exits 0")


def tasks_bound_to_their_principal(v, jwks):
    """2026-07-28 tasks over sessionless HTTP belong to the principal whose
    token started them: another subject finds no such task (get, update,
    cancel, listen), the same subject with other scopes does."""
    t = v["http"]
    srv = Server(*auth_args(v, jwks, "--access-log"))
    ext = {**MODERN, "io.modelcontextprotocol/clientCapabilities":
           {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}

    def modern(token, rid, method, params, name=None):
        hdr = {"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if name:
            hdr["Mcp-Name"] = name
        return in_session(srv.port, token, None,
                          {"jsonrpc": "2.0", "id": rid, "method": method,
                           "params": {**params, "_meta": ext}}, extra=hdr)

    try:
        st, _, ans = modern(t["alice"], 1, "tools/call",
                            {"name": "confirm_delete", "arguments": {"filename": "a"}},
                            "confirm_delete")
        tid = ((ans or {}).get("result") or {}).get("taskId")
        check("tasks: alice starts a task", st == 200 and tid and
              ans["result"].get("resultType") == "task", f"{st} {ans}")
        for who in ("bob", "erin"):
            st, _, ans = modern(t[who], 2, "tasks/get", {"taskId": tid}, tid)
            check(f"tasks: {who} cannot see alice's task (unknown task)",
                  st == 200 and (ans or {}).get("error", {}).get("code") == -32602, f"{st} {ans}")
        st, _, ans = modern(t["bob"], 3, "tasks/cancel", {"taskId": tid}, tid)
        check("tasks: bob cannot cancel it", (ans or {}).get("error", {}).get("code") == -32602,
              f"{st} {ans}")
        st, _, ans = modern(t["bob"], 4, "tasks/update",
                            {"taskId": tid, "inputResponses": {"1.confirm": {"action": "accept",
                                                                             "content": {}}}},
                            tid)
        check("tasks: bob cannot answer its input", (ans or {}).get("error", {}).get("code") ==
              -32602, f"{st} {ans}")
        st, _, ans = modern(t["alice_admin"], 5, "tasks/get", {"taskId": tid}, tid)
        status = ((ans or {}).get("result") or {}).get("status")
        check("tasks: alice with other scopes sees it, still waiting for her input",
              st == 200 and status == "input_required", f"{st} {ans}")
        line = srv.wait_line(r"^hook after method=tasks/get name=- sub=bob outcome=error "
                             r"code=-32602 ")
        check("tasks: the after-hook records bob's refusal as an unknown task", line is not None,
              srv.lines[-6:])
        # A listen for it from bob is acknowledged without it.
        h = {**bearer(t["bob"]), "Mcp-Protocol-Version": "2026-07-28",
             "Mcp-Method": "subscriptions/listen"}
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 6,
                                              "method": "subscriptions/listen",
                                              "params": {"notifications": {"taskIds": [tid]},
                                                         "_meta": ext}}),
                  {**h, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"})
        r = c.getresponse()
        first = None
        while first is None:
            ln = r.fp.readline().decode()
            if not ln:
                break
            if ln.startswith("data: "):
                first = json.loads(ln[6:])
        c.close()
        agreed = ((first or {}).get("params") or {}).get("notifications", {})
        check("tasks: bob's listen for alice's task is acknowledged without it",
              r.status == 200 and agreed.get("taskIds") == [], f"{r.status} {first}")
        st, _, ans = modern(t["alice"], 7, "tasks/cancel", {"taskId": tid}, tid)
        check("tasks: alice cancels her task", st == 200 and "result" in (ans or {}),
              f"{st} {ans}")
        st, _, ans = modern(t["alice"], 8, "tasks/get", {"taskId": tid}, tid)
        check("tasks: and it is cancelled",
              ((ans or {}).get("result") or {}).get("status") == "cancelled", f"{st} {ans}")
    finally:
        srv.stop("tasks auth server exits 0")


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("MCP_EVERYTHING is not set or not executable")
    vectors = None
    if VECTORS:
        if not os.path.exists(VECTORS):
            return tap.skip_all(f"MCP_AUTH_VECTORS names {VECTORS}, which is not there "
                                "(make check-auth makes it)")
        with open(VECTORS) as f:
            vectors = json.load(f)
    tmp = []
    try:
        tmp.append(write_json(FIXED_JWKS))
        POINTS.guard(metadata_and_challenges, tmp[-1])
        POINTS.guard(hooks_over_http)
        POINTS.guard(held_streams)
        POINTS.guard(hooks_over_stdio)
        if vectors:
            tmp.append(write_json(vectors["jwks"]))
            tmp.append(write_json(vectors["jwks_single"]))
            POINTS.guard(vector_table, vectors, tmp[-2], tmp[-1])
            POINTS.guard(sessions_scopes_hijack, vectors, tmp[-2])
            POINTS.guard(rate_limit_per_principal, vectors, tmp[-2])
            POINTS.guard(stateless, vectors, tmp[-2])
            POINTS.guard(tasks_bound_to_their_principal, vectors, tmp[-2])
        else:
            tap.diag("the token-bearing checks run in make check-auth (MCP_AUTH_VECTORS)")
    finally:
        for path in tmp:
            os.unlink(path)
    for f in POINTS.failures:
        tap.diag(f"failed: {f}")
    return POINTS.finish()


if __name__ == "__main__":
    sys.exit(main())
