/*
 * client-bench.c - the client side of `make bench`: libmcp's client spawns
 * a server over stdio and keeps WINDOW `echo {"text":"hello"}` calls in
 * flight (call handles on four threads, each waiting for its oldest call
 * and replacing it at once) for
 * DURATION_MS after WARMUP calls, then prints
 *   RESULT kind=client label=LABEL calls=N seconds=S rps=R
 * the line bench/ts-client.mjs prints for the TypeScript SDK client.
 *
 * Usage: client-bench LABEL WINDOW DURATION_MS WARMUP SERVER [ARGS...]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mcp/client.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A lane: one thread keeping its share of the window in flight, waiting
 * for the oldest call first (answers come back nearly in order), so a
 * call costs no descriptor and no poll. */
typedef struct lane {
	pthread_t th;
	mcp_client *c;
	json_object *args;
	int depth;
	double until;
	long done, failed;
} lane;

static _Atomic long warm_left;
static _Atomic int measuring;
static double start_at, until_at;
static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;

static void *lane_main(void *arg)
{
	lane *l = arg;
	mcp_call **ring = calloc((size_t)l->depth, sizeof *ring);
	for (int i = 0; i < l->depth; i++) {
		ring[i] = mcp_call_new_tool(l->c, "echo", l->args);
		mcp_call_start(ring[i]);
	}
	int head = 0, live = l->depth;
	while (live > 0) {
		mcp_call *call = ring[head];
		json_object *res = NULL;
		if (mcp_call_wait(call, -1, &res) != MCP_OK)
			l->failed++;
		json_object_put(res);
		mcp_call_free(call);
		ring[head] = NULL;
		if (atomic_load(&measuring)) {
			l->done++;
		} else if (atomic_fetch_sub(&warm_left, 1) <= 1) {
			pthread_mutex_lock(&start_mu);
			if (!atomic_load(&measuring)) {
				start_at = now_s();
				until_at = start_at + l->until;
				atomic_store(&measuring, 1);
			}
			pthread_mutex_unlock(&start_mu);
		}
		if (!atomic_load(&measuring) || now_s() < until_at) {
			ring[head] = mcp_call_new_tool(l->c, "echo", l->args);
			mcp_call_start(ring[head]);
		} else {
			live--;
		}
		head = (head + 1) % l->depth;
	}
	free(ring);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: client-bench LABEL WINDOW DURATION_MS WARMUP SERVER [ARGS...]\n");
		return 2;
	}
	const char *label = argv[1];
	int window = atoi(argv[2]), duration_ms = atoi(argv[3]), warmup = atoi(argv[4]);
	if (window < 4 || window > 4096 || window % 4 || duration_ms < 1 || warmup < 1)
		return 2;
	mcp_client *c = mcp_client_new("client-bench", "0.1.0");
	mcp_client_set_era(c, MCP_ERA_LEGACY);
	if (mcp_client_connect_stdio(c, argv + 5, NULL, NULL) != MCP_OK) {
		fprintf(stderr, "client-bench: %s\n", mcp_client_error(c));
		return 1;
	}
	/* Four threads share the window: json-c objects are per thread, so
	 * each lane has its own arguments. */
	enum { LANES = 4 };
	lane lanes[LANES];
	atomic_store(&warm_left, warmup);
	for (int i = 0; i < LANES; i++) {
		lanes[i] = (lane){ .c = c, .args = json_tokener_parse("{\"text\":\"hello\"}"),
				   .depth = window / LANES, .until = duration_ms / 1e3 };
		pthread_create(&lanes[i].th, NULL, lane_main, &lanes[i]);
	}
	long done = 0, failed = 0;
	for (int i = 0; i < LANES; i++) {
		pthread_join(lanes[i].th, NULL);
		done += lanes[i].done;
		failed += lanes[i].failed;
		json_object_put(lanes[i].args);
	}
	double seconds = now_s() - start_at;
	printf("RESULT kind=client label=%s calls=%ld seconds=%.3f rps=%.1f failed=%ld\n", label, done,
	       seconds, done / seconds, failed);
	mcp_client_free(c);
	return failed ? 1 : 0;
}
