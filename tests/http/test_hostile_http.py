#!/usr/bin/env python3
"""test_hostile_http.py - mcp-everything --http against a hostile or
unlucky peer, over real sockets, one class per issue-25 item:

  - answers larger than the stream backlog, on every kind of stream (a
    2025-11-25 session's SSE POST, a 2026-07-28 POST stream, a stateless
    POST, --json): each delivered whole (item 5);
  - a header and a body sent too slowly are refused with 408 and closed,
    while an SSE GET stream and a long call stay; a fresh client is served
    while more slow connections than the limit are held (item 6);
  - a body declared (Content-Length) past the message limit is refused
    before any of it is sent; a chunked one as it crosses the limit
    (item 7);
  - several Authorization headers, in each combination, are 400
    invalid_request, with --bearer and with OAuth (item 8);
  - a GET stream closed and opened again at once, hundreds of times, at
    --max-streams 1 (item 12).

Asserts outcomes (statuses, bodies, what arrived), never how long anything
took.  Standard library only (OAuth tokens are signed with the openssl
command; that part is skipped without it).  Prints TAP; exits 0/1, 77 when
the server binary is missing.

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything test_hostile_http.py
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import tap  # noqa: E402
from httpsrv import free_port  # noqa: E402
from test_http import sse_messages, start_server, stop_server  # noqa: E402
import test_http  # noqa: E402

POINTS = tap.Points()
check = POINTS.check
test_http.check = check  # stop_server reports here
SANITIZER = os.environ.get("MCP_ADV_SANITIZER", "")
ACCEPT_BOTH = "application/json, text/event-stream"
LATEST = "2025-11-25"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


# ---- raw HTTP over a socket ----------------------------------------------

def connect(port, timeout=60):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def read_response(s):
    """Reads one HTTP response: (status, headers with lower-case names,
    body bytes).  Status None when the connection ended (or failed)
    before a status line."""
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            b = s.recv(65536)
            if not b:
                return None, {}, buf
            buf += b
    except OSError as e:
        return None, {}, f"<{type(e).__name__}>".encode()
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if status in (100,):
        s2 = rest
        # an interim response: the final one follows
        st, h2, body = _reparse(s, s2)
        return st, h2, body
    body = _read_body(s, hdrs, rest)
    return status, hdrs, body


def _reparse(s, buf):
    class Pre:
        def __init__(self, sock, pre):
            self.sock, self.pre = sock, pre

        def recv(self, n):
            if self.pre:
                p, self.pre = self.pre, b""
                return p
            return self.sock.recv(n)
    return read_response(Pre(s, buf))


def _read_body(s, hdrs, rest):
    try:
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(rest) < n:
                b = s.recv(65536)
                if not b:
                    break
                rest += b
            return rest[:n]
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                while b"\r\n" not in rest:
                    b = s.recv(65536)
                    if not b:
                        return out
                    rest += b
                line, rest = rest.split(b"\r\n", 1)
                n = int(line.split(b";")[0], 16)
                while len(rest) < n + 2:
                    b = s.recv(1 << 20)
                    if not b:
                        return out + rest
                    rest += b
                out += rest[:n]
                rest = rest[n + 2:]
                if n == 0:
                    return out
        while True:
            b = s.recv(65536)
            if not b:
                return rest
            rest += b
    except OSError:
        return rest


def request(port, method, body=None, headers=None, path="/mcp", timeout=60):
    """One request on its own connection: (status, headers, body text)."""
    s = connect(port, timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    h = {"Host": f"127.0.0.1:{port}", "Connection": "close"}
    if data is not None:
        h.update({"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                  "Content-Length": str(len(data))})
    h.update(headers or {})
    lines = [f"{method} {path} HTTP/1.1"]
    for k, v in h.items():
        for one in (v if isinstance(v, list) else [v]):
            lines.append(f"{k}: {one}")
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (data or b""))
    st, hd, b = read_response(s)
    s.close()
    return st, hd, b.decode("utf-8", "replace")


def jsonrpc_error(body):
    try:
        return json.loads(body).get("error") or {}
    except ValueError:
        return {}


def initialize(port, version=LATEST, headers=None):
    st, hd, body = request(port, "POST", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}}},
        headers=headers)
    sid = hd.get("mcp-session-id")
    if sid:
        request(port, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=dict(headers or {}, **{"Mcp-Session-Id": sid,
                                               "MCP-Protocol-Version": version}))
    return st, sid


def echo_call(rid, pad, meta=None):
    p = {"name": "echo", "arguments": {"text": "a", "pad_bytes": pad}}
    if meta:
        p["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": p}


def answer_of(hd, body, rid):
    """The JSON-RPC answer to `rid` in a JSON or SSE body, or None."""
    if "text/event-stream" in hd.get("content-type", ""):
        for m in sse_messages(body):
            if m.get("id") == rid:
                return m
        return None
    try:
        m = json.loads(body)
    except ValueError:
        return None
    return m if m.get("id") == rid else None


def echoed_len(m):
    try:
        return len(m["result"]["content"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return -1


# ---- item 5: answers larger than the backlog ------------------------------

BACKLOG = 65536
SIZES = (BACKLOG - 5000, BACKLOG + 5000, 4 * BACKLOG, 2_000_000)


def large_answers():
    """Answers around and far beyond the stream backlog (64 KiB here), on
    every kind of stream, are delivered whole; a stream that cannot be
    resumed is never cut mid-answer."""
    for kind in ("session SSE", "2026-07-28 SSE", "stateless SSE", "session --json"):
        args = ["--stream-backlog", str(BACKLOG)]
        if kind.startswith("stateless"):
            args.append("--stateless")
        if "--json" in kind:
            args.append("--json")
        srv, port = start_server(*args)
        try:
            hdrs = {}
            if kind.startswith("session"):
                st, sid = initialize(port)
                hdrs = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST}
            for i, n in enumerate(SIZES):
                rid = 10 + i
                meta = None
                h = dict(hdrs)
                if kind.startswith("2026"):
                    meta = dict(MODERN_META, progressToken=rid)  # asks for SSE
                    h.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                              "Mcp-Name": "echo"})
                st, hd, body = request(port, "POST", echo_call(rid, n, meta), headers=h)
                m = answer_of(hd, body, rid)
                want_sse = "--json" not in kind
                check(f"large answer: {kind}, {n} bytes delivered whole",
                      st == 200 and m is not None and echoed_len(m) == n + 1 and
                      (("text/event-stream" in hd.get("content-type", "")) == want_sse),
                      f"{st} {hd.get('content-type')} got {len(body)} bytes, "
                      f"echo {echoed_len(m) if m else None}")
        finally:
            stop_server(srv, f"large answers ({kind}): clean exit")


def large_answer_slow_reader():
    """A 2026-07-28 POST stream read slowly, with progress events piling up
    before a large answer: the answer still arrives whole (the stream
    cannot be resumed, so it is never cut)."""
    srv, port = start_server("--stream-backlog", str(BACKLOG))
    try:
        s = connect(port)
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "a", "pad_bytes": 3 * BACKLOG},
            "_meta": dict(MODERN_META, progressToken=7)}}).encode()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                   f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
                   f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                   f"Mcp-Name: echo\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
        time.sleep(0.5)  # the server writes into a full socket meanwhile
        st, hd, b = read_response(s)
        s.close()
        m = answer_of(hd, b.decode("utf-8", "replace"), 7)
        check("large answer: read slowly on a stream without resumption, delivered whole",
              st == 200 and m is not None and echoed_len(m) == 3 * BACKLOG + 1,
              f"{st} got {len(b)} bytes")
    finally:
        stop_server(srv, "large answer slow reader: clean exit")


# ---- item 6: slow headers and bodies ---------------------------------------

def slow_clients():
    """A header and a body that do not come in time are refused with 408
    and a JSON-RPC body and the connection closed; an SSE GET stream
    opened before them stays open, and a call longer than both limits
    gets its answer."""
    srv, port = start_server("--header-timeout-ms", "1000", "--body-timeout-ms", "1000")
    try:
        st, sid = initialize(port)
        hdrs = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST}
        g = connect(port)
        g.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LATEST}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += g.recv(4096)
        check("slow: the GET stream opened", head.startswith(b"HTTP/1.1 200"), head[:80])
        long_call = {}

        def call():
            long_call["r"] = request(port, "POST", {
                "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"ms": 2500}}}, headers=hdrs)
        t = threading.Thread(target=call)
        t.start()
        # A header that stalls halfway.
        h = connect(port)
        h.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        st, hd, body = read_response(h)
        e = jsonrpc_error(body.decode())
        check("slow header: 408 with a JSON-RPC error naming the limit, connection closed",
              st == 408 and e.get("code") == -32600 and "header" in e.get("message", "") and
              "1000 ms" in e.get("message", "") and h.recv(10) == b"", f"{st} {body[:200]}")
        h.close()
        # A body that stalls after 10 of its 100 bytes.
        b = connect(port)
        b.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {sid}\r\n"
                   f"Content-Length: 100\r\n\r\n" + '{"jsonrpc"').encode())
        st, hd, body = read_response(b)
        e = jsonrpc_error(body.decode())
        check("slow body: 408 with a JSON-RPC error naming the limit",
              st == 408 and e.get("code") == -32600 and "body" in e.get("message", ""),
              f"{st} {body[:200]}")
        b.close()
        # Both refusals came after a limit the GET stream had passed too.
        g.setblocking(False)
        try:
            alive = g.recv(65536, socket.MSG_PEEK) != b""
        except BlockingIOError:
            alive = True
        except OSError:
            alive = False
        check("slow: the SSE GET stream is still open after both limits passed", alive)
        t.join(60)
        st, hd, body = long_call.get("r", (None, {}, ""))
        m = answer_of(hd, body, 5)
        check("slow: a call longer than both limits got its answer",
              st == 200 and m is not None and "result" in m, f"{st} {body[:200]}")
        # The stream was open: DELETE ends it, and it ends cleanly.
        dst, _, dbody = request(port, "DELETE", None, headers=hdrs)
        check("slow: DELETE of the session", dst == 200, f"{dst} {dbody[:200]}")
        g.setblocking(True)
        g.settimeout(30)
        how = "eof"
        got = b""
        try:
            while True:
                x = g.recv(65536)
                if not x:
                    break
                got += x
                if got.endswith(b"0\r\n\r\n"):
                    how = "end"  # the response's last chunk (the connection is kept)
                    break
        except ConnectionResetError:
            how = "reset"
        except OSError as e:
            how = f"{type(e).__name__} after {got[-60:]!r}"
        check("slow: the GET stream ends at DELETE", how in ("end", "eof", "reset"), how)
        g.close()
    finally:
        stop_server(srv, "slow clients: clean exit")


def slow_crowd():
    """More connections than --max-connections (and its headroom) trickle
    their headers: a fresh client is served at once, and the slow ones
    that made room were told 503 with a JSON-RPC body."""
    limit = 20
    n_slow = 120  # past the limit and the 64 connections of headroom
    srv, port = start_server("--max-connections", str(limit), "--header-timeout-ms", "600000")
    slow = []
    try:
        for _ in range(n_slow):
            try:
                s = connect(port, timeout=30)
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                slow.append(s)
            except OSError:
                pass
        # Served, or refused at once with 503 and Retry-After while the
        # room is being made (the "served, or refused at once"),
        # then served when it comes back as told: a loaded machine can
        # let the fresh client in before the oldest slow one is closed.
        refusals = []
        for _ in range(5):
            st, sid = initialize(port)
            if st != 503:
                break
            refusals.append(st)
            time.sleep(1)
        check("slow crowd: a fresh client is served while slow connections are held",
              st == 200 and sid, f"{st} after {len(refusals)} refusals at once (503)")
        st, hd, body = request(port, "POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                               headers={"Mcp-Session-Id": sid or "", "MCP-Protocol-Version": LATEST})
        check("slow crowd: and served again", st == 200, f"{st} {body[:200]}")
        refused = 0
        for s in slow[:limit]:
            s.settimeout(30)
            rst, hd, body = read_response(s)
            if rst == 503 and jsonrpc_error(body.decode()).get("code") == -32050 and \
                    hd.get("retry-after"):
                refused += 1
        check("slow crowd: the oldest slow connections were told 503 with Retry-After",
              refused == limit, refused)
    finally:
        for s in slow:
            s.close()
        stop_server(srv, "slow crowd: clean exit")


# ---- item 7: a body declared too large ---------------------------------------

def declared_huge_body():
    """A body declared past the limit is refused on its header, before any
    of it is sent (with and without Expect: 100-continue); a chunked one
    as soon as it crosses the limit; bodies within it are served."""
    srv, port = start_server("--max-message", "4096")
    try:
        st, sid = initialize(port)
        for declared, expect in ((1 << 30, False), (1 << 30, True), (4097, False),
                                 (1 << 62, False)):
            s = connect(port)
            s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       f"Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {sid}\r\n"
                       f"{'Expect: 100-continue' + chr(13) + chr(10) if expect else ''}"
                       f"Content-Length: {declared}\r\n\r\n").encode())
            rst, hd, body = read_response(s)
            s.close()
            e = jsonrpc_error(body.decode())
            check(f"declared body of {declared} bytes{' (100-continue)' if expect else ''}: "
                  "413 before any of it is sent",
                  rst == 413 and e.get("code") == -32600 and "4096 bytes" in e.get("message", ""),
                  f"{rst} {body[:200]}")
        # At the limit exactly: served.
        ping = {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_pad": ""}}
        ping["params"]["_pad"] = "x" * (4096 - len(json.dumps(ping)))
        st, hd, body = request(port, "POST", ping, headers={"Mcp-Session-Id": sid,
                                                            "MCP-Protocol-Version": LATEST})
        check("a body of exactly the limit is served", st == 200, f"{st} {body[:200]}")
        # Chunked past the limit: refused as it crosses it, the rest unsent.
        s = connect(port)
        s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {sid}\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n").encode())
        s.sendall(b"%x\r\n%s\r\n" % (5000, b" " * 5000))
        rst, hd, body = read_response(s)
        s.close()
        e = jsonrpc_error(body.decode())
        check("a chunked body crossing the limit: 413 at once, its end never sent",
              rst == 413 and e.get("code") == -32600 and "4096 bytes" in e.get("message", ""),
              f"{rst} {body[:200]}")
        # Chunked within it: served.
        s = connect(port)
        data = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()
        s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Accept: application/json\r\nMcp-Session-Id: {sid}\r\nConnection: close\r\n"
                   f"MCP-Protocol-Version: {LATEST}\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n").encode() +
                  b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        rst, hd, body = read_response(s)
        s.close()
        check("a chunked body within the limit is served", rst == 200 and b'"id":4' in body,
              f"{rst} {body[:200]}")
    finally:
        stop_server(srv, "declared huge body: clean exit")


# ---- item 8: several Authorization headers -----------------------------------

def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def duplicate_authorization_bearer():
    """--bearer TOKEN (the application's hook): two Authorization headers,
    same token or not, are 400 invalid_request; one is served."""
    srv, port = start_server("--bearer", "good-token")
    try:
        good, other = "Bearer good-token", "Bearer evil-token"
        st, _ = initialize(port, headers={"Authorization": good})
        check("--bearer: one good token is served", st == 200, st)
        for combo in ([good, other], [other, good], [good, good], [good, "Basic dTpw"],
                      ["Basic dTpw", good]):
            st, hd, body = request(port, "POST", {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LATEST, "capabilities": {},
                           "clientInfo": {"name": "x", "version": "1"}}},
                headers={"Authorization": combo})
            check(f"--bearer: Authorization {combo} -> 400 invalid_request",
                  st == 400 and 'error="invalid_request"' in hd.get("www-authenticate", "") and
                  jsonrpc_error(body).get("code") == -32600, f"{st} {hd} {body[:200]}")
    finally:
        stop_server(srv, "--bearer duplicates: clean exit")


def duplicate_authorization_oauth():
    """OAuth (JWTs checked against a JWKS): two valid tokens of different
    users, a token beside another scheme in either order, and the same
    token twice are all 400 invalid_request with the challenge's error;
    one token is served as its user; a single credential with commas
    (another scheme's auth-params) is still the plain 401."""
    if not shutil.which("openssl"):
        print("# openssl missing: OAuth duplicates skipped")
        return
    d = tempfile.mkdtemp()
    key = os.path.join(d, "k.pem")
    subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mod = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"], check=True,
                         capture_output=True, text=True).stdout.strip().split("=", 1)[1]
    jwks = {"keys": [{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
                      "n": b64u(bytes.fromhex(mod)), "e": "AQAB"}]}
    with open(os.path.join(d, "jwks.json"), "w") as f:
        json.dump(jwks, f)
    resource = "http://127.0.0.1/mcp"
    issuer = "https://auth.example.test"

    def token(sub):
        now = int(time.time())
        h = b64u(json.dumps({"alg": "RS256", "kid": "k1", "typ": "JWT"}).encode())
        p = b64u(json.dumps({"iss": issuer, "aud": resource, "sub": sub, "iat": now,
                             "nbf": now - 10, "exp": now + 3600, "scope": ""}).encode())
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key],
                             input=f"{h}.{p}".encode(), capture_output=True, check=True).stdout
        return f"{h}.{p}.{b64u(sig)}"
    alice, bob = "Bearer " + token("alice"), "Bearer " + token("bob")
    srv, port = start_server("--auth-resource", resource, "--auth-jwks",
                             os.path.join(d, "jwks.json"), "--auth-issuer", issuer)
    try:
        st, sid = initialize(port, headers={"Authorization": alice})
        check("oauth: one token is served", st == 200 and sid, st)
        st, hd, body = request(port, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                              "params": {"name": "whoami", "arguments": {}}},
                               headers={"Authorization": alice, "Mcp-Session-Id": sid,
                                        "MCP-Protocol-Version": LATEST})
        check("oauth: as its user", st == 200 and "alice" in body, body[:300])
        for name, combo in (("alice then bob", [alice, bob]), ("bob then alice", [bob, alice]),
                            ("alice twice", [alice, alice]),
                            ("alice then Basic", [alice, "Basic dTpw"]),
                            ("Basic then alice", ["Basic dTpw", alice]),
                            ("alice then garbage", [alice, "Bearer x.y.z"])):
            for what, hdrs, msg in (
                    ("initialize", {}, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"protocolVersion": LATEST,
                                                   "capabilities": {},
                                                   "clientInfo": {"name": "x", "version": "1"}}}),
                    ("in alice's session", {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LATEST},
                     {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "whoami", "arguments": {}}})):
                st, hd, body = request(port, "POST", msg,
                                       headers=dict(hdrs, Authorization=combo))
                e = jsonrpc_error(body)
                check(f"oauth: {name}, {what} -> 400 invalid_request",
                      st == 400 and 'error="invalid_request"' in hd.get("www-authenticate", "")
                      and (e.get("data") or {}).get("error") == "invalid_request"
                      and "alice" not in body and "bob" not in body,
                      f"{st} {hd.get('www-authenticate')} {body[:200]}")
        st, hd, body = request(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                               headers={"Authorization": 'Digest username="a", realm="b"'})
        check("oauth: one credential of another scheme with commas is still 401",
              st == 401, f"{st} {body[:200]}")
    finally:
        stop_server(srv, "oauth duplicates: clean exit")
        shutil.rmtree(d, ignore_errors=True)


# ---- item 12: a GET stream's place is free when it closes ---------------------

def stream_reopen():
    """At --max-streams 1, a session's GET stream closed and opened again at
    once, hundreds of times: every GET gets its stream (never 503 or 409
    for the one just closed); then another session's too."""
    n = 100 if SANITIZER else 300
    srv, port = start_server("--max-streams", "1")
    try:
        st, sid = initialize(port)
        st2, sid2 = initialize(port)
        statuses = {}
        for i in range(n):
            s = connect(port)
            who = sid if i % 3 else sid2
            s.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                       f"Mcp-Session-Id: {who}\r\nMCP-Protocol-Version: {LATEST}\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                x = s.recv(4096)
                if not x:
                    break
                head += x
            code = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "none"
            statuses[code] = statuses.get(code, 0) + 1
            s.close()
        check(f"stream reopen: {n} GET streams closed and reopened at once all opened",
              statuses == {"200": n}, statuses)
        # The limit still holds while one is open.
        s = connect(port)
        s.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LATEST}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        st, hd, body = request(port, "GET", None, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": sid2, "MCP-Protocol-Version": LATEST})
        check("stream reopen: with one open, another session's GET is still 503",
              st == 503 and jsonrpc_error(body).get("code") == -32050, f"{st} {body[:200]}")
        s.close()
    finally:
        stop_server(srv, "stream reopen: clean exit")


SECTIONS = (large_answers, large_answer_slow_reader, slow_clients, slow_crowd,
            declared_huge_body, duplicate_authorization_bearer, duplicate_authorization_oauth,
            stream_reopen)


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("no mcp-everything binary")
    names = sys.argv[2:]
    for f in SECTIONS:
        if not names or f.__name__ in names:
            POINTS.guard(f)
    return POINTS.finish()


if __name__ == "__main__":
    sys.exit(main())
