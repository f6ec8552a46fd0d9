# ---- benchmarks: make bench, make bench-smoke -----------------------------------
# Included from the top-level Makefile.am (paths are relative to the top).
#   make bench        bench/run.sh: every scenario of BENCHMARKS.md in one go,
#                     a table of figures, ratios measured in the same run and
#                     each target marked MET or MISSED (two to four minutes)
#   make bench-smoke  the same with BENCH_QUICK=1: about ten seconds, checks
#                     only that the tools run and print well-formed results
# The load generator and the json-c baseline server are EXTRA_PROGRAMS: built
# by these targets only, never by a plain `make`.  The TypeScript SDK server
# used for comparison is installed by npm into $(BENCH_CLEAN) in the build
# tree on first use; without npm or the registry those rows are skipped.

EXTRA_PROGRAMS = bench/loadgen bench/baseline bench/client-bench
bench_loadgen_SOURCES = bench/loadgen.c
bench_loadgen_LDADD = $(JSONC_LIBS)
bench_baseline_SOURCES = bench/baseline.c
bench_baseline_LDADD = $(JSONC_LIBS) $(PTHREAD_LIBS)
# The client side: libmcp's client at window 64 (bench/ts-client.mjs is the
# TypeScript SDK client beside it).
bench_client_bench_SOURCES = bench/client-bench.c
bench_client_bench_LDADD = libmcp.la $(JSONC_LIBS)
CLEANFILES += bench/loadgen$(EXEEXT) bench/baseline$(EXEEXT) bench/client-bench$(EXEEXT)
# Tasks in a shared store, from the client (the store rows; needs
# redis-server at run time, else those rows are skipped).
EXTRA_PROGRAMS += bench/task-bench
bench_task_bench_SOURCES = bench/task-bench.c
bench_task_bench_LDADD = $(PTHREAD_LIBS)
CLEANFILES += bench/task-bench$(EXEEXT)

EXTRA_DIST += bench/run.sh bench/ts-server.mjs bench/ts-client.mjs bench/package.json \
	bench/package-lock.json BENCHMARKS.md

BENCH_BINS = examples/mcp-everything$(EXEEXT) bench/loadgen$(EXEEXT) \
	bench/baseline$(EXEEXT) bench/client-bench$(EXEEXT) bench/task-bench$(EXEEXT)

# The HTTP floor: libmicrohttpd with libmcp's options and json-c's work of
# an echo, no MCP (linked to libmicrohttpd; libmcp itself opens it at run
# time).
if HAVE_MHD
EXTRA_PROGRAMS += bench/http-floor
bench_http_floor_SOURCES = bench/http-floor.c
bench_http_floor_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS)
bench_http_floor_LDADD = $(MHD_LIBS) $(JSONC_LIBS)
CLEANFILES += bench/http-floor$(EXEEXT)
BENCH_BINS += bench/http-floor$(EXEEXT)
endif
EXTRA_DIST += bench/http-floor.c bench/scan.h

# The event-stream floor: raw sockets and epoll, no libmicrohttpd, no MCP;
# a broadcast to every GET stream with nothing but the kernel's send path.
EXTRA_PROGRAMS += bench/sse-floor
bench_sse_floor_SOURCES = bench/sse-floor.c
bench_sse_floor_LDADD = $(PTHREAD_LIBS)
CLEANFILES += bench/sse-floor$(EXEEXT)
BENCH_BINS += bench/sse-floor$(EXEEXT)

BENCH_ENV = CC='$(CC)' CFLAGS='$(CFLAGS)' SANITIZER='$(SANITIZER_KIND)'
if HAVE_MHD
BENCH_ENV += BENCH_HTTP=1
else
BENCH_ENV += BENCH_HTTP=0
endif

.PHONY += bench bench-smoke
bench: $(BENCH_BINS)
	$(BENCH_ENV) $(SHELL) $(srcdir)/bench/run.sh $(abs_top_builddir) $(abs_top_srcdir)

bench-smoke: $(BENCH_BINS)
	$(BENCH_ENV) BENCH_QUICK=1 $(SHELL) $(srcdir)/bench/run.sh $(abs_top_builddir) \
		$(abs_top_srcdir)

# The npm folder and the raw results in the build tree, for the top-level
# clean-local.
BENCH_CLEAN = .bench-node bench-results
