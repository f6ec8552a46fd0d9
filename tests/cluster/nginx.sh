#!/bin/sh
# nginx.sh BUILD_DIR SRC_DIR: tasks behind plain round-robin (make
# check-cluster, after tests/cluster/test_cluster.py).
#
# A redis-server and three $BUILD_DIR/examples/mcp-everything --http
# --store redis://... processes on free loopback ports, behind the Debian
# nginx (run as the current user from a scratch prefix, as
# tests/nginx/run.sh does) balancing plain round-robin: no routing map, no
# affinity.  The official TypeScript client v2 (tests/modern's pins) drives
# 2026-07-28 tasks through nginx: one to completion, one cancelled
# mid-run, one answered through input_required (client.mjs --tasks-url).
# Then nginx's access log must show the task requests of one task spread
# over more than one backend (the store, not routing, made them work), and
# every backend must exit 0 on SIGTERM.
#
# Prints "ok - ..." / "not ok - ..." and "N passed, M failed"; exits 77
# (skip) when nginx, redis-server or npm is missing.  Scratch files in
# $BUILD_DIR/cluster-check/.
set -eu

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
server="$build/examples/mcp-everything"
scratch="$build/cluster-check"
say() { echo "check-cluster: $*"; }

nginx=$(command -v nginx 2>/dev/null || :)
if [ -z "$nginx" ] && [ -x /usr/sbin/nginx ]; then nginx=/usr/sbin/nginx; fi
if [ -z "$nginx" ]; then
	say "SKIP: nginx is not installed (apt-get install nginx)"
	exit 77
fi
if ! command -v redis-server >/dev/null 2>&1; then
	say "SKIP: redis-server is not installed (apt-get install redis-server)"
	exit 77
fi

# The TypeScript client v2, installed as make check-modern installs it.
prefix="$build/.modern-node"
here="$src/tests/modern"
. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit check-cluster "$prefix" "$here" node_modules/.bin/node
cp "$here/client.mjs" "$prefix/client.mjs"

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }

pids=""
nginx_pid=""
cleanup() {
	# nginx's master first, politely: killed hard, it would leave its
	# worker behind, holding our output open.
	if [ -n "$nginx_pid" ]; then
		kill -QUIT "$nginx_pid" 2>/dev/null || :
		wait "$nginx_pid" 2>/dev/null || :
	fi
	for p in $pids; do kill -9 "$p" 2>/dev/null || :; done
	wait 2>/dev/null || :
}
trap cleanup EXIT INT TERM

. "$src/tests/cluster/lib.sh"

rm -rf "$scratch"
mkdir -p "$scratch/tmp"

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$scratch" \
	>"$scratch/redis.log" 2>&1 &
pids="$pids $!"
wait_listening "$rport" || { say "redis-server did not start"; exit 1; }

ports=""
bpids=""
for i in 1 2 3; do
	bp=$(free_port)
	"$server" --http "127.0.0.1:$bp" --instance "b$i" --store "redis://127.0.0.1:$rport/0" \
		--trace 2>"$scratch/backend-$i.err" &
	bpids="$bpids $!"
	pids="$pids $!"
	ports="$ports $bp"
done
for bp in $ports; do
	wait_listening "$bp" || { say "a backend did not start"; exit 1; }
done

lport=$(free_port)
{
	if [ "$(id -u)" -eq 0 ]; then echo "user $(id -un) $(id -gn);"; fi
	cat <<EOF
worker_processes 1;
daemon off;
pid $scratch/nginx.pid;
error_log $scratch/error.log notice;
events { worker_connections 1024; }
http {
    client_body_temp_path $scratch/tmp/body;
    proxy_temp_path $scratch/tmp/proxy;
    fastcgi_temp_path $scratch/tmp/fastcgi;
    uwsgi_temp_path $scratch/tmp/uwsgi;
    scgi_temp_path $scratch/tmp/scgi;
    log_format mcp '\$request_method\t\$status\t\$upstream_addr\t\$http_mcp_method\t\$http_mcp_name';
    access_log $scratch/access.log mcp;
    upstream mcp_pool {
EOF
	for bp in $ports; do echo "        server 127.0.0.1:$bp;"; done
	cat <<EOF
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$lport;
        location /mcp {
            proxy_pass http://mcp_pool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            client_max_body_size 16m;
        }
    }
}
EOF
} >"$scratch/nginx.conf"
"$nginx" -p "$scratch" -c "$scratch/nginx.conf" >"$scratch/nginx.out" 2>"$scratch/nginx.err" &
nginx_pid=$!
wait_listening "$lport" || { say "nginx did not start: $(cat "$scratch/nginx.err")"; exit 1; }

say "$("$nginx" -v 2>&1), redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), 3 backends"
if (cd "$prefix" && ./node_modules/.bin/node client.mjs --tasks-url "http://127.0.0.1:$lport/mcp") \
	>"$scratch/client.out" 2>&1; then
	ok "the TypeScript client v2 drives tasks through round-robin nginx: $(tail -n 1 "$scratch/client.out")"
else
	not_ok "the TypeScript client v2 through round-robin nginx"
	sed 's/^/#   /' "$scratch/client.out"
fi

# Every task request of one task is logged with its id in Mcp-Name: at
# least one task must have been served by more than one backend.
spread=$(awk -F'\t' '$4 ~ /^tasks\// && $5 != "" { seen[$5 "\t" $3] = 1 }
	END { for (k in seen) { split(k, a, "\t"); n[a[1]]++ }
	      m = 0; for (t in n) if (n[t] > m) m = n[t]; print m }' "$scratch/access.log")
if [ "${spread:-0}" -ge 2 ]; then
	ok "one task's requests reached $spread different backends (no affinity)"
else
	not_ok "no task's requests were spread over backends (at most ${spread:-0})"
fi

i=0
for p in $bpids; do
	i=$((i + 1))
	kill -TERM "$p"
	if wait "$p"; then
		ok "backend b$i exits 0 on SIGTERM"
	else
		not_ok "backend b$i exit status on SIGTERM"
		tail -n 5 "$scratch/backend-$i.err" | sed 's/^/#   /'
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
