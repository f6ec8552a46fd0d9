#!/usr/bin/env python3
"""test_json_input_http.py - inbound JSON that json-c would alter or
overspend (issue 25, items 1-4), over Streamable HTTP on real sockets: the
case table of tests/lib/hostile_json.py (U+0000 in every kind of name, key,
id and method; non-finite numbers; integers beyond 64 bits; the bound on
values per message), each posted in a session (JSON and SSE answers) and to
a --stateless server.  Every answer must be strict JSON (no NaN, no
Infinity).  Standard library only; prints TAP, one test point per check
(tests/lib/tap.py); exits 0/1 (77 to skip).

Usage: MCP_EVERYTHING=PATH/TO/mcp-everything test_json_input_http.py
"""
import http.client
import json
import os
import sys

BIN = os.environ.get("MCP_EVERYTHING") or (sys.argv[1] if len(sys.argv) > 1 else None)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import httpsrv  # noqa: E402
import tap  # noqa: E402
import hostile_json as hj  # noqa: E402

POINTS = tap.Points()
check = POINTS.check
VERSION = "2025-11-25"


def start_server(*args):
    return httpsrv.start_server(BIN, *args)


def stop_server(srv, name):
    code, err = httpsrv.stop_server(srv)
    check(name, httpsrv.clean_exit(code, err), f"exit {code}: {err[-300:]}")


def post(port, text, session=None, accept="application/json"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = {"Content-Type": "application/json", "Accept": accept,
         "MCP-Protocol-Version": VERSION}
    if session:
        h["Mcp-Session-Id"] = session
    c.request("POST", "/mcp", text.encode(), h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), data


def messages_of(data, ctype):
    """Every JSON-RPC message of a JSON or SSE answer, parsed strictly: a
    ValueError names a NaN or an Infinity."""
    if "text/event-stream" in (ctype or ""):
        return [hj.strict_loads(line[6:]) for line in data.splitlines()
                if line.startswith("data: ") and line[6:].strip()]
    return [hj.strict_loads(data)] if data.strip() else []


def open_session(port):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": VERSION, "capabilities": {},
                                  "clientInfo": {"name": "test_json_input_http",
                                                 "version": "1"}}})
    _, hd, _ = post(port, init)
    sid = hd.get("Mcp-Session-Id")
    post(port, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), sid)
    return sid


def run_cases(kind, port, sid, accept):
    for name, line, want in hj.ALL_CASES:
        status, hd, data = post(port, line, sid, accept)
        try:
            msgs = messages_of(data, hd.get("Content-Type"))
            why = hj.verdict(msgs[-1] if msgs else None, want)
        except ValueError as e:
            why = f"not strict JSON ({e}): {data[:200]}"
        if not why and want[0] == "error" and want[2] is None and status != 400:
            why = f"a refusal under a null id with status {status}"
        check(f"{kind}: {name}", why is None, f"{status} {why}")


def in_a_session():
    srv, port = start_server()
    sid = open_session(port)
    check("a session opens", bool(sid), sid)
    run_cases("session JSON", port, sid, "application/json")
    run_cases("session SSE", port, sid, "application/json, text/event-stream")
    stop_server(srv, "the session server exits in order")


def nul_initialize_opens_no_session():
    """"initialize\u0000x" is not initialize: no session is opened for it
    (a real initialize, sent next, is)."""
    srv, port = start_server()
    init = ('{"jsonrpc":"2.0","id":1,"method":"initialize%s","params":{"protocolVersion":'
            '"%s","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
    status, hd, data = post(port, init % (hj.NUL, VERSION))
    check("initialize with NUL: no session", "Mcp-Session-Id" not in hd and status == 400,
          f"{status} {hd.get('Mcp-Session-Id')} {data[:200]}")
    status, hd, data = post(port, init % ("", VERSION))
    check("a real initialize: a session", bool(hd.get("Mcp-Session-Id")) and status == 200,
          f"{status} {data[:200]}")
    stop_server(srv, "the server exits in order after the initializes")


def stateless():
    srv, port = start_server("--stateless")
    run_cases("stateless", port, None, "application/json, text/event-stream")
    stop_server(srv, "the stateless server exits in order")


def a_lower_bound_is_honoured():
    """mcp_server_set_max_values reaches the HTTP parse: 51 values past a
    bound of 50 are a 400 naming 50."""
    srv, port = start_server("--stateless", "--max-values", "50")
    status, hd, data = post(port, hj.values_line(1, hj.most_of("0", 50)), None,
                            "application/json")
    m = (messages_of(data, hd.get("Content-Type")) or [None])[-1]
    check("--max-values 50: 50 values are served", hj.verdict(m, ("result", 1, hj.text_is("x")))
          is None, f"{status} {data[:200]}")
    status, hd, data = post(port, hj.values_line(2, hj.most_of("0", 50) + 1), None,
                            "application/json")
    m = (messages_of(data, hd.get("Content-Type")) or [None])[-1]
    check("--max-values 50: 51 values are a 400 naming 50", status == 400 and hj.verdict(
        m, ("error", -32600, None, "more than 50 JSON values")) is None,
        f"{status} {data[:200]}")
    stop_server(srv, "the bounded server exits in order")


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        return tap.skip_all("set MCP_EVERYTHING to the fixture binary")
    POINTS.guard(in_a_session)
    POINTS.guard(nul_initialize_opens_no_session)
    POINTS.guard(stateless)
    POINTS.guard(a_lower_bound_is_honoured)
    return POINTS.finish()


if __name__ == "__main__":
    sys.exit(main())
