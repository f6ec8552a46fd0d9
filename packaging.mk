# ---- packaging: ABI, man pages, installed-library and Debian checks ----------
# Included at the end of the top-level Makefile.am (paths are relative to the
# top).  What it adds:
#   make             links libmcp.so with the version script libmcp.sym, after
#                    checking that it lists exactly the MCP_EXTERN functions
#   make check       tests/pkg/check-abi.sh (header = libmcp.sym = libmcp.so
#                    = debian/libmcp0.symbols) and tests/pkg/check-man.sh
#                    (every function has a page; mandoc -T lint)
#   make install     the man pages, plus a ".so" page for every other name a
#                    grouped page documents (man 3 mcp_server_free works)
#   make check-installed  installs into a scratch DESTDIR, checks the files,
#                    builds tests/pkg/greeter.c with pkg-config only, runs it,
#                    uninstalls and checks that nothing is left
#   make deb         dpkg-buildpackage -b from a scratch copy of the source
#                    tree into $(DEB_WORKDIR), lintian (errors fail), then
#                    tests/pkg/deb-install.sh on the .debs
# debian/ is not part of the release tarball (a distribution keeps its own
# packaging), so make deb needs a build of a source checkout.

PKG_TESTS_DIR = $(srcdir)/tests/pkg

# ---- the exported ABI ---------------------------------------------------------
# The version script pins the exported set: whatever it does not list is
# local, whatever its visibility.  The stamp stops the build with a clear
# message when api/mcp/mcp.h and libmcp.sym disagree, rather than a link
# error in some program or a function silently left unexported.
libmcp_la_LDFLAGS += -Wl,--version-script=$(srcdir)/libmcp.sym
EXTRA_libmcp_la_DEPENDENCIES = $(srcdir)/libmcp.sym libmcp-abi.stamp
libmcp-abi.stamp: $(srcdir)/libmcp.sym $(srcdir)/api/mcp/mcp.h $(srcdir)/api/mcp/client.h \
		$(PKG_TESTS_DIR)/check-abi.sh $(PKG_TESTS_DIR)/api-list.sh
	$(AM_V_GEN)$(SHELL) $(PKG_TESTS_DIR)/check-abi.sh --sym-only $(srcdir) && touch $@
CLEANFILES += libmcp-abi.stamp

# ---- manual pages -----------------------------------------------------------------
# Section 3: one page per group of functions; the other names of a group
# are the .Nm entries of its NAME section (man/mlinks.sh).
MAN3_PAGES = man/libmcp.3 man/mcp_strerror.3 man/mcp_server_new.3 \
	man/mcp_server_run_stdio.3 man/mcp_server_run_http.3 \
	man/mcp_server_start_memory.3 man/mcp_server_add_tool.3 \
	man/mcp_result_add_text.3 man/mcp_server_add_resource.3 \
	man/mcp_server_add_prompt.3 man/mcp_completion_add.3 \
	man/mcp_ctx_cancelled.3 man/mcp_ctx_progress.3 man/mcp_ctx_list_roots.3 \
	man/mcp_form_new.3 man/mcp_ctx_require_input.3 \
	man/mcp_server_set_auth_resource.3 man/mcp_ctx_auth_subject.3 \
	man/mcp_server_set_request_hooks.3 \
	man/mcp_args_string.3 man/mcp_ctx_become_task.3 man/mcp_ctx_trace_context.3 \
	man/mcp_app_new.3 man/mcp_skill_new.3 \
	man/mcp_client_new.3 man/mcp_call_new.3 man/mcp_client_request.3 \
	man/mcp_token_new.3 man/mcp_client_set_oauth.3
MAN1_PAGES = man/mcp-everything.1 man/mcp-files.1 man/mcp-call.1
dist_man_MANS = $(MAN1_PAGES) $(MAN3_PAGES)
EXTRA_DIST += man/mlinks.sh

# Recipe-less, so other fragments can hang their own steps on these too.
install-data-local: install-man3-links
uninstall-local: uninstall-man3-links
.PHONY += install-man3-links uninstall-man3-links
install-man3-links:
	@$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	@pages=; for p in $(MAN3_PAGES); do pages="$$pages $(srcdir)/$$p"; done; \
	$(SHELL) $(srcdir)/man/mlinks.sh $$pages | while read page name; do \
	  echo " echo .so man3/$$page >'$(DESTDIR)$(man3dir)/$$name.3'"; \
	  echo ".so man3/$$page" >'$(DESTDIR)$(man3dir)'/"$$name.3" || exit 1; \
	done
uninstall-man3-links:
	@pages=; for p in $(MAN3_PAGES); do pages="$$pages $(srcdir)/$$p"; done; \
	$(SHELL) $(srcdir)/man/mlinks.sh $$pages | while read page name; do \
	  echo " rm -f '$(DESTDIR)$(man3dir)/$$name.3'"; \
	  rm -f '$(DESTDIR)$(man3dir)'/"$$name.3"; \
	done

# ---- tests in make check -------------------------------------------------------------
TEST_EXTENSIONS += .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT += MCP_SRCDIR='$(abs_top_srcdir)'; MCP_BUILDDIR='$(abs_top_builddir)'; \
	MCP_MAN_PAGES='$(dist_man_MANS)'; export MCP_SRCDIR MCP_BUILDDIR MCP_MAN_PAGES; \
	MCP_SAN_CFLAGS='$(SAN_CFLAGS)'; MCP_SAN_LDFLAGS='$(SAN_LDFLAGS)'; \
	export MCP_SAN_CFLAGS MCP_SAN_LDFLAGS;
# check-facts.py: what the header, the manual pages and the setters' code
# each say of a signature or a range agrees (the header is the source).
TESTS += tests/pkg/check-abi.sh tests/pkg/check-man.sh tests/pkg/check-facts.py \
	tests/pkg/readme-example.sh
EXTRA_DIST += libmcp.sym tests/pkg/api-list.sh tests/pkg/check-abi.sh \
	tests/pkg/abi-layout.py tests/pkg/abi-layout.x86_64.txt tests/pkg/readme-example.sh \
	tests/pkg/check-man.sh tests/pkg/check-facts.py tests/pkg/greeter.c tests/pkg/run-server.sh \
	tests/pkg/staged-greeter.sh tests/pkg/installed-build.sh \
	tests/pkg/deb-install.sh tests/pkg/make-deb.sh tests/pkg/check-dist-complete.sh

# ---- make check-dist-complete ------------------------------------------------------------
# The tarball holds every file git tracks but .ci/, .gitignore and debian/.
# With it, distcheck need not run the whole suite again from the tarball
# to find a file missing from EXTRA_DIST (CI runs a few of its tests there,
# for the read-only source tree; see .ci/run).
.PHONY += check-dist-complete
check-dist-complete:
	$(MAKE) $(AM_MAKEFLAGS) dist-gzip
	$(SHELL) $(PKG_TESTS_DIR)/check-dist-complete.sh '$(abs_top_srcdir)' \
	  '$(abs_top_builddir)/$(PACKAGE)-$(VERSION).tar.gz'

# ---- make check-installed ---------------------------------------------------------------
# Not part of make check: it installs, compiles and uninstalls, which the
# sanitizer builds need not repeat.  CI runs it on the plain build.
.PHONY += check-installed
check-installed: all
	MAKE='$(MAKE)' MCP_LIBDIR='$(libdir)' MCP_INCLUDEDIR='$(includedir)' \
	MCP_BINDIR='$(bindir)' MCP_MANDIR='$(mandir)' MCP_DOCDIR='$(docdir)' \
	CC='$(CC)' CFLAGS='$(SAN_CFLAGS)' LDFLAGS='$(SAN_LDFLAGS)' \
	  $(SHELL) $(PKG_TESTS_DIR)/installed-build.sh '$(abs_top_srcdir)' '$(abs_top_builddir)'

# ---- make deb ------------------------------------------------------------------------------
# The packages are built from a scratch copy of the source tree, never from
# this build tree or in the source tree itself.
DEB_WORKDIR = $(abs_top_builddir)/deb
.PHONY += deb
deb:
	$(SHELL) $(PKG_TESTS_DIR)/make-deb.sh '$(abs_top_srcdir)' '$(DEB_WORKDIR)' '$(abs_top_builddir)'
CLEAN_LOCAL_DIRS += deb
