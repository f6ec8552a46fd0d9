#!/usr/bin/env python3
"""repro_get_fd_leak.py - the open defect of 2026-11-28 (not in make check):
a GET stream's descriptor is never closed.

mcp-everything --http --session-idle-ms 1000.  A session is initialized and
a GET stream opened on it at once; a second session is initialized, left
to expire (1.2 s), then a GET sent for it (refused); both sockets are
closed.  The server must get back to the descriptors it had.  Now and at
cd48db1 (before issue 25) alike, about one run in six keeps a CLOSED socket
in /proc/PID/fd: a connection left suspended and never resumed.

Usage: repro_get_fd_leak.py PATH/TO/mcp-everything [RUNS]
Exit status 1 when any run leaked.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time


def run_once(binary):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([binary, "--http", f"127.0.0.1:{port}", "--session-idle-ms", "1000",
                          "--grace-ms", "1000"], stderr=subprocess.DEVNULL)
    time.sleep(1.0)

    def fds():
        return len(os.listdir(f"/proc/{p.pid}/fd"))

    def init():
        c = http.client.HTTPConnection("127.0.0.1", port)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        c.request("POST", "/mcp", json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "repro", "version": "1"}}}), h)
        r = c.getresponse()
        sid = r.getheader("Mcp-Session-Id")
        r.read()
        h["Mcp-Session-Id"] = sid
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0",
                                              "method": "notifications/initialized"}), h)
        c.getresponse().read()
        c.close()
        return sid

    base = fds()
    socks = []
    for delay in (0, 1.2):
        sid = init()
        time.sleep(delay)
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   f"Mcp-Session-Id: {sid}\r\n\r\n").encode())
        socks.append(s)
    for s in socks:
        s.close()
    for _ in range(60):
        time.sleep(0.25)
        if fds() <= base:
            break
    left = fds() - base
    p.terminate()
    p.wait()
    return left


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    leaks = [run_once(binary) for _ in range(runs)]
    print(f"descriptors left after each run: {leaks}")
    return 1 if any(n > 0 for n in leaks) else 0


if __name__ == "__main__":
    sys.exit(main())
