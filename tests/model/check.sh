#!/bin/sh
# check.sh - make check-model: runs SPIN on the engine model (engine.pml).
#
#   check.sh MODEL_DIR OUT_DIR [RUN...]
#
# Every run builds the model with its -D flags, compiles SPIN's verifier
# (pan) with $CC (default cc) and runs it:
#   verify    must finish exhaustively with no error; prints the states
#             stored, transitions and time;
#   mutation  a broken copy of the model: SPIN must find the violation of
#             the property the mutation targets (the pattern below); its
#             trail, narrated, goes to OUT_DIR/trails/NAME.txt;
#   reach     a marker of reach.txt: SPIN must reach it (non-vacuity);
#   bug       a bug of the code as it is, which SPIN must still find
#             (README.md, "A bug the model found"); when the code is
#             fixed, the model follows and the run becomes a verify run.
# Names given as arguments select runs (default: all).  Exits 77 when
# spin or the C compiler is missing; 1 when any run failed.
set -u
model=$1
out=$2
shift 2
only="$*"

CC=${CC:-cc}
MEMLIM=${MODEL_MEMLIM:-3072}    # MB per verifier run
TIMEOUT=${MODEL_TIMEOUT:-900}   # seconds per verifier run
JOBS=${MODEL_JOBS:-2}           # verifiers at once (each up to MEMLIM)

if ! command -v spin >/dev/null 2>&1; then
	echo "check-model: spin not found (Debian package 'spin')"
	exit 77
fi
if ! command -v "${CC%% *}" >/dev/null 2>&1; then
	echo "check-model: no C compiler ($CC) to build SPIN's verifier"
	exit 77
fi
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout $TIMEOUT"

mkdir -p "$out/trails" "$out/run" || exit 1
out=$(cd "$out" && pwd)
model=$(cd "$model" && pwd)

SAFE="-DNOCLAIM -DSAFETY"
FULL2="-DNREQ=2"                         # all handlers, ids 0/1, one cancel,
                                         # EPIPE
LIGHT2="-DNREQ=2 -DNO_EPIPE"
SMALL3="-DNREQ=3 -DNO_EPIPE"

# name | kind | expected violation (mutations) | spin -D flags | cc flags | pan flags
RUNS=$(cat <<EOF
safety-2|verify||$FULL2 -DPROPS=31|$SAFE|-m100000
grace-2|verify||$FULL2 -DGRACE_QUIET -DPROPS=63|$SAFE|-m100000
term-2|verify||$LIGHT2 -DBLIND_FOREVER -DPROPS=0|-DNFAIR=3|-m200000 -a -f
safety-3-roots|verify||$SMALL3 -DKINDS=3 -DPROPS=31|$SAFE -DCOLLAPSE|-m100000
safety-3-blind|verify||$SMALL3 -DKINDS=5 -DPROPS=31|$SAFE -DCOLLAPSE|-m100000
safety-3-all|verify||$SMALL3 -DNCANCEL=0 -DPROPS=31|$SAFE -DCOLLAPSE|-m100000
grace-3|verify||$SMALL3 -DNCANCEL=0 -DGRACE_QUIET -DPROPS=63|$SAFE -DCOLLAPSE|-m100000
term-3|verify||$SMALL3 -DKINDS=5 -DNID=1 -DBLIND_FOREVER -DPROPS=0|-DNFAIR=3 -DCOLLAPSE|-m200000 -a -f
life-2|verify||$LIGHT2 -DREFS -DPROPS=127|$SAFE|-m100000
life-3|verify||$SMALL3 -DKINDS=5 -DNID=1 -DREFS -DPROPS=127|$SAFE -DCOLLAPSE|-m100000
plain_ref|mutation|assertion violated \( !\(rfreed\[t\]\)&&\(rrefs\[t\]>0\)\)|$LIGHT2 -DREFS -DM_PLAIN_REF -DPROPS=64|$SAFE|-m100000 -E
live_iter|mutation|assertion violated \(p_refs\[.\]>0\)|$FULL2 -DM_LIVE_ITER -DPROPS=16|$SAFE|-m100000 -E
write_first|mutation|assertion violated \(outcome\[\(x%8\)\]!=2\)|$FULL2 -DM_WRITE_FIRST -DPROPS=4|$SAFE|-m100000 -E
no_suppress|mutation|assertion violated \(outcome\[\(x%8\)\]!=2\)|$FULL2 -DM_NO_SUPPRESS -DPROPS=4|$SAFE|-m100000 -E
dup|mutation|assertion violated \(id_live\[a\]==0\)|$FULL2 -DM_DUP -DPROPS=1|$SAFE|-m100000 -E
no_cas|mutation|assertion violated \(ndecided\[.\]==1\)|$FULL2 -DM_NO_CAS -DPROPS=1|$SAFE|-m100000 -E
done_before_queue|mutation|assertion violated .*resp_w\[sj\]|$FULL2 -DM_DONE_BEFORE_QUEUE -DPROPS=1|$SAFE|-m100000 -E
forget_late|mutation|assertion violated .*!\(resp_w\[sj\]\)|$LIGHT2 -DKINDS=4 -DNCANCEL=0 -DM_FORGET_LATE -DPROPS=1|$SAFE|-m100000 -E
writer_ignores_inline|mutation|assertion violated +!\(out_closed\)|$FULL2 -DM_WRITER_IGNORES_INLINE -DPROPS=2|$SAFE|-m100000 -E
no_join|mutation|assertion violated +!\(out_closed\)|$FULL2 -DM_NO_JOIN -DPROPS=2|$SAFE|-m100000 -E
reuse_pid|mutation|assertion violated \(p_ans\[.\]==.\)|$FULL2 -DM_REUSE_PID -DPROPS=8|$SAFE|-m100000 -E
no_broadcast|mutation|assertion violated .*kind\[t\]==2|$FULL2 -DM_NO_BROADCAST -DGRACE_QUIET -DPROPS=32|$SAFE|-m100000 -E
idle_nolock|mutation|assertion violated \(inflight_n>0\)|$FULL2 -DM_IDLE_NOLOCK -DGRACE_QUIET -DPROPS=32|$SAFE|-m100000 -E
no_grace|mutation|acceptance cycle|$LIGHT2 -DM_NO_GRACE -DBLIND_FOREVER -DPROPS=0|-DNFAIR=3|-m200000 -a -f
no_broadcast_end|mutation|invalid end state|$FULL2 -DM_NO_BROADCAST -DPROPS=0|$SAFE|-m100000
EOF
)
# the reach markers
RUNS="$RUNS
$(sed -n 's/^\([0-9][0-9]*\) .*/reach\1|reach|assertion violated \\(\1!=\1\\)|'"$FULL2"' -DREACH=\1 -DPROPS=0|'"$SAFE"'|-m100000 -E/p' "$model/reach.txt")"

t_all=$(date +%s)
fail=0
npass=0
run_one() {
	name=$1 kind=$2 want=$3 sflags=$4 cflags=$5 pflags=$6
	d="$out/run/$name"
	rm -rf "$d"
	mkdir -p "$d"
	cp "$model"/*.pml "$d"/
	t0=$(date +%s.%N)
	if ! (cd "$d" && spin $sflags -a engine.pml >spin.log 2>&1); then
		echo "FAIL $kind $name: spin -a failed (see $d/spin.log)"
		return 1
	fi
	if ! (cd "$d" && $CC -O0 -w -DMEMLIM=$MEMLIM $cflags -o pan pan.c >cc.log 2>&1); then
		echo "FAIL $kind $name: cannot compile pan (see $d/cc.log)"
		return 1
	fi
	(cd "$d" && $tmo ./pan $pflags >pan.log 2>&1)
	t1=$(date +%s.%N)
	secs=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
	log="$d/pan.log"
	stored=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | head -1)
	visited=$(sed -n 's/.*states, stored (\([0-9.e+]*\) visited).*/\1/p' "$log" | head -1)
	trans=$(sed -n 's/^ *\([0-9.e+]*\) transitions.*/\1/p' "$log" | head -1)
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -1)
	incomplete=$(grep -c -e "Search not completed" -e "reached -DMEMLIM" -e "max search depth too small" "$log")
	case $kind in
	verify)
		if [ "${errors:-x}" = 0 ] && [ "$incomplete" = 0 ]; then
			extra=""
			[ -n "$visited" ] && extra=" ($visited visited)"
			printf 'PASS verify   %-16s %10s states%s, %s transitions, %s s\n' \
				"$name" "$stored" "$extra" "$trans" "$secs"
			return 0
		fi
		echo "FAIL verify   $name: errors=${errors:-?} incomplete=$incomplete (see $log)"
		grep -E "^pan:|violated|invalid end|acceptance" "$log" | head -5
		return 1
		;;
	mutation | reach | bug)
		found=$(grep -E "^pan:[0-9]+: " "$log" | head -1)
		if [ "${errors:-0}" -ge 1 ] && printf '%s\n' "$found" | grep -Eq "$want"; then
			if [ "$kind" = bug ]; then
				printf 'PASS bug      %-22s KNOWN BUG in the code, SPIN finds it: %s (%s states, %s s)\n' \
					"$name" "$(printf '%s' "$found" | sed 's/^pan:[0-9]*: //; s/ (at depth.*//')" \
					"$stored" "$secs"
				trail "$d" "$sflags" "$out/trails/$name.txt"
			elif [ "$kind" = mutation ]; then
				printf 'PASS mutation %-22s SPIN found it: %s (%s states, %s s)\n' \
					"$name" "$(printf '%s' "$found" | sed 's/^pan:[0-9]*: //; s/ (at depth.*//')" \
					"$stored" "$secs"
				trail "$d" "$sflags" "$out/trails/$name.txt"
			else
				printf 'PASS reach    %-8s %s\n' "$name" \
					"$(sed -n "s/^${name#reach} //p" "$model/reach.txt")"
			fi
			return 0
		fi
		echo "FAIL $kind $name: SPIN did not find '$want' (errors=${errors:-?}; see $log)"
		[ -n "$found" ] && echo "  it found: $found"
		return 1
		;;
	esac
}

# The narrated trail: what each thread did (the model's "@" lines), and
# the violation.
trail() {
	d=$1 sflags=$2 dest=$3
	(cd "$d" && spin $sflags -t engine.pml 2>&1) |
		grep -E '^ *@|violated|failed assertion|START OF CYCLE|invalid end|timeout' |
		sed 's/^ *//' >"$dest"
}

echo "check-model: SPIN $(spin -V 2>&1 | sed -n 's/^Spin Version \([^ ]*\).*/\1/p'), $CC, memory limit ${MEMLIM} MB per run, $JOBS at once"
printf '%s\n' "$RUNS" >"$out/runs.txt"
# The runs are independent (each in its own directory): JOBS lanes take
# every JOBS-th run each, one verifier at a time per lane, and print their
# reports lane by lane once all are done.
lane() {
	k=$1
	i=0 p=0 f=0
	while IFS='|' read -r name kind want sflags cflags pflags; do
		[ -n "$name" ] || continue
		if [ -n "$only" ]; then
			case " $only " in *" $name "*) ;; *) continue ;; esac
		fi
		i=$((i + 1))
		[ $((i % JOBS)) -eq "$k" ] || continue
		if run_one "$name" "$kind" "$want" "$sflags" "$cflags" "$pflags" </dev/null; then
			p=$((p + 1))
		else
			f=$((f + 1))
		fi
	done <"$out/runs.txt"
	echo "$p $f" >"$out/lane$k.count"
}
k=0
while [ "$k" -lt "$JOBS" ]; do
	rm -f "$out/lane$k.count"
	lane "$k" >"$out/lane$k.log" 2>&1 &
	k=$((k + 1))
done
wait
k=0
while [ "$k" -lt "$JOBS" ]; do
	cat "$out/lane$k.log"
	if [ -f "$out/lane$k.count" ]; then
		read -r p f <"$out/lane$k.count"
		npass=$((npass + p))
		fail=$((fail + f))
	else
		echo "FAIL lane $k did not finish"
		fail=$((fail + 1))
	fi
	k=$((k + 1))
done
t_end=$(date +%s)
echo "check-model: $npass passed, $fail failed in $((t_end - t_all)) s (trails in $out/trails)"
[ $fail -eq 0 ]
