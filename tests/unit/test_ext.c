/*
 * test_ext.c - in-process tests of the extensions' rules: W3C trace
 * context formats, the SKILL.md frontmatter as JSON (what a YAML 1.2
 * parser reads, and what is refused), the rules of skills built in memory
 * and read from a directory (escapes, devices, limits), what skills/list,
 * skills/get and resources/directory/read answer, and the MCP Apps
 * registration rules.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "api/internal.h"
#include "tests/unit/runner.h"

/* ---- trace context ------------------------------------------------------------ */

START_TEST(traceparent_format)
{
	const char *good[] = {
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"00-00000000000000000000000000000001-0000000000000001-ff",
	};
	const char *bad[] = {
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        /* no flags */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",    /* trailing */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",     /* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     /* zero parent */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     /* upper case */
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     /* version ff */
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     /* unknown */
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(api_trace_valid_parent(good[i]), "refused %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!api_trace_valid_parent(bad[i]), "accepted %s", bad[i]);
	ck_assert(!api_trace_valid_parent(NULL));
}
END_TEST

START_TEST(tracestate_format)
{
	const char *good[] = {
		"vendor=value",
		"a=1,b=2",
		"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		" a=1 , b=2 ",
		"tenant@system=x",
		"a=1,,b=2",                      /* empty members are allowed */
		"k_-*/9=v with spaces",
	};
	const char *bad[] = {
		"",
		",",
		"A=1",                           /* keys are lower case */
		"a=1,a=2",                       /* a key twice */
		"a",                             /* no value */
		"a=",                            /* empty value */
		"a=x,y",                         /* ',' in a value: a bare "y" */
		"a=v=w",                         /* '=' in a value */
		"a=\x01",
		"@sys=v",                        /* empty tenant */
		"t@=v",                          /* empty system */
		"t@Sys=v",                       /* system starts lower case */
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(api_trace_valid_state(good[i]), "refused %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!api_trace_valid_state(bad[i]), "accepted %s", bad[i]);
	/* 33 members, or more than 512 bytes, are too many. */
	char many[1024] = "";
	for (int i = 0; i < 33; i++) {
		char m[16];
		snprintf(m, sizeof m, "%sk%d=v", i ? "," : "", i);
		strcat(many, m);
	}
	ck_assert(!api_trace_valid_state(many));
	char *end = strrchr(many, ',');
	*end = 0; /* 32 members */
	ck_assert(api_trace_valid_state(many));
	char longv[600];
	memset(longv, 'x', sizeof longv - 1);
	longv[0] = 'k';
	longv[1] = '=';
	longv[sizeof longv - 1] = 0;
	ck_assert(!api_trace_valid_state(longv));
}
END_TEST

START_TEST(trace_from_headers)
{
	json_object *m = json_tokener_parse("{\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}");
	api_trace_from_headers(m, " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
			       "a=1");
	json_object *meta = api_get(api_get(m, "params"), "_meta");
	ck_assert_str_eq(json_object_get_string(api_get(meta, "traceparent")),
			 "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
	ck_assert_str_eq(json_object_get_string(api_get(meta, "tracestate")), "a=1");
	json_object_put(m);
	/* _meta wins; invalid headers add nothing. */
	m = json_tokener_parse("{\"params\":{\"_meta\":{\"traceparent\":\"mine\"}}}");
	api_trace_from_headers(m, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL);
	ck_assert_str_eq(json_object_get_string(api_get(api_get(api_get(m, "params"), "_meta"),
						       "traceparent")),
			 "mine");
	json_object_put(m);
	m = json_tokener_parse("{\"params\":{}}");
	api_trace_from_headers(m, "00-zz", "a=1");
	ck_assert_ptr_null(api_get(api_get(m, "params"), "_meta"));
	json_object_put(m);
}
END_TEST

/* ---- frontmatter ----------------------------------------------------------------- */

static json_object *fm(const char *text, char *why)
{
	return api_skill_parse_frontmatter(text, strlen(text), NULL, why, 256);
}

START_TEST(frontmatter_types_as_yaml_core_schema)
{
	char why[256];
	json_object *o = fm("---\n"
			    "name: x\n"
			    "description: >-\n  folded\n  text\n"
			    "n: 12\n"
			    "neg: -3\n"
			    "hex: 0x1F\n"
			    "oct: 0o17\n"
			    "f: 1.5e3\n"
			    "t: true\n"
			    "F: False\n"
			    "nil: ~\n"
			    "empty:\n"
			    "q: '12'\n"
			    "dq: \"yes\"\n"
			    "yes: yes\n"
			    "ver: 1.2.3\n"
			    "list: [a, 2, null]\n"
			    "map: {k: v}\n"
			    "block: |\n  line one\n  line two\n"
			    "---\nbody\n",
			    why);
	ck_assert_msg(o != NULL, "%s", why);
	ck_assert_str_eq(json_object_get_string(api_get(o, "description")), "folded text");
	ck_assert(json_object_is_type(api_get(o, "n"), json_type_int));
	ck_assert_int_eq(json_object_get_int64(api_get(o, "n")), 12);
	ck_assert_int_eq(json_object_get_int64(api_get(o, "neg")), -3);
	ck_assert_int_eq(json_object_get_int64(api_get(o, "hex")), 31);
	ck_assert_int_eq(json_object_get_int64(api_get(o, "oct")), 15);
	ck_assert(json_object_is_type(api_get(o, "f"), json_type_double));
	ck_assert(json_object_get_double(api_get(o, "f")) == 1500.0);
	ck_assert(json_object_is_type(api_get(o, "t"), json_type_boolean));
	ck_assert(!json_object_get_boolean(api_get(o, "F")));
	ck_assert(json_object_object_get_ex(o, "nil", NULL) && !api_get(o, "nil"));
	ck_assert(json_object_object_get_ex(o, "empty", NULL) && !api_get(o, "empty"));
	ck_assert(json_object_is_type(api_get(o, "q"), json_type_string));
	ck_assert_str_eq(json_object_get_string(api_get(o, "dq")), "yes");
	/* YAML 1.2: "yes" is a string, not a boolean. */
	ck_assert(json_object_is_type(api_get(o, "yes"), json_type_string));
	ck_assert(json_object_is_type(api_get(o, "ver"), json_type_string));
	json_object *l = api_get(o, "list");
	ck_assert_int_eq((int)json_object_array_length(l), 3);
	ck_assert(json_object_is_type(json_object_array_get_idx(l, 1), json_type_int));
	ck_assert_ptr_null(json_object_array_get_idx(l, 2));
	ck_assert_str_eq(json_object_get_string(api_get(api_get(o, "map"), "k")), "v");
	ck_assert_str_eq(json_object_get_string(api_get(o, "block")), "line one\nline two\n");
	json_object_put(o);
}
END_TEST

START_TEST(frontmatter_refusals)
{
	const char *bad[] = {
		"name: x\n",                                   /* no opening line */
		"---\nname: x\n",                              /* no closing line */
		"---\n- a\n- b\n---\n",                        /* not a mapping */
		"---\nname: x\nname: y\n---\n",                /* a key twice */
		"---\na: &x 1\nb: *x\n---\n",                  /* an alias */
		"---\na: !custom 1\n---\n",                    /* a foreign tag */
		"---\na: .inf\n---\n",                         /* no JSON number */
		"---\n? [a, b]\n: c\n---\n",                   /* a non-string key */
		"---\na: !!int notanumber\n---\n",             /* tag and value disagree */
		"---\na: [unclosed\n---\n",                    /* malformed */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char why[256] = "";
		json_object *o = fm(bad[i], why);
		ck_assert_msg(o == NULL, "accepted: %s", bad[i]);
		ck_assert_msg(why[0] != 0, "no reason for: %s", bad[i]);
	}
	/* A byte order mark and CRLF are fine. */
	char why[256];
	json_object *o = fm("\xef\xbb\xbf---\r\nname: x\r\ndescription: d\r\n---\r\n", why);
	ck_assert_msg(o != NULL, "%s", why);
	ck_assert_str_eq(json_object_get_string(api_get(o, "description")), "d");
	json_object_put(o);
}
END_TEST

/* ---- skills ---------------------------------------------------------------------- */

#define MD(name, desc) "---\nname: " name "\ndescription: " desc "\n---\nBody.\n"

START_TEST(skill_rules)
{
	char why[256];
	const char *cases[][2] = {
		{ NULL, "---\nname: Bad\ndescription: d\n---\n" },
		{ NULL, "---\nname: a--b\ndescription: d\n---\n" },
		{ NULL, "---\nname: -a\ndescription: d\n---\n" },
		{ NULL, "---\nname: ok\n---\n" },
		{ NULL, "---\nname: ok\ndescription: ''\n---\n" },
		{ "a/../b", MD("ok", "d") },
		{ "a//b", MD("ok", "d") },
		{ "a b", MD("ok", "d") },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		why[0] = 0;
		mcp_skill *s = mcp_skill_new(cases[i][0], cases[i][1], strlen(cases[i][1]), why,
					     sizeof why);
		ck_assert_msg(s == NULL, "accepted case %zu", i);
		ck_assert_msg(why[0], "no reason for case %zu", i);
	}
	mcp_skill *s = mcp_skill_new("acme/billing", MD("refunds", "d"), strlen(MD("refunds", "d")),
				     why, sizeof why);
	ck_assert_msg(s != NULL, "%s", why);
	ck_assert_int_eq(mcp_skill_add_file(s, "ok/file.md", "x", 1, NULL), MCP_OK);
	ck_assert_int_eq(mcp_skill_add_file(s, "ok/file.md", "y", 1, NULL), MCP_EEXIST);
	ck_assert_int_eq(mcp_skill_add_file(s, "SKILL.md", "y", 1, NULL), MCP_EEXIST);
	const char *paths[] = { "../x", "/abs", "a/./b", "a//b", ".hidden", "a/.git/x", "", "a\\b" };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		ck_assert_msg(mcp_skill_add_file(s, paths[i], "x", 1, NULL) == MCP_EINVAL,
			      "accepted path %s", paths[i]);
	/* The limits SEP-2640 sets: 512 files, 16 MiB. */
	char name[32];
	int rc = MCP_OK, n = 2;
	while (rc == MCP_OK) {
		snprintf(name, sizeof name, "f/%d.txt", n);
		rc = mcp_skill_add_file(s, name, "x", 1, NULL);
		n += rc == MCP_OK;
	}
	ck_assert_int_eq(rc, MCP_EBUSY);
	ck_assert_int_eq(n, 512);
	mcp_skill_free(s);
	s = mcp_skill_new(NULL, MD("big", "d"), strlen(MD("big", "d")), why, sizeof why);
	size_t big = (16u << 20) - 100;
	char *data = calloc(1, big);
	ck_assert_int_eq(mcp_skill_add_file(s, "big.bin", data, big, NULL), MCP_OK);
	ck_assert_int_eq(mcp_skill_add_file(s, "more.bin", data, 200, NULL), MCP_EBUSY);
	free(data);
	mcp_skill_free(s);
}
END_TEST

/* A scratch directory tree; removed by rm -rf at the end. */
static char scratch[64];

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", scratch, rel);
	for (char *q = p + strlen(scratch) + 1; (q = strchr(q, '/')); q++) {
		*q = 0;
		mkdir(p, 0755);
		*q = '/';
	}
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_scratch(void)
{
	snprintf(scratch, sizeof scratch, "/tmp/test_ext.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static void drop_scratch(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
	ck_assert_int_eq(system(cmd), 0);
}

static int registered(mcp_server *srv, const char *uri)
{
	api_entry *e = api_registry_find(srv, &srv->resources, uri);
	if (e)
		api_entry_unref(e);
	return e != NULL;
}

static int add_dir(mcp_server *srv, const char *rel, char *why)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", scratch, rel);
	return mcp_server_add_skill_dir(srv, p, NULL, why, 256);
}

START_TEST(skill_directories_are_read_strictly)
{
	make_scratch();
	mcp_server *srv = mcp_server_new("t", "1");
	char why[256], p[512], q[512];
	put("good/SKILL.md", MD("good", "fine"));
	put("good/ref/a.md", "a");
	put("good/.git/config", "hidden: skipped");
	put("good/ref/inside.md", "target");
	snprintf(p, sizeof p, "%s/good/ref/inside.md", scratch);
	snprintf(q, sizeof q, "%s/good/link.md", scratch);
	ck_assert_int_eq(symlink(p, q), 0); /* a link inside: followed */
	ck_assert_int_eq(add_dir(srv, "good", why), MCP_OK);

	put("out/SKILL.md", MD("out", "escapes"));
	put("secret.txt", "secret");
	snprintf(p, sizeof p, "%s/secret.txt", scratch);
	snprintf(q, sizeof q, "%s/out/leak.txt", scratch);
	ck_assert_int_eq(symlink(p, q), 0);
	ck_assert_int_eq(add_dir(srv, "out", why), MCP_EINVAL);
	ck_assert_msg(strstr(why, "leads out"), "%s", why);

	put("fifo/SKILL.md", MD("fifo", "has a FIFO"));
	snprintf(p, sizeof p, "%s/fifo/pipe", scratch);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	ck_assert_int_eq(add_dir(srv, "fifo", why), MCP_EINVAL);
	ck_assert_msg(strstr(why, "FIFO"), "%s", why);

	put("named/SKILL.md", MD("other", "name differs from its directory"));
	ck_assert_int_eq(add_dir(srv, "named", why), MCP_EINVAL);
	ck_assert_msg(strstr(why, "differs"), "%s", why);

	put("nomd/readme.txt", "no SKILL.md");
	ck_assert_int_eq(add_dir(srv, "nomd", why), MCP_EINVAL);

	/* The good one is served with its files, the hidden one left out, the
	 * link as the file it points to. */
	ck_assert_int_eq(srv->nskills, 1);
	ck_assert(registered(srv, "skill://good/SKILL.md"));
	ck_assert(registered(srv, "skill://good/ref/a.md"));
	ck_assert(!registered(srv, "skill://good/.git/config"));
	api_resource_entry *link =
		(api_resource_entry *)api_registry_find(srv, &srv->resources, "skill://good/link.md");
	ck_assert_ptr_nonnull(link);
	ck_assert_int_eq((int)link->size, 6); /* "target" */
	api_entry_unref(&link->base);
	ck_assert(!registered(srv, "skill://out/SKILL.md"));
	ck_assert(!registered(srv, "skill://fifo/SKILL.md"));
	ck_assert_int_eq(mcp_server_add_skill_dir(srv, p, NULL, NULL, 0), MCP_EINVAL);
	mcp_server_free(srv);
	drop_scratch();
}
END_TEST

START_TEST(skills_tree_prefixes)
{
	make_scratch();
	mcp_server *srv = mcp_server_new("t", "1");
	char why[256];
	put("acme/billing/refunds/SKILL.md", MD("refunds", "r"));
	put("acme/billing/refunds/nested/SKILL.md", MD("nested", "part of refunds"));
	put("git-workflow/SKILL.md", MD("git-workflow", "g"));
	int n = 0;
	ck_assert_int_eq(mcp_server_add_skills_tree(srv, scratch, "org", &n, why, sizeof why),
			 MCP_OK);
	ck_assert_int_eq(n, 2);
	ck_assert(registered(srv, "skill://org/acme/billing/refunds/SKILL.md"));
	ck_assert(registered(srv, "skill://org/git-workflow/SKILL.md"));
	/* A nested SKILL.md is a file of the skill that holds it. */
	ck_assert(registered(srv, "skill://org/acme/billing/refunds/nested/SKILL.md"));
	/* Removing one takes its resources with it. */
	ck_assert_int_eq(mcp_server_remove_skill(srv, "skill://org/git-workflow/SKILL.md"), MCP_OK);
	ck_assert_int_eq(mcp_server_remove_skill(srv, "skill://org/git-workflow/SKILL.md"),
			 MCP_ENOENT);
	ck_assert(!registered(srv, "skill://org/git-workflow/SKILL.md"));
	mcp_server_free(srv);
	drop_scratch();
}
END_TEST

/* ---- over an in-process connection ------------------------------------------------ */

static mcp_memconn *conn;

static json_object *rpc(const char *method, const char *params)
{
	static int next_id = 1;
	char buf[4096];
	int id = next_id++;
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
		 id, method, params);
	ck_assert_int_eq(mcp_memconn_send(conn, buf, strlen(buf)), MCP_OK);
	for (;;) {
		char *line;
		size_t len;
		ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
		json_object *m = json_tokener_parse(line);
		free(line);
		json_object *jid = api_get(m, "id");
		if (jid && !api_get(m, "method") && json_object_get_int(jid) == id)
			return m;
		json_object_put(m);
	}
}

#define MODERN_META                                                                            \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","               \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

START_TEST(skills_methods_answer_what_is_registered)
{
	mcp_server *srv = mcp_server_new("t", "1");
	mcp_server_set_page_size(srv, 1);
	char why[256];
	const char *md = "---\nname: alpha\ndescription: first\nmetadata:\n  v: \"1\"\n---\nA\n";
	mcp_skill *s = mcp_skill_new(NULL, md, strlen(md), why, sizeof why);
	ck_assert_int_eq(mcp_skill_add_file(s, "docs/a b.md", "hello", 5, NULL), MCP_OK);
	ck_assert_int_eq(mcp_skill_add_file(s, "docs/deep/c.bin", "\0\1", 2, NULL), MCP_OK);
	ck_assert_int_eq(mcp_server_add_skill(srv, s), MCP_OK);
	const char *md2 = MD("beta", "second");
	ck_assert_int_eq(mcp_server_add_skill(srv, mcp_skill_new("x", md2, strlen(md2), NULL, 0)),
			 MCP_OK);
	/* the same URI twice */
	ck_assert_int_eq(mcp_server_add_skill(srv, mcp_skill_new("x", md2, strlen(md2), NULL, 0)),
			 MCP_EEXIST);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);

	/* Pages of one entry, each whole, with digests of the bytes served. */
	json_object *m = rpc("skills/list", "{" MODERN_META "}");
	json_object *res = api_get(m, "result");
	json_object *e = json_object_array_get_idx(api_get(res, "skills"), 0);
	ck_assert_str_eq(json_object_get_string(api_get(e, "uri")), "skill://alpha/SKILL.md");
	ck_assert_str_eq(json_object_get_string(api_get(api_get(api_get(e, "frontmatter"),
								 "metadata"), "v")), "1");
	ck_assert_ptr_nonnull(api_get(res, "ttlMs"));
	ck_assert_str_eq(json_object_get_string(api_get(res, "cacheScope")), "private");
	json_object *files = api_get(e, "resources");
	ck_assert_int_eq((int)json_object_array_length(files), 3);
	json_object *f1 = json_object_array_get_idx(files, 1);
	ck_assert_str_eq(json_object_get_string(api_get(f1, "uri")), "skill://alpha/docs/a%20b.md");
	unsigned char h[32];
	char hex[65], want[72];
	crypto_hash_sha256(h, (const unsigned char *)"hello", 5);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	snprintf(want, sizeof want, "sha256:%s", hex);
	ck_assert_str_eq(json_object_get_string(api_get(f1, "digest")), want);
	ck_assert_int_eq(json_object_get_int(api_get(f1, "size")), 5);
	const char *next = json_object_get_string(api_get(res, "nextCursor"));
	ck_assert_ptr_nonnull(next);
	char params[512];
	snprintf(params, sizeof params, "{\"cursor\":\"%s\"," MODERN_META "}", next);
	json_object *m2 = rpc("skills/list", params);
	ck_assert_str_eq(json_object_get_string(api_get(json_object_array_get_idx(
				 api_get(api_get(m2, "result"), "skills"), 0), "uri")),
			 "skill://x/beta/SKILL.md");
	ck_assert_ptr_null(api_get(api_get(m2, "result"), "nextCursor"));
	json_object_put(m2);
	json_object_put(m);

	/* skills/get, and -32602 for anything else. */
	m = rpc("skills/get", "{\"uri\":\"skill://x/beta/SKILL.md\"," MODERN_META "}");
	ck_assert_str_eq(json_object_get_string(api_get(api_get(api_get(m, "result"), "skill"),
							"uri")),
			 "skill://x/beta/SKILL.md");
	json_object_put(m);
	m = rpc("skills/get", "{\"uri\":\"skill://x/beta\"," MODERN_META "}");
	ck_assert_int_eq(json_object_get_int(api_get(api_get(m, "error"), "code")), -32602);
	json_object_put(m);

	/* Directory reads: the root, a subdirectory, a prefix; a file is not
	 * a directory. */
	m = rpc("resources/directory/read", "{\"uri\":\"skill://alpha/docs\"," MODERN_META "}");
	json_object *kids = api_get(api_get(m, "result"), "resources");
	ck_assert_int_eq((int)json_object_array_length(kids), 1); /* page size 1 */
	json_object_put(m);
	m = rpc("resources/directory/read", "{\"uri\":\"skill://x\"," MODERN_META "}");
	kids = api_get(api_get(m, "result"), "resources");
	ck_assert_str_eq(json_object_get_string(api_get(json_object_array_get_idx(kids, 0),
							"mimeType")),
			 "inode/directory");
	json_object_put(m);
	m = rpc("resources/directory/read", "{\"uri\":\"skill://alpha/SKILL.md\"," MODERN_META "}");
	ck_assert_int_eq(json_object_get_int(api_get(api_get(m, "error"), "code")), -32602);
	json_object_put(m);

	/* Files are read as text or blob; only SKILL.md is listed. */
	m = rpc("resources/read", "{\"uri\":\"skill://alpha/docs/deep/c.bin\"," MODERN_META "}");
	json_object *c = json_object_array_get_idx(api_get(api_get(m, "result"), "contents"), 0);
	ck_assert_str_eq(json_object_get_string(api_get(c, "blob")), "AAE=");
	json_object_put(m);
	m = rpc("resources/list", "{" MODERN_META "}");
	json_object *r0 = json_object_array_get_idx(api_get(api_get(m, "result"), "resources"), 0);
	ck_assert_str_eq(json_object_get_string(api_get(r0, "uri")), "skill://alpha/SKILL.md");
	ck_assert_str_eq(json_object_get_string(api_get(r0, "description")), "first");
	json_object_put(m);

	/* Discovery declares the extension with directoryRead. */
	m = rpc("server/discover", "{" MODERN_META "}");
	json_object *ext = api_get(api_get(api_get(api_get(m, "result"), "capabilities"),
					   "extensions"),
				   "io.modelcontextprotocol/skills");
	ck_assert(json_object_get_boolean(api_get(ext, "directoryRead")));
	json_object_put(m);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}
END_TEST

/* ---- trace context in handlers and hooks ------------------------------------------ */

/* What the handler and the hooks saw, written on the workers: under a lock,
 * and the after-hook (which runs once the answer is out) counted, so the
 * test waits for it. */
static char seen_handler[64], seen_before[64], seen_after[64], seen_state[64];
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t seen_cv = PTHREAD_COND_INITIALIZER;
static int afters;

static void wait_afters(int n)
{
	pthread_mutex_lock(&seen_mu);
	while (afters < n)
		pthread_cond_wait(&seen_cv, &seen_mu);
	pthread_mutex_unlock(&seen_mu);
}

static void expect_seen(const char *handler, const char *state, const char *before,
			const char *after)
{
	pthread_mutex_lock(&seen_mu);
	ck_assert_str_eq(seen_handler, handler);
	ck_assert_str_eq(seen_state, state);
	if (before)
		ck_assert_str_eq(seen_before, before);
	ck_assert_str_eq(seen_after, after);
	pthread_mutex_unlock(&seen_mu);
}

static int traced_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	const char *tp = NULL, *ts = NULL;
	int have = mcp_ctx_trace_context(ctx, &tp, &ts);
	pthread_mutex_lock(&seen_mu);
	snprintf(seen_handler, sizeof seen_handler, "%d %s", have, tp ? tp : "-");
	snprintf(seen_state, sizeof seen_state, "%s", ts ? ts : "-");
	pthread_mutex_unlock(&seen_mu);
	return mcp_result_add_text(out, "ok");
}

static int before_hook(mcp_ctx *ctx, void *user)
{
	(void)user;
	const char *tp = NULL;
	mcp_ctx_trace_context(ctx, &tp, NULL);
	pthread_mutex_lock(&seen_mu);
	snprintf(seen_before, sizeof seen_before, "%s", tp ? tp : "-");
	pthread_mutex_unlock(&seen_mu);
	return MCP_OK;
}

static void after_hook(mcp_ctx *ctx, const char *outcome, int code, int64_t us, void *user)
{
	(void)outcome, (void)code, (void)us, (void)user;
	const char *tp = NULL;
	mcp_ctx_trace_context(ctx, &tp, NULL);
	pthread_mutex_lock(&seen_mu);
	snprintf(seen_after, sizeof seen_after, "%s", tp ? tp : "-");
	afters++;
	pthread_cond_broadcast(&seen_cv);
	pthread_mutex_unlock(&seen_mu);
}

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

START_TEST(trace_context_in_handler_and_hooks)
{
	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "traced",
							       .fn = traced_tool }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_set_request_hooks(srv, before_hook, after_hook, NULL), MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	json_object *m = rpc("tools/call", "{\"name\":\"traced\",\"_meta\":{"
					   "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
					   "\"io.modelcontextprotocol/clientCapabilities\":{},"
					   "\"traceparent\":\"" TP "\",\"tracestate\":\"a=1,A=2\"}}");
	ck_assert_ptr_nonnull(api_get(m, "result"));
	json_object_put(m);
	wait_afters(1);
	/* "A=2" makes the whole tracestate invalid */
	expect_seen("1 " TP, "-", TP, TP);
	/* An invalid traceparent: nobody sees it. */
	m = rpc("tools/call", "{\"name\":\"traced\",\"_meta\":{"
			      "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
			      "\"io.modelcontextprotocol/clientCapabilities\":{},"
			      "\"traceparent\":\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\","
			      "\"tracestate\":\"a=1\"}}");
	json_object_put(m);
	wait_afters(2);
	expect_seen("0 -", "-", "-", "-");
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}
END_TEST

/* ---- MCP Apps ---------------------------------------------------------------------- */

START_TEST(app_rules)
{
	ck_assert_ptr_null(mcp_app_new("http://x", "n", "<p>"));
	ck_assert_ptr_null(mcp_app_new("ui://", "n", "<p>"));
	ck_assert_ptr_null(mcp_app_new("ui://x", "", "<p>"));
	ck_assert_ptr_null(mcp_app_new("ui://x", "n", "\xff"));
	mcp_app *a = mcp_app_new("ui://x/view", "view", "<!DOCTYPE html><p>hi</p>");
	ck_assert_ptr_nonnull(a);
	const char *bad[] = { "api.example.com", "https://", "https://a.com/path", "https://a b",
			      "'self'", "https://a.com; script-src *", "*", "data:" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(mcp_app_add_csp(a, MCP_APP_CSP_CONNECT, bad[i]) == MCP_EINVAL,
			      "accepted %s", bad[i]);
	ck_assert_int_eq(mcp_app_add_csp(a, MCP_APP_CSP_CONNECT, "https://api.example.com"),
			 MCP_OK);
	ck_assert_int_eq(mcp_app_add_csp(a, MCP_APP_CSP_RESOURCE, "https://*.cdn.example"), MCP_OK);
	ck_assert_int_eq(mcp_app_add_csp(a, (mcp_app_csp)9, "https://a.com"), MCP_EINVAL);
	ck_assert_int_eq(mcp_app_request_permissions(a, 0x100), MCP_EINVAL);
	ck_assert_int_eq(mcp_app_request_permissions(a, MCP_APP_CAMERA | MCP_APP_CLIPBOARD_WRITE),
			 MCP_OK);
	ck_assert_int_eq(mcp_app_set_prefers_border(a, 2), MCP_EINVAL);
	ck_assert_int_eq(mcp_app_set_prefers_border(a, 0), MCP_OK);

	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert(!api_apps_offered(srv));
	ck_assert_int_eq(mcp_server_add_app(srv, a), MCP_OK);
	ck_assert_int_eq(mcp_server_add_app(srv, a), MCP_EEXIST);
	mcp_app_free(a);
	ck_assert(api_apps_offered(srv));
	ck_assert_int_eq(mcp_server_set_tool_ui(srv, "t", "http://x", 0), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_tool_ui(srv, "t", "ui://x/view", 4), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_tool_ui(srv, "t", "ui://x/view", MCP_UI_APP), MCP_OK);
	json_object *ui = api_tool_ui_meta(srv, "t");
	ck_assert_str_eq(json_object_get_string(api_get(ui, "resourceUri")), "ui://x/view");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(api_get(ui, "visibility"),
									   0)),
			 "app");
	json_object_put(ui);
	ck_assert_int_eq(mcp_server_set_tool_ui(srv, "t", NULL, 0), MCP_OK);
	ck_assert_ptr_null(api_tool_ui_meta(srv, "t"));
	/* The extension goes with the last UI resource. */
	ck_assert_int_eq(mcp_server_remove_resource(srv, "ui://x/view"), MCP_OK);
	ck_assert(!api_apps_offered(srv));
	mcp_server_free(srv);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("extensions");
	TCase *tc = tcase_create("rules");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, traceparent_format);
	tcase_add_test(tc, tracestate_format);
	tcase_add_test(tc, trace_from_headers);
	tcase_add_test(tc, frontmatter_types_as_yaml_core_schema);
	tcase_add_test(tc, frontmatter_refusals);
	tcase_add_test(tc, skill_rules);
	tcase_add_test(tc, skill_directories_are_read_strictly);
	tcase_add_test(tc, skills_tree_prefixes);
	tcase_add_test(tc, skills_methods_answer_what_is_registered);
	tcase_add_test(tc, app_rules);
	tcase_add_test(tc, trace_context_in_handler_and_hooks);
	suite_add_tcase(s, tc);
	return s;
}
