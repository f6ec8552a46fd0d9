# Adversarial scenarios, load and lifecycle soak (issue 5): the real
# mcp-everything over pipes and sockets, driven through the bundled harness
# (tests/stdio/harness.py) by tests/scenarios/advlib.py.  Loop counts and
# time bounds scale with the build kind (MCP_ADV_SANITIZER below; ADV_SCALE
# and ADV_TIME_SCALE override).  See tests/scenarios/README.md.

ADV_PY_TESTS = tests/scenarios/test_adv_close.py tests/scenarios/test_adv_cancel.py \
	tests/scenarios/test_adv_input.py tests/scenarios/test_adv_load.py \
	tests/scenarios/test_adv_model.py
TESTS += $(ADV_PY_TESTS)
# Streamable HTTP at scale: sessions and streams without threads,
# fairness, limits, the HTTP defects by class (issue "Remote MCP at scale").
if HAVE_MHD
TESTS += tests/scenarios/test_adv_soak_http.py tests/scenarios/test_adv_http_scale.py
endif
# Tasks (both eras), trace context and MCP Apps, over pipes and HTTP.
if HAVE_MHD
TESTS += tests/scenarios/test_adv_tasks.py
endif
EXTRA_DIST += $(ADV_PY_TESTS) tests/scenarios/test_adv_soak_http.py \
	tests/scenarios/test_adv_http_scale.py tests/scenarios/test_adv_tasks.py \
	tests/scenarios/advlib.py tests/scenarios/run-valgrind.sh tests/scenarios/README.md

# 1,000 whole servers created, run in memory and freed in one process:
# descriptors, threads and RSS back to the baseline (public API only).
check_PROGRAMS += tests/scenarios/soak_memory
TESTS += tests/scenarios/soak_memory
tests_scenarios_soak_memory_SOURCES = tests/scenarios/soak_memory.c
tests_scenarios_soak_memory_LDADD = libmcp.la $(JSONC_LIBS) $(PTHREAD_LIBS)

# The build kind, so sanitized runs scale their loops down.
AM_TESTS_ENVIRONMENT += MCP_ADV_SANITIZER='$(SANITIZER_KIND)'; export MCP_ADV_SANITIZER;

# A representative subset of the scenarios with the server under valgrind
# memcheck (zero errors, zero definitely lost), plus the in-memory soak.
if HAVE_MHD
ADV_VALGRIND_HTTP = yes
else
ADV_VALGRIND_HTTP = no
endif
.PHONY += check-valgrind-scenarios
check-valgrind-scenarios: examples/mcp-everything tests/scenarios/soak_memory
	$(SHELL) $(srcdir)/tests/scenarios/run-valgrind.sh '$(abs_top_builddir)' \
	  '$(abs_top_srcdir)' $(ADV_VALGRIND_HTTP)
CLEAN_LOCAL_DIRS += tests/scenarios/valgrind
