#!/bin/sh
# run.sh BUILD_DIR SRC_DIR: every benchmark scenario of BENCHMARKS.md in one
# go (make bench), or a short smoke run with BENCH_QUICK=1 (make
# bench-smoke).  Prints a markdown table: libmcp's figure, the reference's
# (the json-c baseline or the TypeScript SDK server, measured in the same
# run), the ratio, the target of issue 6 and MET or MISSED.
#
# Every figure is the median of BENCH_REPEAT runs (3; 1 when quick), the
# servers interleaved run by run so that a noisy neighbour hurts all of
# them alike.  Raw RESULT lines go to BUILD_DIR/bench-results/results.txt.
# The exit status says whether the tools ran and printed well-formed
# results, never whether a target was met: machines differ, tests never
# time anything.
#
# Environment: BENCH_QUICK=1 (smoke), BENCH_REPEAT=N, BENCH_DURATION_MS=MS
# (length of each throughput run, 1500), BENCH_TS=0 (no TypeScript SDK
# rows), BENCH_TS=1 (fail if the SDK cannot be installed), BENCH_HTTP=0
# (a build without libmicrohttpd: no HTTP rows), CC, CFLAGS and SANITIZER
# (shown in the header; bench.mk passes them).
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)

LG="$build/bench/loadgen"
TB="$build/bench/task-bench"
BASE="$build/bench/baseline"
OURS="$build/examples/mcp-everything"
for p in "$LG" "$BASE" "$OURS"; do
	if [ ! -x "$p" ]; then
		echo "bench: $p is not built (make bench builds it)" >&2
		exit 1
	fi
done
# In a shared-library build examples/mcp-everything is libtool's wrapper
# script, which takes a few hundred milliseconds to start; run the real
# program the way the wrapper would (the figures are the same, the many
# server starts are faster).
if [ -x "$build/examples/.libs/mcp-everything" ] && [ -d "$build/.libs" ] &&
	grep -q "libtool" "$OURS" 2>/dev/null; then
	OURS="$build/examples/.libs/mcp-everything"
	LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export LD_LIBRARY_PATH
fi

quick=${BENCH_QUICK:-0}
[ "$quick" = 0 ] || quick=1
if [ "$quick" = 1 ]; then
	repeat=${BENCH_REPEAT:-1}
	tput="-n 400 --warmup 50"       # requests per throughput run
	close_runs=2
	cancels=20
	queue=1000
	idle_n=500          # HTTP sessions left idle
	ts_idle_n=0         # the same for the TS SDK (not in a smoke run)
	streams_n=200       # HTTP GET streams
else
	repeat=${BENCH_REPEAT:-3}
	tput="-n 100000000 --duration-ms ${BENCH_DURATION_MS:-1500} --warmup 2000"
	close_runs=10
	cancels=300
	queue=10000
	idle_n=100000
	ts_idle_n=2000
	streams_n=10000
fi

out="$build/bench-results"
rm -rf "$out"
mkdir -p "$out"
R="$out/results.txt"
: >"$R"
failed=0

# ---- the TypeScript SDK server (optional) -----------------------------------------
here="$src/bench"
prefix="$build/.bench-node"
node="$prefix/node_modules/.bin/node"
. "$src/tests/lib/npm-prefix.sh"
ts_marks="node_modules/.bin/node node_modules/@modelcontextprotocol/sdk/package.json"
ts_note=""
ts_setup() {
	if [ "${BENCH_TS:-auto}" = 0 ]; then
		ts_note="BENCH_TS=0"
		return 1
	fi
	# shellcheck disable=SC2086 # two markers, split on purpose
	if ! npm_prefix_ready "$prefix" "$here" $ts_marks &&
		[ "$quick" = 1 ] && [ "${BENCH_TS:-auto}" != 1 ]; then
		ts_note="a smoke run does not install it"
		return 1
	fi
	# shellcheck disable=SC2086
	if ! npm_prefix bench "$prefix" "$here" $ts_marks; then
		ts_note=$npm_prefix_why
		return 1
	fi
	cp "$here/ts-server.mjs" "$here/ts-client.mjs" "$prefix/"
	return 0
}
have_ts=0
if ts_setup; then
	have_ts=1
elif [ "${BENCH_TS:-auto}" = 1 ]; then
	echo "bench: FAIL: BENCH_TS=1 but the TypeScript SDK is not available ($ts_note)" >&2
	exit 1
else
	echo "bench: the TypeScript SDK rows are skipped ($ts_note)"
fi
TS="$prefix/ts-server.mjs"

# ---- running the load generator ------------------------------------------------------
# lg LABEL MODE [OPTIONS...] [-- SERVER...]: one run, its RESULT line kept.
lg() {
	# sh has no locals: lg_ names keep the callers' loop variables intact.
	lg_label=$1
	lg_mode=$2
	shift 2
	if "$LG" "$lg_mode" --label "$lg_label" "$@" >"$out/last.out" 2>"$out/last.err"; then
		if grep -q "^RESULT kind=$lg_mode label=$lg_label " "$out/last.out"; then
			grep "^RESULT " "$out/last.out" >>"$R"
			sed -n 's/^# /  /p' "$out/last.out"
			return 0
		fi
		echo "bench: FAIL: $lg_label: no RESULT line" >&2
	else
		echo "bench: FAIL: $lg_label: loadgen $lg_mode failed:" >&2
	fi
	sed 's/^/    /' "$out/last.err" "$out/last.out" | tail -n 20 >&2
	failed=1
	return 0
}

# get LABEL KEY: the median of KEY over the RESULT lines of LABEL ("-" if none).
get() {
	grep " label=$1 " "$R" | tr ' ' '\n' | sed -n "s/^$2=//p" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'
}

# each LABEL KEY: KEY of every RESULT line of LABEL, in run order, one a line.
each() {
	grep " label=$1 " "$R" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# per_run NAME LABEL_A LABEL_B KEY: A/B of each repeat, the runs paired in order.
per_run() {
	each "$2" "$4" >"$out/a.txt"
	each "$3" "$4" >"$out/b.txt"
	if [ -s "$out/a.txt" ] && [ -s "$out/b.txt" ]; then
		printf '  %s:' "$1"
		paste "$out/a.txt" "$out/b.txt" |
			awk '{ printf " %s", ($2 + 0 != 0 ? sprintf("%.2f", $1 / $2) : "-") } END { print "" }'
	fi
}

# A background server for HTTP runs.
srv_pid=""
start_http() {
	port=$("$LG" free-port)
	"$@" --http "127.0.0.1:$port" >/dev/null 2>>"$out/servers.err" &
	srv_pid=$!
}
# The HTTP floor takes HOST:PORT alone.
FLOOR="$build/bench/http-floor"
start_floor() {
	port=$("$LG" free-port)
	"$FLOOR" "127.0.0.1:$port" >/dev/null 2>>"$out/servers.err" &
	srv_pid=$!
}
# The event-stream floor (raw epoll, no MHD, no MCP) takes HOST:PORT alone.
SSE_FLOOR="$build/bench/sse-floor"
start_sse_floor() {
	port=$("$LG" free-port)
	"$SSE_FLOOR" "127.0.0.1:$port" >/dev/null 2>>"$out/servers.err" &
	srv_pid=$!
}
stop_http() {
	if [ -n "$srv_pid" ]; then
		kill "$srv_pid" 2>/dev/null || :
		wait "$srv_pid" 2>/dev/null || :
		srv_pid=""
	fi
}
trap 'stop_http' EXIT INT TERM

# ---- the machine ---------------------------------------------------------------------
cpu=$(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$cpu" ] || cpu=unknown
cc_ver=$(${CC:-cc} --version 2>/dev/null | head -n 1)
cat <<EOF
libmcp benchmarks ($([ "$quick" = 1 ] && echo "BENCH_QUICK smoke run" || echo "full run"), $(date -u '+%Y-%m-%d %H:%M UTC'))
  machine: $(nproc) CPUs, $cpu, Linux $(uname -r)
  compiler: ${cc_ver:-unknown}, CFLAGS ${CFLAGS:-?}
  load average at start: $(cut -d' ' -f1-3 /proc/loadavg)
  each figure: median of $repeat run(s)
EOF
case "${CFLAGS:-}" in
*-fsanitize*) echo "  WARNING: a sanitizer build; its figures mean nothing" ;;
esac
if [ -n "${SANITIZER:-}" ] && [ "${SANITIZER:-no}" != no ]; then
	echo "  WARNING: configured with --enable-sanitizer=$SANITIZER; its figures mean nothing"
fi
echo

# ---- 1. echo over stdio: windows 1, 16, 64 ---------------------------------------------
echo "echo over stdio"
for r in $(seq 1 "$repeat"); do
	for w in 1 16 64; do
		lg "ours-w$w" stdio -w "$w" $tput -- "$OURS"
		# libmcp with the arguments unchecked (issue 18): what checking
		# them against the tools' schemas costs, in the same run.
		[ "$w" != 64 ] || lg "unchecked-w$w" stdio -w "$w" $tput -- "$OURS" --unchecked-args
		lg "base-w$w" stdio -w "$w" $tput -- "$BASE"
		# The same json-c floor split over two threads (parse | answer
		# and write): what a second CPU gives a plain json-c server.
		[ "$w" != 64 ] || lg "pipe-w$w" stdio -w "$w" $tput -- "$BASE" --pipeline
		if [ "$have_ts" = 1 ]; then
			lg "ts-w$w" stdio -w "$w" $tput -- "$node" "$TS"
		fi
	done
done

# ---- 1b. the client side: calls/s at window 64 -------------------------------------------
# libmcp's client (bench/client-bench, call handles) and the TypeScript
# SDK's Client (bench/ts-client.mjs), each spawning mcp-everything over
# stdio and keeping 64 echo calls in flight.
echo "client side"
CB="$build/bench/client-bench"
[ -x "$build/bench/.libs/client-bench" ] && [ -n "${LD_LIBRARY_PATH:-}" ] && CB="$build/bench/.libs/client-bench"
if [ "$quick" = 1 ]; then cl_args="300 50"; else cl_args="${BENCH_DURATION_MS:-1500} 2000"; fi
client_run() {
	cr_label=$1
	shift
	if "$@" >"$out/last.out" 2>"$out/last.err" && grep -q "^RESULT kind=client label=$cr_label " "$out/last.out"; then
		grep "^RESULT " "$out/last.out" >>"$R"
	else
		echo "bench: FAIL: $cr_label:" >&2
		tail -n 20 "$out/last.err" "$out/last.out" >&2
		failed=1
	fi
}
for r in $(seq 1 "$repeat"); do
	# shellcheck disable=SC2086 # duration and warm-up
	client_run client-ours "$CB" client-ours 64 $cl_args "$OURS"
	if [ "$have_ts" = 1 ]; then
		# shellcheck disable=SC2086
		client_run client-ts "$node" "$prefix/ts-client.mjs" client-ts 64 $cl_args "$OURS"
	fi
done

# ---- 2. close: EOF with 64 blocked handlers ------------------------------------------------
echo "close latency"
lg close-sleep close -w 64 -n "$close_runs" --settle-ms 50 -t sleep -a '{"ms":600000}' \
	-- "$OURS" --workers 64 --trace
lg close-roots close -w 64 -n "$close_runs" --settle-ms 50 --expect-requests -t roots \
	-a '{"timeout_ms":600000}' -- "$OURS" --workers 64 --trace

# ---- 3. cancel: notifications/cancelled to the handler seeing it ----------------------------
# The floor beside it: a ping to the baseline after the same idle pause,
# since both start from sleeping threads (on a VM, waking an idle vCPU is
# most of the cost).
echo "cancel latency"
lg cancel cancel -n "$cancels" --warmup 10 --settle-ms 5 -t sleep -a '{"ms":600000}' \
	-- "$OURS" --trace
lg ping-base ping -n "$cancels" --warmup 10 --settle-ms 5 -- "$BASE"

# ---- 4. CPU-bound scaling: 1 and 2 workers ----------------------------------------------------
# burn {rounds}: a fixed amount of CPU per call.  For a server without it,
# spin {ms} (a busy loop timed by the clock) stands in, which makes this a
# measure of parallel execution rather than of CPU throughput.
echo "CPU-bound scaling"
if "$LG" has-tool burn -- "$OURS" >/dev/null 2>&1; then
	cpu_tool=burn
	cpu_args='{"rounds":2000000}'
else
	cpu_tool=spin
	cpu_args='{"ms":5}'
fi
if [ "$quick" = 1 ]; then cpu_n="-n 16 --warmup 2"; else cpu_n="-n 100000000 --duration-ms 2000 --warmup 20"; fi
for r in $(seq 1 "$repeat"); do
	for k in 1 2; do
		lg "cpu-$k" stdio -w 8 $cpu_n -t "$cpu_tool" -a "$cpu_args" -- "$OURS" --workers "$k"
	done
done

# ---- 5. memory -------------------------------------------------------------------------------
echo "memory"
lg mem-ours memory --queue "$queue" -t sleep -a '{"ms":600000}' -- "$OURS"
lg mem-base memory --queue "$queue" -- "$BASE"
if [ "$have_ts" = 1 ]; then
	lg mem-ts memory --queue "$queue" -- "$node" "$TS"
fi

# ---- 6. Streamable HTTP: JSON and SSE answers -------------------------------------------------
http=${BENCH_HTTP:-1}
if [ "$http" = 1 ]; then
	echo "Streamable HTTP"
	for r in $(seq 1 "$repeat"); do
		for mode in json sse; do
			flag=""
			[ "$mode" = json ] && flag=--json
			start_http "$OURS" $flag
			lg "http-ours-$mode" http -w 16 $tput --pid "$srv_pid" "127.0.0.1:$port"
			stop_http
			if [ "$have_ts" = 1 ]; then
				start_http "$node" "$TS" $flag
				lg "http-ts-$mode" http -w 16 $tput --pid "$srv_pid" "127.0.0.1:$port"
				stop_http
			fi
		done
	done
fi

# ---- 7. HTTP at scale: idle sessions, GET streams, stateless POSTs ---------------------
# Sessions and streams are opened over 8 connections and left open; the
# threads and the RSS of the server are read from /proc before and after.
# A broadcast: test_trigger_tool_change adds a tool, and every GET stream
# must receive notifications/tools/list_changed (time from writing that
# POST to each arrival).  Stateless throughput: 64 keep-alive connections
# of sequential tools/call echo without a session, answered as JSON.
if [ "$http" = 1 ]; then
	echo "HTTP at scale"
	start_http "$OURS" --max-sessions $((idle_n + 100))
	lg scale-idle http-idle -n "$idle_n" -w 8 --settle-ms 500 --pid "$srv_pid" --timeout-ms 600000 \
		"127.0.0.1:$port"
	stop_http
	if [ "$have_ts" = 1 ] && [ "$ts_idle_n" -gt 0 ]; then
		start_http "$node" "$TS" --json
		lg scale-idle-ts http-idle -n "$ts_idle_n" -w 8 --settle-ms 500 --pid "$srv_pid" \
			--timeout-ms 600000 "127.0.0.1:$port"
		stop_http
	fi
	start_http "$OURS" --max-sessions $((streams_n + 100)) --max-streams $((streams_n + 100)) \
		--max-connections $((streams_n + 200))
	lg scale-streams http-streams -n "$streams_n" -w 8 --settle-ms 500 --pid "$srv_pid" \
		--timeout-ms 600000 "127.0.0.1:$port"
	stop_http
	# The same broadcast from a server that is nothing but sockets, epoll
	# and one send per stream on two threads: what the kernel's send path
	# and this machine allow.
	if [ -x "$SSE_FLOOR" ]; then
		start_sse_floor
		lg scale-streams-floor http-streams -n "$streams_n" -w 8 --settle-ms 500 \
			--pid "$srv_pid" --timeout-ms 600000 "127.0.0.1:$port"
		stop_http
	fi
	for r in $(seq 1 "$repeat"); do
		start_http "$OURS" --stateless --json
		lg sl-ours http --stateless -w 64 $tput --pid "$srv_pid" "127.0.0.1:$port"
		stop_http
		# The same tool declared MCP_TOOL_NONBLOCKING: run on the HTTP
		# thread that read the call (issue 29).
		start_http "$OURS" --stateless --json --nonblocking echo
		lg sl-here http --stateless -w 64 $tput --pid "$srv_pid" "127.0.0.1:$port"
		stop_http
		if [ -x "$FLOOR" ]; then
			start_floor
			lg sl-floor http --stateless -w 64 $tput --pid "$srv_pid" "127.0.0.1:$port"
			stop_http
		fi
		if [ "$have_ts" = 1 ]; then
			start_http "$node" "$TS" --stateless --json
			lg sl-ts http --stateless -w 64 $tput --pid "$srv_pid" "127.0.0.1:$port"
			stop_http
		fi
	done
fi
echo

# ---- tasks in a shared store (issue 31) -----------------------------------------------------
# A redis-server of the run's own on loopback; mcp-everything with no store
# against the same binary with --store redis://, alternated run by run:
# tasks/get throughput (4 keep-alive connections), a task created and
# polled to completion (p50 per task), and a list_changed raised on one
# process timed to its arrival on another's listen stream.
store=0
if [ "$http" = 1 ] && [ -x "$TB" ] && command -v redis-server >/dev/null 2>&1; then
	store=1
	echo "tasks in a shared store"
	rport=$("$LG" free-port)
	rdir=$(mktemp -d "${TMPDIR:-/tmp}/bench-redis.XXXXXX")
	redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$rdir" \
		>"$rdir/redis.log" 2>&1 &
	rpid=$!
	sleep 0.3
	tb() {
		tb_label=$1
		shift
		if "$TB" "$@" --label "$tb_label" >"$out/last.out" 2>"$out/last.err" &&
			grep -q "^RESULT " "$out/last.out"; then
			grep "^RESULT " "$out/last.out" >>"$R"
		else
			echo "bench: FAIL: $tb_label: task-bench $*" >&2
			sed 's/^/    /' "$out/last.err" >&2
			failed=1
		fi
	}
	if [ "$quick" = 1 ]; then tb_get="--duration-ms 300"; tb_n=20; else tb_get="--duration-ms 1500"; tb_n=300; fi
	for r in $(seq 1 "$repeat"); do
		for kind in none redis; do
			args=""
			[ "$kind" = none ] || args="--store redis://127.0.0.1:$rport/0"
			# shellcheck disable=SC2086 # the store option
			start_http "$OURS" $args
			# shellcheck disable=SC2086 # duration
			tb "store-get-$kind" get --url "127.0.0.1:$port" -c 4 $tb_get
			tb "store-create-$kind" create --url "127.0.0.1:$port" -n "$tb_n"
			stop_http
		done
		# The floor under tasks/get from Redis: the same read (HMGET of
		# a record's version and text) over 4 connections by
		# redis-benchmark alone, no MCP in it.
		if command -v redis-benchmark >/dev/null 2>&1; then
			if [ "$quick" = 1 ]; then rb_n=2000; else rb_n=60000; fi
			redis-benchmark -p "$rport" -n 1 -q hset bench:t v 1 d \
				'{"s":3,"m":"done","c":1,"u":2,"ttl":60000,"o":"bench","r":{"content":[]}}' \
				>/dev/null 2>&1 || :
			rb=$(redis-benchmark -p "$rport" -c 4 -n "$rb_n" --csv hmget bench:t v d 2>/dev/null |
				sed -n '2s/^"[^"]*","\([0-9.]*\)".*/\1/p')
			[ -n "$rb" ] && echo "RESULT kind=redis-floor label=store-redis-alone rps=$rb" >>"$R"
		fi
		start_http "$OURS" --store "redis://127.0.0.1:$rport/0"
		p1=$port
		p1_pid=$srv_pid
		start_http "$OURS" --store "redis://127.0.0.1:$rport/0"
		tb store-notify notify --url "127.0.0.1:$p1" --listen "127.0.0.1:$port" -n "$tb_n"
		stop_http
		srv_pid=$p1_pid
		stop_http
	done
	kill "$rpid" 2>/dev/null || :
	wait "$rpid" 2>/dev/null || :
	rm -rf "$rdir"
fi
echo

# ---- the table -------------------------------------------------------------------------------
# row SCENARIO OURS REF REF_NAME RATIO_KIND TARGET_OP TARGET UNIT
#   RATIO_KIND: div (ours / ref, the target applies to the ratio), divabs
#   (the ratio is shown, the target applies to OURS) or none (the target
#   applies to OURS); TARGET_OP: ge, le, lt or -.
row() {
	awk -v name="$1" -v ours="$2" -v ref="$3" -v refname="$4" -v kind="$5" \
	    -v op="$6" -v target="$7" -v unit="$8" 'BEGIN {
		ratio = "-"
		if ((kind == "div" || kind == "divabs") && ours != "-" && ref != "-" && ref + 0 != 0)
			ratio = sprintf("%.2f", ours / ref)
		subject = kind == "div" ? ratio : ours
		verdict = "-"; goal = "-"
		if (op != "-") {
			sym = op == "ge" ? ">=" : op == "le" ? "<=" : "<"
			goal = sym " " target (kind == "div" ? " x" : " " unit)
			if (subject == "-") verdict = "n/a"
			else if (op == "ge") verdict = subject + 0 >= target + 0 ? "MET" : "MISSED"
			else if (op == "le") verdict = subject + 0 <= target + 0 ? "MET" : "MISSED"
			else verdict = subject + 0 < target + 0 ? "MET" : "MISSED"
		}
		f = fmt(ours); g = fmt(ref)
		printf "| %s | %s | %s | %s | %s | %s |\n", name, f, (ref == "-" ? "-" : g " (" refname ")"), ratio, goal, verdict
	}
	function fmt(v) {
		if (v == "-") return "-"
		if (v + 0 >= 100) return sprintf("%.0f", v)
		return sprintf("%.2f", v)
	}'
}
ts_or_dash() { if [ "$have_ts" = 1 ]; then get "$1" "$2"; else echo -; fi; }

echo "| scenario | libmcp | reference | ratio | target | verdict |"
echo "| --- | ---: | ---: | ---: | --- | --- |"
for w in 1 16 64; do
	row "stdio echo w=$w, req/s" "$(get ours-w$w rps)" "$(get base-w$w rps)" baseline div \
		"$([ $w = 64 ] && echo ge || echo -)" 0.9 req/s
	row "stdio echo w=$w, p50 us" "$(get ours-w$w p50_us)" "$(get base-w$w p50_us)" baseline div \
		"$([ $w = 1 ] && echo le || echo -)" 1.25 us
	row "stdio echo w=$w, p99 us" "$(get ours-w$w p99_us)" "$(get base-w$w p99_us)" baseline div - - us
	row "stdio echo w=$w, req/s vs TS SDK" "$(get ours-w$w rps)" "$(ts_or_dash ts-w$w rps)" "TS SDK" div \
		"$([ $w = 64 ] && echo ge || echo -)" 7 req/s
done
row "client: calls/s at w=64 vs the TS SDK client" "$(get client-ours rps)" "$(ts_or_dash client-ts rps)" \
	"TS SDK client" div - - calls/s
row "stdio echo w=64, server CPU us/request" "$(get ours-w64 server_cpu_us_per_req)" \
	"$(get base-w64 server_cpu_us_per_req)" baseline div - - us
row "stdio echo w=64, server CPU us/request vs TS SDK" "$(get ours-w64 server_cpu_us_per_req)" \
	"$(ts_or_dash ts-w64 server_cpu_us_per_req)" "TS SDK" div - - us
row "stdio echo w=64, req/s vs two-thread json-c pipeline" "$(get ours-w64 rps)" \
	"$(get pipe-w64 rps)" "baseline --pipeline" div - - req/s
# Arguments checked against input_schema (the default) against the same
# server with --unchecked-args: at most 10 % slower (issue 18).
row "stdio echo w=64, req/s, arguments checked / unchecked" "$(get ours-w64 rps)" \
	"$(get unchecked-w64 rps)" "--unchecked-args" div ge 0.9 req/s
row "stdio echo w=64, server CPU us/request, checked / unchecked" \
	"$(get ours-w64 server_cpu_us_per_req)" "$(get unchecked-w64 server_cpu_us_per_req)" \
	"--unchecked-args" div le 1.1 us
row "EOF to exit, 64 in sleep, p50 ms" "$(get close-sleep p50_ms)" - - none lt 20 ms
row "EOF to exit, 64 in sleep, max ms" "$(get close-sleep max_ms)" - - none - - ms
row "EOF to last handler's cleanup, 64 in sleep, p50 ms" "$(get close-sleep last_cleanup_p50_ms)" - - none - - ms
row "EOF to exit, 64 in roots/list, p50 ms" "$(get close-roots p50_ms)" - - none lt 20 ms
row "EOF to exit, 64 in roots/list, max ms" "$(get close-roots max_ms)" - - none - - ms
row "cancel to handler, p50 us" "$(get cancel p50_us)" "$(get ping-base p50_us)" "baseline ping from idle" div - - us
row "cancel to handler, p99 us" "$(get cancel p99_us)" "$(get ping-base p99_us)" "baseline ping from idle" divabs lt 1000 us
row "CPU-bound ($cpu_tool), 2 workers / 1, req/s" "$(get cpu-2 rps)" "$(get cpu-1 rps)" "1 worker" div ge 1.8 req/s
row "CPU-bound ($cpu_tool), 2 workers / 1, server CPU %" "$(get cpu-2 server_cpu_pct)" \
	"$(get cpu-1 server_cpu_pct)" "1 worker" div - - "%"
row "idle peak RSS (VmHWM), KiB" "$(get mem-ours idle_hwm_kb)" "$(get mem-base idle_hwm_kb)" baseline divabs lt 3072 KiB
row "idle peak RSS vs TS SDK, KiB" "$(get mem-ours idle_hwm_kb)" "$(ts_or_dash mem-ts idle_hwm_kb)" "TS SDK" div - - KiB
# The target is for 10,000 requests; a smoke run queues fewer.
row "$queue requests queued, peak RSS growth, KiB" "$(get mem-ours delta_hwm_kb)" - - none \
	"$([ "$queue" = 10000 ] && echo lt || echo -)" 20480 KiB
row "HTTP JSON, 16 connections, req/s vs TS SDK" "$(get http-ours-json rps)" \
	"$(ts_or_dash http-ts-json rps)" "TS SDK" div ge 5 req/s
row "HTTP JSON, 16 connections, p50 us" "$(get http-ours-json p50_us)" \
	"$(ts_or_dash http-ts-json p50_us)" "TS SDK" div - - us
row "HTTP SSE, 16 connections, req/s vs TS SDK" "$(get http-ours-sse rps)" \
	"$(ts_or_dash http-ts-sse rps)" "TS SDK" div - - req/s
row "HTTP SSE, 16 connections, p50 us" "$(get http-ours-sse p50_us)" \
	"$(ts_or_dash http-ts-sse p50_us)" "TS SDK" div - - us
# HTTP at scale (the targets of issue 16): threads may not grow with
# sessions or streams (4 workers + 8), an idle session costs at most 4 KiB.
row "HTTP $idle_n idle sessions: threads (vs none open)" "$(get scale-idle threads_after)" \
	"$(get scale-idle threads_before)" "no session" divabs le 12 threads
row "HTTP idle session, bytes each" "$(get scale-idle bytes_per_session)" \
	"$(ts_or_dash scale-idle-ts bytes_per_session)" "TS SDK" divabs le 4096 B
row "HTTP $streams_n GET streams: threads (vs none open)" "$(get scale-streams threads_after)" \
	"$(get scale-streams threads_before)" "no stream" divabs le 12 threads
row "HTTP GET stream, bytes each" "$(get scale-streams bytes_per_stream)" - - none - - B
row "list_changed to $streams_n streams, p99 ms" "$(get scale-streams broadcast_p99_ms)" - - none lt 50 ms
row "list_changed to $streams_n streams, p99 ms vs floor" "$(get scale-streams broadcast_p99_ms)" \
	"$(get scale-streams-floor broadcast_p99_ms)" "epoll + send floor" div - - ms
row "list_changed to $streams_n streams, p50 ms vs floor" "$(get scale-streams broadcast_p50_ms)" \
	"$(get scale-streams-floor broadcast_p50_ms)" "epoll + send floor" div - - ms
row "list_changed to $streams_n streams, max ms" "$(get scale-streams broadcast_max_ms)" \
	"$(get scale-streams-floor broadcast_max_ms)" "epoll + send floor" div - - ms
row "HTTP stateless echo, non-blocking (inline), req/s vs floor" "$(get sl-here rps)" \
	"$(get sl-floor rps)" "MHD + json-c floor" div ge 0.8 req/s
row "HTTP stateless echo, non-blocking (inline), server CPU us/request vs floor" \
	"$(get sl-here server_cpu_us_per_req)" "$(get sl-floor server_cpu_us_per_req)" \
	"MHD + json-c floor" div - - us
# A tool run on a worker: the hand-off stays, and may not cost more than
# it did before inline calls existed (0.53 of the floor, issue 16).
row "HTTP stateless echo, on a worker, req/s vs floor" "$(get sl-ours rps)" \
	"$(get sl-floor rps)" "MHD + json-c floor" div ge 0.53 req/s
row "HTTP stateless echo, 64 connections, req/s vs TS SDK" "$(get sl-ours rps)" \
	"$(ts_or_dash sl-ts rps)" "TS SDK stateless" div ge 10 req/s
row "HTTP stateless echo, on a worker, server CPU us/request vs floor" "$(get sl-ours server_cpu_us_per_req)" \
	"$(get sl-floor server_cpu_us_per_req)" "MHD + json-c floor" div - - us
if [ "$store" = 1 ]; then
	row "tasks/get, 4 connections, req/s, Redis store / none" "$(get store-get-redis rps)" \
		"$(get store-get-none rps)" "no store" div ge 0.5 req/s
	# The serial floor: each of the 4 connections waits for the memory
	# answer's time plus one Redis round trip, so 1 / (1/none + 1/redis).
	sfloor=$(awk -v a="$(get store-get-none rps)" -v b="$(get store-redis-alone rps)" \
		'BEGIN { if (a == "-" || b == "-" || a == 0 || b == 0) print "-"; else printf "%.0f", 1 / (1 / a + 1 / b) }')
	row "tasks/get, 4 connections, req/s, Redis store vs serial floor" "$(get store-get-redis rps)" \
		"$sfloor" "no store + HMGET round trip" div - - req/s
	row "HMGET alone (redis-benchmark), 4 connections, req/s" "$(get store-redis-alone rps)" - - \
		none - - req/s
	added=$(awk -v a="$(get store-create-redis p50_us)" -v b="$(get store-create-none p50_us)" \
		'BEGIN { if (a == "-" || b == "-") print "-"; else print a - b }')
	row "task created and polled to completion, p50 us added by Redis" "$added" \
		"$(get store-create-none p50_us)" "no store, p50" none le 1000 us
	row "list_changed to another process's listen stream, p50 us" "$(get store-notify p50_us)" - - \
		none - - us
	row "list_changed to another process's listen stream, p99 us" "$(get store-notify p99_us)" - - \
		none le 10000 us
fi
echo
echo "ratios run by run (repeat 1, 2, ...; the median is in the table):"
per_run "stdio echo w=1 p50, libmcp / baseline" ours-w1 base-w1 p50_us
per_run "stdio echo w=64 req/s, libmcp / baseline" ours-w64 base-w64 rps
per_run "stdio echo w=64 req/s, arguments checked / unchecked" ours-w64 unchecked-w64 rps
[ "$have_ts" = 0 ] || per_run "stdio echo w=64 req/s, libmcp / TS SDK" ours-w64 ts-w64 rps
per_run "CPU-bound req/s, 2 workers / 1" cpu-2 cpu-1 rps
[ "$have_ts" = 0 ] || per_run "HTTP JSON req/s, libmcp / TS SDK" http-ours-json http-ts-json rps
[ "$http" = 0 ] || per_run "HTTP stateless req/s, non-blocking (inline) / floor" sl-here sl-floor rps
[ "$http" = 0 ] || per_run "HTTP stateless req/s, on a worker / floor" sl-ours sl-floor rps
[ "$store" = 0 ] || per_run "tasks/get req/s, Redis store / none" store-get-redis store-get-none rps
[ "$have_ts" = 0 ] || [ "$http" = 0 ] || per_run "HTTP stateless req/s, libmcp / TS SDK" sl-ours sl-ts rps
if [ "$have_ts" = 1 ]; then
	# The CPU that 7 x the SDK's rate leaves the server per request when
	# every CPU is busy, after the load generator's share at our rate.
	echo
	echo "what 7 x the TS SDK at w=64 asks of this machine (medians above):"
	awk -v ncpu="$(nproc)" -v ts="$(get ts-w64 rps)" -v rps="$(get ours-w64 rps)" \
	    -v lgpct="$(get ours-w64 loadgen_cpu_pct)" -v ours_us="$(get ours-w64 server_cpu_us_per_req)" \
	    -v base="$(get base-w64 rps)" -v base_us="$(get base-w64 server_cpu_us_per_req)" \
	    -v pipe="$(get pipe-w64 rps)" -v pipe_us="$(get pipe-w64 server_cpu_us_per_req)" 'BEGIN {
		if (ts + 0 == 0 || rps + 0 == 0) { print "  (no figures)"; exit }
		need = 7 * ts
		lg_us = lgpct / 100 * 1e6 / rps
		printf "  7 x %.0f = %.0f req/s: %d CPUs give %.2f us per request, %.2f of them to the load generator,\n", ts, need, ncpu, ncpu * 1e6 / need, lg_us
		printf "  so at most %.2f us of server CPU per request with every CPU busy the whole time\n", ncpu * 1e6 / need - lg_us
		printf "  json-c floor, one thread:   %.2f us/request, %.2f x the TS SDK\n", base_us, base / ts
		printf "  json-c floor, two threads:  %.2f us/request, %.2f x the TS SDK\n", pipe_us, pipe / ts
		printf "  libmcp:                     %.2f us/request, %.2f x the TS SDK\n", ours_us, rps / ts
	}'
fi
echo
[ "$quick" = 0 ] || echo "a smoke run: too short for its figures or verdicts to mean anything"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$have_ts" = 1 ] || echo "TypeScript SDK rows: skipped ($ts_note)"
[ "$http" = 1 ] || echo "HTTP rows: skipped (built without libmicrohttpd)"
[ "$cpu_tool" = burn ] || echo "CPU-bound rows use spin {ms:5} (clock-timed busy loop): they measure parallel execution, not CPU throughput"

# ---- well-formed? -------------------------------------------------------------------------
# Every RESULT line is key=value pairs, and every number is a finite number.
if ! awk '{
	if ($1 != "RESULT") bad = 1
	for (i = 2; i <= NF; i++) {
		if ($i !~ /^[a-z_0-9]+=[^ ]+$/) bad = 1
		v = substr($i, index($i, "=") + 1)
		if (tolower(v) ~ /^-?(nan|inf)/) bad = 1
	}
} END { exit bad }' "$R"; then
	echo "bench: FAIL: malformed RESULT lines in $R" >&2
	failed=1
fi
need="ours-w1 ours-w16 ours-w64 base-w1 base-w16 base-w64 close-sleep close-roots cancel ping-base"
need="$need cpu-1 cpu-2 mem-ours mem-base"
[ "$http" = 0 ] || need="$need http-ours-json http-ours-sse scale-idle scale-streams scale-streams-floor sl-ours sl-here sl-floor"
for label in $need; do
	if ! grep -q " label=$label " "$R"; then
		echo "bench: FAIL: no result for $label" >&2
		failed=1
	fi
done
if grep " errors=" "$R" | grep -qv " errors=0 "; then
	echo "bench: FAIL: some requests were answered with errors (see $R)" >&2
	failed=1
fi
echo "raw results: $R"
exit $failed
