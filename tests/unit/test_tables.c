/*
 * test_tables.c - unit tests of the in-flight id table and the pending
 * table of server-to-client requests, including the shutdown swap racing
 * waiters that remove themselves.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

typedef struct node {
	eng_idnode n;
	char key[32];
} node;

START_TEST(idtable_put_get_del_grow)
{
	eng_idtable t;
	ck_assert_int_eq(eng_idtable_init(&t), MCP_OK);
	enum { N = 1000 };
	node *nodes = calloc(N, sizeof *nodes);
	for (int i = 0; i < N; i++) {
		snprintf(nodes[i].key, sizeof nodes[i].key, "%d", i);
		nodes[i].n.key = nodes[i].key;
		ck_assert_int_eq(eng_idtable_put(&t, &nodes[i].n), MCP_OK);
	}
	ck_assert_uint_eq(t.count, N);
	/* "5" (JSON string) and 5 (JSON number) are different keys (P7). */
	node s5 = { .key = "\"5\"" };
	s5.n.key = s5.key;
	ck_assert_int_eq(eng_idtable_put(&t, &s5.n), MCP_OK);
	node dup = { .key = "5" };
	dup.n.key = dup.key;
	ck_assert_int_eq(eng_idtable_put(&t, &dup.n), MCP_EEXIST);
	for (int i = 0; i < N; i++)
		ck_assert_ptr_eq(eng_idtable_get(&t, nodes[i].key), &nodes[i].n);
	for (int i = 0; i < N; i += 2)
		ck_assert_int_eq(eng_idtable_del(&t, &nodes[i].n), MCP_OK);
	ck_assert_int_eq(eng_idtable_del(&t, &nodes[0].n), MCP_ENOENT);
	for (int i = 0; i < N; i++)
		ck_assert_ptr_eq(eng_idtable_get(&t, nodes[i].key),
				 i % 2 ? &nodes[i].n : NULL);
	ck_assert_ptr_eq(eng_idtable_get(&t, "\"5\""), &s5.n);
	eng_idtable_destroy(&t);
	free(nodes);
}
END_TEST

/* A minimal session-less request, enough for the pending table (which
 * only uses the owner's token and reference count). */
static eng_req *bare_req(void)
{
	eng_req *r = calloc(1, sizeof *r);
	eng_token_init(&r->token);
	atomic_init(&r->refs, 1);
	return r;
}

static void bare_unref(eng_req *r)
{
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		eng_token_destroy(&r->token);
		free(r);
	}
}

/* The engine's own unref needs a session; tests swap in the bare one. */
void eng_req_unref(eng_req *r)
{
	bare_unref(r);
}
void eng_req_ref(eng_req *r)
{
	atomic_fetch_add(&r->refs, 1);
}
/* token.c's waits tell the pool (pool.c) a worker blocks; pool.c calls
 * back into the session code, which these tests do not link. */
void eng_req_dispatch(eng_req *r);
void eng_req_dispatch(eng_req *r)
{
	(void)r;
}

static int wait_state(eng_pending *p, int64_t ms)
{
	eng_token *t = &p->owner->token;
	struct timespec ts;
	eng_abstime(eng_now_ns() + ms * ENG_NS_PER_MS, &ts);
	pthread_mutex_lock(&t->mu);
	while (p->state == ENG_PEND_WAITING)
		if (pthread_cond_timedwait(&t->cv, &t->mu, &ts))
			break;
	int st = p->state;
	pthread_mutex_unlock(&t->mu);
	return st;
}

START_TEST(pending_answer_unknown_duplicate)
{
	eng_pending_table pt;
	ck_assert_int_eq(eng_pending_init(&pt, 2), MCP_OK);
	eng_req *r = bare_req();
	eng_pending *a, *b, *c;
	ck_assert_int_eq(eng_pending_add(&pt, r, &a), MCP_OK);
	ck_assert_int_eq(eng_pending_add(&pt, r, &b), MCP_OK);
	ck_assert_int_eq(eng_pending_add(&pt, r, &c), MCP_EBUSY);
	ck_assert_int_ne(a->id, b->id);
	ck_assert_int_eq(eng_pending_answer(&pt, 999, json_object_new_object()), 0);
	ck_assert_int_eq(eng_pending_answer(&pt, a->id, json_object_new_object()), 1);
	/* A duplicate answer is ignored safely. */
	ck_assert_int_eq(eng_pending_answer(&pt, a->id, json_object_new_object()), 0);
	ck_assert_int_eq(wait_state(a, 1000), ENG_PEND_ANSWERED);
	ck_assert_ptr_nonnull(a->answer);
	ck_assert_uint_eq(eng_pending_count(&pt), 1);
	ck_assert_uint_eq(eng_pending_fail_all(&pt), 1);
	ck_assert_int_eq(wait_state(b, 1000), ENG_PEND_FAILED);
	/* Closed: nothing new can appear. */
	ck_assert_int_eq(eng_pending_add(&pt, r, &c), MCP_ECLOSED);
	eng_pending_remove(&pt, b); /* already gone: copes */
	eng_pending_unref(a);
	eng_pending_unref(b);
	eng_pending_destroy(&pt);
	bare_unref(r);
}
END_TEST

struct waiter {
	eng_pending_table *pt;
	eng_pending *p;
	int state;
};

static void *wait_then_remove(void *arg)
{
	struct waiter *w = arg;
	w->state = wait_state(w->p, 10000);
	/* The race the official SDKs shipped: the woken waiter removes itself
	 * while the shutdown is still failing the others. */
	eng_pending_remove(w->pt, w->p);
	eng_pending_unref(w->p);
	return NULL;
}

START_TEST(fail_all_races_self_removal)
{
	for (int iter = 0; iter < 200; iter++) {
		eng_pending_table pt;
		eng_pending_init(&pt, 64);
		enum { W = 8 };
		struct waiter w[W];
		pthread_t th[W];
		eng_req *r[W];
		for (int i = 0; i < W; i++) {
			r[i] = bare_req();
			w[i].pt = &pt;
			ck_assert_int_eq(eng_pending_add(&pt, r[i], &w[i].p), MCP_OK);
			pthread_create(&th[i], NULL, wait_then_remove, &w[i]);
		}
		/* Answer some while failing all. */
		eng_pending_answer(&pt, w[0].p->id, json_object_new_object());
		eng_pending_fail_all(&pt);
		for (int i = 0; i < W; i++) {
			pthread_join(th[i], NULL);
			ck_assert(w[i].state == ENG_PEND_FAILED || w[i].state == ENG_PEND_ANSWERED);
			bare_unref(r[i]);
		}
		ck_assert_uint_eq(eng_pending_count(&pt), 0);
		eng_pending_destroy(&pt);
	}
}
END_TEST

/* eng_json_dup writes the same text as json-c's serialiser with the
 * engine's flags: every JSON type, escapes, nesting, large integers, the
 * stack-to-heap growth, and texts parsed from the wire (doubles keep their
 * original spelling through json-c). */
static void same_as_jsonc(json_object *o)
{
	size_t n = 0;
	char *ours = eng_json_dup(o, &n);
	const char *theirs = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							JSON_C_TO_STRING_NOSLASHESCAPE);
	ck_assert_ptr_nonnull(ours);
	ck_assert_uint_eq(n, strlen(theirs));
	ck_assert_str_eq(ours, theirs);
	free(ours);
}

START_TEST(json_dup_matches_jsonc)
{
	static const char *texts[] = {
		"null", "true", "false", "0", "-1", "9223372036854775807",
		"-9223372036854775808", "18446744073709551615", "1.5", "-0.0", "1e300",
		"3.14159265358979", "\"\"", "\"a/b\\\\c\\\"d\"",
		"\"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\u007f é \\ud83d\\ude00\"",
		"[]", "{}", "[null,1,[2,[3,{}]],{\"a\":[]}]",
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\","
		"\"text\":\"hello\"}],\"isError\":false}}",
		"{\"k\\\"ey\\n\":{\"x\":-12.25e-3,\"y\":[true,false,null]},\"\":\"\"}",
	};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		json_object *o = json_tokener_parse(texts[i]);
		ck_assert_msg(o || strcmp(texts[i], "null") == 0, "parse %s", texts[i]);
		same_as_jsonc(o);
		json_object_put(o);
	}
	/* Built, not parsed: integers and doubles made by the API, a NUL
	 * inside a string, a NULL member, an array hole. */
	json_object *o = json_object_new_object();
	json_object_object_add(o, "i", json_object_new_int64(INT64_MIN));
	json_object_object_add(o, "u", json_object_new_uint64(UINT64_MAX));
	json_object_object_add(o, "d", json_object_new_double(0.1));
	json_object_object_add(o, "nul", json_object_new_string_len("a\0b", 3));
	json_object_object_add(o, "none", NULL);
	json_object *a = json_object_new_array();
	json_object_array_put_idx(a, 2, json_object_new_int(5));
	json_object_object_add(o, "holes", a);
	same_as_jsonc(o);
	/* Beyond the stack buffer: grows on the heap. */
	char *big = malloc(100000);
	for (int i = 0; i < 99999; i++)
		big[i] = (char)(i % 3 == 0 ? '"' : 'x');
	big[99999] = '\0';
	json_object_object_add(o, "big", json_object_new_string(big));
	same_as_jsonc(o);
	free(big);
	json_object_put(o);
}
END_TEST

/* eng_json_precheck: what json-c's strict mode lets through is refused,
 * valid JSON passes, and request ids json-c would alter are flagged only
 * where they are request ids. */
START_TEST(json_precheck_refuses_what_jsonc_accepts)
{
	static const struct {
		const char *text;
		unsigned want;
	} cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0 },
		{ "{\"a\":[1,-0,0.5,-1.25e+10,1E-3,true,false,null,\"\\u00e9\\ud83d\\ude00\"]}", 0 },
		{ "{\"x\":NaN}", ENG_JSON_BAD_LITERAL },
		{ "{\"x\":Infinity}", ENG_JSON_BAD_LITERAL },
		{ "{\"x\":-Infinity}", ENG_JSON_BAD_NUMBER },
		{ "{\"x\":nan}", ENG_JSON_BAD_LITERAL },
		{ "{\"x\":True}", ENG_JSON_BAD_LITERAL },
		{ "{\"x\":1.}", ENG_JSON_BAD_NUMBER },
		{ "{\"x\":01}", ENG_JSON_BAD_NUMBER },
		{ "{\"x\":.5}", 0 }, /* not JSON at all: json-c refuses it */
		{ "{\"x\":1e}", ENG_JSON_BAD_NUMBER },
		{ "{\"x\":-}", ENG_JSON_BAD_NUMBER },
		{ "{\"x\":\"tab\there\"}", ENG_JSON_BAD_CONTROL },
		{ "{\"x\":\"\x01\"}", ENG_JSON_BAD_CONTROL },
		{ "{\"id\":18446744073709551615}", 0 },
		{ "{\"id\":18446744073709551616}", ENG_JSON_BAD_ID },
		{ "{\"id\":-9223372036854775808}", 0 },
		{ "{\"id\":-9223372036854775809}", ENG_JSON_BAD_ID },
		{ "{\"id\":100000000000000000000000}", ENG_JSON_BAD_ID },
		{ "{\"id\":1e400}", 0 }, /* not an integer: json-c says -32600 */
		{ "{\"id\":\"\\ud800\"}", ENG_JSON_BAD_ID },
		{ "{\"id\":\"\\udc00x\"}", ENG_JSON_BAD_ID },
		{ "{\"id\":\"\\ud800\\u0041\"}", ENG_JSON_BAD_ID },
		{ "{\"id\":\"\\ud83d\\ude00\"}", 0 },
		{ "{\"\\u0069d\":18446744073709551616}", ENG_JSON_BAD_ID },
		{ "[{\"id\":18446744073709551616}]", ENG_JSON_BAD_ID },
		/* Not a request id: nested, or a value named "id". */
		{ "{\"params\":{\"id\":18446744073709551616}}", 0 },
		{ "{\"params\":{\"id\":\"\\ud800\"}}", 0 },
		{ "{\"x\":\"id\",\"y\":18446744073709551616}", 0 },
		{ "{\"idx\":18446744073709551616}", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		unsigned got = eng_json_precheck(cases[i].text, strlen(cases[i].text));
		ck_assert_msg(got == cases[i].want, "%s: got %#x, want %#x", cases[i].text,
			      got, cases[i].want);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tables");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, idtable_put_get_del_grow);
	tcase_add_test(tc, pending_answer_unknown_duplicate);
	tcase_add_test(tc, fail_all_races_self_removal);
	tcase_add_test(tc, json_dup_matches_jsonc);
	tcase_add_test(tc, json_precheck_refuses_what_jsonc_accepts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
