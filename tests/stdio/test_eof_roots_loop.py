#!/usr/bin/env python3
"""test_eof_roots_loop.py - the shutdown race of DESIGN.md, looped: two
handlers blocked on unanswered roots/list, then EOF, 200 times over real
pipes (run by make check in the plain, TSan and ASan builds), and the
cancel-racing-completion scenario 5 times (3,000 races)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_stdio  # noqa: E402  (the scenarios, run through harness.py)

if __name__ == "__main__":
    rc = test_stdio.main(["--repeat", "200", "eof_two_handlers_blocked_on_roots"])
    rc |= test_stdio.main(["--repeat", "5", "cancel_racing_completion"])
    sys.exit(rc)
