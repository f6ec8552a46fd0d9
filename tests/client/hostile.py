#!/usr/bin/env python3
"""hostile.py [--http PORT_FILE] MODE [ARG] - a server that breaks the
protocol on purpose, for the client's failure tests
(tests/client/test_mcp_call_hostile.py).

Over stdio by default; with --http it serves Streamable HTTP on an
ephemeral port of 127.0.0.1 and writes the port to PORT_FILE.  The
handshake is answered properly (server/discover refused, so the client
falls back to initialize) unless MODE breaks it; every other request
(tools/call, ping, tools/list) gets what MODE says:

  wrong-id        every request, the handshake too, is answered under an id
                  the client never sent (its own plus 100000)
  silent          nothing is ever answered
  call-wrong-id   the handshake is fine; requests are answered under an id
                  the client never sent
  huge N          the answer is a valid JSON message of N bytes
  badjson         the answer is a line that is not JSON
  close-mid       half an answer, then the connection is closed (stdio: the
                  process exits; HTTP: the body is cut short)
  status N        (HTTP) the answer is HTTP status N with a text body
  huge-sse N      (HTTP) the answer is an SSE event of N bytes

Standard library only.
"""
import json
import os
import sys

args = sys.argv[1:]
port_file = None
if args and args[0] == "--http":
    port_file = args[1]
    args = args[2:]
mode = args[0] if args else "silent"
arg = int(args[1]) if len(args) > 1 else 0


def handshake_answer(msg):
    """The answer of a handshake request, or None for any other."""
    method, mid = msg.get("method"), msg.get("id")
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": mid,
                "error": {"code": -32601, "message": "Method not found"}}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-" + mode, "version": "1"}}}
    return None


def huge_answer(mid, size):
    """A valid JSON answer of about `size` bytes."""
    head = '{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % mid
    tail = '"}]}}'
    return head + "x" * max(0, size - len(head) - len(tail)) + tail


def plain_answer(mid):
    return json.dumps({"jsonrpc": "2.0", "id": mid,
                       "result": {"content": [{"type": "text", "text": "ok"}]}})


# ---- stdio -------------------------------------------------------------------------

def serve_stdio():
    out = sys.stdout

    def write(text):
        out.write(text)
        out.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        mid = msg.get("id")
        if mid is None or "method" not in msg:
            continue  # notifications, answers
        if mode == "silent":
            continue
        if mode == "wrong-id":
            write(plain_answer(mid + 100000) + "\n")
            continue
        hs = handshake_answer(msg)
        if hs is not None:
            write(json.dumps(hs) + "\n")
            continue
        if mode == "call-wrong-id":
            write(plain_answer(mid + 100000) + "\n")
        elif mode == "huge":
            write(huge_answer(mid, arg) + "\n")
        elif mode == "badjson":
            write('{"jsonrpc":"2.0","id":%d,"result":{"content":[oops]}}\n' % mid)
        elif mode == "close-mid":
            text = plain_answer(mid)
            write(text[:len(text) // 2])
            os._exit(0)


# ---- Streamable HTTP -----------------------------------------------------------------

def serve_http():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, status, ctype, body, extra=None):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(405, "text/plain", "no stream")

        def do_DELETE(self):
            self.reply(200, "text/plain", "")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            msg = json.loads(body)
            mid = msg.get("id")
            if mid is None or "method" not in msg:
                self.reply(202, "text/plain", "")
                return
            if mode == "silent":
                # Headers, then nothing: the client waits for the body.
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.flush()
                self.server.held.append(self.connection)
                self.close_connection = False
                import time
                time.sleep(3600)
                return
            if mode == "wrong-id":
                self.reply(200, "application/json", plain_answer(mid + 100000))
                return
            hs = handshake_answer(msg)
            if hs is not None:
                self.reply(200, "application/json", json.dumps(hs),
                           {"Mcp-Session-Id": "hostile-session"})
                return
            if mode == "call-wrong-id":
                self.reply(200, "application/json", plain_answer(mid + 100000))
            elif mode == "huge":
                self.reply(200, "application/json", huge_answer(mid, arg))
            elif mode == "huge-sse":
                self.reply(200, "text/event-stream",
                           "id: 1\ndata: " + huge_answer(mid, arg) + "\n\n")
            elif mode == "badjson":
                self.reply(200, "application/json",
                           '{"jsonrpc":"2.0","id":%d,"result":{"content":[oops]}}' % mid)
            elif mode == "status":
                self.reply(arg, "text/plain", "the hostile server says no")
            elif mode == "close-mid":
                text = plain_answer(mid).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text[:len(text) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)

    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # the client cut a response short: expected here

    srv = Server(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.held = []
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


if port_file:
    serve_http()
else:
    serve_stdio()
