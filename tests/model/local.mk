# The engine's promises, model-checked (issue 22): a SPIN model of
# request life and shutdown in tests/model/ (see its README.md).
# Included from the top-level Makefile.am (paths relative to the top).
#
# `make check-model` runs tests/model/check.sh: every property exhaustively
# at its sizes (state counts and times printed), every mutation (SPIN must
# report its violation; narrated trails land in tests/model/out/trails/),
# and the non-vacuity markers of reach.txt.  About four minutes on two
# CPUs, one verifier at a time.  Without spin (Debian package `spin`) or a
# C compiler for SPIN's verifier it prints SKIP and succeeds.
MODEL_FILES = tests/model/engine.pml tests/model/core.pml tests/model/writer_thread.pml \
	tests/model/reader_thread.pml tests/model/handlers.pml tests/model/peer.pml \
	tests/model/lifetime.pml \
	tests/model/props.pml tests/model/reach.txt tests/model/check.sh \
	tests/model/README.md tests/model/MAPPING.md
MODEL_TRAILS = tests/model/trails/live_iter.txt tests/model/trails/no_broadcast.txt \
	tests/model/trails/write_first.txt tests/model/trails/no_suppress.txt \
	tests/model/trails/dup.txt tests/model/trails/no_cas.txt \
	tests/model/trails/done_before_queue.txt tests/model/trails/forget_late.txt \
	tests/model/trails/writer_ignores_inline.txt tests/model/trails/no_join.txt \
	tests/model/trails/reuse_pid.txt tests/model/trails/idle_nolock.txt \
	tests/model/trails/no_grace.txt \
	tests/model/trails/no_broadcast_end.txt tests/model/trails/plain_ref.txt
EXTRA_DIST += $(MODEL_FILES) $(MODEL_TRAILS) tests/model/check-mapping.py

# MAPPING.md cites the C code by file, function and line numbers: this
# fails (one TAP point per row) when a cited line has left its function.
# Fast, needs no spin: part of make check (MCP_SRCDIR, packaging.mk).
TESTS += tests/model/check-mapping.py

.PHONY += check-model
check-model:
	@rc=0; CC='$(CC)' $(SHELL) $(srcdir)/tests/model/check.sh $(srcdir)/tests/model \
	  tests/model/out $(MODEL_RUNS) || rc=$$?; \
	if test $$rc -eq 77; then echo "SKIP: check-model"; exit 0; fi; \
	exit $$rc

MODEL_CLEAN = tests/model/out
