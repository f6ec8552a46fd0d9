#!/usr/bin/env python3
"""soak-faults.py - the soak under faults of issue 28, item 4: one build,
a mixed load over stdio and Streamable HTTP for SOAK_SECS (default one
hour), with faults injected all along, then the checks.  Not part of
make check: run it by hand (`make soak`) and record what it prints in
tests/soak/REPORT.md.

The load, all at once:

  stdio    one process after another, each a peer (this script with
           --stdio-peer, a process of its own) that spawns mcp-everything
           --trace --stats, initializes, sends 40 requests (echo with
           payloads up to 256 KiB, sleep, progress, roots answered by the
           peer) and cancels some sleeps.  Each round draws a fault:
             clean    the peer reads everything, then closes stdin;
             stopped  the peer is SIGSTOPped for 1-4 s mid-run, then
                      continued;
             slow     the peer reads 512 bytes at a time with a pause;
             killed   the peer is SIGKILLed mid-run: the orphaned server
                      must see the end of input and exit by itself.
  HTTP     one mcp-everything --http --trace --stats process for the whole
           run (with --store redis://... when redis-server is installed):
             2 session workers: initialize, 5-20 calls (JSON or SSE
               answers), DELETE or abandon; 1 call in 10 has its
               connection cut before the answer;
             1 task worker: 2025-11-25 task-augmented sleeps, polled
               with tasks/get to their end, then tasks/result;
             1 slow reader: a progress call with 2,000 notifications on
               an SSE answer read 256 bytes every 50 ms, or dropped;
             1 stopped peer: a process of its own (--http-peer) doing
               sessions, SIGSTOPped for 5-15 s every minute or so, and
               now and then SIGKILLed and started again;
             the store restarter: redis-server SIGKILLed every 5 minutes
               and started again 3 s later on the same port and data
               (appendonly, fsync always).
  sampler  the HTTP server's RSS, descriptors and threads every 10 s.

The checks:
  - every request of a peer that was not killed has exactly one answer (a
    cancelled one at most one); a killed peer's record has no doubles;
  - every stdio server exits by itself (status 0 for a live peer), with
    no sanitizer report, every "started" matched by its "cleanup" with a
    known reason, and empty tables in its --stats line;
  - every HTTP request gets exactly one answer (or an HTTP error with a
    JSON-RPC body, which is counted, while the store is down);
  - every task that was acknowledged reaches a terminal status within
    120 s, seen by tasks/get, store restarts notwithstanding, and
    tasks/result then answers;
  - at SIGTERM the HTTP server exits 0, with empty tables, every handler
    cleaned up, and no sanitizer report;
  - RSS stays flat: the median of the last quarter of the samples is
    within 15% (and 8 MiB) of the median of the second quarter.

Usage: MCP_EVERYTHING=BUILD/examples/mcp-everything tests/soak/soak-faults.py
       [--secs N] [--out DIR]
Standard library only.
"""
import argparse
import http.client
import itertools
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "scenarios"))
from advlib import proc_state, proc_status  # noqa: E402
import invariants  # noqa: E402
from httpsrv import free_port, start_server, stop_server, wait_port  # noqa: E402

BIN = os.environ.get("MCP_EVERYTHING", "")
LATEST = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
TERMINAL = ("completed", "failed", "cancelled")


class Failure(Exception):
    pass


# ---- the stdio peer (a process of its own) --------------------------------------

def stdio_peer(outdir, seed, slow):
    """Spawns the server, drives it, records every message it reads in
    outdir/answers (one JSON line each, flushed), and the server's exit
    status in outdir/exit.  Exits 0 when every request it sent got its
    answer in time."""
    rnd = random.Random(seed)
    err = open(os.path.join(outdir, "err"), "wb")
    srv = subprocess.Popen([BIN, "--trace", "--stats"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=err)
    with open(os.path.join(outdir, "pid.new"), "w") as f:
        f.write(str(srv.pid))
    os.rename(os.path.join(outdir, "pid.new"), os.path.join(outdir, "pid"))
    log = open(os.path.join(outdir, "answers"), "w")
    lock = threading.Lock()
    answered = {}

    def send(m):
        with lock:
            srv.stdin.write(json.dumps(m).encode() + b"\n")
            srv.stdin.flush()

    def reader():
        buf = b""
        while True:
            chunk = srv.stdout.read1(512) if slow else srv.stdout.readline()
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                ln, buf = buf.split(b"\n", 1)
                m = json.loads(ln)
                log.write(ln.decode() + "\n")
                log.flush()
                if "method" in m and "id" in m:   # roots/list: answer it
                    send({"jsonrpc": "2.0", "id": m["id"],
                          "result": {"roots": [{"uri": "file:///soak", "name": "soak"}]}})
                elif "id" in m and "method" not in m:
                    answered[json.dumps(m["id"])] = True
            if slow:
                time.sleep(0.002)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
          "params": {"protocolVersion": LATEST, "capabilities": {"roots": {}},
                     "clientInfo": {"name": "soak", "version": "1"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    want = ["init"]
    for i in range(40):
        k = rnd.random()
        if k < 0.4:
            call = ("echo", {"text": f"e{i}", "pad_bytes": rnd.choice((0, 100, 4096, 262144))})
        elif k < 0.7:
            call = ("sleep", {"ms": rnd.randint(10, 400)})
        elif k < 0.9:
            call = ("progress", {"steps": rnd.randint(1, 20), "interval_ms": 5, "log": True})
        else:
            call = ("roots", {"times": 2})
        params = {"name": call[0], "arguments": call[1]}
        if call[0] == "progress":
            params["_meta"] = {"progressToken": f"p{i}"}
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        if call[0] == "sleep" and rnd.random() < 0.3:
            time.sleep(rnd.random() * 0.02)
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": i, "reason": "soak"}})
            with open(os.path.join(outdir, "cancelled"), "a") as f:
                f.write(f"{i}\n")
        else:
            want.append(i)
        time.sleep(rnd.random() * 0.01)
    end = time.monotonic() + 60
    while time.monotonic() < end and not all(json.dumps(w) in answered for w in want):
        time.sleep(0.02)
    missing = [w for w in want if json.dumps(w) not in answered]
    srv.stdin.close()
    code = srv.wait(60)
    t.join(10)
    with open(os.path.join(outdir, "exit"), "w") as f:
        f.write(str(code))
    if missing:
        print(f"no answer to {missing}", file=sys.stderr)
        return 1
    return 0


def read_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def check_stdio_server(outdir, fault, pid):
    """The checks on one stdio round's server (see the top)."""
    # The server outlives a killed peer until it has seen the end of input.
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if proc_state(pid) in (None, "Z", "X"):
            break
        time.sleep(0.05)
    else:
        raise Failure(f"stdio server {pid} still running 30 s after its peer ({fault}) ended")
    err = read_lines(os.path.join(outdir, "err"))
    bad = invariants.sanitizer_lines(err)
    if bad:
        raise Failure(f"sanitizer report: {bad[:5]}")
    invariants.check_trace(err, 0)
    stats = invariants.stats_line(err)
    if stats is None:
        raise Failure(f"no stats line (the server did not exit in order): {err[-5:]}")
    lines = read_lines(os.path.join(outdir, "answers"))
    try:
        with open(os.path.join(outdir, "answers"), "rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    except OSError:
        torn = False   # empty or missing: nothing recorded
    if torn and fault == "killed":
        lines = lines[:-1]   # the peer died writing its record: not the server's doing
    msgs = [json.loads(ln) for ln in lines if ln]
    seen = {}
    for m in msgs:
        if "id" in m and "method" not in m:
            k = json.dumps(m["id"])
            seen[k] = seen.get(k, 0) + 1
    doubled = [k for k, n in seen.items() if n > 1]
    if doubled:
        raise Failure(f"answered twice: {doubled}")
    if fault == "killed":
        invariants.check_stats(stats, 0, None)
        return
    invariants.check_stats(stats, 0, sum(seen.values()))
    code = read_lines(os.path.join(outdir, "exit"))
    if code != ["0"]:
        raise Failure(f"stdio server exit status {code}")


# ---- HTTP helpers -------------------------------------------------------------

def post(port, body, sid=None, accept=ACCEPT_BOTH, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json", "Accept": accept}
    if sid:
        h["Mcp-Session-Id"] = sid
    try:
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data = r.read().decode(errors="replace")
        return r.status, r.getheader("Mcp-Session-Id"), r.getheader("Content-Type") or "", data
    finally:
        c.close()


def messages(ctype, data):
    if not data.strip():
        return []
    if ctype.startswith("text/event-stream"):
        return [json.loads(ln[6:]) for ln in data.splitlines()
                if ln.startswith("data: ") and ln[6:].strip()]
    m = json.loads(data)
    return m if isinstance(m, list) else [m]


class Tally:
    """Counters shared by the workers, and the first failures."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n = {}
        self.failures = []

    def add(self, key, k=1):
        with self.lock:
            self.n[key] = self.n.get(key, 0) + k

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
            if len(self.failures) <= 20:
                print(f"soak: FAILURE: {what}", file=sys.stderr, flush=True)


IDS = itertools.count(1)


def one_answer(port, sid, method, params, tally, accept=ACCEPT_BOTH, store_down=None):
    """A request that must get exactly one answer: the answer, or None
    after an HTTP error with a JSON-RPC body (counted)."""
    rid = next(IDS)
    try:
        status, _, ctype, data = post(port, {"jsonrpc": "2.0", "id": rid, "method": method,
                                             "params": params}, sid, accept)
    except (OSError, http.client.HTTPException) as e:
        tally.fail(f"{method} {rid}: the connection failed: {e!r}")
        return None
    try:
        msgs = messages(ctype, data)
    except ValueError:
        tally.fail(f"{method} {rid}: HTTP {status}, a body that is not JSON: {data[:200]!r}")
        return None
    answers = [m for m in msgs if isinstance(m, dict) and "method" not in m and "id" in m]
    if status != 200:
        if len(answers) != 1 or "error" not in answers[0]:
            tally.fail(f"{method} {rid}: HTTP {status} without one JSON-RPC error: {data[:200]!r}")
        tally.add(f"http {status}")
        return None
    mine = [m for m in answers if m["id"] == rid]
    if len(mine) != 1 or len(answers) != 1:
        tally.fail(f"{method} {rid}: {len(mine)} answers of {len(answers)}: {data[:300]!r}")
        return None
    tally.add("http answers")
    if "error" in mine[0]:
        tally.add(f"error {mine[0]['error'].get('code')}")
    return mine[0]


def open_session(port, tally, caps=None):
    rid = next(IDS)
    try:
        status, sid, ctype, data = post(port, {
            "jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": caps or {},
                       "clientInfo": {"name": "soak", "version": "1"}}}, accept="application/json")
        if status != 200 or not sid:
            tally.add(f"initialize HTTP {status}")
            if status == 200:
                tally.fail(f"initialize without a session: {data[:200]!r}")
            return None
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    except (OSError, http.client.HTTPException) as e:
        tally.fail(f"initialize: {e!r}")
        return None
    tally.add("sessions")
    return sid


def delete(port, sid):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
        c.getresponse().read()
    finally:
        c.close()


def cut_call(port, sid, tally):
    """A sleep whose connection is closed before the answer."""
    body = json.dumps({"jsonrpc": "2.0", "id": next(IDS), "method": "tools/call",
                       "params": {"name": "sleep", "arguments": {"ms": 2000}}}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: " +
              sid.encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
              b"\r\n\r\n" + body)
    time.sleep(random.random() * 0.2)
    s.close()
    tally.add("connections cut")


def session_worker(port, stop, tally, rnd):
    while not stop.is_set():
        sid = open_session(port, tally)
        if not sid:
            time.sleep(0.2)
            continue
        for _ in range(rnd.randint(5, 20)):
            k = rnd.random()
            accept = ACCEPT_BOTH if rnd.random() < 0.5 else "application/json"
            if k < 0.1:
                cut_call(port, sid, tally)
            elif k < 0.6:
                one_answer(port, sid, "tools/call",
                           {"name": "echo", "arguments": {"text": "s", "pad_bytes":
                                                          rnd.choice((0, 1000, 65536))}},
                           tally, accept)
            elif k < 0.8:
                one_answer(port, sid, "tools/call",
                           {"name": "sleep", "arguments": {"ms": rnd.randint(1, 100)}},
                           tally, accept)
            elif k < 0.9:
                one_answer(port, sid, "tools/list", {}, tally, accept)
            else:
                one_answer(port, sid, "tools/call",
                           {"name": "progress", "arguments": {"steps": 5, "interval_ms": 2},
                            "_meta": {"progressToken": "p"}}, tally, ACCEPT_BOTH)
        if rnd.random() < 0.9:
            try:
                delete(port, sid)
            except (OSError, http.client.HTTPException) as e:
                tally.fail(f"DELETE: {e!r}")
        else:
            tally.add("sessions abandoned")


def task_worker(port, stop, tally, rnd, acked):
    """Task-augmented sleeps; every acknowledged task id goes to `acked`."""
    while not stop.is_set():
        sid = open_session(port, tally, {"tasks": {}})
        if not sid:
            time.sleep(0.5)
            continue
        for _ in range(rnd.randint(3, 10)):
            if stop.is_set():
                break
            a = one_answer(port, sid, "tools/call",
                           {"name": "sleep", "arguments": {"ms": rnd.randint(50, 3000)},
                            "task": {"ttl": 3600000}}, tally)
            if not a or "error" in a:
                continue
            tid = a["result"]["task"]["taskId"]
            acked.append((sid, tid))
            tally.add("tasks acknowledged")
            end = time.monotonic() + 120
            status = None
            while time.monotonic() < end and status not in TERMINAL:
                time.sleep(0.1)
                g = one_answer(port, sid, "tasks/get", {"taskId": tid}, tally)
                if g and "result" in g:
                    status = g["result"].get("status")
            if status not in TERMINAL:
                tally.fail(f"task {tid} acknowledged and not ended after 120 s: {status}")
                continue
            tally.add(f"tasks {status}")
            one_answer(port, sid, "tasks/result", {"taskId": tid}, tally)


def slow_reader(port, stop, tally, rnd):
    """A progress call with 2,000 notifications on an SSE answer, read a
    little at a time, sometimes dropped half-way."""
    while not stop.is_set():
        sid = open_session(port, tally)
        if not sid:
            time.sleep(0.5)
            continue
        body = json.dumps({"jsonrpc": "2.0", "id": next(IDS), "method": "tools/call",
                           "params": {"name": "progress",
                                      "arguments": {"steps": 2000, "interval_ms": 0, "log": True},
                                      "_meta": {"progressToken": "slow"}}}).encode()
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: " +
                  sid.encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
                  b"\r\n\r\n" + body)
        drop = rnd.random() < 0.3
        got = b""
        t0 = time.monotonic()
        try:
            while not stop.is_set():
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
                if drop and time.monotonic() - t0 > 2:
                    break
                time.sleep(0.05)
        except OSError as e:
            tally.fail(f"slow reader: {e!r}")
        s.close()
        if drop:
            tally.add("slow reads dropped")
        elif not stop.is_set() and b'"result"' not in got[-2048:]:
            tally.fail(f"slow reader: the stream ended without the answer: {got[-300:]!r}")
        else:
            tally.add("slow reads")
        try:
            delete(port, sid)
        except (OSError, http.client.HTTPException):
            pass


def http_peer(port, secs):
    """The process that gets SIGSTOPped: sessions with echoes, each answer
    checked; exits 1 on a lost or doubled answer."""
    global IDS
    IDS = itertools.count(os.getpid() * 1000000)   # apart from the soak's own ids
    tally = Tally()
    stop = threading.Event()
    threading.Timer(secs, stop.set).start()
    session_worker(port, stop, tally, random.Random(os.getpid()))
    return 1 if tally.failures else 0


# ---- the store --------------------------------------------------------------------

class Redis:
    def __init__(self, workdir):
        self.port = free_port()
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.p = None
        self.start()

    def start(self):
        self.p = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--dir", self.dir, "--appendonly", "yes",
                                   "--appendfsync", "always", "--save", ""],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port("127.0.0.1", self.port, 10, self.p)

    def kill(self):
        self.p.kill()
        self.p.wait()

    def restarter(self, stop, tally, every):
        while not stop.wait(every):
            self.kill()
            tally.add("store restarts")
            time.sleep(3)
            self.start()


# ---- the run ------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=int(os.environ.get("SOAK_SECS", "3600")))
    ap.add_argument("--out", default=None)
    ap.add_argument("--stdio-peer", nargs=3, metavar=("DIR", "SEED", "SLOW"))
    ap.add_argument("--http-peer", nargs=2, type=int, metavar=("PORT", "SECS"))
    a = ap.parse_args()
    if a.stdio_peer:
        return stdio_peer(a.stdio_peer[0], int(a.stdio_peer[1]), a.stdio_peer[2] == "1")
    if a.http_peer:
        return http_peer(*a.http_peer)
    if not BIN or not os.access(BIN, os.X_OK):
        print("soak: set MCP_EVERYTHING to the mcp-everything binary", file=sys.stderr)
        return 2
    work = a.out or tempfile.mkdtemp(prefix="soak-")
    os.makedirs(work, exist_ok=True)
    tally = Tally()
    stop = threading.Event()
    t_start = time.monotonic()
    deadline = t_start + a.secs

    redis = Redis(work) if shutil.which("redis-server") else None
    store = [f"--store", f"redis://127.0.0.1:{redis.port}/0"] if redis else []
    herr = open(os.path.join(work, "http-err"), "wb")
    hsrv, port = start_server(BIN, "--trace", "--stats", "--session-idle-ms", "20000",
                              "--grace-ms", "5000", *store, stderr=herr)
    print(f"soak: {a.secs} s, work {work}, HTTP pid {hsrv.pid} port {port}, "
          f"store {store[1] if store else 'memory'}", flush=True)

    samples = []

    def sampler():
        while not stop.is_set():
            samples.append((round(time.monotonic() - t_start), proc_status(hsrv.pid, "VmRSS"),
                            len(os.listdir(f"/proc/{hsrv.pid}/fd")),
                            proc_status(hsrv.pid, "Threads")))
            stop.wait(10)

    def stdio_rounds():
        rnd = random.Random(1)
        n = 0
        while not stop.is_set():
            n += 1
            fault = rnd.choice(("clean", "stopped", "slow", "killed"))
            d = os.path.join(work, "stdio", str(n % 50))
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--stdio-peer",
                                     d, str(n), "1" if fault == "slow" else "0"],
                                    stderr=open(os.path.join(d, "peer-err"), "wb"))
            try:
                # The fault hits a running pair: the peer has started its
                # server (a loaded machine can take seconds to get there).
                end = time.monotonic() + 30
                while not read_lines(os.path.join(d, "pid")) and peer.poll() is None \
                        and time.monotonic() < end:
                    time.sleep(0.01)
                if fault == "stopped":
                    time.sleep(rnd.random() * 1.5)
                    peer.send_signal(signal.SIGSTOP)
                    time.sleep(1 + rnd.random() * 3)
                    peer.send_signal(signal.SIGCONT)
                if fault == "killed":
                    time.sleep(0.3 + rnd.random() * 2)
                    peer.kill()
                code = peer.wait(180)
                pid = int(read_lines(os.path.join(d, "pid"))[0])
                if fault != "killed" or code == 0:
                    if code != 0:
                        raise Failure(f"peer exit {code}: {read_lines(os.path.join(d, 'peer-err'))[-3:]}")
                    check_stdio_server(d, "clean", pid)
                else:
                    check_stdio_server(d, "killed", pid)
                tally.add(f"stdio {fault}")
            except (Failure, subprocess.TimeoutExpired, IndexError, ValueError) as e:
                tally.fail(f"stdio round {n} ({fault}, {d}): {e}")
                shutil.copytree(d, os.path.join(work, f"failed-stdio-{n}"), dirs_exist_ok=True)
            except invariants.Fail as e:
                tally.fail(f"stdio round {n} ({fault}, {d}): {e}")
                shutil.copytree(d, os.path.join(work, f"failed-stdio-{n}"), dirs_exist_ok=True)

    def stopped_peer():
        rnd = random.Random(2)
        while not stop.is_set():
            left = max(5, int(deadline - time.monotonic()))
            peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--http-peer",
                                     str(port), str(min(left, 600))])
            killed = False
            while peer.poll() is None and not stop.is_set():
                if stop.wait(30 + rnd.random() * 60):
                    break
                peer.send_signal(signal.SIGSTOP)
                tally.add("HTTP peer stopped")
                time.sleep(5 + rnd.random() * 10)
                if rnd.random() < 0.3:
                    peer.kill()
                    killed = True
                    tally.add("HTTP peer killed")
                    break
                peer.send_signal(signal.SIGCONT)
            if stop.is_set() and peer.poll() is None:
                peer.send_signal(signal.SIGCONT)
            code = peer.wait(120)
            if not killed and code != 0:
                tally.fail(f"the stopped HTTP peer exited {code}")

    acked = []   # (session, taskId) of every acknowledged task
    rnds = [random.Random(10 + i) for i in range(6)]
    workers = [threading.Thread(target=sampler),
               threading.Thread(target=stdio_rounds),
               threading.Thread(target=session_worker, args=(port, stop, tally, rnds[0])),
               threading.Thread(target=session_worker, args=(port, stop, tally, rnds[1])),
               threading.Thread(target=task_worker, args=(port, stop, tally, rnds[2], acked)),
               threading.Thread(target=slow_reader, args=(port, stop, tally, rnds[3])),
               threading.Thread(target=stopped_peer)]
    if redis:
        workers.append(threading.Thread(target=redis.restarter,
                                        args=(stop, tally, min(300, max(20, a.secs // 6)))))
    for w in workers:
        w.start()
    next_report = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(1)
        if time.monotonic() >= next_report:
            next_report += 300
            s = samples[-1] if samples else None
            print(f"soak: t={round(time.monotonic() - t_start)} s rss={s and s[1]} kB "
                  f"fds={s and s[2]} threads={s and s[3]} {dict(sorted(tally.n.items()))}",
                  flush=True)
    stop.set()
    for w in workers:
        w.join(300)

    code, _ = stop_server(hsrv, 30)
    herr.close()
    if redis and redis.p.poll() is None:
        redis.kill()
    if code != 0:
        tally.fail(f"HTTP server exit {code}")
    err = read_lines(os.path.join(work, "http-err"))
    try:
        bad = invariants.sanitizer_lines(err)
        if bad:
            raise invariants.Fail(f"sanitizer report: {bad[:5]}")
        invariants.check_trace(err, 0)
        st = invariants.stats_line(err)
        if st is None:
            raise invariants.Fail("no stats line")
        invariants.check_stats(st, 0, None)
        print(f"soak: HTTP server stats {json.dumps(st)}")
    except invariants.Fail as e:
        tally.fail(f"HTTP server: {e}")

    with open(os.path.join(work, "rss.csv"), "w") as f:
        f.write("seconds,rss_kb,fds,threads\n")
        for s in samples:
            f.write(",".join(str(x) for x in s) + "\n")
    q = len(samples) // 4
    if q >= 2:
        second = statistics.median(s[1] for s in samples[q:2 * q])
        last = statistics.median(s[1] for s in samples[3 * q:])
        print(f"soak: RSS median {second} kB in the second quarter, {last} kB in the last")
        if last > second * 1.15 and last - second > 8192:
            tally.fail(f"RSS grew: {second} kB -> {last} kB")
        print("soak: RSS curve (every 5 min): " + ", ".join(
            f"{s[0] // 60} min {s[1] // 1024} MiB" for s in samples[::30]))
    print(f"soak: counts {json.dumps(dict(sorted(tally.n.items())))}")
    if tally.failures:
        print(f"soak: FAILED, {len(tally.failures)} failures (first: {tally.failures[0]})")
        return 1
    print(f"soak: PASS after {round(time.monotonic() - t_start)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
