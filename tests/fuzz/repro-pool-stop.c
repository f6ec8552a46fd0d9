/*
 * repro-pool-stop.c - regression test for a race the fuzzers found: a
 * run's end must not leave a worker thread behind that still uses the
 * server after mcp_server_free().
 *
 * api_server_end() gave the pool 50 ms to stop and detached the workers
 * that had not exited by then; mcp_server_free() then freed the server,
 * which holds the pool, unless a handler had been counted abandoned.  An
 * idle worker that was merely slow to be scheduled read the freed pool:
 * ASan reports a heap-use-after-free in worker_main.  Threads spinning on
 * every CPU make the scheduling delay likely; without the fix about one run
 * in three of this program fails under ASan.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <mcp/mcp.h>

#define SPINNERS 8
#define LIFECYCLES 40

static _Atomic int stop;

/* Competes for the CPUs, so a worker waits to be scheduled. */
static void *spin(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	while (!atomic_load(&stop))
		x++;
	return NULL;
}

int main(void)
{
	pthread_t spinners[SPINNERS];
	int nspin = 0;
	while (nspin < SPINNERS && pthread_create(&spinners[nspin], NULL, spin, NULL) == 0)
		nspin++;
	int rc = 0;
	for (int i = 0; i < LIFECYCLES && rc == 0; i++) {
		mcp_server *srv = mcp_server_new("repro", "1.0");
		mcp_memconn *c = NULL;
		if (!srv || mcp_server_set_workers(srv, 4) != MCP_OK ||
		    mcp_server_start_memory(srv, &c) != MCP_OK) {
			fprintf(stderr, "repro-pool-stop: cannot start a server\n");
			mcp_server_free(srv);
			rc = 99;
			break;
		}
		static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
		mcp_memconn_send(c, ping, sizeof ping - 1);
		mcp_memconn_close(c);
		char *line = NULL;
		size_t len = 0;
		while (mcp_memconn_recv(c, 5000, &line, &len) == 1)
			free(line);
		mcp_memconn_free(c);
		mcp_server_free(srv);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nspin; i++)
		pthread_join(spinners[i], NULL);
	return rc;
}
