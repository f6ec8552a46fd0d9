#!/usr/bin/env python3
"""test_eof_roots_loop.py - the shutdown race of doc/design.md, looped: two
handlers blocked on unanswered roots/list, then EOF, 200 times over real
pipes (run by make check in the plain, TSan and ASan builds), and the
cancel-racing-completion scenario 5 times (3,000 races).  Two TAP test
points, each failing at its first failed run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_stdio  # noqa: E402  (the scenarios, run through harness.py)
import tap  # noqa: E402

LOOPS = [(test_stdio.eof_two_handlers_blocked_on_roots, 200),
         (test_stdio.cancel_racing_completion, 5)]

if __name__ == "__main__":
    ok = test_stdio.BIN and os.access(test_stdio.BIN, os.X_OK)
    sys.exit(tap.run(LOOPS, sys.argv[1:],
                     skip_reason=None if ok else "set MCP_EVERYTHING to the fixture binary"))
