# ---- scale-out: three mcp-everything processes behind a real nginx ---------
# Included from the top-level Makefile.am (paths are relative to the top).
# `make check-nginx`: tests/nginx/run.sh starts three mcp-everything --http
# backends and nginx (Debian package `nginx`, run as the current user from
# $(top_builddir)/nginx-check with its own config, logs and temp folders),
# once stateless (round-robin) and once with sessions (affinity on the
# Mcp-Session-Id nginx tags with the backend), and runs the SDK client
# (tests/interop/http-client.mjs) and the official conformance suite through
# it.  Node, the SDK and the suite come from the caches of check-interop and
# check-conformance (.interop-node, .conformance-node).  When nginx or npm is
# not available run.sh exits 77; the target then reports SKIP and succeeds.
EXTRA_DIST += tests/nginx/run.sh tests/nginx/expected-stateless.yml \
	tests/nginx/expected-2026-07-28-scaled.yml

.PHONY += check-nginx
check-nginx: examples/mcp-everything$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/nginx/run.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-nginx"; exit 0; fi; \
	exit $$rc

# The scratch folder in the build tree, for the top-level clean-local.
NGINX_CLEAN = nginx-check
