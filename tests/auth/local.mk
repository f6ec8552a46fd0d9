# ---- authorization: JWT vectors from an independent implementation ---------
# Included from the top-level Makefile.am.  `make check-auth`: jose (npm)
# makes RSA, EC and Ed25519 keys, a JWKS and valid and forged tokens
# (tests/auth/make-tokens.mjs); tests/unit/test_auth checks every verdict and
# prints the table of HTTP statuses and WWW-Authenticate values, then
# tests/http/test_auth_http.py presents the same tokens (and parties of its
# own) to mcp-everything --http over real sockets.  Node 22 and
# jose are installed by npm ci into $(top_builddir)/.auth-node on first use;
# without npm or the registry it reports SKIP and succeeds.  The rest of
# test_auth runs in plain make check.
EXTRA_DIST += tests/auth/make-tokens.mjs tests/auth/run.sh tests/auth/package.json \
	tests/auth/package-lock.json tests/auth/e2e/README.md tests/auth/e2e/client.mjs \
	tests/auth/e2e/package.json tests/auth/e2e/package-lock.json tests/auth/e2e/run.sh \
	tests/auth/e2e/rotation.mjs tests/auth/e2e/mcp-call.mjs tests/auth/e2e/common.mjs

.PHONY += check-auth
if HAVE_MHD
AUTH_HTTP = yes
else
AUTH_HTTP = no
endif
if HAVE_CHECK
check-auth: tests/unit/test_auth$(EXEEXT) examples/mcp-everything$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/auth/run.sh $(abs_top_builddir) $(abs_top_srcdir) $(AUTH_HTTP) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-auth"; exit 0; fi; \
	exit $$rc
else
check-auth:
	@echo "SKIP: check-auth (the Check library is not installed)"
endif

# `make check-auth-e2e`: a real OAuth client end to end.  The official
# TypeScript SDK client (pinned with oauth2-mock-server, the authorization
# server, in tests/auth/e2e/package.json and its lock) meets a 401 from
# mcp-everything --http --auth-*, discovers the metadata from it, gets a token
# with PKCE and the resource indicator, calls a tool, gets 403
# insufficient_scope for admin_echo and steps up; then mcp-call --oauth is
# driven headless against the same peers (tests/auth/e2e/mcp-call.mjs).
# Installs into $(top_builddir)/.auth-e2e-node on first use; SKIP without
# npm or the registry.  Needs the HTTP transport.
.PHONY += check-auth-e2e
if HAVE_MHD
check-auth-e2e: examples/mcp-everything$(EXEEXT) examples/mcp-call$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/auth/e2e/run.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-auth-e2e"; exit 0; fi; \
	exit $$rc
else
check-auth-e2e:
	@echo "SKIP: check-auth-e2e (built without libmicrohttpd)"
endif

AUTH_CLEAN = .auth-node .auth-e2e-node tests/auth/vectors.json tests/auth/e2e-server.log \
	tests/auth/e2e-mcp-call-server.log
