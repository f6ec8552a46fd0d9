/*
 * test_registry.c - unit tests of api/registry.c: adding, finding,
 * matching, removing and paging counted entries, an entry outliving its
 * removal while a reference holds it, and the list_changed notifications
 * that adding and removing send (only to connections that are ready and
 * were promised them at initialize).
 */
#include "runner.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

/* ---- the container ------------------------------------------------------------------ */

static int destroyed;

typedef struct item {
	api_entry base;
	int n;
} item;

static void item_destroy(api_entry *e)
{
	destroyed++;
	free(e);
}

static api_entry *item_new(const char *key, int n)
{
	item *it = calloc(1, sizeof *it);
	ck_assert_ptr_nonnull(it);
	ck_assert_int_eq(api_entry_init(&it->base, key, item_destroy), MCP_OK);
	it->n = n;
	return &it->base;
}

static json_object *describe(api_entry *e, int rev)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s@%d", e->key, rev);
	return json_object_new_string(buf);
}

static int odd(api_entry *e, void *arg)
{
	(void)arg;
	return ((item *)e)->n % 2 == 1;
}

static int is_n(api_entry *e, void *arg)
{
	return ((item *)e)->n == *(int *)arg;
}

/* The keys of a page, comma-separated, for comparing. */
static char *keys(json_object *arr)
{
	static char buf[256];
	buf[0] = 0;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, json_object_get_string(json_object_array_get_idx(arr, i)));
	}
	return buf;
}

START_TEST(add_find_remove)
{
	mcp_server *srv = mcp_server_new("t", "1");
	api_registry *r = &srv->tools;
	destroyed = 0;
	ck_assert_int_eq(api_registry_add(srv, r, item_new("a", 1)), MCP_OK);
	ck_assert_int_eq(api_registry_add(srv, r, item_new("b", 2)), MCP_OK);
	/* A key is unique: the second entry is refused and released. */
	ck_assert_int_eq(api_registry_add(srv, r, item_new("a", 3)), MCP_EEXIST);
	ck_assert_int_eq(destroyed, 1);
	ck_assert_uint_eq(api_registry_count(srv, r), 2);

	api_entry *a = api_registry_find(srv, r, "a");
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(((item *)a)->n, 1);
	ck_assert_ptr_null(api_registry_find(srv, r, "c"));
	ck_assert_ptr_null(api_registry_find(srv, &srv->prompts, "a"));
	int two = 2;
	api_entry *b = api_registry_match(srv, r, is_n, &two);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(b->key, "b");
	api_entry_unref(b);

	/* Removed while a call holds it: gone from the registry, alive until
	 * the holder lets go. */
	ck_assert_int_eq(api_registry_remove(srv, r, "a"), MCP_OK);
	ck_assert_int_eq(api_registry_remove(srv, r, "a"), MCP_ENOENT);
	ck_assert_ptr_null(api_registry_find(srv, r, "a"));
	ck_assert_int_eq(destroyed, 1);
	ck_assert_str_eq(a->key, "a");
	api_entry_unref(a);
	ck_assert_int_eq(destroyed, 2);
	/* The key is free again. */
	ck_assert_int_eq(api_registry_add(srv, r, item_new("a", 5)), MCP_OK);
	ck_assert_uint_eq(api_registry_count(srv, r), 2);
	mcp_server_free(srv); /* clears the registries */
	ck_assert_int_eq(destroyed, 4);
}
END_TEST

START_TEST(pages_in_registration_order)
{
	mcp_server *srv = mcp_server_new("t", "1");
	api_registry *r = &srv->prompts;
	char key[8];
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof key, "k%d", i);
		ck_assert_int_eq(api_registry_add(srv, r, item_new(key, i)), MCP_OK);
	}
	size_t total = 0;
	json_object *p = api_registry_page(srv, r, 1, 2, describe, 7, &total);
	ck_assert_str_eq(keys(p), "k1@7,k2@7");
	ck_assert_uint_eq(total, 5);
	json_object_put(p);
	p = api_registry_page(srv, r, 4, 100, describe, 0, &total);
	ck_assert_str_eq(keys(p), "k4@0");
	json_object_put(p);
	p = api_registry_page(srv, r, 9, 2, describe, 0, &total);
	ck_assert_int_eq((int)json_object_array_length(p), 0);
	json_object_put(p);

	/* Filtered: odd ones only, two at a time; the next page starts at the
	 * next index kept, and there is none after the last one. */
	size_t next = 99;
	p = api_registry_page_if(srv, r, 0, 1, describe, 0, odd, NULL, &next);
	ck_assert_str_eq(keys(p), "k1@0");
	ck_assert_uint_eq(next, 3);
	json_object_put(p);
	p = api_registry_page_if(srv, r, next, 1, describe, 0, odd, NULL, &next);
	ck_assert_str_eq(keys(p), "k3@0");
	ck_assert_uint_eq(next, 0); /* k4 is not kept: nothing left */
	json_object_put(p);
	p = api_registry_page_if(srv, r, 0, 10, describe, 0, odd, NULL, &next);
	ck_assert_str_eq(keys(p), "k1@0,k3@0");
	ck_assert_uint_eq(next, 0);
	json_object_put(p);
	mcp_server_free(srv);
}
END_TEST

/* ---- list_changed, over an in-process connection --------------------------------------- */

static mcp_memconn *conn;

static void send_line(const char *text)
{
	ck_assert_int_eq(mcp_memconn_send(conn, text, strlen(text)), MCP_OK);
}

/* What the server writes until the answer to `id`, the methods of the
 * notifications before it comma-separated. */
static const char *notes_until(int id)
{
	static char buf[512];
	buf[0] = 0;
	for (;;) {
		char *line;
		size_t len;
		ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
		json_object *m = json_tokener_parse(line);
		free(line);
		const char *method = api_get_str(m, "method");
		json_object *jid = api_get(m, "id");
		if (method && !jid) {
			if (buf[0])
				strcat(buf, ",");
			strcat(buf, method);
		}
		int done = !method && jid && json_object_get_int(jid) == id;
		json_object_put(m);
		if (done)
			return buf;
	}
}

static void ping(int id)
{
	char buf[64];
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", id);
	send_line(buf);
}

static int tool_fn(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx, (void)args, (void)user;
	return mcp_result_add_text(out, "ok");
}

static int prompt_fn(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx, (void)args, (void)user;
	return mcp_prompt_add_text(out, MCP_ROLE_USER, "p");
}

START_TEST(list_changed_to_ready_connections_promised_it)
{
	mcp_server *srv = mcp_server_new("t", "1");
	/* Tools exist at initialize: the connection is promised tools'
	 * listChanged, not prompts'. */
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "one", .fn = tool_fn }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	send_line("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		  "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	ck_assert_str_eq(notes_until(1), "");
	/* Not ready before notifications/initialized: nothing is sent. */
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "two", .fn = tool_fn }),
			 MCP_OK);
	ping(2);
	ck_assert_str_eq(notes_until(2), "");
	send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	/* The reader has taken it once it answers what follows it. */
	ping(4);
	ck_assert_str_eq(notes_until(4), "");
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "three", .fn = tool_fn }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_remove_tool(srv, "two"), MCP_OK);
	/* A failed add or remove changes nothing and says nothing. */
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "three", .fn = tool_fn }),
			 MCP_EEXIST);
	ck_assert_int_eq(mcp_server_remove_tool(srv, "two"), MCP_ENOENT);
	/* Prompts were not promised. */
	ck_assert_int_eq(mcp_server_add_prompt(srv, &(mcp_prompt){ MCP_PROMPT_INIT, .name = "p", .get = prompt_fn }),
			 MCP_OK);
	ping(3);
	ck_assert_str_eq(notes_until(3),
			 "notifications/tools/list_changed,notifications/tools/list_changed");
	mcp_memconn_close(conn);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, add_find_remove);
	tcase_add_test(tc, pages_in_registration_order);
	tcase_add_test(tc, list_changed_to_ready_connections_promised_it);
	suite_add_tcase(s, tc);
	return s;
}

