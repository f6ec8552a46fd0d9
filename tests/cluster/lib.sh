#!/bin/sh
# lib.sh: what tests/cluster's scripts share (sourced, not run).

# free_port: a free TCP port of 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_listening PORT: 0 once 127.0.0.1:PORT accepts a connection (10 s at most).
wait_listening() {
	python3 -c '
import socket, sys, time
for _ in range(400):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.025)
sys.exit(1)' "$1"
}
