/*
 * test_sigpipe.c - a reader that has gone never raises SIGPIPE at the
 * process, and the library never changes the process's SIGPIPE
 * disposition (transport/sigpipe.h): the host's handler is installed
 * first and counts; every test ends with the count at 0 and the handler
 * still in place.  Covers a write on the thread that runs the server (the
 * inline write of a quiet server), a write on the library's writer thread
 * or worker, and the client's writes to a spawned server that closed its
 * input.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mcp/client.h>
#include <mcp/mcp.h>

#include "tests/unit/runner.h"

static volatile sig_atomic_t host_sigpipes;

static void host_handler(int sig)
{
	(void)sig;
	host_sigpipes++;
}

static void install_host_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = host_handler;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGPIPE, &sa, NULL), 0);
	host_sigpipes = 0;
}

/* The host's handler still installed, never called, nothing pending. */
static void assert_host_untouched(void)
{
	struct sigaction now;
	ck_assert_int_eq(sigaction(SIGPIPE, NULL, &now), 0);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)host_handler);
	ck_assert_int_eq(host_sigpipes, 0);
	sigset_t pending;
	sigemptyset(&pending);
	ck_assert_int_eq(sigpending(&pending), 0);
	ck_assert(!sigismember(&pending, SIGPIPE));
	/* And this thread's mask is as it was: SIGPIPE deliverable. */
	sigset_t mask;
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	ck_assert(!sigismember(&mask, SIGPIPE));
}

static int t_slow(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	mcp_ctx_sleep(ctx, 100);
	return mcp_result_add_text(out, "late");
}

static mcp_server *new_server(void)
{
	mcp_server *srv = mcp_server_new("sigpipe", "1");
	ck_assert_ptr_nonnull(srv);
	mcp_tool t = { MCP_TOOL_INIT, .name = "slow", .fn = t_slow };
	ck_assert_int_eq(mcp_server_add_tool(srv, &t), MCP_OK);
	return srv;
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s);
	while (len) {
		ssize_t w = write(fd, s, len);
		ck_assert_int_gt(w, 0);
		s += w;
		len -= (size_t)w;
	}
}

#define INIT_LINE                                                                     \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"      \
	"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{" \
	"\"name\":\"t\",\"version\":\"1\"}}}\n"                                       \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

/* The reader of the server's output is gone before the server starts: the
 * first answer (written inline on this thread) fails with EPIPE, the
 * server shuts down in order, and the host sees no SIGPIPE. */
START_TEST(server_inline_write_to_a_gone_reader)
{
	install_host_handler();
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	close(out[0]);
	write_all(in[1], INIT_LINE "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
	close(in[1]);
	mcp_server *srv = new_server();
	ck_assert_int_eq(mcp_server_run_fds(srv, in[0], out[1]), MCP_OK);
	mcp_server_free(srv);
	close(in[0]);
	close(out[1]);
	assert_host_untouched();
}
END_TEST

static void *run_server(void *arg)
{
	void **a = arg;
	int *fds = a[1];
	*(int *)a[2] = mcp_server_run_fds(a[0], fds[0], fds[1]);
	return NULL;
}

/* The reader leaves while a tool runs on a worker: its answer is written
 * by a thread of the library (the worker or the writer thread), fails
 * with EPIPE, and the host sees no SIGPIPE, on no thread. */
START_TEST(server_worker_write_to_a_gone_reader)
{
	install_host_handler();
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	mcp_server *srv = new_server();
	int fds[2] = { in[0], out[1] }, rc = -1;
	void *args[3] = { srv, fds, &rc };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, run_server, args), 0);
	write_all(in[1], INIT_LINE);
	char buf[4096];
	ssize_t n = read(out[0], buf, sizeof buf); /* the initialize answer */
	ck_assert_int_gt(n, 0);
	write_all(in[1], "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
			 "\"params\":{\"name\":\"slow\",\"arguments\":{}}}\n");
	close(out[0]); /* gone while the tool sleeps */
	usleep(300000);
	close(in[1]);
	pthread_join(th, NULL);
	ck_assert_int_eq(rc, MCP_OK);
	mcp_server_free(srv);
	close(in[0]);
	close(out[1]);
	assert_host_untouched();
}
END_TEST

/* A spawned server that closes its input at once: the client's writes
 * (the initialize, on the caller's thread or the client's) fail, the
 * connect reports it, and the host sees no SIGPIPE. */
START_TEST(client_writes_to_a_server_that_closed_its_input)
{
	install_host_handler();
	for (int i = 0; i < 20; i++) {
		mcp_client *c = mcp_client_new("t", "1");
		ck_assert_ptr_nonnull(c);
		mcp_client_set_connect_timeout_ms(c, 5000);
		char *argv[] = { "sh", "-c", "exec 0<&-; sleep 1", NULL };
		int rc = mcp_client_connect_stdio(c, argv, NULL, NULL);
		ck_assert_int_ne(rc, MCP_OK);
		mcp_client_free(c);
	}
	assert_host_untouched();
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("sigpipe");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, server_inline_write_to_a_gone_reader);
	tcase_add_test(tc, server_worker_write_to_a_gone_reader);
	tcase_add_test(tc, client_writes_to_a_server_that_closed_its_input);
	suite_add_tcase(s, tc);
	return s;
}
