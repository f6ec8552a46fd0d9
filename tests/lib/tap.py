#!/usr/bin/env python3
"""tap.py - the one runner of the Python suites: every scenario (or every
check) is one TAP test point, so `make check` counts scenarios and its
test-suite.log names the one that failed.

Two ways to report, one output format (TAP version 12, what Automake's
tap-driver.sh reads):

  run(scenarios, argv, ...)   a list of scenario functions: each one is a
                              test point named after the function, the plan
                              ("1..N") comes first.  A scenario fails by
                              raising Fail (its message is the diagnostic),
                              or any other exception (its traceback is);
                              it skips itself by raising Skip.
  Points()                    for suites written as a sequence of checks
                              (tests/http/test_http.py, ...): each check()
                              is a test point, the plan comes last
                              (finish()).  guard() runs a section so that an
                              exception in it is one failed point, not the
                              end of the file.

What each verdict looks like:

  ok 3 - name                     passed
  not ok 4 - name                 failed; "# " lines after it say why
  ok 5 - name # SKIP why          could not run here
  not ok 6 - name # TODO bug      failed, as EXPECTED_FAILURES says it does
                                  (Automake counts it XFAIL)
  ok 7 - name # TODO bug          an expected failure that passed: Automake
                                  counts it XPASS, which fails make check;
                                  printed only with ADV_STRICT_XFAIL=1 (by
                                  default it is a plain "ok" with a
                                  diagnostic asking to take it off the list)
  1..0 # SKIP why                 the whole file cannot run (no binary, ...)

Exit status.  Run by hand (or by a script such as tests/auth/run.sh or
tests/scenarios/run-valgrind.sh): 0 when nothing failed, 1 otherwise, 77
for a file that skipped as a whole.  Under the TAP driver (make check sets
MCP_TAP_DRIVER=1) the verdicts travel in the TAP lines, so the exit status
is 0 whatever they say: a non-zero one then means the script itself went
wrong (a crash outside any scenario), which the driver reports as an ERROR
of its own.

Standard library only.
"""
import os
import sys
import time
import traceback

UNDER_DRIVER = os.environ.get("MCP_TAP_DRIVER", "") not in ("", "0")
STRICT_XFAIL = os.environ.get("ADV_STRICT_XFAIL", "") not in ("", "0")


class Fail(Exception):
    """An expectation of a scenario not met: its message is the reason."""


class Skip(Exception):
    """Raised by a scenario that cannot run here: its message says why."""


def _out(text):
    print(text, flush=True)


def diag(text):
    """Prints `text` as TAP diagnostics ("# " before every line)."""
    for ln in str(text).splitlines() or [""]:
        _out(f"# {ln}".rstrip())


def _desc(name):
    """A test point's description on one line, with no character the driver
    could read as a directive or a test number."""
    text = " ".join(str(name).split())
    return text.replace("\\", "\\\\").replace("#", "\\#")


def _status(failed):
    if UNDER_DRIVER:
        return 0
    return 1 if failed else 0


def skip_all(reason):
    """The whole file cannot run here: prints the skip plan and returns the
    exit status to leave with (77 by hand, 0 under the driver)."""
    _out(f"1..0 # SKIP {' '.join(str(reason).split())}")
    return 0 if UNDER_DRIVER else 77


def _first_line(text):
    return (str(text).splitlines() or [""])[0]


class _Counter:
    def __init__(self):
        self.n = 0
        self.passed = self.failed = self.skipped = self.xfail = self.xpass = 0

    def point(self, ok, name, directive="", why=""):
        """Prints one test point; `why` (any text) follows as diagnostics."""
        self.n += 1
        line = f"{'ok' if ok else 'not ok'} {self.n} - {_desc(name)}"
        if directive:
            line += f" # {directive}"
        _out(line)
        if why:
            diag(why)
        return ok

    def summary(self, seconds=None):
        text = (f"{self.passed} passed, {self.failed} failed, {self.xfail} expected failures, "
                f"{self.xpass} unexpected passes, {self.skipped} skipped")
        if seconds is not None:
            text += f" in {seconds:.1f} s"
        diag(text)


# ---- scenario lists ------------------------------------------------------------

def run(scenarios, argv, expected_failures=None, after=None, header=None, skip_reason=None):
    """Runs the scenarios named in argv (all by default) as TAP test points.

    scenarios          functions, or (function, repeat) pairs: a repeated
                       scenario is one point that fails at its first failed run
    argv               [--list] | [--repeat N] [NAME...]
    expected_failures  name -> the bug it exposes: its failure is "# TODO"
    after(ok)          called after every run of a scenario: ok True to check
                       what it left (it may raise Fail), False to only clean up
    header             a diagnostic printed before the plan
    skip_reason        not None: the whole file skips with this reason

    Returns the exit status (see the top of the file)."""
    expected_failures = expected_failures or {}
    entries = [s if isinstance(s, tuple) else (s, 1) for s in scenarios]
    if argv[:1] == ["--list"]:
        for f, _ in entries:
            print(f.__name__)
        return 0
    if skip_reason is not None:
        return skip_all(skip_reason)
    repeat = None
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    names = {f.__name__ for f, _ in entries}
    unknown = [a for a in argv if a not in names]
    if unknown:
        print(f"Bail out! unknown scenario(s): {', '.join(unknown)}", flush=True)
        return 2
    chosen = [(f, repeat or n) for f, n in entries if not argv or f.__name__ in argv]
    if header:
        diag(header)
    _out(f"1..{len(chosen)}")
    c = _Counter()
    t_all = time.monotonic()
    for f, times in chosen:
        name = f.__name__ + (f" x{times}" if times > 1 else "")
        t0 = time.monotonic()
        err = skipped = None
        for i in range(times):
            try:
                f()
                if after:
                    after(True)
            except Skip as e:
                skipped = str(e) or "skipped"
            except Fail as e:
                err = str(e) or "failed"
            except Exception:  # a scenario bug or a protocol surprise: a failure
                err = traceback.format_exc()
            if err or skipped:
                if after:
                    try:
                        after(False)
                    except Exception:
                        pass
                if err and times > 1:
                    err = f"(run {i + 1} of {times}) {err}"
                break
        seconds = time.monotonic() - t0
        took = f"{f.__name__}: {seconds:.1f} s"
        if skipped:
            c.skipped += 1
            c.point(True, name, f"SKIP {_first_line(skipped)}", took)
        elif f.__name__ in expected_failures:
            bug = _first_line(expected_failures[f.__name__])
            if err:
                c.xfail += 1
                c.point(False, name, f"TODO {bug}", f"{took}\n{err}")
            elif STRICT_XFAIL:
                c.xpass += 1
                c.point(True, name, f"TODO {bug}",
                        f"{took}\nlisted in EXPECTED_FAILURES but passed: take it off the list")
            else:
                c.passed += 1
                c.point(True, name, "",
                        f"{took}\nXPASS: listed in EXPECTED_FAILURES ({bug}) but passed: take "
                        "it off the list (ADV_STRICT_XFAIL=1 makes this a failure)")
        elif err:
            c.failed += 1
            c.point(False, name, "", f"{took}\n{err}")
        else:
            c.passed += 1
            c.point(True, name, "", took if seconds >= 1.0 else "")
    c.summary(time.monotonic() - t_all)
    return _status(c.failed or (STRICT_XFAIL and c.xpass))


# ---- sequences of checks ----------------------------------------------------------

class Points:
    """Test points reported one check at a time; the plan comes last."""

    def __init__(self):
        self._c = _Counter()
        self.failures = []
        self._t0 = time.monotonic()

    @property
    def passed(self):
        return self._c.passed

    def check(self, name, cond, detail=""):
        """One test point: passes when `cond` is true; `detail` is printed
        as its diagnostic when it fails.  Returns bool(cond)."""
        if cond:
            self._c.passed += 1
            return self._c.point(True, name)
        self._c.failed += 1
        self.failures.append(name)
        return self._c.point(False, name, "", str(detail)[:2000] if detail != "" else "")

    def skip(self, name, reason):
        self._c.skipped += 1
        self._c.point(True, name, f"SKIP {' '.join(str(reason).split())}")

    def guard(self, fn, *args, name=None, **kwargs):
        """Runs one section of checks; an exception escaping it is one failed
        point (named after the section) instead of the end of the file.
        Returns what fn returned, or None after an exception."""
        try:
            return fn(*args, **kwargs)
        except Exception:
            label = name or getattr(fn, "__name__", "section")
            self.check(f"{label} ran to its end", False, traceback.format_exc())
            return None

    def finish(self):
        """Prints the plan and the summary; returns the exit status."""
        self._c.summary(time.monotonic() - self._t0)
        _out(f"1..{self._c.n}")
        return _status(self._c.failed)
