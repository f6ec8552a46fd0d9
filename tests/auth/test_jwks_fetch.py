#!/usr/bin/env python3
"""test_jwks_fetch.py - the resource server fetches its own keys, and asks
an introspection endpoint about opaque tokens (api/auth-keys.c,
api/auth-introspect.c), against a small authorization server played here
by Python's http.server, which counts every request it gets.

mcp-everything --http --auth-jwks-url / --auth-jwks-discover /
--auth-introspect is the resource server; tokens are ES256 JWTs signed here
with keys made here (the `cryptography` package).  Each scenario checks
statuses and counts, never how long anything took: waits are bounded loops
on an event (a count reached, a line printed).
"""
import base64
import http.client
import http.server
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402
from httpsrv import StderrLines, free_port  # noqa: E402

try:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
except ImportError:  # pragma: no cover
    ec = None

BIN = os.environ.get("MCP_EVERYTHING")


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Key:
    """A P-256 key with its kid."""

    def __init__(self, kid):
        self.kid = kid
        self.priv = ec.generate_private_key(ec.SECP256R1())

    def jwk(self):
        n = self.priv.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                "x": b64u(n.x.to_bytes(32, "big")), "y": b64u(n.y.to_bytes(32, "big"))}

    def token(self, aud, iss, kid=None, exp_in=600, scope="mcp:read"):
        hdr = {"alg": "ES256", "typ": "at+jwt", "kid": kid or self.kid}
        now = int(time.time())
        claims = {"iss": iss, "aud": aud, "sub": "alice", "client_id": "c1", "scope": scope,
                  "iat": now, "exp": now + exp_in}
        signing = (b64u(json.dumps(hdr).encode()) + "." +
                   b64u(json.dumps(claims).encode())).encode()
        der = self.priv.sign(signing, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return signing.decode() + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


class AuthServer:
    """The authorization server: serves what `routes` says, counts hits.
    routes[path] = (status, headers, body bytes) or a function of the
    request handler returning that."""

    def __init__(self):
        self.routes = {}
        self.hits = {}
        self.seen_auth = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _serve(self):
                path = self.path.split("?")[0]
                length = int(self.headers.get("Content-Length") or 0)
                self.body = self.rfile.read(length) if length else b""
                with outer.lock:
                    outer.hits[path] = outer.hits.get(path, 0) + 1
                    outer.seen_auth.append(self.headers.get("Authorization"))
                    route = outer.routes.get(path)
                if callable(route):
                    route = route(self)
                status, headers, body = route or (404, {}, b"not here")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the server stopped reading (the size limit)

            do_GET = _serve
            do_POST = _serve

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def count(self, path):
        with self.lock:
            return self.hits.get(path, 0)

    def jwks(self, keys, headers=None):
        self.routes["/jwks"] = (200, dict({"Content-Type": "application/json"}, **(headers or {})),
                                json.dumps({"keys": [k.jwk() for k in keys]}).encode())

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Server:
    """mcp-everything --http with --auth-*; its stderr lines are kept."""

    def __init__(self, *args, port=None):
        self.port = port or free_port()
        self.resource = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen([BIN, "--http", f"127.0.0.1:{self.port}",
                                      "--auth-resource", self.resource, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.err = StderrLines(self.proc)
        self.lines = self.err.lines
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    self.err.join(5)
                    return
                time.sleep(0.05)

    def wait_line(self, pattern, seconds=20):
        return self.err.wait_line(pattern, seconds)

    def post(self, token):
        """initialize with `token`: (status, WWW-Authenticate)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}}})
        c.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream",
                                         "Authorization": "Bearer " + token})
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, r.getheader("WWW-Authenticate") or ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.join(5)
        # A sanitizer build reports on stderr (LeakSanitizer at exit).
        found = [l for l in self.lines if "Sanitizer" in l or "runtime error" in l]
        if found:
            raise tap.Fail("the server's sanitizer spoke: " + " | ".join(found[:5]))
        return self.proc.returncode


def expect(cond, what):
    if not cond:
        raise tap.Fail(what)


def wait_until(pred, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def rotation_on_unknown_kid():
    """A token signed by a key published after the start is accepted once
    the server fetched the set again for its unknown kid: no reload."""
    a, b = Key("a"), Key("b")
    asv = AuthServer()
    asv.jwks([a])
    srv = Server("--auth-jwks-url", asv.url + "/jwks", "--auth-issuer", asv.url)
    try:
        st, _ = srv.post(a.token(srv.resource, asv.url))
        tap.diag(f"kid a: {st}; fetches {asv.count('/jwks')}")
        expect(st == 200, f"kid a got {st}")
        expect(asv.count("/jwks") == 1, f"{asv.count('/jwks')} fetches at start")
        asv.jwks([a, b])
        st, www = srv.post(b.token(srv.resource, asv.url))
        tap.diag(f"kid b after rotation: {st}; fetches {asv.count('/jwks')}")
        expect(st == 200, f"kid b got {st}: {www}")
        expect(asv.count("/jwks") == 2, f"{asv.count('/jwks')} fetches after the rotation")
        expect(srv.wait_line(r"key set fetched: 2 keys"), "no notice of the fetch")
    finally:
        code = srv.stop()
        asv.close()
    expect(code == 0, f"exit {code}")


def forged_kids_make_no_storm():
    """200 tokens with random kids, from 8 threads: each is refused with a
    401 naming the unknown key id, and the key set is fetched at most once
    for all of them (the interval is 60 s)."""
    a = Key("a")
    asv = AuthServer()
    asv.jwks([a])
    srv = Server("--auth-jwks-url", asv.url + "/jwks", "--auth-jwks-interval-ms", "60000")
    statuses, descs = [], set()
    lock = threading.Lock()

    def storm(n):
        for _ in range(n):
            st, www = srv.post(a.token(srv.resource, asv.url, kid=secrets.token_hex(8)))
            m = re.search(r'error_description="([^"]*)"', www)
            with lock:
                statuses.append(st)
                descs.add(m.group(1) if m else www)
    try:
        before = asv.count("/jwks")
        threads = [threading.Thread(target=storm, args=(25,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        after = asv.count("/jwks")
        tap.diag(f"200 forged kids: statuses {sorted(set(statuses))}, fetches {before} -> {after}")
        for d in sorted(descs):
            tap.diag(f"  error_description: {d}")
        expect(len(statuses) == 200, f"{len(statuses)} answers")
        expect(set(statuses) == {401}, f"statuses {set(statuses)}")
        expect(after - before <= 1, f"{after - before} fetches for 200 forged kids")
        expect(all("key id" in d for d in descs), f"descriptions {descs}")
        st, _ = srv.post(a.token(srv.resource, asv.url))
        expect(st == 200, f"the real key then got {st}")
    finally:
        srv.stop()
        asv.close()


def failed_fetch_keeps_old_keys():
    """The set's URL starts answering 500, then a document that is no key
    set: each fetch fails and is reported, and tokens of the old key are
    still accepted."""
    a = Key("a")
    asv = AuthServer()
    asv.jwks([a])
    srv = Server("--auth-jwks-url", asv.url + "/jwks", "--auth-jwks-interval-ms", "1000",
                 "--auth-jwks-wait-ms", "5000")
    try:
        expect(srv.post(a.token(srv.resource, asv.url))[0] == 200, "kid a refused at first")
        for broken, says in (((500, {}, b"down"), "HTTP 500"),
                             ((200, {}, b'{"keys": "no"}'), "refused"),
                             ((200, {}, b"<html>"), "refused")):
            asv.routes["/jwks"] = broken
            n = asv.count("/jwks")
            # An unknown kid asks for a fetch once the interval passed.
            ok = wait_until(lambda: srv.post(a.token(srv.resource, asv.url, kid="zz"))[0] == 401
                            and asv.count("/jwks") > n)
            expect(ok, "no fetch for the unknown kid")
            line = srv.wait_line("fetch failed, old keys kept: .*" + says)
            tap.diag(f"{broken[0]} {broken[2][:20]!r}: {line}")
            expect(line, f"no failure line saying {says!r}: {srv.lines[-3:]}")
            st, _ = srv.post(a.token(srv.resource, asv.url))
            expect(st == 200, f"the old key got {st} after a failed fetch")
    finally:
        srv.stop()
        asv.close()


def caching_headers_drive_refresh():
    """With Cache-Control max-age=1 (and the lifetime floor lowered to 1 s)
    the fetcher fetches again by itself, with no request; with max-age=3600
    it does not within the same wait."""
    a = Key("a")
    asv = AuthServer()
    asv.jwks([a], {"Cache-Control": "public, max-age=1"})
    srv = Server("--auth-jwks-url", asv.url + "/jwks", "--auth-jwks-lifetime-ms",
                 "1000/60000/120000")
    try:
        expect(wait_until(lambda: asv.count("/jwks") >= 3), "no refresh by max-age=1")
        tap.diag(f"max-age=1: {asv.count('/jwks')} fetches without a request")
    finally:
        srv.stop()
        asv.close()
    asv = AuthServer()
    asv.jwks([a], {"Cache-Control": "max-age=3600"})
    srv = Server("--auth-jwks-url", asv.url + "/jwks", "--auth-jwks-lifetime-ms",
                 "1000/60000/7200000")
    try:
        srv.post(a.token(srv.resource, asv.url))
        # A marker: a second server with max-age=1 refreshing three times
        # takes longer than this one would need to refresh once if it
        # ignored max-age=3600 (both clamp floors are 1 s).
        other = AuthServer()
        other.jwks([a], {"Cache-Control": "max-age=1"})
        marker = Server("--auth-jwks-url", other.url + "/jwks", "--auth-jwks-lifetime-ms",
                        "1000/1000/120000")
        try:
            expect(wait_until(lambda: other.count("/jwks") >= 4), "the marker did not refresh")
        finally:
            marker.stop()
            other.close()
        tap.diag(f"max-age=3600: {asv.count('/jwks')} fetch(es)")
        expect(asv.count("/jwks") == 1, f"{asv.count('/jwks')} fetches under max-age=3600")
    finally:
        srv.stop()
        asv.close()


def discovery_from_issuer():
    """--auth-jwks-discover: RFC 8414 metadata first, then OpenID
    configuration; its issuer must be ours."""
    a = Key("a")
    asv = AuthServer()
    asv.jwks([a])
    asv.routes["/.well-known/openid-configuration"] = (
        200, {"Content-Type": "application/json"},
        json.dumps({"issuer": asv.url, "jwks_uri": asv.url + "/jwks"}).encode())
    srv = Server("--auth-jwks-discover", "--auth-issuer", asv.url)
    try:
        st, _ = srv.post(a.token(srv.resource, asv.url))
        tap.diag(f"discovered: {st}; hits {dict(asv.hits)}")
        expect(st == 200, f"got {st}")
        expect(asv.count("/.well-known/oauth-authorization-server") == 1, "RFC 8414 not asked")
        expect(asv.count("/.well-known/openid-configuration") == 1, "OIDC not asked")
    finally:
        srv.stop()
        asv.close()
    asv = AuthServer()
    asv.routes["/.well-known/oauth-authorization-server"] = (
        200, {}, json.dumps({"issuer": "https://evil.example",
                             "jwks_uri": asv.url + "/j"}).encode())
    srv = Server("--auth-jwks-discover", "--auth-issuer", asv.url)
    try:
        expect(srv.proc.wait(30) != 0, "a server whose metadata names another issuer started")
        err = "\n".join(srv.lines)
        tap.diag(err)
        expect("names another issuer" in err, "the refusal does not say why")
    finally:
        srv.stop()
        asv.close()


def refused_urls_and_sizes():
    """Plain http to another host is refused; a document over 1 MiB is."""
    srv = Server("--auth-jwks-url", "http://example.com/jwks")
    code = srv.proc.wait(30)
    tap.diag("\n".join(srv.lines))
    expect(code != 0 and "not an https URL" in "\n".join(srv.lines),
           "plain http to a remote host was taken")
    srv.stop()
    asv = AuthServer()
    asv.routes["/jwks"] = (200, {}, b" " * (1 << 20) + b'{"keys": []}')
    srv = Server("--auth-jwks-url", asv.url + "/jwks")
    try:
        expect(srv.proc.wait(30) != 0, "an over-large key set was taken")
        err = "\n".join(srv.lines)
        tap.diag(err)
        expect("1048576 bytes" in err, "the refusal does not name the limit")
    finally:
        srv.stop()
        asv.close()


def introspection():
    """Opaque tokens: active, inactive, cached, expired, a bad body, and
    the client's Basic credentials; the secret never shows on stderr."""
    asv = AuthServer()
    now = int(time.time())
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    answers = {
        "good": {"active": True, "scope": "mcp:read", "sub": "bob", "client_id": "c9",
                 "aud": resource, "exp": now + 600},
        "gone": {"active": False},
        "old": {"active": True, "scope": "mcp:read", "exp": now - 100},
        "oldfrac": {"active": True, "scope": "mcp:read", "exp": now - 100.5},
        "elsewhere": {"active": True, "scope": "mcp:read", "aud": "https://other.example/mcp"},
    }

    def introspect(h):
        form = dict(p.split("=", 1) for p in h.body.decode().split("&"))
        tok = form.get("token")
        if tok == "garbage":
            return 200, {}, b"not json"
        return 200, {"Content-Type": "application/json"}, json.dumps(
            answers.get(tok, {"active": False})).encode()
    asv.routes["/introspect"] = introspect
    secret_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"intro-{os.getpid()}")
    with open(secret_file, "w") as f:
        f.write("s3cr3t:with&odd chars\n")
    srv = Server("--auth-introspect", asv.url + "/introspect", "--auth-introspect-client",
                 "rs one", "--auth-introspect-secret-file", secret_file, port=port)
    try:
        results = []
        for tok, want in (("good", 200), ("good", 200), ("gone", 401), ("gone", 401),
                          ("old", 401), ("oldfrac", 401), ("elsewhere", 401), ("garbage", 500),
                          ("garbage", 500)):
            n = asv.count("/introspect")
            st, www = srv.post(tok)
            asked = asv.count("/introspect") - n
            m = re.search(r'error_description="([^"]*)"', www)
            results.append((tok, st, asked, m.group(1) if m else ""))
            tap.diag(f"{tok}: {st}, asked {asked}: {m.group(1) if m else ''}")
            expect(st == want, f"{tok}: {st}, not {want}")
        asked = [r[2] for r in results]
        expect(asked == [1, 0, 1, 0, 1, 1, 1, 1, 1], f"endpoint asked {asked} (cache)")
        expect("expired" in results[4][3], f"old: {results[4][3]}")
        expect("expired" in results[5][3], f"oldfrac: {results[5][3]}")
        expect("aud" in results[6][3], f"elsewhere: {results[6][3]}")
        basic = "Basic " + base64.b64encode(b"rs+one:s3cr3t%3Awith%26odd+chars").decode()
        expect(set(asv.seen_auth) == {basic}, f"Authorization sent: {set(asv.seen_auth)}")
    finally:
        srv.stop()
        asv.close()
        os.unlink(secret_file)
    expect(not any("s3cr3t" in l or "good" in l for l in srv.lines), f"stderr: {srv.lines}")


def introspection_cache_ends():
    """Cached answers end: with --auth-introspect-ttl-ms 0 every request
    asks; an active answer is reused only while the token's exp (plus the
    clock skew) lets it pass, after which the endpoint is asked again and
    the token refused as expired."""
    asv = AuthServer()
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    # Within the default clock skew (60 s) for about 3 s more.
    exp = int(time.time()) - 57

    def introspect(h):
        return 200, {"Content-Type": "application/json"}, json.dumps(
            {"active": True, "scope": "mcp:read", "sub": "carol", "exp": exp}).encode()
    asv.routes["/introspect"] = introspect
    srv = Server("--auth-introspect", asv.url + "/introspect", "--auth-introspect-ttl-ms", "0",
                 port=port)
    try:
        sts = [srv.post("soon")[0] for _ in range(3)]
        tap.diag(f"ttl 0: statuses {sts}, endpoint asked {asv.count('/introspect')} times")
        expect(asv.count("/introspect") == 3, f"asked {asv.count('/introspect')} times, not 3")
    finally:
        srv.stop()
    srv = Server("--auth-introspect", asv.url + "/introspect", "--auth-introspect-ttl-ms",
                 "3600000", port=free_port())
    try:
        n = asv.count("/introspect")
        first = srv.post("soon")[0]
        # Poll until the token's exp has passed (bounded); the cached
        # answer must not outlive it.
        refused = wait_until(lambda: srv.post("soon")[0] == 401)
        asked = asv.count("/introspect") - n
        tap.diag(f"exp + skew in 3 s, ttl 1 h: first {first}, then 401 {refused}; "
                 f"endpoint asked {asked}")
        expect(refused, "the token was still taken after its exp")
        expect(asked == 2, f"endpoint asked {asked} times (once, then once after exp)")
    finally:
        srv.stop()
        asv.close()


SCENARIOS = [rotation_on_unknown_kid, forged_kids_make_no_storm, failed_fetch_keeps_old_keys,
             caching_headers_drive_refresh, discovery_from_issuer, refused_urls_and_sizes,
             introspection, introspection_cache_ends]

if __name__ == "__main__":
    if not BIN:
        sys.exit(tap.skip_all("MCP_EVERYTHING is not set"))
    if ec is None:
        sys.exit(tap.skip_all("the Python cryptography package is not installed"))
    sys.exit(tap.run(SCENARIOS, sys.argv[1:]))
