/*
 * fuzz-schema.c - libFuzzer target: the JSON Schema validator
 * (api/jschema/jschema.c) on a random schema and a random instance.
 *
 * Input: byte 0 chooses the options (bit 0: formats assert; bit 1: a
 * second document, the instance text, is handed over as
 * https://fuzz.test/other.json; bit 2: small limits, 64 schema levels,
 * 2000 evaluation steps, a match limit of 2000); the rest is
 * "SCHEMA\0INSTANCE", or one text used as both.  Texts that json-c does
 * not parse are skipped.
 *
 * Checked beyond ASan, UBSan and LeakSanitizer: compile returns a known
 * status with a message when it fails; validation returns a known status,
 * the same one twice (nothing it reads was changed); an invalid value's
 * error has a message and names an instance location that exists in the
 * instance (the pointer resolves) unless it was cut.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"

static json_object *parse(const char *text, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(64);
	if (!tok)
		return NULL;
	json_object *o = json_tokener_parse_ex(tok, text, (int)len + 1);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* Follows a JSON pointer; NULL when it names nothing. */
static json_object *resolve(json_object *root, const char *ptr, int *found)
{
	json_object *cur = root;
	*found = 1;
	if (!*ptr)
		return cur;
	char *dup = strdup(ptr);
	if (!dup)
		abort();
	/* Empty tokens ("//") matter: walk by hand, not with strtok. */
	char *p = dup + 1;
	for (;;) {
		char *end = strchr(p, '/');
		if (end)
			*end = 0;
		char *w = p;
		for (char *q = p; *q; q++) {
			if (q[0] == '~' && q[1] == '1')
				*w++ = '/', q++;
			else if (q[0] == '~' && q[1] == '0')
				*w++ = '~', q++;
			else
				*w++ = *q;
		}
		*w = 0;
		/* json-c's null is a NULL object: presence is what counts. */
		json_object *next = NULL;
		int present = 0;
		if (json_object_is_type(cur, json_type_object)) {
			present = json_object_object_get_ex(cur, p, &next);
		} else if (json_object_is_type(cur, json_type_array)) {
			char *e;
			long i = strtol(p, &e, 10);
			present = *p && !*e && i >= 0 && (size_t)i < json_object_array_length(cur);
			if (present)
				next = json_object_array_get_idx(cur, (size_t)i);
		}
		if (!present) {
			*found = 0;
			break;
		}
		cur = next;
		if (!end)
			break;
		p = end + 1;
	}
	free(dup);
	return cur;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t flags = data[0];
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	size_t n = size - 1;
	size_t cut = strlen(text);
	json_object *schema = parse(text, cut);
	json_object *inst = cut < n ? parse(text + cut + 1, strlen(text + cut + 1)) : NULL;
	if (!inst && schema)
		inst = json_object_get(schema);
	if (!schema) {
		json_object_put(inst);
		free(text);
		return 0;
	}
	jschema_doc doc = { "https://fuzz.test/other.json", inst };
	jschema_opts opts = { .formats = flags & 1 };
	if (flags & 2) {
		opts.docs = &doc;
		opts.ndocs = 1;
	}
	if (flags & 4) {
		opts.max_schema_depth = 64;
		opts.max_steps = 2000;
		opts.regex_match_limit = 2000;
	}
	jschema *s = NULL;
	jschema_error err;
	int rc = jschema_compile(schema, &opts, &s, &err);
	if (rc != JSCHEMA_OK) {
		if (s || (rc != JSCHEMA_ESCHEMA && rc != JSCHEMA_EREMOTE && rc != JSCHEMA_ELIMIT &&
			  rc != JSCHEMA_ENOMEM) ||
		    !err.message[0]) {
			fprintf(stderr, "fuzz-schema: compile returned %d, %p, \"%s\"\n", rc,
				(void *)s, err.message);
			abort();
		}
	} else {
		jschema_error e2;
		int v1 = jschema_validate(s, inst, &err);
		int v2 = jschema_validate(s, inst, &e2);
		if (v1 != v2 || (v1 != JSCHEMA_OK && v1 != JSCHEMA_INVALID && v1 != JSCHEMA_ELIMIT &&
				 v1 != JSCHEMA_ENOMEM)) {
			fprintf(stderr, "fuzz-schema: validate returned %d then %d\n", v1, v2);
			abort();
		}
		if (v1 == JSCHEMA_INVALID || v1 == JSCHEMA_ELIMIT) {
			if (!err.message[0] || strcmp(err.message, e2.message) != 0) {
				fprintf(stderr, "fuzz-schema: messages \"%s\" / \"%s\"\n", err.message,
					e2.message);
				abort();
			}
			int found;
			size_t k = strlen(err.instance);
			int cut_short = k >= 3 && strcmp(err.instance + k - 3, "...") == 0;
			resolve(inst, err.instance, &found);
			if (!found && !cut_short) {
				fprintf(stderr, "fuzz-schema: \"%s\" names no value (%s)\n",
					err.instance, err.message);
				abort();
			}
		}
		jschema_free(s);
	}
	json_object_put(schema);
	json_object_put(inst);
	free(text);
	return 0;
}
