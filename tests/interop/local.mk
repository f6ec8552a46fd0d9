# ---- interoperability: the official MCP TypeScript SDK client ---------------
# Included from the top-level Makefile.am (paths are relative to the top).
# `make check-interop`: the SDK's Client + StdioClientTransport spawn
# examples/mcp-everything and exercise it (tests/interop/stdio-client.mjs,
# surface-client.mjs), then its StreamableHTTPClientTransport does the same
# against mcp-everything --http, answering SSE and JSON-only
# (tests/interop/http-client.mjs, also run through nginx by tests/nginx),
# and its SSEClientTransport and the MCP Inspector CLI (--transport sse)
# drive mcp-everything --legacy-sse (tests/interop/sse-client.mjs).
# Node 22 and the SDK are installed by npm into $(top_builddir)/.interop-node
# on first use.  When npm or the registry is not available run.sh exits 77;
# the target then reports SKIP and succeeds, as automake does for a skipped
# test.
EXTRA_DIST += tests/interop/stdio-client.mjs tests/interop/surface-client.mjs \
	tests/interop/http-client.mjs tests/interop/sse-client.mjs tests/interop/run.sh tests/interop/install.sh \
	tests/interop/package.json tests/interop/package-lock.json

.PHONY += check-interop
check-interop: examples/mcp-everything$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/interop/run.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-interop"; exit 0; fi; \
	exit $$rc

# The npm cache folder in the build tree, for the top-level clean-local.
INTEROP_CLEAN = .interop-node
