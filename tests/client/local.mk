# ---- the client against servers not written here ---------------------------------
# Included from the top-level Makefile.am (paths are relative to the top).
#   make check-client              tests/client/run.sh: the reference server
#       (@modelcontextprotocol/server-everything) over stdio and Streamable
#       HTTP, every tool, resource and prompt asserted; the TypeScript SDK
#       server: a cancelled call and a server killed mid-call; the
#       TypeScript SDK's HTTP+SSE server (ts-sse-server.mjs, 2024-11-05):
#       the fallback, the forced transports and tests/client/sse-check
#   make check-client-conformance  tests/client/conformance.sh: the official
#       conformance suite's client scenarios (0.2.0-alpha.12), scored by the
#       suite (--requirements 2026-07-28 and 2025-11-25, the extension
#       scenarios by name) against tests/client/expected-failures.yml
# Node 22 and the packages pinned in tests/client/package.json and
# package-lock.json are installed with npm ci into $(CLIENT_CLEAN) of the
# build tree on first use; without npm or the registry both targets report
# SKIP and succeed.
EXTRA_PROGRAMS += tests/client/reference-check tests/client/conformance-client \
	tests/client/sse-check
tests_client_sse_check_SOURCES = tests/client/sse-check.c
tests_client_sse_check_LDADD = libmcp.la $(JSONC_LIBS)
tests_client_reference_check_SOURCES = tests/client/reference-check.c
tests_client_reference_check_LDADD = libmcp.la $(JSONC_LIBS)
tests_client_conformance_client_SOURCES = tests/client/conformance-client.c \
	tests/client/conformance-auth.c tests/client/conformance-auth.h
tests_client_conformance_client_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS)
tests_client_conformance_client_LDADD = libmcp.la $(JSONC_LIBS) $(CURL_LIBS)
CLEANFILES += tests/client/reference-check$(EXEEXT) tests/client/conformance-client$(EXEEXT) \
	tests/client/sse-check$(EXEEXT)
EXTRA_DIST += tests/client/run.sh tests/client/conformance.sh tests/client/install.sh \
	tests/client/expected-failures.yml \
	tests/client/package.json tests/client/package-lock.json tests/client/ts-server.mjs \
	tests/client/ts-sse-server.mjs

.PHONY += check-client check-client-conformance
check-client: tests/client/reference-check$(EXEEXT) tests/client/sse-check$(EXEEXT) \
		examples/mcp-call$(EXEEXT) \
		examples/mcp-everything$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/client/run.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-client"; exit 0; fi; \
	exit $$rc

check-client-conformance: tests/client/conformance-client$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/client/conformance.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-client-conformance"; exit 0; fi; \
	exit $$rc

CLIENT_CLEAN = .client-node
