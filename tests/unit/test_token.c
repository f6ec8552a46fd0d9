/*
 * test_token.c - unit tests of the cancellation token: one reason kept,
 * every wait wakes on fire, the eventfd, and race-free callbacks.
 */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/eng.h"
#include "tests/unit/runner.h"

static void *fire_later(void *arg)
{
	eng_token *t = arg;
	usleep(20000);
	eng_token_fire(t, MCP_CANCEL_PEER);
	return NULL;
}

START_TEST(fires_once_and_keeps_first_reason)
{
	eng_token t;
	ck_assert_int_eq(eng_token_init(&t), MCP_OK);
	ck_assert_int_eq(eng_token_reason(&t), MCP_CANCEL_NONE);
	ck_assert_int_eq(eng_token_fire(&t, MCP_CANCEL_TRANSPORT_CLOSED), 1);
	ck_assert_int_eq(eng_token_fire(&t, MCP_CANCEL_PEER), 0);
	ck_assert_int_eq(eng_token_reason(&t), MCP_CANCEL_TRANSPORT_CLOSED);
	eng_token_destroy(&t);
}
END_TEST

START_TEST(sleep_wakes_on_fire)
{
	eng_token t;
	eng_token_init(&t);
	pthread_t th;
	pthread_create(&th, NULL, fire_later, &t);
	/* A 60 s sleep returning at all proves the wake-up. */
	ck_assert_int_eq(eng_token_sleep(&t, 60000), MCP_ECANCELED);
	pthread_join(th, NULL);
	ck_assert_int_eq(eng_token_sleep(&t, 60000), MCP_ECANCELED);
	eng_token_destroy(&t);
}
END_TEST

START_TEST(sleep_completes_when_not_fired)
{
	eng_token t;
	eng_token_init(&t);
	ck_assert_int_eq(eng_token_sleep(&t, 5), MCP_OK);
	ck_assert_int_eq(eng_token_sleep(&t, 0), MCP_OK);
	eng_token_destroy(&t);
}
END_TEST

START_TEST(fd_becomes_readable)
{
	eng_token t;
	eng_token_init(&t);
	int fd = eng_token_fd(&t);
	ck_assert_int_ge(fd, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	eng_token_fire(&t, MCP_CANCEL_SHUTDOWN);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	eng_token_destroy(&t);

	/* Created after the fire: readable at once. */
	eng_token_init(&t);
	eng_token_fire(&t, MCP_CANCEL_PEER);
	p.fd = eng_token_fd(&t);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	eng_token_destroy(&t);
}
END_TEST

static int calls;
static mcp_cancel_reason seen;
static void count_cb(mcp_cancel_reason r, void *arg)
{
	(void)arg;
	calls++;
	seen = r;
}

START_TEST(callbacks_run_once_and_at_once_after_fire)
{
	eng_token t;
	eng_token_init(&t);
	calls = 0;
	int h1 = 0, h2 = 0, h3 = -1;
	ck_assert_int_eq(eng_token_on_cancel(&t, count_cb, NULL, &h1), MCP_OK);
	ck_assert_int_eq(eng_token_on_cancel(&t, count_cb, NULL, &h2), MCP_OK);
	ck_assert_int_gt(h1, 0);
	ck_assert_int_ne(h1, h2);
	ck_assert_int_eq(eng_token_off_cancel(&t, h2), MCP_OK);
	ck_assert_int_eq(calls, 0);
	eng_token_fire(&t, MCP_CANCEL_TIMEOUT);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(seen, MCP_CANCEL_TIMEOUT);
	/* Registering on a fired token calls back on this thread, now. */
	ck_assert_int_eq(eng_token_on_cancel(&t, count_cb, NULL, &h3), MCP_OK);
	ck_assert_int_eq(calls, 2);
	ck_assert_int_eq(h3, 0);
	ck_assert_int_eq(eng_token_off_cancel(&t, h1), MCP_ENOENT);
	ck_assert_int_eq(eng_token_on_cancel(&t, NULL, NULL, NULL), MCP_EINVAL);
	eng_token_destroy(&t);
}
END_TEST

struct ext {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	eng_token t;
};

START_TEST(external_wait_wakes_on_fire_and_times_out)
{
	struct ext e;
	pthread_mutex_init(&e.mu, NULL);
	pthread_cond_init(&e.cv, NULL);
	eng_token_init(&e.t);
	pthread_mutex_lock(&e.mu);
	ck_assert_int_eq(eng_token_wait_external(&e.t, &e.cv, &e.mu, 5), MCP_ETIMEDOUT);
	pthread_t th;
	pthread_create(&th, NULL, fire_later, &e.t);
	int rc;
	do
		rc = eng_token_wait_external(&e.t, &e.cv, &e.mu, -1);
	while (rc == MCP_OK);
	ck_assert_int_eq(rc, MCP_ECANCELED);
	pthread_mutex_unlock(&e.mu);
	pthread_join(th, NULL);
	eng_token_destroy(&e.t);
	pthread_cond_destroy(&e.cv);
	pthread_mutex_destroy(&e.mu);
}
END_TEST

static void *racer(void *arg)
{
	eng_token_fire(arg, MCP_CANCEL_PEER);
	return NULL;
}

START_TEST(fire_races_registration)
{
	/* Whatever the interleaving, a registered callback runs exactly once. */
	for (int i = 0; i < 500; i++) {
		eng_token t;
		eng_token_init(&t);
		calls = 0;
		pthread_t th;
		pthread_create(&th, NULL, racer, &t);
		int h;
		eng_token_on_cancel(&t, count_cb, NULL, &h);
		pthread_join(th, NULL);
		ck_assert_int_eq(calls, 1);
		eng_token_destroy(&t);
	}
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("token");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fires_once_and_keeps_first_reason);
	tcase_add_test(tc, sleep_wakes_on_fire);
	tcase_add_test(tc, sleep_completes_when_not_fired);
	tcase_add_test(tc, fd_becomes_readable);
	tcase_add_test(tc, callbacks_run_once_and_at_once_after_fire);
	tcase_add_test(tc, external_wait_wakes_on_fire_and_times_out);
	tcase_add_test(tc, fire_races_registration);
	suite_add_tcase(s, tc);
	return s;
}
