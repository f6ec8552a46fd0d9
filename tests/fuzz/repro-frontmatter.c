/*
 * repro-frontmatter.c - regression test for a read past the end that
 * fuzz-skills-yaml found: api_skill_parse_frontmatter() takes a text and
 * its length, but checked that a closing "---" line held only blanks with
 * strspn(), which reads on to a NUL.  A SKILL.md whose last line is the
 * closing "---" without a newline was read beyond its length.
 *
 * Each text is placed at the very end of a page followed by an
 * inaccessible page, so a read one byte too far faults in any build, not
 * only under ASan.
 *
 * Second finding: a refusal quoted a multi-line scalar whole, so the
 * "one-line reason" held newlines ("frontmatter: 0x25DDD#\nDDDD does not
 * match its tag"); a reason must hold no control character.  Exits 0
 * when every text parses as expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/internal.h"

static int failures;

/* Parses `text` (without its NUL) ending right before a guard page. */
static void check(const char *text, int want_ok, size_t want_body)
{
	size_t len = strlen(text);
	long page = sysconf(_SC_PAGESIZE);
	size_t span = ((len + (size_t)page - 1) / (size_t)page + 1) * (size_t)page;
	char *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + span - page, (size_t)page, PROT_NONE) != 0) {
		perror("mmap");
		exit(99);
	}
	char *at = map + span - page - len;
	memcpy(at, text, len);
	char why[256];
	size_t body = 0;
	json_object *fm = api_skill_parse_frontmatter(at, len, &body, why, sizeof why);
	if (!fm != !want_ok || (fm && body != want_body)) {
		fprintf(stderr, "FAIL: %s: %s (body at %zu)\n", text, fm ? "parsed" : why, body);
		failures++;
	}
	json_object_put(fm);
	munmap(map, span);
}

/* The reason of a refusal is one line of printable text. */
static void check_reason(const char *text)
{
	char why[256];
	json_object *fm = api_skill_parse_frontmatter(text, strlen(text), NULL, why, sizeof why);
	int bad = fm != NULL || !why[0];
	for (const char *p = why; *p; p++)
		bad |= (unsigned char)*p < 0x20 || *p == 0x7f;
	if (bad) {
		fprintf(stderr, "FAIL: reason \"%s\"\n", why);
		failures++;
	}
	json_object_put(fm);
}

int main(void)
{
	check("---\nname: x\n---", 1, 15);
	check("---\nname: x\n---  \t", 1, 18);
	check("---\nname: x\n---\r", 1, 16);
	check("---\nname: x\n--- x", 0, 0);
	check("---\nname: x\n--", 0, 0);
	check("---\n---", 0, 0); /* empty frontmatter: not a mapping */
	check_reason("---\n2: [1, !!null 0x25DDD#\n\nDDDD]\n---\n");
	check_reason("---\na: !!int 12\n  \t34\x01\n---\n");
	check_reason("---\nkey\n  two: 1\n---\n");
	if (failures)
		return 1;
	printf("PASS: repro-frontmatter\n");
	return 0;
}
