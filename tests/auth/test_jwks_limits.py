#!/usr/bin/env python3
"""test_jwks_limits.py - mcp-everything --auth-jwks FILE with a key set
that breaks a limit or a rule: the server stops at start, and its message
names the limit and its value (it used to say only "--auth-jwks: invalid
argument").  At the limits themselves the set is taken.

A key set is at most 1 MiB (1048576 bytes) and 256 keys
(mcp_server_auth_keys_error, api/jwt/jwt.c).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

EVERYTHING = os.environ.get("MCP_EVERYTHING")
TMP = tempfile.mkdtemp(prefix="jwks-limits.")
# One P-256 public key (RFC 7515 appendix A.3), under as many kids as asked.
KEY = {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", "use": "sig"}


def keys(n):
    return [dict(KEY, kid="k%d" % i) for i in range(n)]


def start_with(doc):
    """Runs mcp-everything with the key set `doc` (text): (exit status,
    stderr).  A server that took the set serves stdio; end of input ends
    it with status 0."""
    path = os.path.join(TMP, "jwks.json")
    with open(path, "w") as f:
        f.write(doc)
    try:
        p = subprocess.run([EVERYTHING, "--auth-resource", "http://127.0.0.1:1/mcp",
                            "--auth-jwks", path], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise tap.Fail("mcp-everything did not end")
    tap.diag("exit %d: %s" % (p.returncode, p.stderr.strip()))
    return p.returncode, p.stderr


def refused(doc, *words):
    rc, err = start_with(doc)
    if rc == 0:
        raise tap.Fail("the key set was taken")
    for w in words:
        if w not in err:
            raise tap.Fail("stderr does not say %r: %r" % (w, err))


def too_many_keys():
    refused(json.dumps({"keys": keys(300)}), "--auth-jwks", "300 keys",
            "the limit is 256 keys")


def just_past_the_key_limit():
    refused(json.dumps({"keys": keys(257)}), "257 keys", "the limit is 256 keys")


def at_the_key_limit():
    rc, err = start_with(json.dumps({"keys": keys(256)}))
    if rc != 0:
        raise tap.Fail("256 keys refused: %r" % err)


def too_large():
    doc = json.dumps({"keys": keys(1), "padding": "x" * (1200 * 1024)})
    refused(doc, "--auth-jwks", "larger than the limit of 1048576 bytes")


def just_past_the_size_limit():
    head = json.dumps({"keys": keys(1), "padding": ""})[:-2]
    doc = head + "x" * (1048576 + 1 - len(head) - 2) + '"}'
    assert len(doc) == 1048577
    refused(doc, "larger than the limit of 1048576 bytes")


def at_the_size_limit():
    head = json.dumps({"keys": keys(1), "padding": ""})[:-2]
    doc = head + "x" * (1048576 - len(head) - 2) + '"}'
    assert len(doc) == 1048576
    rc, err = start_with(doc)
    if rc != 0:
        raise tap.Fail("a key set of exactly 1 MiB refused: %r" % err)


def not_json():
    refused('{"keys": [', "not valid JSON")


def no_keys():
    refused('{"keys": []}', "no keys")
    refused('{"kty": "EC"}', '"keys" array')


def no_usable_key():
    refused(json.dumps({"keys": [{"kty": "oct", "k": "AAAA"}]}), "none of the 1 keys")


SCENARIOS = [too_many_keys, just_past_the_key_limit, at_the_key_limit, too_large,
             just_past_the_size_limit, at_the_size_limit, not_json, no_keys, no_usable_key]

if __name__ == "__main__":
    if not EVERYTHING:
        sys.exit(tap.skip_all("MCP_EVERYTHING is not set"))
    sys.exit(tap.run(SCENARIOS, sys.argv[1:]))
