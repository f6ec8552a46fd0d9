/*
 * fuzz-skills-yaml.c - libFuzzer target: the YAML frontmatter of a
 * SKILL.md (api/skills-yaml.c, api_skill_parse_frontmatter), which a
 * skills directory may hold from anyone who can write a file there.
 *
 * Input: byte 0 chooses the options (bit 0: the rest is wrapped as
 * "---\n" REST "\n---\nbody\n", so mutations explore the YAML rather than
 * the fences; bit 1: no buffer for the reason); the rest is the file.
 * The text is handed over in a buffer of exactly its length, with no NUL
 * after it: the function takes a length and must not read past it.
 *
 * Checked beyond ASan, UBSan and LeakSanitizer, what internal.h and the
 * file's first lines promise: a refusal always comes with a one-line
 * reason (NUL-terminated within the buffer, no control character); a
 * success has none, is a JSON object, whose text re-parses strictly (no NaN or
 * Infinity: "what JSON cannot carry is refused") as valid UTF-8 to an
 * equal object, and says where the body starts: after the closing "---"
 * line, within the text.  The same text gives the same answer twice, and
 * with or without a reason buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

#define WHY 256

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz-skills-yaml: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

/* The object's JSON text parsed again, strictly and as UTF-8. */
static json_object *reparse(json_object *o)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *back = json_tokener_parse_ex(tok, text, (int)strlen(text));
	if (json_tokener_get_error(tok) != json_tokener_success)
		fail("the frontmatter's JSON does not parse strictly", text);
	json_tokener_free(tok);
	return back;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	const char *head = flags & 1 ? "---\n" : "";
	const char *tail = flags & 1 ? "\n---\nbody\n" : "";
	size_t hl = strlen(head), tl = strlen(tail), n = size - 1;
	size_t len = hl + n + tl;
	char *text = malloc(len ? len : 1);
	if (!text)
		return 0;
	memcpy(text, head, hl);
	memcpy(text + hl, data + 1, n);
	memcpy(text + hl + n, tail, tl);

	char why[WHY], why2[WHY];
	memset(why, 'x', sizeof why);
	size_t body_at = (size_t)-1, body_at2 = (size_t)-1;
	json_object *fm = api_skill_parse_frontmatter(text, len, &body_at,
						      flags & 2 ? NULL : why, flags & 2 ? 0 : WHY);
	json_object *again = api_skill_parse_frontmatter(text, len, &body_at2, why2, WHY);
	if (!fm != !again || (fm && (body_at != body_at2 || !json_object_equal(fm, again))))
		fail("two parses of the same text disagree", NULL);
	if (!(flags & 2) && strcmp(why, why2) != 0)
		fail("two parses give different reasons", why2);
	if (!memchr(why2, 0, sizeof why2))
		fail("the reason is not NUL-terminated", NULL);
	if (!fm) {
		if (!why2[0])
			fail("a refusal without a reason", NULL);
		for (const char *p = why2; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				fail("the reason holds a control character (one line)", why2);
	} else {
		if (why2[0])
			fail("a success with a reason", why2);
		if (!json_object_is_type(fm, json_type_object))
			fail("the frontmatter is not an object",
			     json_object_to_json_string(fm));
		/* The body follows a line "---" (spaces or tabs after it). */
		if (body_at > len || body_at < 7)
			fail("the body does not start within the text", NULL);
		size_t e = body_at;
		if (e > 0 && text[e - 1] == '\n')
			e--; /* the newline of the closing line */
		if (e > 0 && text[e - 1] == '\r')
			e--;
		size_t ls = e;
		while (ls > 0 && text[ls - 1] != '\n')
			ls--;
		int fence = e - ls >= 3 && memcmp(text + ls, "---", 3) == 0;
		for (size_t i = ls + 3; fence && i < e; i++)
			fence = text[i] == ' ' || text[i] == '\t';
		if (!fence)
			fail("the body does not follow a closing \"---\" line", NULL);
		json_object *back = reparse(fm);
		if (!json_object_equal(fm, back))
			fail("the frontmatter's JSON does not read back equal",
			     json_object_to_json_string(fm));
		json_object_put(back);
	}
	json_object_put(fm);
	json_object_put(again);
	free(text);
	return 0;
}
