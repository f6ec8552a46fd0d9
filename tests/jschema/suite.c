/*
 * suite.c - the official JSON Schema Test Suite (draft 2020-12) against
 * libmcp's validator (api/jschema/jschema.c), in make check.
 *
 *   suite [SUITE_DIR]      (default: $JSON_SCHEMA_SUITE_DIR)
 *
 * Runs every case of SUITE_DIR/tests/draft2020-12/ (every .json file).  The documents of
 * SUITE_DIR/remotes/draft2020-12 are handed to the compiler as the
 * documents http://localhost:1234/draft2020-12/... (never fetched: the
 * validator does not fetch), so refRemote.json runs too.  A case is
 * skipped only when its schema needs a document the suite does not carry
 * (the 2020-12 meta-schema, which is not bundled); each skipped case is
 * listed with that reason.  Any other failure to compile is a failure.
 *
 * Then the optional/ folder: the format/ files with format assertion on,
 * the others as they are.  Their counts are a figure: optional failures do
 * not fail the test, but are listed with VERBOSE=1.
 *
 * Exit: 0 when every required case passed, 1 otherwise, and 1 when the
 * suite is not there (it is in the tree: tests/data/json-schema-test-suite).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "api/jschema/jschema.h"

#define REMOTE_BASE "http://localhost:1234/"

/* A document $ref may need that the suite does not carry: such cases
 * are skipped, not failed. */
static const char *const not_carried[] = {
	"https://json-schema.org/draft/2020-12/schema",
};

typedef struct counts {
	int files, cases, passed, failed, skipped;
} counts;

static jschema_doc *docs;
static size_t ndocs, doccap;
static int verbose;

static json_object *load(const char *path)
{
	json_tokener *tok = json_tokener_new_ex(1000);
	FILE *f = fopen(path, "rb");
	json_object *o = NULL;
	if (f && tok) {
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		fseek(f, 0, SEEK_SET);
		char *buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = 0;
			o = json_tokener_parse_ex(tok, buf, (int)n);
		}
		free(buf);
	}
	if (f)
		fclose(f);
	if (tok)
		json_tokener_free(tok);
	return o;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in `dir` ending in `suffix` (or every name when NULL), sorted;
 * the caller frees each and the array. */
static char **list_dir(const char *dir, const char *suffix, size_t *n)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **v = NULL;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		size_t k = strlen(e->d_name);
		if (suffix && (k < strlen(suffix) || strcmp(e->d_name + k - strlen(suffix), suffix)))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				exit(2);
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(v, *n, sizeof *v, cmp_str);
	return v;
}

/* Every .json under `dir`, as the document REMOTE_BASE + rel. */
static void load_remotes(const char *dir, const char *rel)
{
	size_t n;
	char **names = list_dir(dir, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		char path[4096], sub[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			load_remotes(path, sub);
		} else if (strstr(names[i], ".json")) {
			json_object *o = load(path);
			if (!o) {
				fprintf(stderr, "suite: cannot parse %s\n", path);
				exit(2);
			}
			if (ndocs == doccap) {
				doccap = doccap ? doccap * 2 : 32;
				docs = realloc(docs, doccap * sizeof *docs);
			}
			char *uri = malloc(strlen(REMOTE_BASE) + strlen(sub) + 1);
			sprintf(uri, "%s%s", REMOTE_BASE, sub);
			docs[ndocs].uri = uri;
			docs[ndocs].schema = o;
			ndocs++;
		}
		free(names[i]);
	}
	free(names);
}

/* The document a failed compile names, when the suite does not carry it. */
static const char *missing_document(const jschema_error *e)
{
	for (size_t i = 0; i < sizeof not_carried / sizeof *not_carried; i++)
		if (strstr(e->message, not_carried[i]))
			return not_carried[i];
	return NULL;
}

static void run_file(const char *path, const char *label, int formats, int required, counts *c)
{
	json_object *groups = load(path);
	if (!json_object_is_type(groups, json_type_array)) {
		fprintf(stderr, "suite: cannot parse %s\n", path);
		exit(2);
	}
	c->files++;
	jschema_opts opts = { .formats = formats, .docs = docs, .ndocs = ndocs };
	for (size_t g = 0; g < json_object_array_length(groups); g++) {
		json_object *grp = json_object_array_get_idx(groups, g);
		json_object *schema = NULL, *tests = NULL, *gdesc = NULL;
		json_object_object_get_ex(grp, "schema", &schema);
		json_object_object_get_ex(grp, "tests", &tests);
		json_object_object_get_ex(grp, "description", &gdesc);
		jschema *s = NULL;
		jschema_error err;
		int rc = jschema_compile(schema, &opts, &s, &err);
		const char *missing = rc == JSCHEMA_EREMOTE ? missing_document(&err) : NULL;
		for (size_t t = 0; t < json_object_array_length(tests); t++) {
			json_object *test = json_object_array_get_idx(tests, t);
			json_object *data = NULL, *valid = NULL, *tdesc = NULL;
			json_object_object_get_ex(test, "data", &data);
			json_object_object_get_ex(test, "valid", &valid);
			json_object_object_get_ex(test, "description", &tdesc);
			c->cases++;
			const char *gd = json_object_get_string(gdesc), *td = json_object_get_string(tdesc);
			if (missing) {
				c->skipped++;
				if (required || verbose)
					printf("  skip: %s: %s: %s: needs %s, which the suite does not "
					       "carry and the validator never fetches\n",
					       label, gd, td, missing);
				continue;
			}
			if (rc != JSCHEMA_OK) {
				c->failed++;
				if (required || verbose)
					printf("  FAIL: %s: %s: %s: the schema did not compile: %s\n",
					       label, gd, td, err.message);
				continue;
			}
			int vr = jschema_validate(s, data, &err);
			int want = json_object_get_boolean(valid);
			if ((vr == JSCHEMA_OK) == want && (vr == JSCHEMA_OK || vr == JSCHEMA_INVALID)) {
				c->passed++;
			} else {
				c->failed++;
				if (required || verbose)
					printf("  FAIL: %s: %s: %s: expected %s, got %s%s%s\n", label, gd,
					       td, want ? "valid" : "invalid",
					       vr == JSCHEMA_OK ? "valid" : vr == JSCHEMA_INVALID
									? "invalid"
									: "an error",
					       vr == JSCHEMA_OK ? "" : ": ", vr == JSCHEMA_OK ? "" : err.message);
			}
		}
		jschema_free(s);
	}
	json_object_put(groups);
}

static void run_dir(const char *dir, const char *prefix, int formats, int required, counts *c)
{
	size_t n;
	char **names = list_dir(dir, ".json", &n);
	for (size_t i = 0; i < n; i++) {
		char path[4096], label[512];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		snprintf(label, sizeof label, "%s%s", prefix, names[i]);
		run_file(path, label, formats, required, c);
		free(names[i]);
	}
	free(names);
}

static void print_counts(const char *what, const counts *c)
{
	printf("%s: %d files, %d cases: %d passed, %d failed, %d skipped\n", what, c->files, c->cases,
	       c->passed, c->failed, c->skipped);
}

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : getenv("JSON_SCHEMA_SUITE_DIR");
	verbose = getenv("VERBOSE") && *getenv("VERBOSE") && strcmp(getenv("VERBOSE"), "0");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/draft2020-12", root ? root : "");
	struct stat st;
	if (!root || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		printf("FAIL: the JSON Schema Test Suite is not at %s (it is in the tree at "
		       "tests/data/json-schema-test-suite; configure "
		       "--with-json-schema-test-suite=DIR names another)\n",
		       root ? dir : "(JSON_SCHEMA_SUITE_DIR not set)");
		return 1;
	}
	char readme[4096];
	snprintf(readme, sizeof readme, "%s/README.md", root);
	FILE *f = fopen(readme, "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof line, f))
			if (strstr(line, "commit")) {
				printf("JSON Schema Test Suite: %s", line);
				break;
			}
		fclose(f);
	}
	char remotes[4096];
	snprintf(remotes, sizeof remotes, "%s/remotes/draft2020-12", root);
	load_remotes(remotes, "draft2020-12");
	printf("%zu remote documents preloaded from %s\n", ndocs, remotes);

	counts req = { 0 }, opt = { 0 };
	run_dir(dir, "", 0, 1, &req);
	char odir[4096 + 16];
	snprintf(odir, sizeof odir, "%s/optional", dir);
	run_dir(odir, "optional/", 0, 0, &opt);
	snprintf(odir, sizeof odir, "%s/optional/format", dir);
	run_dir(odir, "optional/format/", 1, 0, &opt);

	print_counts("required (tests/draft2020-12)", &req);
	print_counts("optional (a figure; failures do not fail the test)", &opt);
	for (size_t i = 0; i < ndocs; i++) {
		free((char *)docs[i].uri);
		json_object_put(docs[i].schema);
	}
	free(docs);
	return req.failed ? 1 : 0;
}
