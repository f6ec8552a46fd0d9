/*
 * test_tables.c - unit tests of the in-flight id table and the pending
 * table of server-to-client requests, including the shutdown swap racing
 * waiters that remove themselves.
 */
#include <check.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"
#include "tests/unit/runner.h"

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
		/* Not a request id: nested, or a value named "id" (an integer
		 * beyond 64 bits anywhere else is read as a double). */
		{ "{\"params\":{\"id\":18446744073709551616}}", ENG_JSON_BIG_INT },
		{ "{\"params\":{\"id\":\"\\ud800\"}}", 0 },
		{ "{\"x\":\"id\",\"y\":18446744073709551616}", ENG_JSON_BIG_INT },
		{ "{\"idx\":18446744073709551616}", ENG_JSON_BIG_INT },
		{ "{\"x\":[-18446744073709551616]}", ENG_JSON_BIG_INT },
		{ "{\"x\":1e400,\"y\":100000000000000000000.0}", 0 }, /* doubles already */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		unsigned got = eng_json_precheck(cases[i].text, strlen(cases[i].text), 0);
		ck_assert_msg(got == cases[i].want, "%s: got %#x, want %#x", cases[i].text,
			      got, cases[i].want);
	}
}
END_TEST

/* U+0000 in a member name, at every depth json-c parses and in every kind
 * of container path; in a value it is carried (json-c keeps values with
 * their length) and not flagged. */
START_TEST(json_precheck_finds_nul_in_member_names)
{
	static const struct {
		const char *text;
		unsigned want;
	} cases[] = {
		{ "{\"a\\u0000evil\":1}", ENG_JSON_NUL_NAME },
		{ "{\"jsonrpc\":\"2.0\",\"id\\u0000\":1}", ENG_JSON_NUL_NAME },
		{ "{\"x\":1,\"\\u0000\":1}", ENG_JSON_NUL_NAME },
		{ "[{\"x\":1},{\"y\\u0000\":1}]", ENG_JSON_NUL_NAME },
		{ "{\"params\":{\"a\":1,\"a\\u0000evil\":40}}", ENG_JSON_NUL_KEY },
		{ "{\"params\":{\"arguments\":{\"l\":[{\"k\\u0000\":1}]}}}", ENG_JSON_NUL_KEY },
		{ "{\"params\":{\"_meta\":{\"\\u0000\":1}}}", ENG_JSON_NUL_KEY },
		{ "[[{\"a\\u0000\":1}]]", ENG_JSON_NUL_KEY },
		/* The escape of a backslash, then "u0000": no U+0000. */
		{ "{\"a\\\\u0000\":1}", 0 },
		{ "{\"a\\u0001\":1}", 0 },
		/* Values: carried with their length, not flagged. */
		{ "{\"method\":\"ping\\u0000junk\",\"id\":\"a\\u0000\"}", 0 },
		{ "{\"params\":{\"text\":\"a\\u0000b\",\"l\":[\"\\u0000\"]}}", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		unsigned got = eng_json_precheck(cases[i].text, strlen(cases[i].text), 0);
		ck_assert_msg(got == cases[i].want, "%s: got %#x, want %#x", cases[i].text,
			      got, cases[i].want);
	}
	/* Past the depth the old scan tracked (3): names still recognised
	 * after a comma in an object at depth 200. */
	char deep[2048];
	size_t n = 0;
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"k\":");
	n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"a\":1,\"b\\u0000\":2}");
	for (int i = 0; i < 200; i++)
		deep[n++] = '}';
	ck_assert_uint_eq(eng_json_precheck(deep, n, 0), ENG_JSON_NUL_KEY);
}
END_TEST

/* The value bound: every kind of value counts, objects 8 and arrays 2,
 * member names not at all, and the scan stops at the first value past
 * it. */
START_TEST(json_precheck_bounds_values)
{
	/* Two objects (8 each), two arrays (2 each), five scalars: 25. */
	const char *t = "{\"a\":[{},[],1,\"s\",true,false,null]}";
	ck_assert_uint_eq(eng_json_precheck(t, strlen(t), 25), 0);
	ck_assert_uint_eq(eng_json_precheck(t, strlen(t), 24), ENG_JSON_TOO_MANY);
	ck_assert_uint_eq(eng_json_precheck(t, strlen(t), 0), 0);
	/* A million empty objects stop at the limit; the flags found so far
	 * are kept. */
	size_t n = 3 * 1000000 + 16;
	char *big = malloc(n);
	ck_assert_ptr_nonnull(big);
	size_t k = (size_t)snprintf(big, n, "{\"\\u0000\":[");
	for (int i = 0; i < 1000000; i++) {
		memcpy(big + k, i ? ",{}" : "{}", i ? 3 : 2);
		k += i ? 3 : 2;
	}
	big[k++] = ']';
	big[k++] = '}';
	ck_assert_uint_eq(eng_json_precheck(big, k, ENG_DEFAULT_MAX_VALUES),
			  ENG_JSON_NUL_NAME | ENG_JSON_TOO_MANY);
	free(big);
}
END_TEST

/* Integers beyond 64 bits are read as the nearest double, never
 * saturated; request ids keep their refusal (ENG_JSON_BAD_ID). */
START_TEST(json_big_integers_read_as_doubles)
{
	static const struct {
		const char *text;
		const char *key;
		double want;
	} cases[] = {
		{ "{\"a\":100000000000000000000}", "a", 1e20 },
		{ "{\"a\":-18446744073709551616}", "a", -18446744073709551616.0 },
		{ "{\"a\":18446744073709551616,\"b\":\"18446744073709551616\"}", "a",
		  18446744073709551616.0 },
		{ "{\"a\":[1,123456789012345678901234567890]}", NULL, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *t = cases[i].text;
		ck_assert_uint_eq(eng_json_precheck(t, strlen(t), 0), ENG_JSON_BIG_INT);
		size_t wn;
		char *w = eng_json_widen(t, strlen(t), &wn);
		ck_assert_ptr_nonnull(w);
		json_tokener *tok = eng_json_tokener(128);
		json_object *v = json_tokener_parse_ex(tok, w, (int)wn);
		ck_assert_msg(v != NULL, "%s", w);
		json_tokener_free(tok);
		free(w);
		json_object *a = NULL;
		if (cases[i].key) {
			ck_assert(json_object_object_get_ex(v, cases[i].key, &a));
		} else {
			json_object *l = NULL;
			ck_assert(json_object_object_get_ex(v, "a", &l));
			a = json_object_array_get_idx(l, 1);
		}
		ck_assert_msg(json_object_is_type(a, json_type_double), "%s", t);
		if (cases[i].key)
			ck_assert(json_object_get_double(a) == cases[i].want);
		else
			ck_assert(json_object_get_double(a) > 1.2e29);
		json_object *b = NULL;
		if (json_object_object_get_ex(v, "b", &b))
			ck_assert_str_eq(json_object_get_string(b), "18446744073709551616");
		json_object_put(v);
	}
	/* A request id is not widened: it stays refused. */
	const char *t = "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"x\","
			"\"params\":{\"n\":18446744073709551616}}";
	size_t n;
	char *w = eng_json_widen(t, strlen(t), &n);
	ck_assert_ptr_nonnull(w);
	ck_assert_str_eq(w, "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"x\","
			    "\"params\":{\"n\":18446744073709551616.0}}");
	ck_assert_uint_eq(n, strlen(w));
	free(w);
}
END_TEST

/* Only JSON leaves: a tree holding NaN or an infinity anywhere is not
 * serialised (EDOM), and eng_json_finite finds it at any depth. */
START_TEST(json_out_refuses_nonfinite)
{
	double bad[] = { 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0 };
	for (size_t i = 0; i < 3; i++) {
		json_object *o = json_object_new_object();
		json_object *l = json_object_new_array();
		json_object_array_add(l, json_object_new_int(1));
		json_object_array_add(l, json_object_new_double(bad[i]));
		json_object_object_add(o, "ok", json_object_new_double(1.5));
		json_object_object_add(o, "l", l);
		ck_assert_int_eq(eng_json_finite(o), 0);
		errno = 0;
		size_t n = 7;
		ck_assert_ptr_null(eng_json_dup(o, &n));
		ck_assert_int_eq(errno, EDOM);
		ck_assert_ptr_null(eng_json_text(o, NULL));
		json_object_put(o);
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "x", json_object_new_double(1e308));
	ck_assert_int_eq(eng_json_finite(o), 1);
	char *t = eng_json_dup(o, NULL);
	ck_assert_ptr_nonnull(t);
	free(t);
	json_object_put(o);
}
END_TEST

/* What the fast path takes must be exactly what json-c (strict) reads as
 * that envelope: the same method, the id written back as the scan saw it,
 * params an object without "_meta". */
static void envelope_agrees_with_jsonc(const char *text, size_t len, const eng_envelope *env)
{
	json_tokener *tok = json_tokener_new_ex(128);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	json_object *v = json_tokener_parse_ex(tok, text, (int)len);
	ck_assert_msg(v && json_tokener_get_error(tok) == json_tokener_success,
		      "scan took what json-c refuses: %.*s", (int)len, text);
	ck_assert_msg(json_object_is_type(v, json_type_object), "%.*s", (int)len, text);
	json_object *m = NULL, *id = NULL, *j = NULL, *params = NULL;
	ck_assert(json_object_object_get_ex(v, "method", &m));
	ck_assert_str_eq(json_object_get_string(m), env->method);
	ck_assert(json_object_object_get_ex(v, "jsonrpc", &j));
	ck_assert_str_eq(json_object_get_string(j), "2.0");
	ck_assert(json_object_object_get_ex(v, "id", &id));
	ck_assert(json_object_is_type(id, env->id_is_string ? json_type_string : json_type_int));
	char *key = eng_json_dup(id, NULL);
	ck_assert_msg(strlen(key) == env->id_len && memcmp(key, env->id, env->id_len) == 0,
		      "id %s read as %.*s", key, (int)env->id_len, env->id);
	free(key);
	if (json_object_object_get_ex(v, "params", &params)) {
		ck_assert(json_object_is_type(params, json_type_object));
		ck_assert(!json_object_object_get_ex(params, "_meta", NULL));
	}
	ck_assert_int_eq(json_object_object_length(v), 3 + (params != NULL));
	json_object_put(v);
	json_tokener_free(tok);
}

START_TEST(json_envelope_takes_only_plain_requests)
{
	static const struct {
		const char *text;
		int want;
	} cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
		  "\"arguments\":{\"text\":\"h\\u00e9\\n\",\"n\":[1,-2.5,true,null,{}]}}}", 1 },
		{ " {\"method\":\"ping\", \"id\":\"a b\", \"jsonrpc\":\"2.0\"}\r", 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":-42,\"method\":\"x\",\"params\":{}}", 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0041\",\"method\":\"x\"}", 0 },  /* escaped id */
		{ "{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"x\"}", 0 },         /* reads as 0 */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"method\":\"x\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", 0 },                   /* notification */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"x\"}", 0 },  /* duplicate */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"extra\":1}", 0 },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\\/y\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"_meta\":{}}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"\\u005fmeta\":{}}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":{\"_meta\":1}}}", 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":1e3}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\\ud83d\\ude00\"}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":01}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":1,}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":tru}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\\x\"}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"} x", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"", 0 },
		{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		eng_envelope env;
		size_t n = strlen(cases[i].text);
		int got = eng_json_envelope(cases[i].text, n, 128, &env);
		ck_assert_msg(got == cases[i].want, "%s: got %d", cases[i].text, got);
		if (got)
			envelope_agrees_with_jsonc(cases[i].text, n, &env);
	}
	/* Nesting: the scan stops well before json-c's limit. */
	char deep[512];
	int k = snprintf(deep, sizeof deep, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":");
	for (int d = 0; d < 40; d++)
		deep[k++] = '[';
	for (int d = 0; d < 40; d++)
		deep[k++] = ']';
	k += snprintf(deep + k, sizeof deep - (size_t)k, "}}");
	eng_envelope env;
	ck_assert_int_eq(eng_json_envelope(deep, (size_t)k, 128, &env), 1);
	ck_assert_int_eq(eng_json_envelope(deep, (size_t)k, 40, &env), 0);

	/* Mutations of a valid request: whatever the scan takes, json-c must
	 * read the same way. */
	static const char base[] =
		"{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"echo\",\"arguments\":{\"text\":\"a\\\"b\",\"v\":[0,-1.5,true,null]}}}";
	static const char alphabet[] = "{}[]\":,\\ -0123456789.eEtrufalsn_metaidx\x01";
	unsigned seed = 12345;
	int taken = 0;
	for (int iter = 0; iter < 20000; iter++) {
		char buf[sizeof base + 8];
		size_t n = sizeof base - 1;
		memcpy(buf, base, n);
		int edits = 1 + iter % 3;
		for (int e = 0; e < edits; e++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % n;
			seed = seed * 1103515245u + 12345u;
			char c = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
			seed = seed * 1103515245u + 12345u;
			switch ((seed >> 8) % 3) {
			case 0: buf[at] = c; break;                                 /* replace */
			case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break; /* delete */
			default:                                                     /* insert */
				if (n < sizeof buf - 1) {
					memmove(buf + at + 1, buf + at, n - at);
					buf[at] = c;
					n++;
				}
			}
		}
		if (eng_json_envelope(buf, n, 128, &env)) {
			taken++;
			envelope_agrees_with_jsonc(buf, n, &env);
		}
	}
	ck_assert_msg(taken > 100, "only %d mutations taken: the check tests nothing", taken);
}
END_TEST

START_TEST(json_parse_keeps_the_thread_locale)
{
	/* eng_json_parse_ex parses from the "C" locale object and puts the
	 * thread's locale back: a handler's own locale (global or set with
	 * uselocale) is what it finds after every parse, and numbers parse
	 * the same. */
	json_tokener *tok = eng_json_tokener(32);
	ck_assert_ptr_nonnull(tok);
	locale_t mine = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
	if (!mine)
		mine = newlocale(LC_CTYPE_MASK, "POSIX", (locale_t)0);
	ck_assert_ptr_nonnull(mine);
	locale_t settings[] = { LC_GLOBAL_LOCALE, mine };
	for (int i = 0; i < 2; i++) {
		uselocale(settings[i]);
		for (int k = 0; k < 3; k++) {
			json_tokener_reset(tok);
			const char *text = "{\"a\":[1.5,-2e3,7]}";
			json_object *v = eng_json_parse_ex(tok, text, (int)strlen(text));
			ck_assert_ptr_nonnull(v);
			ck_assert(uselocale((locale_t)0) == settings[i]);
			json_object *a = NULL;
			ck_assert(json_object_object_get_ex(v, "a", &a));
			ck_assert(json_object_get_double(json_object_array_get_idx(a, 0)) == 1.5);
			ck_assert(json_object_get_double(json_object_array_get_idx(a, 1)) == -2000.0);
			ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(a, 2)), 7);
			json_object_put(v);
		}
	}
	uselocale(LC_GLOBAL_LOCALE);
	freelocale(mine);
	json_tokener_free(tok);
}
END_TEST


/* ---- eng_call: outbound requests with their own token ------------------- */

typedef struct test_call {
	eng_call base;
	_Atomic int settles, answered, failed, released;
} test_call;

static void tc_settle(eng_call *c, eng_pending *p, int state, json_object *answer)
{
	test_call *t = (test_call *)c;
	(void)p;
	atomic_fetch_add(&t->settles, 1);
	if (state == ENG_PEND_ANSWERED) {
		ck_assert_ptr_nonnull(answer);
		atomic_fetch_add(&t->answered, 1);
	} else {
		ck_assert_ptr_null(answer);
		atomic_fetch_add(&t->failed, 1);
	}
	json_object_put(answer);
}

static void tc_release(eng_call *c)
{
	atomic_fetch_add(&((test_call *)c)->released, 1);
}

START_TEST(call_entries_settle_through_the_hook)
{
	eng_pending_table pt;
	ck_assert_int_eq(eng_pending_init(&pt, 8), MCP_OK);
	test_call t = { 0 };
	ck_assert_int_eq(eng_call_init(&t.base, tc_settle, tc_release), MCP_OK);
	eng_pending *a, *b, *c;
	ck_assert_int_eq(eng_pending_add_call(&pt, &t.base, &a), MCP_OK);
	ck_assert_int_eq(eng_pending_add_call(&pt, &t.base, &b), MCP_OK);
	ck_assert_int_eq(eng_pending_add_call(&pt, &t.base, &c), MCP_OK);
	ck_assert_ptr_eq(a->tok, &t.base.token);
	ck_assert(eng_pending_waiting(&pt, a->id));
	/* An answer reaches the hook, not the entry; a second is unmatched. */
	ck_assert_int_eq(eng_pending_answer(&pt, a->id, json_object_new_object()), 1);
	ck_assert_int_eq(eng_pending_answer(&pt, a->id, json_object_new_object()), 0);
	ck_assert(!eng_pending_waiting(&pt, a->id));
	ck_assert_ptr_null(a->answer);
	ck_assert_int_eq(a->state, ENG_PEND_ANSWERED);
	/* The caller's own removal runs no hook. */
	eng_pending_remove(&pt, b);
	ck_assert_int_eq(atomic_load(&t.settles), 1);
	/* The shutdown's snapshot fails what is left, through the hook. */
	ck_assert_uint_eq(eng_pending_fail_all(&pt), 1);
	ck_assert_int_eq(atomic_load(&t.failed), 1);
	ck_assert_int_eq(c->state, ENG_PEND_FAILED);
	ck_assert_int_eq(eng_pending_add_call(&pt, &t.base, &b), MCP_ECLOSED);
	/* Entries hold the call: released only after the last one goes. */
	eng_pending_unref(a);
	eng_pending_unref(b);
	eng_call_unref(&t.base);
	ck_assert_int_eq(atomic_load(&t.released), 0);
	eng_pending_unref(c);
	ck_assert_int_eq(atomic_load(&t.released), 1);
	eng_pending_destroy(&pt);
}
END_TEST

typedef struct race_arg {
	eng_pending_table *pt;
	eng_pending *p;
	pthread_barrier_t *bar;
	int removed;
} race_arg;

static void *race_answer(void *arg)
{
	race_arg *a = arg;
	pthread_barrier_wait(a->bar);
	eng_pending_answer(a->pt, a->p->id, json_object_new_object());
	return NULL;
}

static void *race_remove(void *arg)
{
	race_arg *a = arg;
	pthread_barrier_wait(a->bar);
	/* What a cancelling client does: a removal that finds the entry
	 * means no settle will come. */
	a->removed = eng_pending_remove(a->pt, a->p);
	return NULL;
}

/* An answer racing the waiter's own removal (a cancel), and the shutdown's
 * snapshot racing both: each entry ends exactly once. */
START_TEST(call_answer_races_removal_and_fail_all)
{
	for (int round = 0; round < 2000; round++) {
		eng_pending_table pt;
		eng_pending_init(&pt, 8);
		test_call t = { 0 };
		eng_call_init(&t.base, tc_settle, tc_release);
		eng_pending *p;
		ck_assert_int_eq(eng_pending_add_call(&pt, &t.base, &p), MCP_OK);
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, 2);
		race_arg a = { &pt, p, &bar, 0 }, b = { &pt, p, &bar, 0 };
		pthread_t th1, th2;
		pthread_create(&th1, NULL, race_answer, &a);
		pthread_create(&th2, NULL, race_remove, &b);
		if (round % 3 == 0)
			eng_pending_fail_all(&pt);
		pthread_join(th1, NULL);
		pthread_join(th2, NULL);
		pthread_barrier_destroy(&bar);
		int settles = atomic_load(&t.settles);
		ck_assert_int_eq(settles + b.removed, 1);
		ck_assert_uint_eq(eng_pending_count(&pt), 0);
		eng_pending_unref(p);
		eng_call_unref(&t.base);
		ck_assert_int_eq(atomic_load(&t.released), 1);
		eng_pending_destroy(&pt);
	}
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("tables");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, idtable_put_get_del_grow);
	tcase_add_test(tc, pending_answer_unknown_duplicate);
	tcase_add_test(tc, fail_all_races_self_removal);
	tcase_add_test(tc, call_entries_settle_through_the_hook);
	tcase_add_test(tc, call_answer_races_removal_and_fail_all);
	tcase_add_test(tc, json_dup_matches_jsonc);
	tcase_add_test(tc, json_precheck_refuses_what_jsonc_accepts);
	tcase_add_test(tc, json_precheck_finds_nul_in_member_names);
	tcase_add_test(tc, json_precheck_bounds_values);
	tcase_add_test(tc, json_big_integers_read_as_doubles);
	tcase_add_test(tc, json_out_refuses_nonfinite);
	tcase_add_test(tc, json_envelope_takes_only_plain_requests);
	tcase_add_test(tc, json_parse_keeps_the_thread_locale);
	suite_add_tcase(s, tc);
	return s;
}
