/*
 * test_client_headers.c - api/client-headers.c: which x-mcp-header
 * declarations a client refuses (each invalid form, alone, in a tool that
 * is otherwise valid), which it keeps and where their values are found,
 * and the exact header lines a call sends (SEP-2243).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "mcp/mcp.h"
#include "api/client-headers.h"
#include "tests/unit/runner.h"

/* A schema whose one property `v` has `prop` (JSON text) as its schema. */
static json_object *schema_with(const char *prop)
{
	char text[1024];
	snprintf(text, sizeof text, "{\"type\":\"object\",\"properties\":{\"v\":%s}}", prop);
	json_object *s = json_tokener_parse(text);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* Scans `schema` (taken); returns the verdict and `why`. */
static int scan(json_object *schema, char *why, size_t whysz, json_object **bindings)
{
	json_object *b = NULL;
	why[0] = 0;
	int rc = api_xheaders_scan(schema, &b, why, whysz);
	json_object_put(schema);
	if (bindings)
		*bindings = b;
	else
		json_object_put(b);
	return rc;
}

START_TEST(invalid_declarations_are_refused)
{
	static const struct {
		const char *prop, *reason;
	} bad[] = {
		{ "{\"type\":\"string\",\"x-mcp-header\":\"\"}", "is empty" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}", "has a space" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"Region:Primary\"}", "has a colon" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"R\\u00e9gion\"}", "non-ASCII" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"Region\\t1\"}", "control character" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"Region\\n\"}", "control character" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"Re\\u0000gion\"}", "control character" },
		{ "{\"type\":\"string\",\"x-mcp-header\":\"Re(gion)\"}", "not an HTTP token" },
		{ "{\"type\":\"string\",\"x-mcp-header\":42}", "is not a string" },
		{ "{\"type\":\"object\",\"x-mcp-header\":\"Data\"}", "not a string, integer" },
		{ "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"x-mcp-header\":\"Items\"}",
		  "not a string, integer" },
		{ "{\"type\":\"null\",\"x-mcp-header\":\"Nil\"}", "not a string, integer" },
		{ "{\"type\":\"number\",\"x-mcp-header\":\"Ratio\"}", "not a string, integer" },
		{ "{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"Maybe\"}", "single primitive" },
		{ "{\"x-mcp-header\":\"Untyped\"}", "single primitive" },
	};
	char why[200];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(scan(schema_with(bad[i].prop), why, sizeof why, NULL), MCP_EINVAL);
		ck_assert_msg(strstr(why, bad[i].reason) && strstr(why, "property \"v\""),
			      "%s: reason \"%s\", wanted \"%s\"", bad[i].prop, why, bad[i].reason);
	}
	/* Two properties with one name, in the same case and in another. */
	static const char *dup[] = {
		"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
		"\"b\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}",
		"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},"
		"\"b\":{\"type\":\"integer\",\"x-mcp-header\":\"myfield\"}}}",
		/* ... and one of them nested. */
		"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"},"
		"\"o\":{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"string\","
		"\"x-mcp-header\":\"ZONE\"}}}}}",
	};
	for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++) {
		ck_assert_int_eq(scan(json_tokener_parse(dup[i]), why, sizeof why, NULL), MCP_EINVAL);
		ck_assert_ptr_nonnull(strstr(why, "repeats another x-mcp-header"));
	}
	/* A bound on nesting: 40 levels of properties are refused, not
	 * walked until the stack ends. */
	json_object *deep = json_object_new_object(), *at = deep;
	for (int i = 0; i < 40; i++) {
		json_object *props = json_object_new_object(), *next = json_object_new_object();
		json_object_object_add(at, "properties", props);
		json_object_object_add(props, "p", next);
		at = next;
	}
	ck_assert_int_eq(scan(deep, why, sizeof why, NULL), MCP_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "deeper than 32"));
}
END_TEST

START_TEST(valid_declarations_are_kept)
{
	char why[200];
	json_object *b = NULL;
	/* Every token character, each primitive type, one nested. */
	ck_assert_int_eq(
		scan(json_tokener_parse(
			     "{\"type\":\"object\",\"properties\":{"
			     "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
			     "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"A1!#$%&'*+-.^_`|~\"},"
			     "\"flag\":{\"type\":\"boolean\",\"x-mcp-header\":\"Flag\"},"
			     "\"plain\":{\"type\":\"number\"},"
			     "\"o\":{\"type\":\"object\",\"properties\":{"
			     "\"deep\":{\"type\":\"string\",\"x-mcp-header\":\"Deep\"}}}}}"),
		     why, sizeof why, &b),
		MCP_OK);
	ck_assert_str_eq(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN),
			 "[[\"Region\",\"region\"],[\"A1!#$%&'*+-.^_`|~\",\"n\"],[\"Flag\",\"flag\"],"
			 "[\"Deep\",\"o\",\"deep\"]]");
	json_object_put(b);
	/* No declaration, no properties, no schema at all: nothing to send,
	 * nothing wrong. */
	ck_assert_int_eq(scan(json_tokener_parse("{\"type\":\"object\"}"), why, sizeof why, &b),
			 MCP_OK);
	ck_assert_int_eq((int)json_object_array_length(b), 0);
	json_object_put(b);
	ck_assert_int_eq(scan(NULL, why, sizeof why, &b), MCP_OK);
	ck_assert_int_eq((int)json_object_array_length(b), 0);
	json_object_put(b);
}
END_TEST

static void assert_encoded(const char *value, size_t len, const char *want)
{
	char *got = api_xheader_encode(value, len);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(values_are_encoded)
{
	/* Plain printable ASCII goes as it is, inner spaces included. */
	assert_encoded("us-west1", 8, "us-west1");
	assert_encoded("us west 1", 9, "us west 1");
	assert_encoded("SELECT * FROM users", 19, "SELECT * FROM users");
	assert_encoded("", 0, "");
	/* Base64 of the UTF-8 bytes: non-ASCII, a space at either end,
	 * control characters (tab, CR, LF, NUL), and a value that would
	 * read as encoded. */
	assert_encoded("Hello, \xe4\xb8\x96\xe7\x95\x8c", 13, "=?base64?SGVsbG8sIOS4lueVjA==?=");
	assert_encoded(" padded ", 8, "=?base64?IHBhZGRlZCA=?=");
	assert_encoded(" us-west1", 9, "=?base64?IHVzLXdlc3Qx?=");
	assert_encoded("us-west1 ", 9, "=?base64?dXMtd2VzdDEg?=");
	assert_encoded("line1\nline2", 11, "=?base64?bGluZTEKbGluZTI=?=");
	assert_encoded("line1\r\nline2", 12, "=?base64?bGluZTENCmxpbmUy?=");
	assert_encoded("\tindented", 9, "=?base64?CWluZGVudGVk?=");
	assert_encoded("a\0b", 3, "=?base64?YQBi?=");
	assert_encoded("=?base64?abc?=", 14, "=?base64?PT9iYXNlNjQ/YWJjPz0=?=");
	/* Only the exact form reads as encoded. */
	assert_encoded("=?base64?abc", 12, "=?base64?abc");
}
END_TEST

START_TEST(call_header_lines)
{
	char why[200];
	json_object *b = NULL;
	ck_assert_int_eq(
		scan(json_tokener_parse(
			     "{\"type\":\"object\",\"properties\":{"
			     "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
			     "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"
			     "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
			     "\"debug\":{\"type\":\"boolean\",\"x-mcp-header\":\"Debug\"},"
			     "\"empty\":{\"type\":\"string\",\"x-mcp-header\":\"EmptyVal\"},"
			     "\"name\":{\"type\":\"string\",\"x-mcp-header\":\"NonAscii\"},"
			     "\"absent\":{\"type\":\"string\",\"x-mcp-header\":\"Absent\"},"
			     "\"o\":{\"type\":\"object\",\"properties\":{"
			     "\"zone\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}},"
			     "\"query\":{\"type\":\"string\"}}}"),
		     why, sizeof why, &b),
		MCP_OK);
	json_object *args = json_tokener_parse(
		"{\"region\":\"us-west1\",\"priority\":42,\"verbose\":false,\"debug\":true,"
		"\"empty\":\"\",\"name\":\"Z\\u00fcrich\",\"o\":{\"zone\":\"b\"},"
		"\"query\":\"SELECT 1\"}");
	char **lines = api_xheaders_lines(b, args);
	ck_assert_ptr_nonnull(lines);
	static const char *want[] = {
		"Mcp-Param-Region: us-west1",  "Mcp-Param-Priority: 42",
		"Mcp-Param-Verbose: false",    "Mcp-Param-Debug: true",
		"Mcp-Param-EmptyVal;",         "Mcp-Param-NonAscii: =?base64?WsO8cmljaA==?=",
		"Mcp-Param-Zone: b",           NULL,
	};
	for (int i = 0; want[i]; i++) {
		ck_assert_ptr_nonnull(lines[i]);
		ck_assert_str_eq(lines[i], want[i]);
	}
	ck_assert_ptr_null(lines[7]); /* nothing for absent, nor for query */
	api_xheaders_free(lines);
	json_object_put(args);
	/* Null sends nothing; so does a nested value whose parent is not an
	 * object, and an object where a scalar was declared. */
	args = json_tokener_parse("{\"region\":null,\"priority\":{\"x\":1},\"o\":\"flat\","
				  "\"verbose\":true}");
	lines = api_xheaders_lines(b, args);
	ck_assert_ptr_nonnull(lines);
	ck_assert_str_eq(lines[0], "Mcp-Param-Verbose: true");
	ck_assert_ptr_null(lines[1]);
	api_xheaders_free(lines);
	json_object_put(args);
	/* No arguments at all. */
	lines = api_xheaders_lines(b, NULL);
	ck_assert_ptr_nonnull(lines);
	ck_assert_ptr_null(lines[0]);
	api_xheaders_free(lines);
	json_object_put(b);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("client-headers");
	TCase *tc = tcase_create("sep-2243");
	tcase_add_test(tc, invalid_declarations_are_refused);
	tcase_add_test(tc, valid_declarations_are_kept);
	tcase_add_test(tc, values_are_encoded);
	tcase_add_test(tc, call_header_lines);
	suite_add_tcase(s, tc);
	return s;
}
