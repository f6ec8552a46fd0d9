/*
 * test_jschema.c - unit tests of the JSON Schema validator (api/jschema/jschema.c)
 * beyond the official suite: the words of its errors (instance pointer,
 * keyword, schema location, message), its bounds (schema depth, $ref
 * loops, remote references, evaluation depth and steps, a catastrophic
 * regular expression), the ECMA-262 to PCRE2 translation, formats on and
 * off, and many threads sharing one compiled schema.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"
#include "tests/unit/runner.h"

static json_object *parse(const char *text)
{
	json_tokener *tok = json_tokener_new_ex(2000);
	/* The NUL ends a top-level number, which json-c otherwise awaits. */
	json_object *o = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	ck_assert_msg(o || strcmp(text, "null") == 0, "test JSON does not parse: %s", text);
	json_tokener_free(tok);
	return o;
}

static jschema *compile_opts(const char *schema, const jschema_opts *opts)
{
	json_object *s = parse(schema);
	jschema *c = NULL;
	jschema_error e;
	int rc = jschema_compile(s, opts, &c, &e);
	json_object_put(s);
	ck_assert_msg(rc == JSCHEMA_OK, "compile %s: %d %s", schema, rc, e.message);
	return c;
}

static jschema *compile(const char *schema)
{
	return compile_opts(schema, NULL);
}

/* Validates and returns the status; the error in *e. */
static int check(const jschema *c, const char *instance, jschema_error *e)
{
	json_object *i = parse(instance);
	int rc = jschema_validate(c, i, e);
	json_object_put(i);
	return rc;
}

/* Asserts that `instance` fails with exactly `message`. */
static void expect_error(const jschema *c, const char *instance, const char *message)
{
	jschema_error e;
	ck_assert_int_eq(check(c, instance, &e), JSCHEMA_INVALID);
	ck_assert_str_eq(e.message, message);
}

static int compile_status(const char *schema, jschema_error *e)
{
	json_object *s = parse(schema);
	jschema *c = NULL;
	int rc = jschema_compile(s, NULL, &c, e);
	json_object_put(s);
	if (rc != JSCHEMA_OK)
		ck_assert_ptr_null(c);
	jschema_free(c);
	return rc;
}

/* ---- the six calls of issue 18 ----------------------------------------- */

#define ADD_SCHEMA                                                                             \
	"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"                    \
	"\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"                            \
	"\"additionalProperties\":false}"

START_TEST(add_arguments_name_path_and_rule)
{
	jschema *c = compile(ADD_SCHEMA);
	jschema_error e;
	ck_assert_int_eq(check(c, "{\"a\":1,\"b\":2}", &e), JSCHEMA_OK);
	ck_assert_int_eq(check(c, "{\"a\":1.5,\"b\":-2e3}", &e), JSCHEMA_OK);
	expect_error(c, "{\"b\":3}", "(root): missing required property \"a\" (required)");
	check(c, "{\"b\":3}", &e);
	ck_assert_str_eq(e.instance, "");
	ck_assert_str_eq(e.schema, "/required");
	expect_error(c, "{\"a\":\"two\",\"b\":3}", "/a: expected number, got string (type)");
	expect_error(c, "{\"a\":\"2\",\"b\":3}", "/a: expected number, got string (type)");
	expect_error(c, "{\"a\":1,\"b\":2,\"c\":\"extra\"}",
		     "/c: property \"c\" is not allowed (additionalProperties)");
	expect_error(c, "{}", "(root): missing required property \"a\" (required)");
	expect_error(c, "{\"a\":null,\"b\":true}", "/a: expected number, got null (type)");
	/* The parts, one by one. */
	check(c, "{\"a\":\"two\",\"b\":3}", &e);
	ck_assert_str_eq(e.instance, "/a");
	ck_assert_str_eq(e.keyword, "type");
	ck_assert_str_eq(e.schema, "/properties/a/type");
	check(c, "{\"a\":1,\"b\":2,\"c\":\"extra\"}", &e);
	ck_assert_str_eq(e.instance, "/c");
	ck_assert_str_eq(e.keyword, "additionalProperties");
	ck_assert_str_eq(e.schema, "/additionalProperties");
	jschema_free(c);
}
END_TEST

/* ---- messages and pointers ------------------------------------------------ */

START_TEST(pointers_escape_and_index)
{
	jschema *c = compile("{\"properties\":{\"a/b\":{\"items\":{\"properties\":{\"x~y\":"
			     "{\"type\":\"integer\"}}}}}}");
	jschema_error e;
	ck_assert_int_eq(check(c, "{\"a/b\":[{\"x~y\":1},{\"x~y\":2.5}]}", &e), JSCHEMA_INVALID);
	ck_assert_str_eq(e.instance, "/a~1b/1/x~0y");
	ck_assert_str_eq(e.schema, "/properties/a~1b/items/properties/x~0y/type");
	ck_assert_str_eq(e.message, "/a~1b/1/x~0y: expected integer, got number (type)");
	jschema_free(c);
}
END_TEST

START_TEST(messages_of_the_validation_keywords)
{
	struct {
		const char *schema, *instance, *message;
	} cases[] = {
		{ "{\"type\":[\"string\",\"null\"]}", "3",
		  "(root): expected null or string, got integer (type)" },
		{ "{\"minimum\":0}", "-1", "(root): must be at least 0, got -1 (minimum)" },
		{ "{\"exclusiveMaximum\":10}", "10",
		  "(root): must be less than 10, got 10 (exclusiveMaximum)" },
		{ "{\"multipleOf\":3}", "10", "(root): must be a multiple of 3 (multipleOf)" },
		{ "{\"maxLength\":2}", "\"h\\u00e9llo\"",
		  "(root): must be at most 2 characters long, is 5 (maxLength)" },
		{ "{\"pattern\":\"^[a-z]+$\"}", "\"A1\"",
		  "(root): must match the pattern \"^[a-z]+$\" (pattern)" },
		{ "{\"enum\":[\"red\",\"green\"]}", "\"blue\"",
		  "(root): must be one of \"red\",\"green\" (enum)" },
		{ "{\"const\":{\"k\":[1,2]}}", "{\"k\":[1]}", "(root): must be {\"k\":[1,2]} (const)" },
		{ "{\"minItems\":2}", "[1]", "(root): must have at least 2 items, has 1 (minItems)" },
		{ "{\"uniqueItems\":true}", "[1,\"x\",1.0]",
		  "(root): items 0 and 2 are equal, but items must be unique (uniqueItems)" },
		{ "{\"contains\":{\"type\":\"string\"}}", "[1,2]",
		  "(root): no item matches the contains schema (contains)" },
		{ "{\"contains\":{\"type\":\"string\"},\"maxContains\":1}", "[\"a\",\"b\"]",
		  "(root): 2 items match the contains schema, at most 1 may (maxContains)" },
		{ "{\"maxProperties\":1}", "{\"a\":1,\"b\":2}",
		  "(root): must have at most 1 properties, has 2 (maxProperties)" },
		{ "{\"dependentRequired\":{\"card\":[\"cvv\"]}}", "{\"card\":\"1\"}",
		  "(root): property \"cvv\" is required when \"card\" is present "
		  "(dependentRequired)" },
		{ "{\"propertyNames\":{\"maxLength\":3}}", "{\"long\":1}",
		  "/long: the property name \"long\" does not match the propertyNames schema "
		  "(propertyNames)" },
		{ "{\"not\":{\"type\":\"string\"}}", "\"s\"",
		  "(root): must not match the schema given in not (not)" },
		{ "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "3",
		  "(root): matches alternatives 1 and 2, but exactly one of the 2 may match (oneOf)" },
		{ "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"object\",\"required\":[\"id\"]}]}",
		  "{}",
		  "(root): matches none of the 2 alternatives; alternative 2: (root): missing "
		  "required property \"id\" (required) (anyOf)" },
		{ "{\"if\":{\"properties\":{\"k\":{\"const\":1}}},\"then\":{\"required\":[\"v\"]}}",
		  "{\"k\":1}", "(root): missing required property \"v\" (required)" },
		{ "{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\",2]",
		  "/1: no item is allowed at index 1 (items)" },
		{ "{\"properties\":{\"a\":true},\"unevaluatedProperties\":false}",
		  "{\"a\":1,\"b\":2}", "/b: property \"b\" is not allowed (unevaluatedProperties)" },
		{ "false", "1", "(root): no value is allowed here (the schema is false) (false)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		jschema *c = compile(cases[i].schema);
		jschema_error e;
		ck_assert_msg(check(c, cases[i].instance, &e) == JSCHEMA_INVALID, "%s accepted %s",
			      cases[i].schema, cases[i].instance);
		ck_assert_msg(strcmp(e.message, cases[i].message) == 0, "%s / %s:\n got  %s\n want %s",
			      cases[i].schema, cases[i].instance, e.message, cases[i].message);
		jschema_free(c);
	}
}
END_TEST

START_TEST(long_pointers_are_cut)
{
	char key[400];
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = 0;
	char schema[1000], inst[1000];
	snprintf(schema, sizeof schema, "{\"properties\":{\"%s\":{\"type\":\"string\"}}}", key);
	snprintf(inst, sizeof inst, "{\"%s\":1}", key);
	jschema *c = compile(schema);
	jschema_error e;
	ck_assert_int_eq(check(c, inst, &e), JSCHEMA_INVALID);
	ck_assert_uint_eq(strlen(e.instance), JSCHEMA_PTR_MAX - 1);
	ck_assert_str_eq(e.instance + JSCHEMA_PTR_MAX - 4, "...");
	ck_assert_ptr_nonnull(strstr(e.message, "(type)"));
	jschema_free(c);
}
END_TEST

/* ---- compile errors and bounds -------------------------------------------- */

START_TEST(bad_schemas_are_refused_with_a_location)
{
	struct {
		const char *schema;
		int status;
		const char *message;
	} cases[] = {
		{ "{\"type\":\"text\"}", JSCHEMA_ESCHEMA,
		  "schema /type: must name distinct types among null, boolean, object, array, "
		  "number, string and integer (type)" },
		{ "{\"properties\":{\"a\":{\"minLength\":-1}}}", JSCHEMA_ESCHEMA,
		  "schema /properties/a/minLength: must be a non-negative integer (minLength)" },
		{ "{\"items\":[{}]}", JSCHEMA_ESCHEMA,
		  "schema /items: must be a schema (an object or a boolean) (items)" },
		{ "{\"pattern\":\"(?i)abc\"}", JSCHEMA_ESCHEMA,
		  "schema /pattern: invalid regular expression \"(?i)abc\": (?i is not an ECMA-262 "
		  "group (pattern)" },
		{ "{\"$ref\":\"#/$defs/nowhere\"}", JSCHEMA_ESCHEMA,
		  "schema /$ref: \"#/$defs/nowhere\" points at nothing in urn:libmcp:schema ($ref)" },
		{ "{\"$ref\":\"https://example.com/s.json\"}", JSCHEMA_EREMOTE,
		  "schema /$ref: \"https://example.com/s.json\" names https://example.com/s.json, "
		  "which is not this schema or one given with it (remote references are never "
		  "fetched) ($ref)" },
		{ "{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\":"
		  "\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}",
		  JSCHEMA_ESCHEMA, NULL },
		{ "{\"$ref\":\"#\"}", JSCHEMA_ESCHEMA, NULL },
		{ "{\"$id\":\"https://x.test/a#frag\"}", JSCHEMA_ESCHEMA, NULL },
		{ "[]", JSCHEMA_ESCHEMA, NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		jschema_error e;
		int rc = compile_status(cases[i].schema, &e);
		ck_assert_msg(rc == cases[i].status, "%s: %d %s", cases[i].schema, rc, e.message);
		if (cases[i].message)
			ck_assert_msg(strcmp(e.message, cases[i].message) == 0, "got  %s\nwant %s",
				      e.message, cases[i].message);
		else
			ck_assert_msg(e.message[0], "%s: no message", cases[i].schema);
	}
	/* A loop names itself as one. */
	jschema_error e;
	compile_status("{\"$ref\":\"#\"}", &e);
	ck_assert_ptr_nonnull(strstr(e.message, "loop"));
	/* A recursion that descends into the value is fine. */
	jschema *c = compile("{\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"v\"]}");
	ck_assert_int_eq(check(c, "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3}}}", &e),
			 JSCHEMA_OK);
	expect_error(c, "{\"v\":1,\"next\":{\"next\":{\"v\":3}}}",
		     "/next: missing required property \"v\" (required)");
	jschema_free(c);
}
END_TEST

START_TEST(deep_schemas_are_refused)
{
	size_t depth = 300;
	char *s = malloc(depth * 12 + 16), *p = s;
	for (size_t i = 0; i < depth; i++)
		p += sprintf(p, "{\"not\":");
	p += sprintf(p, "{}");
	for (size_t i = 0; i < depth; i++)
		*p++ = '}';
	*p = 0;
	jschema_error e;
	ck_assert_int_eq(compile_status(s, &e), JSCHEMA_ELIMIT);
	ck_assert_ptr_nonnull(strstr(e.message, "nested deeper than 128"));
	free(s);
	/* And a schema just within the bound compiles and works. */
	jschema_opts o = { .max_schema_depth = 400 };
	s = malloc(depth * 12 + 16), p = s;
	for (size_t i = 0; i < depth; i++)
		p += sprintf(p, "{\"items\":");
	p += sprintf(p, "{\"type\":\"integer\"}");
	for (size_t i = 0; i < depth; i++)
		*p++ = '}';
	*p = 0;
	jschema *c = compile_opts(s, &o);
	free(s);
	ck_assert_int_eq(check(c, "[[[1]]]", &e), JSCHEMA_OK);
	jschema_free(c);
}
END_TEST

START_TEST(too_many_subschemas_are_refused)
{
	jschema_opts o = { .max_nodes = 10 };
	json_object *s = parse("{\"properties\":{\"a\":{},\"b\":{},\"c\":{},\"d\":{},\"e\":{},"
			       "\"f\":{},\"g\":{},\"h\":{},\"i\":{},\"j\":{},\"k\":{}}}");
	jschema *c = NULL;
	jschema_error e;
	ck_assert_int_eq(jschema_compile(s, &o, &c, &e), JSCHEMA_ELIMIT);
	ck_assert_ptr_null(c);
	json_object_put(s);
}
END_TEST

/* A value nested deeper than the evaluation bound ends with a limit. */
START_TEST(evaluation_depth_is_bounded)
{
	jschema *c = compile("{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"c\":"
			     "{\"$ref\":\"#/$defs/n\"}}}},\"$ref\":\"#/$defs/n\"}");
	json_object *root = json_object_new_object(), *cur = root;
	for (int i = 0; i < 400; i++) {
		json_object *next = json_object_new_object();
		json_object_object_add(cur, "c", next);
		cur = next;
	}
	jschema_error e;
	ck_assert_int_eq(jschema_validate(c, root, &e), JSCHEMA_ELIMIT);
	ck_assert_ptr_nonnull(strstr(e.message, "deeper than allowed"));
	ck_assert_uint_gt(strlen(e.instance), 100);
	json_object_put(root);
	jschema_free(c);
}
END_TEST

START_TEST(evaluation_steps_are_bounded)
{
	jschema_opts o = { .max_steps = 1000 };
	jschema *c = compile_opts("{\"items\":{\"anyOf\":[{\"type\":\"string\"},"
				  "{\"type\":\"integer\"}]}}",
				  &o);
	json_object *arr = json_object_new_array();
	for (int i = 0; i < 5000; i++)
		json_object_array_add(arr, json_object_new_int(i));
	jschema_error e;
	ck_assert_int_eq(jschema_validate(c, arr, &e), JSCHEMA_ELIMIT);
	ck_assert_ptr_nonnull(strstr(e.message, "more than 1000 steps"));
	json_object_put(arr);
	jschema_free(c);
}
END_TEST

/* ^(a+)+$ against "aaa...ab" backtracks exponentially: PCRE2's match
 * limit ends it, and the failure says so instead of "no match".  (No
 * timing is asserted: that the call returns at all is the point.) */
START_TEST(catastrophic_pattern_ends_with_a_limit)
{
	jschema *c = compile("{\"properties\":{\"s\":{\"pattern\":\"^(a+)+$\"}}}");
	char inst[128];
	snprintf(inst, sizeof inst, "{\"s\":\"%.*sb\"}", 60,
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	jschema_error e;
	ck_assert_int_eq(check(c, inst, &e), JSCHEMA_ELIMIT);
	ck_assert_str_eq(e.instance, "/s");
	ck_assert_str_eq(e.keyword, "pattern");
	ck_assert_ptr_nonnull(strstr(e.message, "regular expression needed more steps"));
	/* Short strings still match or fail normally. */
	ck_assert_int_eq(check(c, "{\"s\":\"aaaa\"}", &e), JSCHEMA_OK);
	ck_assert_int_eq(check(c, "{\"s\":\"aab\"}", &e), JSCHEMA_INVALID);
	jschema_free(c);
	/* The same inside an anyOf: a limit is not a quiet failure. */
	c = compile("{\"anyOf\":[{\"pattern\":\"^(a+)+$\"},{\"type\":\"integer\"}]}");
	snprintf(inst, sizeof inst, "\"%.*sb\"", 60,
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ck_assert_int_eq(check(c, inst, &e), JSCHEMA_ELIMIT);
	ck_assert_str_eq(e.keyword, "pattern");
	jschema_free(c);
}
END_TEST

START_TEST(given_documents_resolve_and_others_do_not)
{
	json_object *other = parse("{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1}}}");
	jschema_doc docs[] = { { "https://example.com/common.json", other } };
	jschema_opts o = { .docs = docs, .ndocs = 1 };
	jschema *c = compile_opts("{\"$ref\":\"https://example.com/common.json#/$defs/pos\"}", &o);
	json_object_put(other); /* copied at compile */
	jschema_error e;
	ck_assert_int_eq(check(c, "3", &e), JSCHEMA_OK);
	ck_assert_int_eq(check(c, "0", &e), JSCHEMA_INVALID);
	ck_assert_str_eq(e.schema, "https://example.com/common.json#/$defs/pos/minimum");
	jschema_free(c);
}
END_TEST

START_TEST(formats_assert_only_when_asked)
{
	const char *schema = "{\"properties\":{\"when\":{\"format\":\"date-time\"},"
			     "\"ip\":{\"format\":\"ipv4\"},\"mail\":{\"format\":\"email\"}}}";
	jschema *off = compile(schema);
	jschema_opts o = { .formats = 1 };
	jschema *on = compile_opts(schema, &o);
	jschema_error e;
	ck_assert_int_eq(check(off, "{\"when\":\"tomorrow\"}", &e), JSCHEMA_OK);
	expect_error(on, "{\"when\":\"tomorrow\"}", "/when: must be a valid date-time (format)");
	ck_assert_int_eq(check(on, "{\"when\":\"2025-11-25T10:00:00Z\"}", &e), JSCHEMA_OK);
	expect_error(on, "{\"ip\":\"256.1.1.1\"}", "/ip: must be a valid ipv4 (format)");
	ck_assert_int_eq(check(on, "{\"mail\":\"a.b@example.com\"}", &e), JSCHEMA_OK);
	ck_assert_int_eq(check(on, "{\"mail\":\"a..b@example.com\"}", &e), JSCHEMA_INVALID);
	/* Formats apply to strings only. */
	ck_assert_int_eq(check(on, "{\"when\":12}", &e), JSCHEMA_OK);
	jschema_free(off);
	jschema_free(on);
}
END_TEST

/* ---- ECMA-262 regular expressions on PCRE2 ---------------------------------- */

static char *translate(const char *src, char *why, size_t whylen)
{
	int oom = 0;
	char *t = jschema_regex_translate(src, strlen(src), why, whylen, &oom);
	ck_assert_int_eq(oom, 0);
	return t;
}

START_TEST(regex_translation)
{
	struct {
		const char *ecma, *pcre2;
	} ok[] = {
		{ "^\\d+$", "^[0-9]+$" },
		{ "\\D", "[^0-9]" },
		{ "\\w\\W", "[0-9A-Za-z_][^0-9A-Za-z_]" },
		{ "a.b", "a[^\\n\\r\\x{2028}\\x{2029}]b" },
		{ "[\\d_]", "[0-9_]" },
		{ "\\cC\\cz", "\\x{3}\\x{1a}" },
		{ "\\u0041\\x42", "AB" },
		{ "\\ud83d\\ude00", "\\x{1f600}" },
		{ "\\u{1F600}", "\\x{1f600}" },
		{ "\\0", "\\x{0}" },
		{ "\\v\\t", "\\x{b}\\x{9}" },
		{ "(a)\\1", "(a)\\g{1}" },
		{ "(?<y>a)\\k<y>", "(?<y>a)\\k<y>" },
		{ "(?<=a)b(?!c)", "(?<=a)b(?!c)" },
		{ "[]", "(?!)" },
		{ "[^]", "[\\x{0}-\\x{10ffff}]" },
		{ "[[:alpha:]]", "[\\[:alpha:]\\]" }, /* a class, then "]" */
		{ "\\p{Letter}\\P{Lu}\\p{Script=Greek}", "\\p{L}\\P{Lu}\\p{Script=Greek}" },
		{ "a{2,3}?b{,}", "a{2,3}?b\\{,\\}" },
		{ "[\\b]", "[\\x{8}]" },
	};
	char why[200];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char *t = translate(ok[i].ecma, why, sizeof why);
		ck_assert_msg(t != NULL, "%s refused: %s", ok[i].ecma, why);
		ck_assert_msg(strcmp(t, ok[i].pcre2) == 0, "%s -> %s, want %s", ok[i].ecma, t,
			      ok[i].pcre2);
		free(t);
	}
	const char *bad[] = { "(?i)a",	 "a++",	  "a*+", "\\a",	 "\\z", "\\A", "\\Q.\\E",
			      "(*ACCEPT)", "[\\d-z]", "\\ud800", "\\c1", "\\x4", "\\u12",
			      "\\p{NoSuchProperty}x", "\\0" "1", "*a", "a\\" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int oom = 0;
		struct jschema_regex *re =
			jschema_regex_new(bad[i], strlen(bad[i]), 0, why, sizeof why, &oom);
		ck_assert_msg(re == NULL, "%s was accepted", bad[i]);
		ck_assert_msg(why[0], "%s: no reason", bad[i]);
	}
}
END_TEST

static int search(const char *pattern, const char *subject)
{
	char why[200];
	int oom = 0;
	struct jschema_regex *re =
		jschema_regex_new(pattern, strlen(pattern), 0, why, sizeof why, &oom);
	ck_assert_msg(re != NULL, "%s: %s", pattern, why);
	int r = jschema_regex_search(re, subject, strlen(subject));
	jschema_regex_free(re);
	return r;
}

START_TEST(regex_semantics_are_ecma)
{
	ck_assert_int_eq(search("^\\d$", "7"), 1);
	ck_assert_int_eq(search("^\\d$", "\xd9\xa1"), 0);      /* ARABIC-INDIC ONE */
	ck_assert_int_eq(search("^\\w$", "\xc3\xa9"), 0);      /* e acute */
	ck_assert_int_eq(search("^\\W$", "\xc3\xa9"), 1);
	ck_assert_int_eq(search("^\\s$", "\xc2\xa0"), 1);      /* NO-BREAK SPACE */
	ck_assert_int_eq(search("^\\s$", "\xef\xbb\xbf"), 1);  /* BOM */
	ck_assert_int_eq(search("^[^\\S]$", "\xe2\x80\xa8"), 1); /* LINE SEPARATOR */
	ck_assert_int_eq(search("^\\S$", "\xe2\x80\xa8"), 0);
	ck_assert_int_eq(search("^abc$", "abc\n"), 0);         /* $ only at the end */
	ck_assert_int_eq(search("^.$", "\n"), 0);
	ck_assert_int_eq(search("^.$", "\xf0\x9f\x90\xb2"), 1); /* one code point */
	ck_assert_int_eq(search("\\bcole", "\xc3\xa9" "cole"), 1); /* \b is ASCII */
	ck_assert_int_eq(search("^\\p{Letter}+$", "\xc3\xa9t\xc3\xa9"), 1);
	ck_assert_int_eq(search("^[]$", ""), 0);
	ck_assert_int_eq(search("^[^]$", "\n"), 1);
	ck_assert_int_eq(search("^\\cJ$", "\n"), 1);
	ck_assert_int_eq(search("a+", "xay"), 1);              /* not anchored */
}
END_TEST

/* ---- many threads, one compiled schema --------------------------------------- */

typedef struct shared_run {
	const jschema *c;
	int bad;
} shared_run;

static void *validate_many(void *arg)
{
	shared_run *r = arg;
	const char *good = "{\"id\":\"ab-12\",\"tags\":[\"x\",\"y\"],\"kind\":\"red\",\"n\":4}";
	const char *bad = "{\"id\":\"AB\",\"tags\":[\"x\",\"x\"],\"kind\":\"red\",\"n\":4}";
	json_object *g = json_tokener_parse(good), *b = json_tokener_parse(bad);
	for (int i = 0; i < 2000; i++) {
		jschema_error e;
		if (jschema_validate(r->c, g, &e) != JSCHEMA_OK)
			r->bad++;
		if (jschema_validate(r->c, b, &e) != JSCHEMA_INVALID ||
		    strcmp(e.message, "/id: must match the pattern \"^[a-z]+-[0-9]+$\" (pattern)"))
			r->bad++;
	}
	json_object_put(g);
	json_object_put(b);
	return NULL;
}

START_TEST(threads_share_a_compiled_schema)
{
	jschema *c = compile("{\"type\":\"object\",\"properties\":{"
			     "\"id\":{\"type\":\"string\",\"pattern\":\"^[a-z]+-[0-9]+$\"},"
			     "\"tags\":{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"$ref\":"
			     "\"#/$defs/tag\"}},\"kind\":{\"enum\":[\"red\",\"green\"]},"
			     "\"n\":{\"const\":4}},\"unevaluatedProperties\":false,"
			     "\"$defs\":{\"tag\":{\"type\":\"string\",\"minLength\":1}}}");
	pthread_t th[4];
	shared_run runs[4];
	for (int i = 0; i < 4; i++) {
		runs[i] = (shared_run){ c, 0 };
		pthread_create(&th[i], NULL, validate_many, &runs[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(runs[i].bad, 0);
	}
	jschema_free(c);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("jschema");
	TCase *tc = tcase_create("jschema");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, add_arguments_name_path_and_rule);
	tcase_add_test(tc, pointers_escape_and_index);
	tcase_add_test(tc, messages_of_the_validation_keywords);
	tcase_add_test(tc, long_pointers_are_cut);
	tcase_add_test(tc, bad_schemas_are_refused_with_a_location);
	tcase_add_test(tc, deep_schemas_are_refused);
	tcase_add_test(tc, too_many_subschemas_are_refused);
	tcase_add_test(tc, evaluation_depth_is_bounded);
	tcase_add_test(tc, evaluation_steps_are_bounded);
	tcase_add_test(tc, catastrophic_pattern_ends_with_a_limit);
	tcase_add_test(tc, given_documents_resolve_and_others_do_not);
	tcase_add_test(tc, formats_assert_only_when_asked);
	tcase_add_test(tc, regex_translation);
	tcase_add_test(tc, regex_semantics_are_ecma);
	tcase_add_test(tc, threads_share_a_compiled_schema);
	suite_add_tcase(s, tc);
	return s;
}
