# ---- the official TypeScript client v2, both protocol eras -----------------------
# Included from the top-level Makefile.am.  `make check-modern`: the
# 2026-07-28 client (@modelcontextprotocol/client) over stdio and HTTP, with
# version negotiation on (modern era) and off (legacy era).
EXTRA_DIST += tests/modern/client.mjs tests/modern/run.sh tests/modern/package.json \
	tests/modern/package-lock.json

.PHONY += check-modern
check-modern: examples/mcp-everything$(EXEEXT)
	@rc=0; \
	$(SHELL) $(srcdir)/tests/modern/run.sh $(abs_top_builddir) $(abs_top_srcdir) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-modern"; exit 0; fi; \
	exit $$rc

MODERN_CLEAN = .modern-node
