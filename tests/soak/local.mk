# The soak under faults (issue 28, item 4): an hour of mixed stdio and HTTP
# load with peers killed, stopped and slow, connections cut and the store
# restarted, then the checks of tests/soak/soak-faults.py.  Not in CI (an
# hour); run by hand and recorded in tests/soak/REPORT.md.  SOAK_SECS
# shortens it.
SOAK_SECS ?= 3600
soak: examples/mcp-everything
	MCP_EVERYTHING=$(abs_top_builddir)/examples/mcp-everything \
		python3 $(srcdir)/tests/soak/soak-faults.py --secs $(SOAK_SECS) \
		--out $(abs_top_builddir)/tests/soak/work
.PHONY: soak
EXTRA_DIST += tests/soak/soak-faults.py tests/soak/REPORT.md
