#!/usr/bin/env python3
"""test_mcp_call_tty.py - mcp-call as a person uses it, in a terminal (tmux):

    mcp-call --stdio 'mcp-everything --trace' call progress '{"steps":20,"interval_ms":100}'

shows a progress bar on the terminal, Ctrl-C (send-keys C-c) cancels the
call, mcp-call exits 130, and the server's trace shows the request's
cleanup as peer_cancelled.  Every wait is for an event on the screen or in
the trace (bounded), never a fixed sleep.  Skipped (77) without tmux.
Prints TAP, one test point per step (tests/lib/tap.py); a step that fails
ends the run.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

if not shutil.which("tmux"):
    sys.exit(tap.skip_all("tmux is not installed"))
everything = os.environ.get("MCP_EVERYTHING")
call = os.environ.get("MCP_CALL")
if not everything or not call:
    sys.exit(tap.skip_all("MCP_EVERYTHING and MCP_CALL are not set"))
POINTS = tap.Points()

tmp = tempfile.mkdtemp(prefix="mcp-call-tty.")
trace = os.path.join(tmp, "trace.txt")
session = "mcpcall%d" % os.getpid()
sock = os.path.join(tmp, "tmux.sock")
tmux = ["tmux", "-S", sock]
command = ("%s --stdio '%s --trace 2>%s' call progress '{\"steps\":20,\"interval_ms\":100}'; "
           "echo EXIT=$?; sleep 60" % (call, everything, trace))


def screen():
    return subprocess.run(tmux + ["capture-pane", "-p", "-t", session],
                          capture_output=True, text=True).stdout


def wait_for(what, test, limit_s=30):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = test()
        if got:
            return got
        time.sleep(0.02)
    POINTS.check(what, False, "the screen:\n%s" % screen())
    subprocess.run(tmux + ["kill-server"])
    sys.exit(POINTS.finish())


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


subprocess.run(tmux + ["new-session", "-d", "-s", session, "-x", "120", "-y", "20", command],
               check=True)
# The bar: "[####----...] 3/20", redrawn in place on standard error.
bar = wait_for("a progress bar appears",
               lambda: re.search(r"\[#+-*\] ([0-9]+)/20", screen()))
POINTS.check("the progress bar is drawn", True)
tap.diag(bar.group(0))
step = int(bar.group(1))
wait_for("the bar moves", lambda: (m := re.search(r"\[#+-*\] ([0-9]+)/20", screen()))
         and int(m.group(1)) > step)
POINTS.check("the bar advances", True)
started = wait_for("the server traced the call's start",
                   lambda: re.search(r"^started (\S+)$", read(trace), re.M))
subprocess.run(tmux + ["send-keys", "-t", session, "C-c"], check=True)
wait_for("mcp-call exits 130 after Ctrl-C", lambda: "EXIT=130" in screen())
POINTS.check("Ctrl-C: mcp-call exited 130", True)
request = started.group(1)
wait_for("the server traced peer_cancelled",
         lambda: re.search(r"^cleanup %s peer_cancelled$" % re.escape(request), read(trace), re.M))
POINTS.check("the server's trace: cleanup %s peer_cancelled" % request, True)
text = screen()
POINTS.check("mcp-call said the call was cancelled",
             "interrupted; the call was cancelled" in text, "the screen:\n%s" % text)
subprocess.run(tmux + ["kill-server"])
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(POINTS.finish())
