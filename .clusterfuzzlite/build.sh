#!/bin/bash -eu
# ClusterFuzzLite build: the targets of tests/fuzz/fuzz.mk, compiled with
# the fuzzing environment's compiler and flags ($CC, $CFLAGS carry the
# sanitizer and the coverage instrumentation), each copied to $OUT with
# its dictionary and its seeds (tests/fuzz/README.md says what each
# reaches and checks).
./autogen.sh
./configure --disable-shared
# FUZZ_SAN empty: the sanitizer is in $CFLAGS, chosen by the workflow.
make fuzz-build FUZZ_CC="$CC" FUZZ_SAN= FUZZ_CFLAGS="$CFLAGS"
for bin in tests/fuzz/fuzz-*; do
	case $bin in *.c | *.h | *.o | *.a) continue ;; esac
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	t=${name#fuzz-}
	cp "$bin" "$OUT/$name"
	dict=tests/fuzz/$t.dict
	[ -f "$dict" ] || dict=tests/fuzz/${t%%-*}.dict
	[ -f "$dict" ] && cp "$dict" "$OUT/$name.dict"
	if [ -d "tests/fuzz/corpus/$t" ]; then
		(cd "tests/fuzz/corpus/$t" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
	fi
done
