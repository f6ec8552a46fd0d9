/*
 * alloc-fail.c - the JSON Schema validator under allocation failure: for
 * every N, compiling a schema that uses every kind of keyword (references,
 * anchors, dynamic references, patterns, unevaluated*, a second document)
 * and validating values against it, with the Nth allocation failing (and,
 * in a second pass, every one from the Nth on).
 *
 * Checked each time: no crash; compile returns JSCHEMA_OK or
 * JSCHEMA_ENOMEM; validation returns the right answer or JSCHEMA_ENOMEM;
 * and the count of live allocations is back where it started (nothing
 * leaked on any error path).  Uses tests/fuzz/failmalloc.c, so it skips
 * under clang's sanitizers like tests/fuzz/alloc-fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"
#include "tests/fuzz/failmalloc.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NO_INTERPOSE 1
#endif
#endif

#ifndef NO_INTERPOSE

static const char schema_text[] =
	"{\"$id\":\"https://t.test/root.json\",\"type\":\"object\","
	"\"$dynamicAnchor\":\"node\","
	"\"properties\":{"
	" \"name\":{\"type\":\"string\",\"pattern\":\"^[a-z]+(-[a-z]+)*$\",\"maxLength\":20},"
	" \"tags\":{\"type\":\"array\",\"items\":{\"$ref\":\"#tag\"},\"uniqueItems\":true},"
	" \"kind\":{\"enum\":[\"a\",\"b\",{\"c\":[1,2]}]},"
	" \"when\":{\"format\":\"date-time\"},"
	" \"child\":{\"$dynamicRef\":\"#node\"},"
	" \"size\":{\"$ref\":\"https://t.test/common.json#/$defs/pos\"}},"
	"\"patternProperties\":{\"^x-\":{\"type\":\"string\"}},"
	"\"anyOf\":[{\"required\":[\"name\"]},{\"required\":[\"kind\"]}],"
	"\"unevaluatedProperties\":false,"
	"\"$defs\":{\"tag\":{\"$anchor\":\"tag\",\"type\":\"string\",\"minLength\":1}}}";

static const char common_text[] =
	"{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1,\"multipleOf\":1}}}";

static const struct {
	const char *text;
	int status;
} instances[] = {
	{ "{\"name\":\"ab-cd\",\"tags\":[\"x\",\"y\"],\"kind\":{\"c\":[1,2]},"
	  "\"when\":\"2025-01-01T00:00:00Z\",\"size\":3,\"x-a\":\"s\","
	  "\"child\":{\"name\":\"e\",\"child\":{\"kind\":\"a\"}}}",
	  JSCHEMA_OK },
	{ "{\"name\":\"AB\"}", JSCHEMA_INVALID },
	{ "{\"kind\":\"a\",\"extra\":1}", JSCHEMA_INVALID },
	{ "{\"tags\":[\"x\",\"x\"],\"name\":\"a\"}", JSCHEMA_INVALID },
	{ "{\"child\":{\"child\":{}}}", JSCHEMA_INVALID },
	{ "{\"kind\":\"b\",\"size\":0}", JSCHEMA_INVALID },
};
#define NINST (sizeof instances / sizeof instances[0])

static json_object *schema, *common, *values[NINST];

/* One run: 0 when every result is acceptable. */
static int run(long at, int from, int *compiled)
{
	jschema_doc docs[] = { { "https://t.test/common.json", common } };
	jschema_opts opts = { .formats = 1, .docs = docs, .ndocs = 1 };
	jschema *s = NULL;
	jschema_error err;
	failmalloc_arm(at, from);
	int rc = jschema_compile(schema, &opts, &s, &err);
	int results[NINST];
	for (size_t i = 0; rc == JSCHEMA_OK && i < NINST; i++)
		results[i] = jschema_validate(s, values[i], &err);
	jschema_free(s);
	failmalloc_disarm();
	*compiled = rc == JSCHEMA_OK;
	if (rc != JSCHEMA_OK && rc != JSCHEMA_ENOMEM) {
		fprintf(stderr, "FAIL: at %ld%s: compile returned %d: %s\n", at, from ? "+" : "",
			rc, err.message);
		return 1;
	}
	for (size_t i = 0; rc == JSCHEMA_OK && i < NINST; i++)
		if (results[i] != instances[i].status && results[i] != JSCHEMA_ENOMEM) {
			fprintf(stderr, "FAIL: at %ld%s: value %zu gave %d, want %d\n", at,
				from ? "+" : "", i, results[i], instances[i].status);
			return 1;
		}
	return 0;
}

int main(void)
{
	failmalloc_exempt(1);
	schema = json_tokener_parse(schema_text);
	common = json_tokener_parse(common_text);
	for (size_t i = 0; i < NINST; i++)
		values[i] = json_tokener_parse(instances[i].text);
	if (!schema || !common) {
		fprintf(stderr, "FAIL: the test's own JSON does not parse\n");
		return 1;
	}
	failmalloc_exempt(0);
	int compiled;
	long base = failmalloc_live();
	if (run(0, 0, &compiled) || !compiled) {
		fprintf(stderr, "FAIL: the clean run fails\n");
		return 1;
	}
	long total = failmalloc_count();
	int failures = 0, runs = 0;
	for (int from = 0; from <= 1; from++)
		for (long n = 1; n <= total + 5; n++) {
			runs++;
			failures += run(n, from, &compiled);
			long live = failmalloc_live();
			if (live != base) {
				fprintf(stderr, "FAIL: at %ld%s: %ld allocations leaked\n", n,
					from ? "+" : "", live - base);
				failmalloc_print_stack();
				failures++;
				base = live;
			}
		}
	printf("alloc-fail (jschema): %ld allocations per clean run, %d runs, %d failures, "
	       "%ld spared\n",
	       total, runs, failures, failmalloc_spared());
	json_object_put(schema);
	json_object_put(common);
	for (size_t i = 0; i < NINST; i++)
		json_object_put(values[i]);
	return failures ? 1 : 0;
}

#else

int main(void)
{
	fprintf(stderr, "SKIP: the allocation-failure test cannot interpose malloc under "
			"clang's sanitizers\n");
	return 77;
}

#endif
