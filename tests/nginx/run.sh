#!/bin/sh
# run.sh BUILD_DIR SRC_DIR: scale-out behind a real nginx (make check-nginx).
#
# Three $BUILD_DIR/examples/mcp-everything --http processes on loopback
# behind nginx (the Debian package, run as the current user from a scratch
# prefix: its own config, pid, logs and temp folders; nothing outside is
# touched), in two modes:
#   stateless  the backends run with --stateless, nginx balances round-robin;
#   session    the backends keep sessions; nginx routes each request that
#              names a session to the backend that created it (the session
#              id it hands the client carries that backend's tag, see
#              session_conf below), and the rest round-robin.
# The backends share one --state-key (2026-07-28 request state sealed by one
# is opened by another), and backend N runs with --instance bN: its task ids
# start with "bN.", and nginx sends tasks/get, tasks/update and tasks/cancel
# (whose Mcp-Name is the task id) to the backend that holds the task.  Through nginx, in each mode: the SDK client
# (tests/interop/http-client.mjs --url), the official conformance suite
# 0.1.16 with --suite all (stateless: against the baseline
# expected-stateless.yml of what a server without sessions cannot do), the
# 0.2.0 alpha with --requirements 2025-11-25 (session mode) and with
# --requirements 2026-07-28 (against tests/conformance/alpha/
# expected-2026-07-28.yml plus expected-2026-07-28-scaled.yml, what
# separate registries show); in session mode, a request for a session of a
# stopped backend gets 404.  Then nginx's access log must show the requests
# spread over the three backends, every request about a task reaching the
# backend that created it and, with sessions, every request reaching the
# backend of its session; each backend must exit 0 on SIGTERM.
#
# Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed".  Exits
# 77 (skip) when nginx is not installed (apt-get install nginx) or npm
# cannot provide Node 22, the SDK or the suite.  Keeps everything in
# $BUILD_DIR/nginx-check/ (logs of each run there too).
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
here="$src/tests/nginx"
server="$build/examples/mcp-everything"
scratch="$build/nginx-check"
NBACKENDS=3

say() { echo "check-nginx: $*"; }

# ---- what it needs ------------------------------------------------------------------
nginx=$(command -v nginx 2>/dev/null || :)
if [ -z "$nginx" ]; then
	for n in /usr/sbin/nginx /usr/local/sbin/nginx /usr/local/nginx/sbin/nginx; do
		if [ -x "$n" ]; then
			nginx=$n
			break
		fi
	done
fi
if [ -z "$nginx" ]; then
	say "SKIP: nginx is not installed (Debian: apt-get install nginx)"
	exit 77
fi
if [ ! -x "$server" ]; then
	say "$server is not built" >&2
	exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
	say "SKIP: python3 is needed (free ports, log analysis)"
	exit 77
fi

# The SDK client: tests/interop's pinned Node and SDK (shared with
# make check-interop).
rc=0
out=$(sh "$src/tests/interop/install.sh" "$build" "$src") || rc=$?
if [ $rc -ne 0 ]; then
	printf '%s\n' "$out" | sed 's/^interop:/check-nginx:/'
	exit $rc
fi
interop=$(printf '%s\n' "$out" | tail -n 1)
node="$interop/node_modules/.bin/node"

# The conformance suites: the pins of tests/conformance/package.json (0.1.16)
# and tests/conformance/alpha/package.json (the 0.2.0 alpha), in the
# prefixes make check-conformance uses, installed the same way.
. "$src/tests/lib/npm-prefix.sh"
stable_prefix="$build/.conformance-node"
alpha_prefix="$build/.conformance-alpha-node"
npm_prefix_or_exit check-nginx "$stable_prefix" "$src/tests/conformance" \
	node_modules/.bin/conformance
npm_prefix_or_exit check-nginx "$alpha_prefix" "$src/tests/conformance/alpha" \
	node_modules/.bin/conformance
stable_version=$(sed -n 's|^[ 	]*"version"[ 	]*:[ 	]*"\([^"]*\)".*|\1|p' \
	"$stable_prefix/node_modules/@modelcontextprotocol/conformance/package.json" | head -n 1)
alpha_version=$(sed -n 's|^[ 	]*"version"[ 	]*:[ 	]*"\([^"]*\)".*|\1|p' \
	"$alpha_prefix/node_modules/@modelcontextprotocol/conformance/package.json" | head -n 1)

say "$("$nginx" -v 2>&1), Node $("$node" --version), server $server"

# ---- bookkeeping ----------------------------------------------------------------------
passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $*"
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $*"
}
# Indented diagnostics after a "not ok".
diag() { sed 's/^/#   /'; }

# The processes started here and not yet reaped, killed on the way out.
pids=""
forget() { pids=$(echo " $pids " | sed "s/ $1 / /; s/^ *//; s/ *$//"); }
cleanup() {
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null || :
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
listening() {
	python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$1" 2>/dev/null
}
# running PID: PID is alive (a child that exited and awaits wait is not).
running() {
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		# The state is the field after the ")" that closes the command name.
		state=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null || echo Z)
		[ "$state" != Z ]
	else
		ps -o stat= -p "$1" 2>/dev/null | grep -qv Z
	fi
}
# wait_listening PORT PID: until PORT accepts, or PID is gone (5 s at most).
wait_listening() {
	i=0
	while ! listening "$1"; do
		running "$2" || return 1
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.05
	done
}
# stop PID SECONDS: SIGTERM, SIGKILL if still there after SECONDS; returns
# its exit status (137 after the SIGKILL).
stop() {
	kill -TERM "$1" 2>/dev/null || :
	i=0
	while running "$1"; do
		i=$((i + 1))
		if [ $i -ge $(($2 * 20)) ]; then
			kill -KILL "$1" 2>/dev/null || :
			break
		fi
		sleep 0.05
	done
	st=0
	wait "$1" 2>/dev/null || st=$?
	forget "$1"
	return $st
}

# ---- nginx configuration ----------------------------------------------------------------
# What every mode shares: the scratch prefix, logs, temp folders, and the
# proxy settings Streamable HTTP needs.
common_conf() {
	p=$1
	if [ "$(id -u)" -eq 0 ]; then
		# As root nginx would switch its workers to nobody, who may not
		# reach the scratch folder: keep the current user.
		echo "user $(id -un) $(id -gn);"
	fi
	cat <<EOF
worker_processes 1;
daemon off;
pid $p/nginx.pid;
lock_file $p/nginx.lock;
error_log $p/error.log notice;
events {
    worker_connections 1024;
}
EOF
}

http_common() {
	p=$1
	cat <<EOF
    client_body_temp_path $p/tmp/body;
    proxy_temp_path $p/tmp/proxy;
    fastcgi_temp_path $p/tmp/fastcgi;
    uwsgi_temp_path $p/tmp/uwsgi;
    scgi_temp_path $p/tmp/scgi;
    log_format mcp '\$request_method\t\$status\t\$upstream_addr\t\$http_mcp_session_id\t\$sent_http_mcp_session_id\t\$request_time\t\$http_mcp_method\t\$http_mcp_name';
    access_log $p/access.log mcp;
EOF
}

# The proxy settings of the /mcp location, both modes.
location_common() {
	cat <<'EOF'
        proxy_http_version 1.1;            # keep-alive to the backends, chunked SSE
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;  # the backend checks Host (DNS rebinding)
        proxy_buffering off;               # SSE: each event as it is written
        proxy_read_timeout 1h;             # long-running calls and GET streams
        proxy_send_timeout 1h;
        client_max_body_size 16m;          # mcp-everything's --max-message default
EOF
}

# backend_upstreams BACKEND_PORTS...: the pool, and one upstream per
# backend (mcp_bN) for what must reach a given one.
backend_upstreams() {
	echo "    upstream mcp_pool {"
	for bp in "$@"; do
		echo "        server 127.0.0.1:$bp;"
	done
	echo "        keepalive 16;"
	echo "    }"
	n=0
	for bp in "$@"; do
		n=$((n + 1))
		echo "    upstream mcp_b$n {"
		echo "        server 127.0.0.1:$bp;"
		echo "        keepalive 8;"
		echo "    }"
	done
}

# task_map BACKEND_PORTS...: $mcp_task_upstream, the backend holding the
# task a tasks/get, tasks/update or tasks/cancel names.  A task lives in
# the process that created it; backend N runs with --instance bN, so its
# task ids start with "bN.", and the client sends the id in Mcp-Name
# (SEP-2663).  Everything else: the pool.
task_map() {
	echo "    map \"\$http_mcp_method \$http_mcp_name\" \$mcp_task_upstream {"
	echo "        default mcp_pool;"
	n=0
	for bp in "$@"; do
		n=$((n + 1))
		echo "        \"~^tasks/[a-z]+ +b$n\\.\" mcp_b$n;"
	done
	echo "    }"
}

# stateless_conf PREFIX LISTEN_PORT BACKEND_PORTS...
stateless_conf() {
	p=$1
	port=$2
	shift 2
	common_conf "$p"
	echo "http {"
	http_common "$p"
	backend_upstreams "$@"
	task_map "$@"
	cat <<EOF
    server {
        listen 127.0.0.1:$port;
        location /mcp {
            proxy_pass http://\$mcp_task_upstream;
EOF
	location_common | sed 's/^/    /'
	cat <<'EOF'
        }
    }
}
EOF
}

# session_conf PREFIX LISTEN_PORT BACKEND_PORTS...
#
# Affinity with stock nginx modules (map, proxy, headers), no server support
# needed.  A session is created by the backend that answered its initialize,
# which came without a session id and went round-robin; a hash of the id
# cannot know which backend that was.  So nginx tags the id on its way out:
# the backend's Mcp-Session-Id "ID" reaches the client as "bN.ID", N being
# the backend that answered ($upstream_addr); requests naming "bN.ID" go to
# backend N alone, with "ID" forwarded; anything else (initialize, the
# sessionless 2026-07-28 requests, an id without a known tag) goes
# round-robin, where an unknown id gets the backend's own 404.  A request
# for the session of a backend that is down gets 404 instead of 502, so
# the client starts a new session as the spec asks.
session_conf() {
	p=$1
	port=$2
	shift 2
	common_conf "$p"
	echo "http {"
	http_common "$p"
	backend_upstreams "$@"
	task_map "$@"
	echo "    # The backend a request goes to: by the tag of the session it names,"
	echo "    # else by the task it names, else any."
	echo "    map \$http_mcp_session_id \$mcp_upstream {"
	echo "        default \$mcp_task_upstream;"
	n=0
	for bp in "$@"; do
		n=$((n + 1))
		echo "        \"~^b$n\\.\" mcp_b$n;"
	done
	echo "    }"
	cat <<'EOF'
    # The session id the backend knows: the client's without the tag.
    map $http_mcp_session_id $mcp_session_in {
        default $http_mcp_session_id;
        "~^b[0-9]+\.(?<mcp_sid>.+)$" $mcp_sid;
    }
    # The tag of the backend that answered (the last one tried).
    map $upstream_addr $mcp_tag {
        default "";
EOF
	n=0
	for bp in "$@"; do
		n=$((n + 1))
		echo "        \"~127\\.0\\.0\\.1:$bp\$\" b$n;"
	done
	cat <<EOF
    }
    # The session id the client gets: the backend's, tagged.
    map \$upstream_http_mcp_session_id \$mcp_session_out {
        "" "";
        default "\$mcp_tag.\$upstream_http_mcp_session_id";
    }
    server {
        listen 127.0.0.1:$port;
        location /mcp {
            proxy_pass http://\$mcp_upstream;
            proxy_set_header Mcp-Session-Id \$mcp_session_in;
            proxy_hide_header Mcp-Session-Id;
            add_header Mcp-Session-Id \$mcp_session_out always;
            error_page 502 = @mcp_backend_gone;
EOF
	location_common | sed 's/^/    /'
	cat <<'EOF'
        }
        # The session's backend is down: its sessions are gone.
        location @mcp_backend_gone {
            # Untagged session id (or none): routed by task or to the
            # pool, so no session is lost here; a task's backend is gone
            # with its tasks, and the client gets 502.
            if ($mcp_session_in = $http_mcp_session_id) {
                return 502;
            }
            default_type application/json;
            return 404 '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}';
        }
    }
}
EOF
}

# suite NAME PREFIX BASELINE ARGS...: one conformance run against $url.
# Without a baseline it must end "0 failed" without a warning; with one the
# suite itself compares (unexpected failures and listed passes both fail).
suite() {
	sname=$1
	sprefix=$2
	baseline=$3
	shift 3
	slog="$dir/conformance-$(echo "$sname" | sed 's/^\([a-z]*\).*--\([a-z]*\) *\([^ ]*\)$/\1-\2-\3/').out"
	echo "# $mode: conformance server --url $url $*${baseline:+ --expected-failures $(basename "$baseline")}"
	src_rc=0
	if [ -n "$baseline" ]; then
		PATH="$sprefix/node_modules/.bin:$PATH" conformance server --url "$url" "$@" \
			--expected-failures "$baseline" >"$slog" 2>&1 || src_rc=$?
	else
		PATH="$sprefix/node_modules/.bin:$PATH" conformance server --url "$url" "$@" \
			>"$slog" 2>&1 || src_rc=$?
	fi
	LC_ALL=C grep -a '^\(\xe2\x9c\x97\|Total\)' "$slog" | sed 's/^/#   /' || :
	total=$(LC_ALL=C grep -a '^Total' "$slog" | tail -n 1 || :)
	if [ -n "$baseline" ]; then
		what="$mode: conformance $sname through nginx, failures as $(basename "$baseline") lists"
		if [ $src_rc -eq 0 ] && [ -n "$total" ]; then
			ok "$what ($total)"
		else
			not_ok "$what (${total:-no total}, exit $src_rc; see $slog)"
			sed -n '/[Uu]nexpected\|no longer fail\|now pass/,$p' "$slog" | head -40 | diag
		fi
		return 0
	fi
	what="$mode: conformance $sname through nginx"
	case "$total" in
	*" 0 failed"*)
		if [ $src_rc -eq 0 ] && ! grep -qai 'warning' "$slog"; then
			ok "$what ($total)"
		else
			not_ok "$what ($total, exit $src_rc, or warnings; see $slog)"
			grep -ai 'warning' "$slog" | head -20 | diag
		fi
		;;
	*)
		not_ok "$what (${total:-no total}; see $slog)"
		;;
	esac
}

# merge_baselines FILE...: one expected-failures YAML with every entry of
# each ("key:" lines and "  - name" items under them).
merge_baselines() {
	python3 - "$@" <<'EOF'
import sys
merged = {}
for path in sys.argv[1:]:
    key = None
    for line in open(path, encoding='utf-8'):
        s = line.split('#', 1)[0].rstrip()
        if not s:
            continue
        if not s.startswith((' ', '-')) and s.endswith(':'):
            key = s[:-1]
            merged.setdefault(key, [])
        elif s.lstrip().startswith('- ') and key:
            item = s.lstrip()[2:].strip()
            if item not in merged[key]:
                merged[key].append(item)
for key, items in merged.items():
    print(f'{key}:')
    for item in items:
        print(f'  - {item}')
EOF
}

# ---- one mode -----------------------------------------------------------------------------
# run_mode NAME: backends, nginx, the client, the suite, the logs.
run_mode() {
	mode=$1
	dir="$scratch/$mode"
	rm -rf "$dir"
	mkdir -p "$dir/tmp"
	backend_args="--stats"
	[ "$mode" = stateless ] && backend_args="$backend_args --stateless"
	# One key for all: a request state sealed by one process (2026-07-28
	# input_required) comes back to any other.
	if "$server" --help 2>&1 | grep -q -- '--state-key'; then
		backend_args="$backend_args --state-key $(python3 -c 'import os; print(os.urandom(32).hex())')"
	fi

	# Backends, each on a free port (another when it was taken meanwhile).
	bports=""
	bpids=""
	b=0
	while [ $b -lt $NBACKENDS ]; do
		b=$((b + 1))
		tries=0
		while :; do
			tries=$((tries + 1))
			bp=$(free_port)
			# shellcheck disable=SC2086
			"$server" --http "127.0.0.1:$bp" $backend_args --instance "b$b" \
				2>"$dir/backend$b.log" &
			bpid=$!
			if wait_listening "$bp" "$bpid"; then
				break
			fi
			kill -KILL "$bpid" 2>/dev/null || :
			wait "$bpid" 2>/dev/null || :
			if [ $tries -ge 5 ]; then
				not_ok "$mode: backend $b started"
				diag <"$dir/backend$b.log"
				return 0
			fi
		done
		pids="$pids $bpid"
		bports="$bports $bp"
		bpids="$bpids $bpid"
	done
	ok "$mode: $NBACKENDS backends mcp-everything --http 127.0.0.1:PORT $(echo "$backend_args" | sed 's/\(--state-key\) [0-9a-f]*/\1 KEY/') listening on$bports"

	# nginx, on a free port of its own (another when it was taken meanwhile).
	tries=0
	while :; do
		tries=$((tries + 1))
		nport=$(free_port)
		# shellcheck disable=SC2086
		"${mode}_conf" "$dir" "$nport" $bports >"$dir/nginx.conf"
		if ! "$nginx" -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" >"$dir/nginx-t.log" 2>&1; then
			not_ok "$mode: nginx accepts the generated configuration"
			diag <"$dir/nginx-t.log"
			return 0
		fi
		"$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" >"$dir/nginx.out" 2>&1 &
		npid=$!
		pids="$pids $npid"
		if wait_listening "$nport" "$npid"; then
			break
		fi
		stop "$npid" 5 || :
		if [ $tries -ge 3 ]; then
			not_ok "$mode: nginx listening on 127.0.0.1:$nport"
			diag <"$dir/error.log"
			return 0
		fi
	done
	ok "$mode: nginx -p $dir -c nginx.conf listening on 127.0.0.1:$nport"
	url="http://127.0.0.1:$nport/mcp"

	# The SDK client through nginx.
	client_flags=""
	[ "$mode" = stateless ] && client_flags="--stateless"
	echo "# $mode: http-client.mjs --url $url $client_flags"
	crc=0
	# shellcheck disable=SC2086
	"$node" "$interop/http-client.mjs" --url "$url" --label "nginx $mode" $client_flags \
		>"$dir/http-client.out" 2>&1 || crc=$?
	sed -n '/^ok - \|^not ok - \|^#/p' "$dir/http-client.out"
	csum=$(grep -a '^[0-9]* passed, [0-9]* failed' "$dir/http-client.out" | tail -n 1 || :)
	if [ $crc -eq 0 ]; then
		ok "$mode: the SDK client through nginx ($csum)"
	else
		not_ok "$mode: the SDK client through nginx (${csum:-exit $crc})"
		tail -n 20 "$dir/http-client.out" | diag
	fi

	# The official conformance suites through nginx.
	if [ "$mode" = stateless ]; then
		suite "stable $stable_version --suite all" "$stable_prefix" "$here/expected-stateless.yml" --suite all
	else
		suite "stable $stable_version --suite all" "$stable_prefix" "" --suite all
		suite "alpha $alpha_version --requirements 2025-11-25" "$alpha_prefix" "" --requirements 2025-11-25
	fi
	merge_baselines "$src/tests/conformance/alpha/expected-2026-07-28.yml" \
		"$here/expected-2026-07-28-scaled.yml" >"$dir/expected-2026-07-28.yml"
	suite "alpha $alpha_version --requirements 2026-07-28" "$alpha_prefix" "$dir/expected-2026-07-28.yml" \
		--requirements 2026-07-28

	# A session whose backend went away: 404 from nginx, not 502.
	if [ "$mode" = session ]; then
		last=$(echo "$bpids" | awk '{print $NF}')
		if stop "$last" 5; then
			lst=0
		else
			lst=$?
		fi
		bpids=$(echo "$bpids" | awk '{$NF=""; print}')
		sid=$(awk -F '\t' -v t="b$NBACKENDS." 'index($5, t) == 1 { print $5; exit }' "$dir/access.log")
		if [ -z "$sid" ]; then
			not_ok "session: a request for a session of a stopped backend gets 404 (no session of backend $NBACKENDS in the log)"
		else
			# The fallback's body must say what a backend's own 404 says:
			# ask backend 1 for a session it never had, and compare codes.
			st=$(python3 - "$url" "$sid" "b1.no-such-session" <<'EOF'
import json, sys, urllib.request, urllib.error
def ask(sid):
    req = urllib.request.Request(sys.argv[1], method='POST', data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
                 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25'})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, None
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())["error"]["code"]
        except Exception:
            return e.code, None
gone, own = ask(sys.argv[2]), ask(sys.argv[3])
print(gone[0], gone[1], own[0], own[1])
EOF
			)
			read -r gst gcode ost ocode <<EOF
$st
EOF
			if [ "${gst:-}" = 404 ] && [ $lst -eq 0 ] && [ "${ost:-}" = 404 ] &&
			   [ "${gcode:-}" = "${ocode:-}" ] && [ "${gcode:-}" != None ]; then
				ok "session: backend $NBACKENDS stopped (exit 0); a request for one of its sessions gets 404, not 502, with the server's own code $gcode"
			else
				not_ok "session: backend $NBACKENDS stopped (exit $lst); a request for one of its sessions gets 404 with the code of a backend's own 404 (got status/code ${gst:-}/${gcode:-}, a backend's ${ost:-}/${ocode:-})"
			fi
		fi
	fi

	# nginx stops first (its client connections end), then the backends.
	if stop "$npid" 10; then
		ok "$mode: nginx stopped"
	else
		not_ok "$mode: nginx stopped (exit status $?)"
		diag <"$dir/error.log"
	fi

	b=0
	bad=""
	for bpid in $bpids; do
		b=$((b + 1))
		if stop "$bpid" 10; then :; else bad="$bad backend$b:$?"; fi
	done
	if [ -z "$bad" ]; then
		ok "$mode: every backend exits 0 on SIGTERM"
	else
		not_ok "$mode: every backend exits 0 on SIGTERM (not:$bad)"
	fi

	# What the logs say: spread, affinity, cancellation reaching a backend.
	arc=0
	# shellcheck disable=SC2086
	python3 - "$mode" "$dir" $bports >"$dir/analysis.out" 2>&1 <<'EOF' || arc=$?
import json, os, re, sys
mode, d, ports = sys.argv[1], sys.argv[2], sys.argv[3:]
addr = {f'127.0.0.1:{p}': i + 1 for i, p in enumerate(ports)}
served = {i + 1: 0 for i in range(len(ports))}
created = {i + 1: 0 for i in range(len(ports))}
misrouted, lines, statuses = [], 0, {}
tasks_routed = 0
for line in open(os.path.join(d, 'access.log'), encoding='utf-8', errors='replace'):
    f = line.rstrip('\n').split('\t')
    if len(f) < 6:
        continue
    lines += 1
    method, status, ups, sid_in, sid_out = f[0], f[1], f[2], f[3], f[4]
    statuses[status] = statuses.get(status, 0) + 1
    last = ups.split(',')[-1].strip().split(' : ')[-1] if ups != '-' else ''
    b = addr.get(last)
    if b:
        served[b] += 1
    if mode == 'session':
        if sid_out not in ('', '-'):
            m = re.match(r'^b(\d+)\.', sid_out)
            if m and b:
                created[b] += 1
            if not m or int(m.group(1)) != b:
                misrouted.append(f'created {sid_out} on backend {b}: {line.strip()}')
        m = re.match(r'^b(\d+)\.', sid_in) if sid_in not in ('', '-') else None
        if m and b and int(m.group(1)) != b:
            misrouted.append(f'request for {sid_in} reached backend {b}: {line.strip()}')
    # A task lives in the backend that created it (its id's tag): every
    # tasks/get, tasks/update and tasks/cancel must have reached it.
    if len(f) >= 8 and f[6].startswith('tasks/'):
        m = re.match(r'^b(\d+)\.', f[7])
        if m:
            tasks_routed += 1
            if b and int(m.group(1)) != b:
                misrouted.append(f'{f[6]} of task {f[7]} reached backend {b}: {line.strip()}')
stats = {}
for i in range(len(ports)):
    try:
        for l in open(os.path.join(d, f'backend{i + 1}.log'), encoding='utf-8', errors='replace'):
            if l.startswith('stats '):
                stats[i + 1] = json.loads(l[6:])
    except OSError:
        pass
print(f'{lines} requests; per backend served {served}; statuses {dict(sorted(statuses.items()))}')
problems = []
print(f'requests about a task routed to the backend that holds it: {tasks_routed}')
if tasks_routed < 1:
    problems.append('no tasks/get, tasks/update or tasks/cancel went through nginx')
if mode == 'stateless':
    for m in misrouted[:10]:
        problems.append(m)
if any(v == 0 for v in served.values()):
    problems.append(f'a backend served nothing: {served}')
if mode == 'session':
    print(f'sessions created per backend {created}')
    if any(v == 0 for v in created.values()):
        problems.append(f'a backend created no session: {created}')
    for m in misrouted[:10]:
        problems.append(m)
    peer = sum(s.get('cancelled_peer', 0) for s in stats.values())
    print(f'handlers cancelled by the client (cancelled_peer, all backends): {peer}')
    if peer < 1:
        problems.append('no handler was cancelled by notifications/cancelled through nginx')
for i, s in sorted(stats.items()):
    print(f'backend {i} stats: started {s.get("started")}, completed {s.get("completed")}, '
          f'cancelled_peer {s.get("cancelled_peer")}, abandoned {s.get("abandoned")}')
if len(stats) != len(ports):
    problems.append(f'stats of {len(stats)} of {len(ports)} backends')
for p in problems:
    print(f'PROBLEM: {p}')
sys.exit(1 if problems else 0)
EOF
	sed 's/^/#   /' "$dir/analysis.out"
	if [ $arc -eq 0 ]; then
		if [ "$mode" = session ]; then
			ok "session: requests spread over the $NBACKENDS backends, every session and every task served by the backend that created it"
		else
			ok "stateless: requests spread over the $NBACKENDS backends, every task served by the backend that created it"
		fi
	else
		not_ok "$mode: the access log and the backends' stats (spread$([ "$mode" = session ] && echo ', affinity'))"
	fi
	if grep -a '\[\(alert\|crit\|emerg\)\]' "$dir/error.log" >/dev/null 2>&1; then
		not_ok "$mode: nginx logged no alert, crit or emerg"
		grep -a '\[\(alert\|crit\|emerg\)\]' "$dir/error.log" | head -10 | diag
	else
		ok "$mode: nginx logged no alert, crit or emerg"
	fi
}

mkdir -p "$scratch"
if "$server" --help 2>&1 | grep -q -- '--stateless'; then
	run_mode stateless
else
	say "mcp-everything has no --stateless option yet: the stateless mode is skipped"
fi
run_mode session

echo "check-nginx: ${passed} passed, ${failed} failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
