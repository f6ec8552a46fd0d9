# Fuzzing and allocation-failure injection (issue 5); see tests/fuzz/README.md.
#
#   make fuzz         runs every libFuzzer target for FUZZ_TIME seconds (60)
#   make fuzz-smoke   the same for 10 s each (what CI runs)
#                     (two targets at a time; FUZZ_JOBS=1 for one)
#   make check        also runs tests/fuzz/alloc-fail, built with $(CC)
#
# The fuzz targets are built with clang whatever $(CC) is: the library
# sources are compiled again, directly, with coverage instrumentation and
# ASan+UBSan into a private archive, so the configured build is untouched.

FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_SMOKE_TIME ?= 10
# Extra libFuzzer flags for make fuzz (e.g. FUZZ_FLAGS=-jobs=2).
FUZZ_FLAGS ?=
FUZZ_TARGETS = framing dispatch dispatch-push schema jwt seal skills-yaml
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS ?= -g -O1 -fno-omit-frame-pointer
FUZZ_COMPILE = $(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -I$(top_builddir) -I$(srcdir) -I$(srcdir)/api \
	$(WARN_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) $(JSONC_CFLAGS) $(SODIUM_CFLAGS) $(OPENSSL_CFLAGS) $(PCRE2_CFLAGS) $(YAML_CFLAGS) $(HIREDIS_CFLAGS) $(CURL_CFLAGS) -pthread
FUZZ_LIBS = $(JSONC_LIBS) $(SODIUM_LIBS) $(OPENSSL_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM) -ldl -pthread
FUZZ_LIB = tests/fuzz/libmcp-fuzz.a
FUZZ_BINS = tests/fuzz/fuzz-framing tests/fuzz/fuzz-dispatch tests/fuzz/fuzz-dispatch-push \
	tests/fuzz/fuzz-schema tests/fuzz/fuzz-jwt tests/fuzz/fuzz-seal tests/fuzz/fuzz-skills-yaml
# The client's HTTP transport exists only with libcurl's headers.
if HAVE_CURL
FUZZ_TARGETS += client client-session oauth
FUZZ_BINS += tests/fuzz/fuzz-client tests/fuzz/fuzz-client-session tests/fuzz/fuzz-oauth
endif
# The HTTP endpoint, with libmicrohttpd replaced by the target's fake.
if HAVE_MHD
FUZZ_TARGETS += http
FUZZ_BINS += tests/fuzz/fuzz-http
endif
FUZZ_HELPERS = tests/fuzz/wire-check.c tests/fuzz/wire-check.h
# The handlers both dispatch targets serve.
FUZZ_SERVER = tests/fuzz/fuzz-server.c tests/fuzz/fuzz-server.h
FUZZ_STAMP = tests/fuzz/probe.result

# The library, instrumented for coverage (no main: libFuzzer brings it),
# with the sources libmcp-internal.la adds by configuration that the
# fuzzers need to link (no HTTP server: api/http-none.c).
FUZZ_LIB_SRC = $(MCP_SOURCES) $(JSCHEMA_SOURCES) $(JWT_SOURCES) api/http-none.c
if HAVE_HIREDIS
FUZZ_LIB_SRC += transport/store-redis.c
endif
# The libcurl loader: the resource server's key-set fetcher (api/auth-fetch.c)
# and the client's OAuth call it, so every target links it.  The client's
# HTTP transport (transport/httpc.c) is linked only by the targets that
# need it.
if HAVE_CURL
FUZZ_LIB_SRC += transport/curl.c
endif
$(FUZZ_LIB): $(FUZZ_LIB_SRC)
	@$(MKDIR_P) tests/fuzz/obj
	@rm -f $@ tests/fuzz/obj/*.o
	@for s in $(FUZZ_LIB_SRC); do \
	  case $$s in *.c) ;; *) continue ;; esac; \
	  o=tests/fuzz/obj/`echo $$s | sed 's|/|_|g; s|\.c$$|.o|'`; \
	  echo "  FUZZCC   $$s"; \
	  $(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY -fsanitize=fuzzer-no-link \
	    -c $(srcdir)/$$s -o $$o || exit 1; \
	done
	@$(AR) rcs $@ tests/fuzz/obj/*.o

tests/fuzz/fuzz-framing: tests/fuzz/fuzz-framing.c $(FUZZ_HELPERS) $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-framing.c \
	  $(srcdir)/tests/fuzz/wire-check.c $(FUZZ_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz-dispatch: tests/fuzz/fuzz-dispatch.c $(FUZZ_HELPERS) $(FUZZ_SERVER) $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-dispatch.c \
	  $(srcdir)/tests/fuzz/fuzz-server.c $(srcdir)/tests/fuzz/wire-check.c $(FUZZ_LIB) \
	  $(FUZZ_LIBS) -o $@

# The same dispatch through the engine's push entry, one server for the
# whole run (fast: no thread per input).  It calls the library's internals
# (api/internal.h, the engine), linked from the archive like the rest.
tests/fuzz/fuzz-dispatch-push: tests/fuzz/fuzz-dispatch-push.c $(FUZZ_HELPERS) $(FUZZ_SERVER) \
		$(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-dispatch-push.c \
	  $(srcdir)/tests/fuzz/fuzz-server.c $(srcdir)/tests/fuzz/wire-check.c $(FUZZ_LIB) \
	  $(FUZZ_LIBS) -o $@

# The JSON Schema validator alone: random schema, random instance.
tests/fuzz/fuzz-schema: tests/fuzz/fuzz-schema.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-schema.c $(FUZZ_LIB) \
	  $(FUZZ_LIBS) -o $@

# The Authorization header through to the verdict (api/authz.c, the JWT
# verifier of api/jwt/jwt.c), with a fixed key set and clock.
tests/fuzz/fuzz-jwt: tests/fuzz/fuzz-jwt.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-jwt.c $(FUZZ_LIB) \
	  $(FUZZ_LIBS) -o $@

# Sealed requestState and list cursors.  The target compiles api/mrtr.c
# itself (#include) to reach its static seal and unseal, so it depends on it.
tests/fuzz/fuzz-seal: tests/fuzz/fuzz-seal.c api/mrtr.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-seal.c \
	  $(FUZZ_LIB) $(FUZZ_LIBS) -o $@

# The frontmatter of a SKILL.md (api/skills-yaml.c).
tests/fuzz/fuzz-skills-yaml: tests/fuzz/fuzz-skills-yaml.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -fsanitize=fuzzer $(srcdir)/tests/fuzz/fuzz-skills-yaml.c $(FUZZ_LIB) \
	  $(FUZZ_LIBS) -o $@

# A whole client over two pipes, a thread of the target playing the
# server (threaded and slow: see the file).  api/client.c calls the HTTP
# transport, which the archive does not hold: linked here.
tests/fuzz/fuzz-client-session: tests/fuzz/fuzz-client-session.c transport/httpc.c \
		$(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY $(CURL_CFLAGS) -fsanitize=fuzzer \
	  $(srcdir)/tests/fuzz/fuzz-client-session.c $(srcdir)/transport/httpc.c \
	  $(FUZZ_LIB) $(FUZZ_LIBS) -ldl -o $@

# The client's event-stream reader.  The target compiles transport/httpc.c
# itself (#include) to reach its static on_body; the archive does not hold
# it (the libcurl loader, transport/curl.c, it does).
tests/fuzz/fuzz-client: tests/fuzz/fuzz-client.c transport/httpc.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY $(CURL_CFLAGS) -fsanitize=fuzzer \
	  $(srcdir)/tests/fuzz/fuzz-client.c $(FUZZ_LIB) $(FUZZ_LIBS) -ldl -o $@

# What an authorization server, a protected resource or a redirect puts in
# front of the OAuth code of either side (api/client-oauth.c checks,
# api/auth-fetch.c URL and cache rules, a fetched key set).
tests/fuzz/fuzz-oauth: tests/fuzz/fuzz-oauth.c transport/httpc.c $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY $(CURL_CFLAGS) -fsanitize=fuzzer \
	  $(srcdir)/tests/fuzz/fuzz-oauth.c $(srcdir)/transport/httpc.c \
	  $(FUZZ_LIB) $(FUZZ_LIBS) -ldl -o $@

# The HTTP endpoint's request handling (api/http.c, transport/http.c, which
# the archive does not hold: linked here), libmicrohttpd replaced by the
# fake in the target, which drives the daemon's callbacks with no socket.
tests/fuzz/fuzz-http: tests/fuzz/fuzz-http.c api/http.c transport/http.c $(FUZZ_HELPERS) \
		$(FUZZ_SERVER) $(FUZZ_LIB)
	@echo "  FUZZLD   $@"
	@$(FUZZ_COMPILE) -DMCP_BUILDING_LIBRARY $(MHD_CFLAGS) -fsanitize=fuzzer \
	  $(srcdir)/tests/fuzz/fuzz-http.c $(srcdir)/api/http.c $(srcdir)/transport/http.c \
	  $(srcdir)/tests/fuzz/fuzz-server.c $(srcdir)/tests/fuzz/wire-check.c \
	  $(FUZZ_LIB) $(FUZZ_LIBS) -o $@

.PHONY += fuzz-build fuzz fuzz-smoke
# Whether $(FUZZ_CC) can build a libFuzzer target at all (probed each time,
# it takes a second): without it the targets skip with a message.
fuzz-build:
	@$(MKDIR_P) tests/fuzz
	@printf '%s\n' 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);' \
	  'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return !d && n; }' \
	  >tests/fuzz/probe.c
	@if $(FUZZ_CC) -fsanitize=fuzzer,address tests/fuzz/probe.c -o tests/fuzz/probe \
	     >tests/fuzz/probe.log 2>&1; then echo yes >$(FUZZ_STAMP); \
	else echo no >$(FUZZ_STAMP); fi
	@rm -f tests/fuzz/probe tests/fuzz/probe.c
	@if test "`cat $(FUZZ_STAMP)`" = yes; then \
	  $(MAKE) $(AM_MAKEFLAGS) $(FUZZ_BINS); \
	else \
	  echo "SKIP: fuzz: $(FUZZ_CC) cannot build libFuzzer targets" \
	       "(install clang with libFuzzer, or set FUZZ_CC; see tests/fuzz/probe.log)"; \
	fi

# Each target runs for the given time on a scratch corpus in the build tree
# (tests/fuzz/work/<target>), reading the seeds in the source tree too.
# Any crash, leak, sanitizer report or timeout fails the target; the input
# that did it is left in tests/fuzz/work as crash-* / leak-* / timeout-*.
FUZZ_RUN = $(SHELL) $(srcdir)/tests/fuzz/run.sh $(srcdir)/tests/fuzz tests/fuzz
fuzz: fuzz-build
	@test "`cat $(FUZZ_STAMP)`" = yes || exit 0; \
	$(FUZZ_RUN) $(FUZZ_TIME) "$(FUZZ_FLAGS)" $(FUZZ_TARGETS)
fuzz-smoke: fuzz-build
	@test "`cat $(FUZZ_STAMP)`" = yes || exit 0; \
	$(FUZZ_RUN) $(FUZZ_SMOKE_TIME) "$(FUZZ_FLAGS)" $(FUZZ_TARGETS)

CLEANFILES += $(FUZZ_BINS) $(FUZZ_LIB) $(FUZZ_STAMP) tests/fuzz/probe.log
CLEAN_LOCAL_DIRS += tests/fuzz/obj tests/fuzz/work

# ---- allocation-failure injection (a check program, any compiler) ----------
# failmalloc interposes malloc and friends in the test executable, which
# also reaches json-c.  It is built without the sanitizer flags: it runs
# while a sanitizer runtime starts, before its shadow memory exists.
check_LTLIBRARIES = tests/fuzz/libfailmalloc.la
tests_fuzz_libfailmalloc_la_SOURCES = tests/fuzz/failmalloc.c tests/fuzz/failmalloc.h
tests_fuzz_libfailmalloc_la_CFLAGS = -std=gnu11 $(WARN_CFLAGS) $(JSONC_CFLAGS) $(PTHREAD_CFLAGS)
check_PROGRAMS += tests/fuzz/alloc-fail
TESTS += tests/fuzz/alloc-fail
tests_fuzz_alloc_fail_SOURCES = tests/fuzz/alloc-fail.c $(FUZZ_HELPERS)
tests_fuzz_alloc_fail_LDADD = tests/fuzz/libfailmalloc.la libmcp-internal.la $(JSONC_LIBS) \
	$(PTHREAD_LIBS) $(MHD_LIBS) $(SODIUM_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

# A race the fuzzers found (pool workers outliving mcp_server_free): many
# server lifecycles with the CPUs kept busy; ASan reports the use after
# free when a run's end leaves a worker behind.
check_PROGRAMS += tests/fuzz/repro-pool-stop
TESTS += tests/fuzz/repro-pool-stop
tests_fuzz_repro_pool_stop_SOURCES = tests/fuzz/repro-pool-stop.c
tests_fuzz_repro_pool_stop_LDADD = libmcp-internal.la $(JSONC_LIBS) $(PTHREAD_LIBS) \
	$(MHD_LIBS) $(SODIUM_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

# Non-finite progress values made invalid JSON (NaN, Infinity).
check_PROGRAMS += tests/fuzz/repro-nonfinite
TESTS += tests/fuzz/repro-nonfinite
tests_fuzz_repro_nonfinite_SOURCES = tests/fuzz/repro-nonfinite.c $(FUZZ_HELPERS)
tests_fuzz_repro_nonfinite_LDADD = libmcp-internal.la $(JSONC_LIBS) $(PTHREAD_LIBS) \
	$(MHD_LIBS) $(SODIUM_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

# A read past the end of a SKILL.md (fuzz-skills-yaml): texts ending at a
# guard page, so the read faults in any build.
check_PROGRAMS += tests/fuzz/repro-frontmatter
TESTS += tests/fuzz/repro-frontmatter
tests_fuzz_repro_frontmatter_SOURCES = tests/fuzz/repro-frontmatter.c
tests_fuzz_repro_frontmatter_LDADD = libmcp-internal.la $(JSONC_LIBS) $(PTHREAD_LIBS) \
	$(MHD_LIBS) $(SODIUM_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

# A signed token whose aud or sub held \u0000 was read cut at the NUL
# (fuzz-jwt): the verifier must refuse such a header or claims.
check_PROGRAMS += tests/fuzz/repro-jwt
TESTS += tests/fuzz/repro-jwt
tests_fuzz_repro_jwt_SOURCES = tests/fuzz/repro-jwt.c
tests_fuzz_repro_jwt_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) $(OPENSSL_CFLAGS)
tests_fuzz_repro_jwt_LDADD = libmcp-internal.la $(JSONC_LIBS) $(PTHREAD_LIBS) \
	$(MHD_LIBS) $(SODIUM_LIBS) $(OPENSSL_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

# A server line with both result and error reached a call as its error,
# and a notification with an empty method reached the host's handler
# (fuzz-client-session): the first is dropped by the engine, the second
# by the client.
check_PROGRAMS += tests/fuzz/repro-client-response
TESTS += tests/fuzz/repro-client-response
tests_fuzz_repro_client_response_SOURCES = tests/fuzz/repro-client-response.c
tests_fuzz_repro_client_response_LDADD = libmcp-internal.la $(JSONC_LIBS) $(PTHREAD_LIBS) \
	$(MHD_LIBS) $(SODIUM_LIBS) $(PCRE2_LIBS) $(YAML_LIBS) $(LIBM)

EXTRA_DIST += tests/fuzz/README.md tests/fuzz/run.sh tests/fuzz/fuzz-framing.c \
	tests/fuzz/fuzz-dispatch.c tests/fuzz/fuzz-dispatch-push.c $(FUZZ_SERVER) \
	tests/fuzz/framing.dict tests/fuzz/dispatch.dict \
	tests/fuzz/fuzz-schema.c tests/fuzz/schema.dict \
	tests/fuzz/fuzz-jwt.c tests/fuzz/jwt.dict tests/fuzz/fuzz-seal.c tests/fuzz/seal.dict \
	tests/fuzz/fuzz-skills-yaml.c tests/fuzz/skills-yaml.dict \
	tests/fuzz/fuzz-client.c tests/fuzz/client.dict \
	tests/fuzz/fuzz-client-session.c tests/fuzz/client-session.dict \
	tests/fuzz/fuzz-oauth.c tests/fuzz/oauth.dict \
	tests/fuzz/fuzz-http.c tests/fuzz/http.dict \
	.clusterfuzzlite/project.yaml .clusterfuzzlite/Dockerfile .clusterfuzzlite/build.sh \
	.github/workflows/cflite_pr.yml .github/workflows/cflite_batch.yml \
	tests/fuzz/corpus
