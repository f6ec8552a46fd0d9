#!/usr/bin/env python3
"""test_mcp_call_oauth.py - mcp-call --oauth end to end against
tests/client/oauth-fixture.py (an authorization server and a protected MCP
resource that count what they saw).  The test plays the person: it reads
the URL mcp-call prints, GETs it without following the redirect, and
follows the Location to mcp-call's loopback listener, as a browser would.

First use with a token cache (0600, under $XDG_STATE_HOME), a second run
on the cached token, step-up to mcp:admin, a refresh after the access
token was revoked, a revoked refresh token (back to the person), --logout,
and a cached token of another resource that is never sent.  Neither a
token nor the client's secret may appear on standard error.
"""
import http.client
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

call = os.environ.get("MCP_CALL")
here = os.path.dirname(os.path.abspath(__file__))
if not call:
    sys.exit(tap.skip_all("MCP_CALL is not set"))

fx = subprocess.Popen([sys.executable, os.path.join(here, "oauth-fixture.py")],
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = int(fx.stdout.readline())
URL = "http://127.0.0.1:%d/mcp" % port
state_home = tempfile.mkdtemp(prefix="mcp-call-oauth.")
cache_dir = os.path.join(state_home, "mcp-call")


def fixture(method, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return json.loads(body) if body else None


def get(url):
    """One GET, redirects not followed: (status, Location)."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", u.path + ("?" + u.query if u.query else ""))
    r = c.getresponse()
    r.read()
    c.close()
    return r.status, r.getheader("Location")


def run(*args):
    """mcp-call --http URL ARGS, the person played on its standard error.
    (exit status, stdout, stderr, how often the person was asked)."""
    env = dict(os.environ, XDG_STATE_HOME=state_home)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    p = subprocess.Popen([call, "--http", URL, "--era", "legacy", "--timeout", "30000"] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    err, asked = [], [0]

    def person():
        for line in p.stderr:
            err.append(line)
            if line.startswith("http://127.0.0.1:%d/authorize?" % port):
                asked[0] += 1
                status, loc = get(line.strip())
                if status == 302 and loc:
                    get(loc)
    t = threading.Thread(target=person)
    t.start()
    out = p.stdout.read()
    rc = p.wait(timeout=60)
    t.join(timeout=10)
    return rc, out, "".join(err), asked[0]


def cache_file():
    files = os.listdir(cache_dir) if os.path.isdir(cache_dir) else []
    return os.path.join(cache_dir, files[0]) if len(files) == 1 else None


def no_secrets(err):
    f = cache_file()
    rec = json.load(open(f)) if f else {}
    for k in ("access_token", "refresh_token", "client_secret"):
        if rec.get(k) and rec[k] in err:
            raise tap.Fail("the %s is on standard error:\n%s" % (k, err))


def expect(rc, out, err, want):
    if rc != 0 or want not in out:
        raise tap.Fail("exit %d, stdout %r, stderr:\n%s" % (rc, out, err))


def first_use_with_token_cache():
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok mcp:read offline_access")
    if asked != 1:
        raise tap.Fail("the person was asked %d times" % asked)
    f = cache_file()
    if not f or stat.S_IMODE(os.stat(f).st_mode) != 0o600:
        raise tap.Fail("no 0600 token cache in %s" % cache_dir)
    if stat.S_IMODE(os.stat(cache_dir).st_mode) != 0o700:
        raise tap.Fail("the cache directory is not 0700")
    no_secrets(err)


def second_run_uses_the_cache():
    before = fixture("GET", "/stats")
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok mcp:read")
    after = fixture("GET", "/stats")
    if asked or after["authorizations"] != before["authorizations"] or \
            after["grants"] != before["grants"]:
        raise tap.Fail("a cached, valid token was not used: %r -> %r" % (before, after))


def step_up_to_admin():
    rc, out, err, asked = run("--oauth", "call", "admin")
    expect(rc, out, err, "mcp:admin")
    if "mcp:read" not in out or asked != 1:
        raise tap.Fail("step-up asked %d times for %r" % (asked, out))
    no_secrets(err)


def refresh_after_revocation():
    fixture("POST", "/revoke")
    before = fixture("GET", "/stats")
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok")
    after = fixture("GET", "/stats")
    if asked or after["grants"].get("refresh_token", 0) != before["grants"].get("refresh_token", 0) + 1:
        raise tap.Fail("no single refresh: asked %d, %r -> %r" % (asked, before, after))


def revoked_refresh_token_asks_the_person():
    fixture("POST", "/revoke?all=1")
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok")
    if asked != 1:
        raise tap.Fail("the person was asked %d times" % asked)
    no_secrets(err)


def logout_forgets():
    rc = subprocess.run([call, "--http", URL, "--logout"],
                        env=dict(os.environ, XDG_STATE_HOME=state_home)).returncode
    if rc != 0 or cache_file():
        raise tap.Fail("--logout left %r (exit %d)" % (cache_file(), rc))
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok")
    if asked != 1:
        raise tap.Fail("after --logout the person was asked %d times" % asked)


def token_of_another_resource_never_sent():
    f = cache_file()
    with open(f, "w") as fh:
        json.dump({"resource": "http://127.0.0.1:1/other", "access_token": "stolen-token",
                   "expires_at": 0}, fh)
    rc, out, err, asked = run("--oauth", "call", "echo")
    expect(rc, out, err, "ok")
    if "stolen-token" in fixture("GET", "/stats")["bad_tokens"]:
        raise tap.Fail("the token of another resource was sent")


try:
    status = tap.run([first_use_with_token_cache, second_run_uses_the_cache, step_up_to_admin,
                      refresh_after_revocation, revoked_refresh_token_asks_the_person,
                      logout_forgets, token_of_another_resource_never_sent], sys.argv[1:])
finally:
    fx.stdin.close()
    fx.wait(timeout=10)
sys.exit(status)
