/*
 * test_transport.c - unit tests of framing: strict UTF-8, CRLF, blank
 * lines, the size limit with resynchronisation, a last line without
 * newline, EOF and wake-ups, over a real pipe.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/tp.h"
#include "tests/unit/runner.h"

START_TEST(utf8_validation)
{
	struct {
		const char *s;
		int ok;
	} cases[] = {
		{ "plain ascii", 1 },
		{ "caf\xc3\xa9", 1 },
		{ "\xe2\x86\x92 arrow", 1 },
		{ "\xf0\x9f\x98\x80", 1 },
		{ "\xc3", 0 },               /* truncated */
		{ "\xc0\xaf", 0 },           /* overlong */
		{ "\xe0\x80\xaf", 0 },       /* overlong */
		{ "\xed\xa0\x80", 0 },       /* surrogate */
		{ "\xf4\x90\x80\x80", 0 },   /* past U+10FFFF */
		{ "\x80", 0 },               /* stray continuation */
		{ "\xff", 0 },
		{ "ok \xe2\x28\xa1", 0 },    /* bad continuation */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(tp_utf8_valid((const unsigned char *)cases[i].s,
					    strlen(cases[i].s)) == cases[i].ok,
			      "case %zu", i);
}
END_TEST

static tp_conn *pipe_conn(const char *input, size_t len, size_t max, int *wfd)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(write(in[1], input, len), (ssize_t)len);
	if (wfd)
		*wfd = in[1];
	else
		close(in[1]);
	close(out[0]);
	tp_conn *c = tp_fd_new(in[0], out[1], -1, max);
	ck_assert_ptr_nonnull(c);
	return c;
}

static int next(tp_conn *c, char *buf, size_t cap)
{
	const char *line;
	size_t len;
	int rc = c->ops->recv(c, &line, &len);
	if (rc == TP_LINE || rc == TP_BADUTF8) {
		ck_assert_uint_lt(len, cap);
		memcpy(buf, line, len);
		buf[len] = 0;
	}
	return rc;
}

START_TEST(framing)
{
	const char in[] = "one\r\n\n   \r\ntwo\n\xff\xfe\nthree-without-newline";
	tp_conn *c = pipe_conn(in, sizeof in - 1, 1024, NULL);
	char buf[256];
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_LINE);
	ck_assert_str_eq(buf, "one");
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_LINE);
	ck_assert_str_eq(buf, "two");
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_BADUTF8);
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_LINE);
	ck_assert_str_eq(buf, "three-without-newline");
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_EOF);
	c->ops->free(c);
}
END_TEST

struct feed {
	int fd;
	const char *data;
	size_t len;
};

static void *feeder(void *arg)
{
	struct feed *f = arg;
	size_t off = 0;
	while (off < f->len) {
		ssize_t w = write(f->fd, f->data + off, f->len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

START_TEST(oversized_line_resyncs)
{
	/* A line far past the limit is reported once and skipped up to its
	 * newline; the next line is read normally. */
	size_t big = 300000;
	char *in = malloc(big + 64);
	size_t n = (size_t)sprintf(in, "first\n");
	memset(in + n, 'a', big);
	n += big;
	n += (size_t)sprintf(in + n, "\nafter\n");
	int wfd;
	tp_conn *c = pipe_conn("", 0, 1024, &wfd);
	struct feed f = { wfd, in, n };
	pthread_t th;
	pthread_create(&th, NULL, feeder, &f);
	char buf[2048];
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_LINE);
	ck_assert_str_eq(buf, "first");
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_TOOLONG);
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_LINE);
	ck_assert_str_eq(buf, "after");
	ck_assert_int_eq(next(c, buf, sizeof buf), TP_EOF);
	pthread_join(th, NULL);
	c->ops->free(c);
	free(in);
}
END_TEST

START_TEST(line_at_the_limit_is_accepted)
{
	char in[1100];
	memset(in, 'z', 1024);
	in[1024] = '\n';
	tp_conn *c = pipe_conn(in, 1025, 1024, NULL);
	const char *line;
	size_t len;
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_LINE);
	ck_assert_uint_eq(len, 1024);
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_EOF);
	c->ops->free(c);
}
END_TEST

START_TEST(wake_interrupts_recv)
{
	int wfd;
	tp_conn *c = pipe_conn("", 0, 1024, &wfd);
	c->ops->wake(c);
	const char *line;
	size_t len;
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_WOKEN);
	/* Latched. */
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_WOKEN);
	close(wfd);
	c->ops->free(c);
}
END_TEST

START_TEST(send_reports_epipe)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	close(out[0]);
	signal(SIGPIPE, SIG_IGN);
	tp_conn *c = tp_fd_new(in[0], out[1], -1, 1024);
	struct iovec iov = { .iov_base = "x\n", .iov_len = 2 };
	_Atomic int64_t dl = INT64_MAX;
	ck_assert_int_eq(c->ops->send(c, &iov, 1, &dl), -EPIPE);
	c->ops->free(c);
	close(in[0]);
	close(in[1]);
	close(out[1]);
}
END_TEST

START_TEST(mem_pair_roundtrip)
{
	tp_mem *m = tp_mem_new(64);
	tp_conn *c = tp_mem_server(m);
	ck_assert_int_eq(tp_mem_client_send(m, "hello", 5), 0);
	ck_assert_int_eq(tp_mem_client_send(m, "", 0), 0);
	char big[100];
	memset(big, 'b', sizeof big);
	ck_assert_int_eq(tp_mem_client_send(m, big, sizeof big), 0);
	tp_mem_client_close(m);
	const char *line;
	size_t len;
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_LINE);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_TOOLONG);
	ck_assert_int_eq(c->ops->recv(c, &line, &len), TP_EOF);
	struct iovec iov[2] = { { "a\nb\n", 4 }, { "c\n", 2 } };
	_Atomic int64_t dl = INT64_MAX;
	ck_assert_int_eq(c->ops->send(c, iov, 2, &dl), 0);
	char *got;
	size_t n;
	ck_assert_int_eq(tp_mem_client_recv(m, 1000, &got, &n), 1);
	ck_assert_str_eq(got, "a");
	free(got);
	ck_assert_int_eq(tp_mem_client_recv(m, 1000, &got, &n), 1);
	ck_assert_str_eq(got, "b");
	free(got);
	ck_assert_int_eq(tp_mem_client_recv(m, 1000, &got, &n), 1);
	ck_assert_str_eq(got, "c");
	free(got);
	ck_assert_int_eq(tp_mem_client_recv(m, 10, &got, &n), 0);
	c->ops->close_output(c);
	ck_assert_int_eq(tp_mem_client_recv(m, 10, &got, &n), -1);
	c->ops->free(c);
	tp_mem_free(m);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, utf8_validation);
	tcase_add_test(tc, framing);
	tcase_add_test(tc, oversized_line_resyncs);
	tcase_add_test(tc, line_at_the_limit_is_accepted);
	tcase_add_test(tc, wake_interrupts_recv);
	tcase_add_test(tc, send_reports_epipe);
	tcase_add_test(tc, mem_pair_roundtrip);
	suite_add_tcase(s, tc);
	return s;
}
