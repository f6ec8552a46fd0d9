"""httpsrv.py - `mcp-everything --http` for the tests: a free loopback
port, a start that returns once the server accepts connections, and a stop
that asks for the orderly exit (SIGTERM) and says how it went."""
import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time


def free_port(host="127.0.0.1"):
    """A TCP port free on `host` now (the usual bind-and-close: another
    process may take it before the server does, which the start reports)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(binary, *args, stderr=subprocess.PIPE, host="127.0.0.1", with_env_args=False,
                 wait_s=10.0):
    """`binary --http HOST:PORT ARGS...` on a free port: (proc, port) once
    it accepts a connection, or once `wait_s` passed (the caller's first
    request then fails and says so).  With `with_env_args`, the words of
    $MCP_EVERYTHING_ARGS come last (make check-cluster adds its store
    there)."""
    port = free_port(host)
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    extra = shlex.split(os.environ.get("MCP_EVERYTHING_ARGS", "")) if with_env_args else []
    proc = subprocess.Popen([binary, "--http", addr, *args, *extra],
                            stdout=subprocess.DEVNULL, stderr=stderr)
    wait_port(host, port, wait_s, proc)
    return proc, port


def wait_port(host, port, wait_s=10.0, proc=None):
    """Whether `host`:`port` accepts a connection within `wait_s` seconds
    (giving up early when `proc`, the process that should listen, has
    exited)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end and (proc is None or proc.poll() is None):
        try:
            socket.create_connection((host, port), timeout=0.1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class StderrLines:
    """The lines a process writes on its stderr pipe, kept as they come (a
    reader thread), and a wait for one that matches.  `lines` is the list
    itself, read while it grows."""

    def __init__(self, proc):
        self.lines = []
        self.reader = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.reader.start()

    def _read(self, pipe):
        for raw in pipe:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def wait_line(self, pattern, seconds):
        """The first line matching `pattern` (a regex) within `seconds`,
        or None."""
        end = time.monotonic() + seconds
        rx = re.compile(pattern)
        while time.monotonic() < end:
            for line in list(self.lines):
                if rx.search(line):
                    return line
            time.sleep(0.02)
        return None

    def join(self, timeout=5):
        """Waits for the end of the pipe (the process has exited)."""
        self.reader.join(timeout)


def stop_server(proc, timeout=10):
    """SIGTERM, then the exit: (code, stderr text).  The code is "killed"
    when it did not exit within `timeout` seconds; the text is empty when
    stderr was not a pipe."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = "killed"
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return code, err


def clean_exit(code, err):
    """Whether an exit was orderly: status 0 and no sanitizer report."""
    return code == 0 and "Sanitizer" not in err and "runtime error" not in err
