/*
 * jschema.c - JSON Schema 2020-12: compiling a schema document into a graph
 * of immutable nodes, and validating json-c instances against it.
 *
 * Compiling runs in three passes: a scan of every document that records
 * its schema resources ($id), anchors and dynamic anchors and where each
 * subschema is; the compile of each subschema into a node, from the root,
 * with $ref and $dynamicRef targets resolved afterwards from a work list
 * (a pointer may reach a subschema the first pass never saw); and a search
 * for $ref cycles that never descend into the instance.  Everything lives
 * in one arena freed at once, so a failed compile leaks nothing.
 *
 * Validation walks the graph with the instance.  Nothing it reads is
 * written: json-c's serialiser caches text inside objects, so the texts
 * messages quote from the schema are made at compile time, and the only
 * state of a validation is on the caller's stack.  That is what lets many
 * threads share one compiled schema.
 *
 * unevaluatedProperties and unevaluatedItems need the annotations of
 * properties, items, contains and friends, collected from every subschema
 * that passed: they travel as bit sets over the members (or items) of the
 * current instance, made only where an unevaluated* keyword is in play.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"

#define DEFAULT_BASE "urn:libmcp:schema"
#define DEFAULT_SCHEMA_DEPTH 128
#define DEFAULT_MAX_NODES 100000
#define DEFAULT_EVAL_DEPTH 256
#define DEFAULT_MAX_STEPS UINT64_C(10000000)
#define TEXT_MAX 160 /* quoted schema values in messages */

#define VOCAB_VALIDATION "https://json-schema.org/draft/2020-12/vocab/validation"
#define VOCAB_FORMAT_ASSERTION "https://json-schema.org/draft/2020-12/vocab/format-assertion"

static const char *const known_vocabs[] = {
	"https://json-schema.org/draft/2020-12/vocab/core",
	"https://json-schema.org/draft/2020-12/vocab/applicator",
	"https://json-schema.org/draft/2020-12/vocab/unevaluated",
	VOCAB_VALIDATION,
	"https://json-schema.org/draft/2020-12/vocab/meta-data",
	"https://json-schema.org/draft/2020-12/vocab/format-annotation",
	VOCAB_FORMAT_ASSERTION,
	"https://json-schema.org/draft/2020-12/vocab/content",
};

/* ---- types ---------------------------------------------------------------- */

enum {
	T_NULL = 1,
	T_BOOLEAN = 2,
	T_OBJECT = 4,
	T_ARRAY = 8,
	T_NUMBER = 16,
	T_STRING = 32,
	T_INTEGER = 64
};

static const struct {
	const char *name;
	unsigned bit;
} type_names[] = {
	{ "null", T_NULL },	{ "boolean", T_BOOLEAN }, { "object", T_OBJECT },
	{ "array", T_ARRAY },	{ "number", T_NUMBER },	  { "string", T_STRING },
	{ "integer", T_INTEGER },
};

/* A JSON number as json-c holds it. */
enum { N_I64, N_U64, N_DBL };
typedef struct jnum {
	int kind;
	int64_t i;
	uint64_t u;
	double d;
} jnum;

typedef struct jnode jnode;
typedef struct jres jres;

typedef struct named {
	const char *name;
	jnode *node;
} named;

typedef struct patprop {
	struct jschema_regex *re;
	jnode *node;
} patprop;

typedef struct depreq {
	const char *name;
	const char **req;
	size_t nreq;
} depreq;

enum { K_TRUE, K_FALSE, K_OBJECT };

struct jnode {
	int kind;
	const char *loc;           /* schema location (JSON pointer) */
	jres *res;                 /* the resource it belongs to */
	json_object *obj;          /* in the compiled copy; NULL for booleans */
	int mark;                  /* cycle search */

	unsigned types;            /* "type"; 0 when absent */
	jnode *ref;                /* $ref */
	jnode *dynref;             /* $dynamicRef, statically resolved */
	const char *dyn_name;      /* set when the $dynamicRef is dynamic */
	jnode **all_of, **any_of, **one_of;
	size_t n_all_of, n_any_of, n_one_of;
	jnode *not_, *if_, *then_, *else_;
	named *props;              /* sorted by name */
	size_t n_props;
	patprop *pats;
	size_t n_pats;
	jnode *addl_props;
	named *dep_schemas;
	size_t n_dep_schemas;
	jnode *prop_names;
	jnode **prefix;
	size_t n_prefix;
	jnode *items;
	jnode *contains;
	int64_t min_contains, max_contains; /* max < 0: none */
	jnode *uneval_props, *uneval_items;

	int has_const, has_enum;
	json_object *const_v;
	json_object **enum_v;
	size_t n_enum;
	const char *const_text, *enum_text;
	int has_multiple_of, has_max, has_xmax, has_min, has_xmin;
	jnum multiple_of, maximum, xmaximum, minimum, xminimum;
	int64_t max_length, min_length, max_items, min_items, max_props, min_props;
	int unique_items;
	const char **required;
	size_t n_required;
	depreq *dep_req;
	size_t n_dep_req;
	struct jschema_regex *pattern;
	const char *pattern_text;
	int format;
	const char *format_name;
};

typedef struct dynanchor {
	const char *name;
	json_object *obj;
	jnode *node;
} dynanchor;

/* A schema resource: a document root or a subschema with $id. */
struct jres {
	const char *uri;           /* absolute, without fragment */
	const char *alias;         /* a document's retrieval URI, or NULL */
	json_object *root;
	dynanchor *dyn;
	size_t ndyn, dyncap;
	int used;                  /* a compiled node lies in it */
	int dyn_done;              /* its dynamic anchors are compiled */
	jres *next;
};

typedef struct anchor {
	jres *res;
	const char *name;
	json_object *obj;
	struct anchor *next;
} anchor;

/* What the scan learnt about a subschema object, and its node. */
typedef struct slot {
	json_object *obj;
	const char *base;
	jres *res;
	const char *loc;
	jnode *node;
} slot;

typedef struct ablock {
	struct ablock *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
} ablock;

struct jschema {
	ablock *arena;
	json_object **docs;        /* owned copies */
	size_t ndocs;
	jnode *root;
	jres *resources;
	anchor *anchors;
	struct jschema_regex **regexes;
	size_t nregexes, regcap;
	jnode **nodes;             /* every compiled object node */
	size_t nnodes, nodecap;
	int formats;
	int no_validation;         /* a meta-schema without the validation vocabulary */
	int max_eval_depth;
	uint64_t max_steps;
	uint32_t match_limit;
};

/* ---- the arena ------------------------------------------------------------ */

static void *aalloc(jschema *s, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	ablock *b = s->arena;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 8192 ? n : 8192;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = s->arena;
		s->arena = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

static char *astrndup(jschema *s, const char *str, size_t n)
{
	char *d = aalloc(s, n + 1);
	if (d) {
		memcpy(d, str, n);
		d[n] = 0;
	}
	return d;
}

static char *astrdup(jschema *s, const char *str)
{
	return astrndup(s, str, strlen(str));
}

/* ---- compile state and errors --------------------------------------------- */

typedef struct pending {
	jnode *node;
	const char *uri;           /* resolved, with fragment */
	const char *raw;           /* as written */
	int dynamic;
	struct pending *next;
} pending;

typedef struct cstate {
	jschema *s;
	jschema_error *err;
	int status;
	slot *slots;               /* open addressing, by object pointer */
	size_t nslots, slotcap;
	pending *work;
	int max_depth;
	size_t max_nodes;
} cstate;

static void set_text(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n < cap) {
		memcpy(dst, src, n + 1);
		return;
	}
	memcpy(dst, src, cap - 4);
	memcpy(dst + cap - 4, "...", 4);
}

__attribute__((format(printf, 5, 6))) static void cfail(cstate *c, int status, const char *loc,
							const char *keyword, const char *fmt, ...)
{
	if (c->status)
		return;
	c->status = status;
	jschema_error *e = c->err;
	if (!e)
		return;
	char msg[JSCHEMA_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	e->instance[0] = 0;
	set_text(e->keyword, sizeof e->keyword, keyword ? keyword : "");
	char where[JSCHEMA_PTR_MAX];
	snprintf(where, sizeof where, "%s%s%s", loc ? loc : "", loc && keyword ? "/" : "",
		 loc && keyword ? keyword : "");
	set_text(e->schema, sizeof e->schema, where);
	char line[JSCHEMA_MSG_MAX + JSCHEMA_PTR_MAX + 64];
	if (status == JSCHEMA_ENOMEM)
		snprintf(line, sizeof line, "out of memory while compiling the schema");
	else
		snprintf(line, sizeof line, "schema %s: %s (%s)", *where ? where : "(root)", msg,
			 keyword ? keyword : "schema");
	set_text(e->message, sizeof e->message, line);
}

static void oom(cstate *c)
{
	cfail(c, JSCHEMA_ENOMEM, NULL, NULL, "out of memory");
}

/* A location one step below `loc` (JSON pointer escaping of `tok`). */
static const char *loc_child(cstate *c, const char *loc, const char *tok)
{
	size_t n = strlen(loc), extra = 0;
	for (const char *p = tok; *p; p++)
		extra += *p == '~' || *p == '/';
	size_t tn = strlen(tok);
	char *d = aalloc(c->s, n + tn + extra + 2);
	if (!d) {
		oom(c);
		return NULL;
	}
	memcpy(d, loc, n);
	char *o = d + n;
	*o++ = '/';
	for (const char *p = tok; *p; p++) {
		if (*p == '~') {
			*o++ = '~';
			*o++ = '0';
		} else if (*p == '/') {
			*o++ = '~';
			*o++ = '1';
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return d;
}

static const char *loc_index(cstate *c, const char *loc, size_t i)
{
	char b[32];
	snprintf(b, sizeof b, "%zu", i);
	return loc_child(c, loc, b);
}

/* ---- slots: subschema objects by address ------------------------------------ */

static size_t ptr_hash(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t)x;
}

static slot *slot_find(cstate *c, json_object *o)
{
	if (!c->slotcap)
		return NULL;
	size_t m = c->slotcap - 1;
	for (size_t i = ptr_hash(o) & m;; i = (i + 1) & m) {
		if (c->slots[i].obj == o)
			return &c->slots[i];
		if (!c->slots[i].obj)
			return NULL;
	}
}

static slot *slot_add(cstate *c, json_object *o, const char *base, jres *res, const char *loc)
{
	if ((c->nslots + 1) * 2 > c->slotcap) {
		size_t cap = c->slotcap ? c->slotcap * 2 : 256;
		slot *ns = calloc(cap, sizeof *ns);
		if (!ns) {
			oom(c);
			return NULL;
		}
		for (size_t i = 0; i < c->slotcap; i++) {
			if (!c->slots[i].obj)
				continue;
			size_t j = ptr_hash(c->slots[i].obj) & (cap - 1);
			while (ns[j].obj)
				j = (j + 1) & (cap - 1);
			ns[j] = c->slots[i];
		}
		free(c->slots);
		c->slots = ns;
		c->slotcap = cap;
	}
	size_t m = c->slotcap - 1;
	size_t i = ptr_hash(o) & m;
	while (c->slots[i].obj && c->slots[i].obj != o)
		i = (i + 1) & m;
	if (!c->slots[i].obj)
		c->nslots++;
	c->slots[i] = (slot){ o, base, res, loc, NULL };
	return &c->slots[i];
}

/* ---- resources and anchors --------------------------------------------------- */

static jres *res_find(const jschema *s, const char *uri)
{
	for (jres *r = s->resources; r; r = r->next)
		if (strcmp(r->uri, uri) == 0 || (r->alias && strcmp(r->alias, uri) == 0))
			return r;
	return NULL;
}

static jres *res_add(cstate *c, const char *uri, json_object *root, const char *loc)
{
	jres *old = res_find(c->s, uri);
	if (old && old->root != root) {
		cfail(c, JSCHEMA_ESCHEMA, loc, "$id", "the identifier %s is used twice", uri);
		return NULL;
	}
	if (old)
		return old;
	jres *r = aalloc(c->s, sizeof *r);
	if (!r || !(r->uri = astrdup(c->s, uri))) {
		oom(c);
		return NULL;
	}
	r->root = root;
	r->next = c->s->resources;
	c->s->resources = r;
	return r;
}

static int anchor_name_ok(const char *a)
{
	if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') || *a == '_'))
		return 0;
	for (a++; *a; a++)
		if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') ||
		      (*a >= '0' && *a <= '9') || *a == '-' || *a == '_' || *a == '.'))
			return 0;
	return 1;
}

static anchor *anchor_find(const jschema *s, const jres *r, const char *name)
{
	for (anchor *a = s->anchors; a; a = a->next)
		if (a->res == r && strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

static void anchor_add(cstate *c, jres *r, const char *name, json_object *obj, const char *loc,
		       const char *kw, int dynamic)
{
	if (!anchor_name_ok(name)) {
		cfail(c, JSCHEMA_ESCHEMA, loc, kw, "\"%s\" is not a valid anchor name", name);
		return;
	}
	anchor *old = anchor_find(c->s, r, name);
	if (old && old->obj != obj) {
		cfail(c, JSCHEMA_ESCHEMA, loc, kw, "the anchor \"%s\" is defined twice in %s", name,
		      r->uri);
		return;
	}
	if (!old) {
		anchor *a = aalloc(c->s, sizeof *a);
		if (!a || !(a->name = astrdup(c->s, name))) {
			oom(c);
			return;
		}
		a->res = r;
		a->obj = obj;
		a->next = c->s->anchors;
		c->s->anchors = a;
	}
	if (!dynamic)
		return;
	if (r->ndyn == r->dyncap) {
		size_t cap = r->dyncap ? r->dyncap * 2 : 4;
		dynanchor *d = aalloc(c->s, cap * sizeof *d);
		if (!d) {
			oom(c);
			return;
		}
		if (r->ndyn)
			memcpy(d, r->dyn, r->ndyn * sizeof *d);
		r->dyn = d;
		r->dyncap = cap;
	}
	r->dyn[r->ndyn].name = astrdup(c->s, name);
	r->dyn[r->ndyn].obj = obj;
	if (!r->dyn[r->ndyn].name) {
		oom(c);
		return;
	}
	r->ndyn++;
}

/* ---- pass 1: the scan ------------------------------------------------------------ */

static const char *const schema_object_kws[] = { "$defs", "properties", "patternProperties",
						  "dependentSchemas", "dependencies" };
static const char *const schema_array_kws[] = { "allOf", "anyOf", "oneOf", "prefixItems" };
static const char *const schema_kws[] = { "items",	 "additionalProperties", "unevaluatedItems",
					  "unevaluatedProperties", "contains", "propertyNames",
					  "not",	 "if", "then", "else", "contentSchema" };

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *str_member(json_object *o, const char *key)
{
	json_object *v = member(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The base URI a "$id" makes, or NULL (failure reported). */
static const char *id_base(cstate *c, json_object *o, const char *base, const char *loc)
{
	json_object *jid = member(o, "$id");
	if (!jid)
		return base;
	if (!json_object_is_type(jid, json_type_string)) {
		cfail(c, JSCHEMA_ESCHEMA, loc, "$id", "must be a string");
		return NULL;
	}
	char *abs = jschema_uri_resolve(base, json_object_get_string(jid));
	if (!abs) {
		oom(c);
		return NULL;
	}
	const char *frag;
	char *bare = jschema_uri_strip(abs, &frag);
	if (!bare) {
		free(abs);
		oom(c);
		return NULL;
	}
	if (frag && *frag) {
		cfail(c, JSCHEMA_ESCHEMA, loc, "$id",
		      "\"%s\" has a fragment; use $anchor to name a subschema",
		      json_object_get_string(jid));
		free(abs);
		free(bare);
		return NULL;
	}
	const char *out = astrdup(c->s, bare);
	free(abs);
	free(bare);
	if (!out)
		oom(c);
	return out;
}

static void scan(cstate *c, json_object *o, const char *base, jres *res, const char *loc,
		 int depth, int doc_root)
{
	if (c->status || !json_object_is_type(o, json_type_object))
		return;
	if (depth > c->max_depth) {
		cfail(c, JSCHEMA_ELIMIT, loc, NULL, "schema nested deeper than %d levels",
		      c->max_depth);
		return;
	}
	if (slot_find(c, o))
		return;
	const char *nb = id_base(c, o, base, loc);
	if (!nb)
		return;
	if (nb != base) {
		if (doc_root && res->root == o) {
			/* The document's $id: its retrieval URI stays an alias. */
			if (strcmp(res->uri, nb) != 0) {
				jres *other = res_find(c->s, nb);
				if (other && other != res) {
					cfail(c, JSCHEMA_ESCHEMA, loc, "$id",
					      "the identifier %s is used twice", nb);
					return;
				}
				res->alias = res->uri;
				res->uri = nb;
			}
		} else {
			res = res_add(c, nb, o, loc);
			if (!res)
				return;
		}
		base = nb;
	}
	if (!slot_add(c, o, base, res, loc))
		return;
	json_object *a = member(o, "$anchor");
	if (a) {
		if (!json_object_is_type(a, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "$anchor", "must be a string");
			return;
		}
		anchor_add(c, res, json_object_get_string(a), o, loc, "$anchor", 0);
	}
	a = member(o, "$dynamicAnchor");
	if (a) {
		if (!json_object_is_type(a, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "$dynamicAnchor", "must be a string");
			return;
		}
		anchor_add(c, res, json_object_get_string(a), o, loc, "$dynamicAnchor", 1);
	}
	for (size_t k = 0; k < sizeof schema_object_kws / sizeof *schema_object_kws; k++) {
		json_object *m = member(o, schema_object_kws[k]);
		if (!json_object_is_type(m, json_type_object))
			continue;
		const char *kl = loc_child(c, loc, schema_object_kws[k]);
		json_object_object_foreach(m, key, val)
		{
			if (c->status || !kl)
				return;
			scan(c, val, base, res, loc_child(c, kl, key), depth + 1, 0);
		}
	}
	for (size_t k = 0; k < sizeof schema_array_kws / sizeof *schema_array_kws; k++) {
		json_object *m = member(o, schema_array_kws[k]);
		if (!json_object_is_type(m, json_type_array))
			continue;
		const char *kl = loc_child(c, loc, schema_array_kws[k]);
		for (size_t i = 0; kl && !c->status && i < json_object_array_length(m); i++)
			scan(c, json_object_array_get_idx(m, i), base, res, loc_index(c, kl, i),
			     depth + 1, 0);
	}
	for (size_t k = 0; k < sizeof schema_kws / sizeof *schema_kws && !c->status; k++) {
		json_object *m = member(o, schema_kws[k]);
		if (m)
			scan(c, m, base, res, loc_child(c, loc, schema_kws[k]), depth + 1, 0);
	}
}

/* ---- values: numbers, equality, texts ------------------------------------------- */

static int is_number(json_object *o)
{
	return json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double);
}

static void num_of(json_object *o, jnum *x)
{
	memset(x, 0, sizeof *x);
	if (json_object_is_type(o, json_type_double)) {
		x->kind = N_DBL;
		x->d = json_object_get_double(o);
		return;
	}
	x->kind = N_I64;
	x->i = json_object_get_int64(o);
	if (x->i == INT64_MAX) {
		uint64_t u = json_object_get_uint64(o);
		if (u > (uint64_t)INT64_MAX) {
			x->kind = N_U64;
			x->u = u;
		}
	}
}

static double num_double(const jnum *x)
{
	return x->kind == N_DBL ? x->d : x->kind == N_U64 ? (double)x->u : (double)x->i;
}

static int cmp_i64_dbl(int64_t i, double d)
{
	if (d >= 9223372036854775808.0)
		return -1;
	if (d < -9223372036854775808.0)
		return 1;
	double fl = floor(d);
	int64_t f = (int64_t)fl;
	if (i != f)
		return i < f ? -1 : 1;
	return d > fl ? -1 : 0;
}

static int cmp_u64_dbl(uint64_t u, double d)
{
	if (d >= 18446744073709551616.0)
		return -1;
	if (d < 9223372036854775808.0)
		return 1; /* u > INT64_MAX >= d */
	double fl = floor(d);
	uint64_t f = (uint64_t)fl;
	if (u != f)
		return u < f ? -1 : 1;
	return d > fl ? -1 : 0;
}

/* Exact comparison of two JSON numbers: -1, 0 or 1. */
static int num_cmp(const jnum *a, const jnum *b)
{
	if (a->kind == N_DBL && b->kind == N_DBL)
		return a->d < b->d ? -1 : a->d > b->d ? 1 : 0;
	if (a->kind == N_DBL)
		return -num_cmp(b, a);
	if (b->kind == N_DBL)
		return a->kind == N_U64 ? cmp_u64_dbl(a->u, b->d) : cmp_i64_dbl(a->i, b->d);
	if (a->kind == N_U64 && b->kind == N_U64)
		return a->u < b->u ? -1 : a->u > b->u;
	if (a->kind == N_U64)
		return 1;
	if (b->kind == N_U64)
		return -1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Whether x is a multiple of m (m > 0). */
static int num_multiple(const jnum *x, const jnum *m)
{
	if (x->kind != N_DBL && m->kind != N_DBL) {
		uint64_t ax = x->kind == N_U64 ? x->u
				: x->i < 0   ? (uint64_t)0 - (uint64_t)x->i
					     : (uint64_t)x->i;
		uint64_t am = m->kind == N_U64 ? m->u : (uint64_t)m->i;
		return am && ax % am == 0;
	}
	double dx = num_double(x), dm = num_double(m);
	double q = dx / dm;
	if (!isfinite(q)) /* the quotient overflows: fmod is exact */
		return isfinite(dx) && fmod(dx, dm) == 0;
	return fabs(q - nearbyint(q)) < 1e-9;
}

static void num_text(const jnum *x, char *b, size_t n)
{
	if (x->kind == N_I64)
		snprintf(b, n, "%lld", (long long)x->i);
	else if (x->kind == N_U64)
		snprintf(b, n, "%llu", (unsigned long long)x->u);
	else
		snprintf(b, n, "%.17g", x->d);
}

static int json_equal(json_object *a, json_object *b);

static int json_equal(json_object *a, json_object *b)
{
	if (is_number(a) && is_number(b)) {
		jnum x, y;
		num_of(a, &x);
		num_of(b, &y);
		return num_cmp(&x, &y) == 0;
	}
	json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
	if (ta != tb)
		return 0;
	switch (ta) {
	case json_type_null:
		return 1;
	case json_type_boolean:
		return !json_object_get_boolean(a) == !json_object_get_boolean(b);
	case json_type_string: {
		int n = json_object_get_string_len(a);
		return n == json_object_get_string_len(b) &&
		       memcmp(json_object_get_string(a), json_object_get_string(b), (size_t)n) == 0;
	}
	case json_type_array: {
		size_t n = json_object_array_length(a);
		if (n != json_object_array_length(b))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!json_equal(json_object_array_get_idx(a, i),
					json_object_array_get_idx(b, i)))
				return 0;
		return 1;
	}
	case json_type_object: {
		if (json_object_object_length(a) != json_object_object_length(b))
			return 0;
		json_object_object_foreach(a, key, val)
		{
			json_object *w = NULL;
			if (!json_object_object_get_ex(b, key, &w) || !json_equal(val, w))
				return 0;
		}
		return 1;
	}
	default:
		return 0;
	}
}

/* A hash that equal values (json_equal) share. */
static uint64_t json_hash(json_object *o)
{
	uint64_t h = 1469598103934665603u;
	switch (json_object_get_type(o)) {
	case json_type_null:
		return 1;
	case json_type_boolean:
		return json_object_get_boolean(o) ? 2 : 3;
	case json_type_int:
	case json_type_double: {
		jnum x;
		num_of(o, &x);
		double d = num_double(&x);
		if (d == 0)
			d = 0; /* -0 */
		uint64_t bits;
		memcpy(&bits, &d, sizeof bits);
		return bits * 0x9E3779B97F4A7C15u + 5;
	}
	case json_type_string: {
		const unsigned char *p = (const unsigned char *)json_object_get_string(o);
		int n = json_object_get_string_len(o);
		for (int i = 0; i < n; i++)
			h = (h ^ p[i]) * 1099511628211u;
		return h;
	}
	case json_type_array: {
		size_t n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++)
			h = (h ^ json_hash(json_object_array_get_idx(o, i))) * 1099511628211u;
		return h + 7;
	}
	case json_type_object: {
		uint64_t sum = 11;
		json_object_object_foreach(o, key, val)
		{
			uint64_t kh = 1469598103934665603u;
			for (const unsigned char *p = (const unsigned char *)key; *p; p++)
				kh = (kh ^ *p) * 1099511628211u;
			sum += (kh * 31) ^ json_hash(val); /* order-free */
		}
		return sum;
	}
	default:
		return 0;
	}
}

/* Compact JSON text of a schema value for messages, cut to TEXT_MAX (made
 * at compile time: serialising caches inside the object). */
static const char *value_text(cstate *c, json_object *v)
{
	const char *t = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!t) {
		oom(c);
		return NULL;
	}
	size_t n = strlen(t);
	if (n <= TEXT_MAX) {
		char *d = astrdup(c->s, t);
		if (!d)
			oom(c);
		return d;
	}
	char *d = aalloc(c->s, TEXT_MAX + 4);
	if (!d) {
		oom(c);
		return NULL;
	}
	memcpy(d, t, TEXT_MAX);
	memcpy(d + TEXT_MAX, "...", 4);
	return d;
}

/* ---- pass 2: compiling nodes -------------------------------------------------- */

static jnode *node_of(cstate *c, json_object *o, const char *base, jres *res, const char *loc,
		      int depth);

static jnode *bool_node(cstate *c, int value, const char *loc, jres *res)
{
	jnode *n = aalloc(c->s, sizeof *n);
	if (!n) {
		oom(c);
		return NULL;
	}
	n->kind = value ? K_TRUE : K_FALSE;
	n->loc = loc;
	n->res = res;
	return n;
}

/* A subschema value at `loc`: a boolean or an object, else an error. */
static jnode *sub(cstate *c, json_object *v, const slot *parent, const char *loc, const char *kw,
		  int depth)
{
	if (c->status || !loc)
		return NULL;
	if (json_object_is_type(v, json_type_boolean))
		return bool_node(c, json_object_get_boolean(v), loc, parent->res);
	if (!json_object_is_type(v, json_type_object)) {
		cfail(c, JSCHEMA_ESCHEMA, parent->loc, kw, "must be a schema (an object or a boolean)");
		return NULL;
	}
	slot *sl = slot_find(c, v);
	if (sl)
		return node_of(c, v, sl->base, sl->res, sl->loc, depth);
	return node_of(c, v, parent->base, parent->res, loc, depth);
}

static int nonneg_int(cstate *c, json_object *v, const char *loc, const char *kw, int64_t *out)
{
	if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (d >= 0 && d == floor(d) && d < 9.2e18) {
			*out = (int64_t)d;
			return 0;
		}
	}
	cfail(c, JSCHEMA_ESCHEMA, loc, kw, "must be a non-negative integer");
	return -1;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* An object of subschemas ("properties", "dependentSchemas"). */
static named *named_schemas(cstate *c, json_object *m, const slot *sl, const char *kw, size_t *n,
			    int depth)
{
	*n = 0;
	if (!json_object_is_type(m, json_type_object)) {
		cfail(c, JSCHEMA_ESCHEMA, sl->loc, kw, "must be an object of schemas");
		return NULL;
	}
	size_t cnt = (size_t)json_object_object_length(m);
	named *v = aalloc(c->s, (cnt ? cnt : 1) * sizeof *v);
	const char *kl = loc_child(c, sl->loc, kw);
	if (!v || !kl) {
		oom(c);
		return NULL;
	}
	size_t i = 0;
	json_object_object_foreach(m, key, val)
	{
		v[i].name = astrdup(c->s, key);
		v[i].node = sub(c, val, sl, loc_child(c, kl, key), kw, depth + 1);
		if (c->status || !v[i].name) {
			oom(c);
			return NULL;
		}
		i++;
	}
	qsort(v, i, sizeof *v, cmp_name);
	*n = i;
	return v;
}

static jnode **schema_array(cstate *c, json_object *m, const slot *sl, const char *kw, size_t *n,
			    int depth)
{
	*n = 0;
	if (!json_object_is_type(m, json_type_array) || json_object_array_length(m) == 0) {
		cfail(c, JSCHEMA_ESCHEMA, sl->loc, kw, "must be a non-empty array of schemas");
		return NULL;
	}
	size_t cnt = json_object_array_length(m);
	jnode **v = aalloc(c->s, cnt * sizeof *v);
	const char *kl = loc_child(c, sl->loc, kw);
	if (!v || !kl) {
		oom(c);
		return NULL;
	}
	for (size_t i = 0; i < cnt; i++) {
		v[i] = sub(c, json_object_array_get_idx(m, i), sl, loc_index(c, kl, i), kw,
			   depth + 1);
		if (c->status)
			return NULL;
	}
	*n = cnt;
	return v;
}

/* An array of unique strings ("required", dependentRequired's values). */
static const char **string_set(cstate *c, json_object *m, const char *loc, const char *kw,
			       size_t *n)
{
	*n = 0;
	if (!json_object_is_type(m, json_type_array)) {
		cfail(c, JSCHEMA_ESCHEMA, loc, kw, "must be an array of strings");
		return NULL;
	}
	size_t cnt = json_object_array_length(m);
	const char **v = aalloc(c->s, (cnt ? cnt : 1) * sizeof *v);
	if (!v) {
		oom(c);
		return NULL;
	}
	for (size_t i = 0; i < cnt; i++) {
		json_object *e = json_object_array_get_idx(m, i);
		if (!json_object_is_type(e, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, kw, "must be an array of strings");
			return NULL;
		}
		v[i] = json_object_get_string(e);
		for (size_t j = 0; j < i; j++)
			if (strcmp(v[j], v[i]) == 0) {
				cfail(c, JSCHEMA_ESCHEMA, loc, kw, "lists \"%s\" twice", v[i]);
				return NULL;
			}
	}
	*n = cnt;
	return v;
}

static void add_pending(cstate *c, jnode *n, const char *base, const char *raw, int dynamic,
			const char *loc)
{
	char *abs = jschema_uri_resolve(base, raw);
	pending *p = aalloc(c->s, sizeof *p);
	if (!abs || !p || !(p->uri = astrdup(c->s, abs)) || !(p->raw = astrdup(c->s, raw))) {
		free(abs);
		oom(c);
		return;
	}
	free(abs);
	(void)loc;
	p->node = n;
	p->dynamic = dynamic;
	p->next = c->work;
	c->work = p;
}

static int track_node(cstate *c, jnode *n)
{
	if (c->s->nnodes >= c->max_nodes) {
		cfail(c, JSCHEMA_ELIMIT, n->loc, NULL, "more than %zu subschemas", c->max_nodes);
		return -1;
	}
	if (c->s->nnodes == c->s->nodecap) {
		size_t cap = c->s->nodecap ? c->s->nodecap * 2 : 64;
		jnode **v = realloc(c->s->nodes, cap * sizeof *v);
		if (!v) {
			oom(c);
			return -1;
		}
		c->s->nodes = v;
		c->s->nodecap = cap;
	}
	c->s->nodes[c->s->nnodes++] = n;
	return 0;
}

static int keep_regex(cstate *c, struct jschema_regex *re)
{
	if (c->s->nregexes == c->s->regcap) {
		size_t cap = c->s->regcap ? c->s->regcap * 2 : 8;
		struct jschema_regex **v = realloc(c->s->regexes, cap * sizeof *v);
		if (!v) {
			jschema_regex_free(re);
			oom(c);
			return -1;
		}
		c->s->regexes = v;
		c->s->regcap = cap;
	}
	c->s->regexes[c->s->nregexes++] = re;
	return 0;
}

static struct jschema_regex *regex_of(cstate *c, json_object *v, const char *loc, const char *kw)
{
	if (!json_object_is_type(v, json_type_string)) {
		cfail(c, JSCHEMA_ESCHEMA, loc, kw, "must be a string");
		return NULL;
	}
	char why[200];
	int nomem = 0;
	struct jschema_regex *re =
		jschema_regex_new(json_object_get_string(v), (size_t)json_object_get_string_len(v),
				  c->s->match_limit, why, sizeof why, &nomem);
	if (!re) {
		if (nomem)
			oom(c);
		else {
			const char *t = json_object_to_json_string_ext(
				v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
			if (!t)
				oom(c);
			else
				cfail(c, JSCHEMA_ESCHEMA, loc, kw, "invalid regular expression %s: %s",
				      t, why);
		}
		return NULL;
	}
	return keep_regex(c, re) ? NULL : re;
}

static int number_kw(cstate *c, json_object *o, const char *loc, const char *kw, jnum *out)
{
	json_object *v = member(o, kw);
	if (!v)
		return 0;
	if (!is_number(v)) {
		cfail(c, JSCHEMA_ESCHEMA, loc, kw, "must be a number");
		return 0;
	}
	num_of(v, out);
	return 1;
}

static void compile_validation(cstate *c, jnode *n, json_object *o, const slot *sl)
{
	const char *loc = sl->loc;
	json_object *v;
	if ((v = member(o, "type"))) {
		json_object *one = v;
		size_t cnt = 1;
		if (json_object_is_type(v, json_type_array)) {
			cnt = json_object_array_length(v);
			if (cnt == 0) {
				cfail(c, JSCHEMA_ESCHEMA, loc, "type", "must not be an empty array");
				return;
			}
		}
		for (size_t i = 0; i < cnt; i++) {
			if (json_object_is_type(v, json_type_array))
				one = json_object_array_get_idx(v, i);
			const char *t = json_object_is_type(one, json_type_string)
						? json_object_get_string(one)
						: "";
			unsigned bit = 0;
			for (size_t k = 0; k < sizeof type_names / sizeof *type_names; k++)
				if (strcmp(type_names[k].name, t) == 0)
					bit = type_names[k].bit;
			if (!bit || (n->types & bit)) {
				cfail(c, JSCHEMA_ESCHEMA, loc, "type",
				      "must name distinct types among null, boolean, object, array, "
				      "number, string and integer");
				return;
			}
			n->types |= bit;
		}
	}
	if (json_object_object_get_ex(o, "const", &v)) {
		n->has_const = 1;
		n->const_v = v;
		n->const_text = value_text(c, v);
	}
	if ((v = member(o, "enum"))) {
		if (!json_object_is_type(v, json_type_array)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "enum", "must be an array");
			return;
		}
		n->has_enum = 1;
		n->n_enum = json_object_array_length(v);
		n->enum_v = aalloc(c->s, (n->n_enum ? n->n_enum : 1) * sizeof *n->enum_v);
		if (!n->enum_v) {
			oom(c);
			return;
		}
		for (size_t i = 0; i < n->n_enum; i++)
			n->enum_v[i] = json_object_array_get_idx(v, i);
		/* "one of a, b, c": the array's text without its brackets */
		const char *t = value_text(c, v);
		if (t && *t == '[') {
			size_t k = strlen(t);
			char *d = astrdup(c->s, t + 1);
			if (d && k >= 2 && d[k - 2] == ']')
				d[k - 2] = 0;
			n->enum_text = d;
		}
	}
	if ((n->has_multiple_of = number_kw(c, o, loc, "multipleOf", &n->multiple_of)) &&
	    num_double(&n->multiple_of) <= 0) {
		cfail(c, JSCHEMA_ESCHEMA, loc, "multipleOf", "must be greater than 0");
		return;
	}
	n->has_max = number_kw(c, o, loc, "maximum", &n->maximum);
	n->has_xmax = number_kw(c, o, loc, "exclusiveMaximum", &n->xmaximum);
	n->has_min = number_kw(c, o, loc, "minimum", &n->minimum);
	n->has_xmin = number_kw(c, o, loc, "exclusiveMinimum", &n->xminimum);
	static const struct {
		const char *kw;
		size_t off;
	} counts[] = {
		{ "maxLength", offsetof(jnode, max_length) },
		{ "minLength", offsetof(jnode, min_length) },
		{ "maxItems", offsetof(jnode, max_items) },
		{ "minItems", offsetof(jnode, min_items) },
		{ "maxProperties", offsetof(jnode, max_props) },
		{ "minProperties", offsetof(jnode, min_props) },
		{ "maxContains", offsetof(jnode, max_contains) },
		{ "minContains", offsetof(jnode, min_contains) },
	};
	for (size_t k = 0; k < sizeof counts / sizeof *counts && !c->status; k++)
		if ((v = member(o, counts[k].kw)))
			nonneg_int(c, v, loc, counts[k].kw, (int64_t *)((char *)n + counts[k].off));
	if ((v = member(o, "pattern"))) {
		n->pattern = regex_of(c, v, loc, "pattern");
		if (n->pattern)
			n->pattern_text = value_text(c, v);
	}
	if ((v = member(o, "uniqueItems"))) {
		if (!json_object_is_type(v, json_type_boolean)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "uniqueItems", "must be a boolean");
			return;
		}
		n->unique_items = json_object_get_boolean(v);
	}
	if ((v = member(o, "required")))
		n->required = string_set(c, v, loc, "required", &n->n_required);
	if ((v = member(o, "dependentRequired"))) {
		if (!json_object_is_type(v, json_type_object)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "dependentRequired",
			      "must be an object of string arrays");
			return;
		}
		size_t cnt = (size_t)json_object_object_length(v);
		n->dep_req = aalloc(c->s, (cnt ? cnt : 1) * sizeof *n->dep_req);
		if (!n->dep_req) {
			oom(c);
			return;
		}
		json_object_object_foreach(v, key, val)
		{
			depreq *d = &n->dep_req[n->n_dep_req++];
			d->name = key;
			d->req = string_set(c, val, loc, "dependentRequired", &d->nreq);
			if (c->status)
				return;
		}
	}
}

/* "dependencies" of drafts 4 to 7, which 2020-12 split into
 * dependentRequired (array values) and dependentSchemas (schemas).  Kept
 * because schema generators still emit it (2020-12 allows it as an
 * optional compatibility). */
static void compile_dependencies(cstate *c, jnode *n, json_object *v, const slot *sl, int depth)
{
	if (!json_object_is_type(v, json_type_object)) {
		cfail(c, JSCHEMA_ESCHEMA, sl->loc, "dependencies", "must be an object");
		return;
	}
	size_t cnt = (size_t)json_object_object_length(v);
	depreq *dr = aalloc(c->s, (n->n_dep_req + cnt + 1) * sizeof *dr);
	named *ds = aalloc(c->s, (n->n_dep_schemas + cnt + 1) * sizeof *ds);
	const char *kl = loc_child(c, sl->loc, "dependencies");
	if (!dr || !ds || !kl) {
		oom(c);
		return;
	}
	if (n->n_dep_req)
		memcpy(dr, n->dep_req, n->n_dep_req * sizeof *dr);
	if (n->n_dep_schemas)
		memcpy(ds, n->dep_schemas, n->n_dep_schemas * sizeof *ds);
	n->dep_req = dr;
	n->dep_schemas = ds;
	json_object_object_foreach(v, key, val)
	{
		if (json_object_is_type(val, json_type_array)) {
			if (c->s->no_validation)
				continue;
			depreq *d = &n->dep_req[n->n_dep_req++];
			d->name = key;
			d->req = string_set(c, val, sl->loc, "dependencies", &d->nreq);
		} else {
			named *d = &n->dep_schemas[n->n_dep_schemas++];
			d->name = key;
			d->node = sub(c, val, sl, loc_child(c, kl, key), "dependencies", depth + 1);
		}
		if (c->status)
			return;
	}
}

static void compile_keywords(cstate *c, jnode *n, json_object *o, const slot *sl, int depth)
{
	json_object *v;
	const char *loc = sl->loc;
	if ((v = member(o, "$ref"))) {
		if (!json_object_is_type(v, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "$ref", "must be a string");
			return;
		}
		add_pending(c, n, sl->base, json_object_get_string(v), 0, loc);
	}
	if ((v = member(o, "$dynamicRef"))) {
		if (!json_object_is_type(v, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "$dynamicRef", "must be a string");
			return;
		}
		add_pending(c, n, sl->base, json_object_get_string(v), 1, loc);
	}
	if (c->status)
		return;
	if ((v = member(o, "allOf")))
		n->all_of = schema_array(c, v, sl, "allOf", &n->n_all_of, depth);
	if ((v = member(o, "anyOf")))
		n->any_of = schema_array(c, v, sl, "anyOf", &n->n_any_of, depth);
	if ((v = member(o, "oneOf")))
		n->one_of = schema_array(c, v, sl, "oneOf", &n->n_one_of, depth);
	if ((v = member(o, "prefixItems")))
		n->prefix = schema_array(c, v, sl, "prefixItems", &n->n_prefix, depth);
	static const struct {
		const char *kw;
		size_t off;
	} single[] = {
		{ "not", offsetof(jnode, not_) },
		{ "if", offsetof(jnode, if_) },
		{ "then", offsetof(jnode, then_) },
		{ "else", offsetof(jnode, else_) },
		{ "additionalProperties", offsetof(jnode, addl_props) },
		{ "propertyNames", offsetof(jnode, prop_names) },
		{ "items", offsetof(jnode, items) },
		{ "contains", offsetof(jnode, contains) },
		{ "unevaluatedProperties", offsetof(jnode, uneval_props) },
		{ "unevaluatedItems", offsetof(jnode, uneval_items) },
	};
	for (size_t k = 0; k < sizeof single / sizeof *single && !c->status; k++)
		if ((v = member(o, single[k].kw)))
			*(jnode **)((char *)n + single[k].off) =
				sub(c, v, sl, loc_child(c, loc, single[k].kw), single[k].kw,
				    depth + 1);
	if (c->status)
		return;
	if ((v = member(o, "properties")))
		n->props = named_schemas(c, v, sl, "properties", &n->n_props, depth);
	if ((v = member(o, "dependentSchemas")))
		n->dep_schemas = named_schemas(c, v, sl, "dependentSchemas", &n->n_dep_schemas, depth);
	if ((v = member(o, "patternProperties"))) {
		if (!json_object_is_type(v, json_type_object)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "patternProperties",
			      "must be an object of schemas");
			return;
		}
		size_t cnt = (size_t)json_object_object_length(v);
		n->pats = aalloc(c->s, (cnt ? cnt : 1) * sizeof *n->pats);
		const char *kl = loc_child(c, loc, "patternProperties");
		if (!n->pats || !kl) {
			oom(c);
			return;
		}
		json_object_object_foreach(v, key, val)
		{
			json_object *ks = json_object_new_string(key);
			if (!ks) {
				oom(c);
				return;
			}
			patprop *p = &n->pats[n->n_pats];
			p->re = regex_of(c, ks, loc, "patternProperties");
			json_object_put(ks);
			if (c->status)
				return;
			p->node = sub(c, val, sl, loc_child(c, kl, key), "patternProperties",
				      depth + 1);
			if (c->status)
				return;
			n->n_pats++;
		}
	}
	if (!c->s->no_validation)
		compile_validation(c, n, o, sl);
	if (c->status)
		return;
	if ((v = member(o, "dependencies")))
		compile_dependencies(c, n, v, sl, depth);
	if (c->status)
		return;
	if ((v = member(o, "format"))) {
		if (!json_object_is_type(v, json_type_string)) {
			cfail(c, JSCHEMA_ESCHEMA, loc, "format", "must be a string");
			return;
		}
		if (c->s->formats) {
			n->format = jschema_format_id(json_object_get_string(v));
			n->format_name = json_object_get_string(v);
		}
	}
}

static jnode *node_of(cstate *c, json_object *o, const char *base, jres *res, const char *loc,
		      int depth)
{
	if (c->status)
		return NULL;
	if (depth > c->max_depth) {
		cfail(c, JSCHEMA_ELIMIT, loc, NULL, "schema nested deeper than %d levels",
		      c->max_depth);
		return NULL;
	}
	slot *sl = slot_find(c, o);
	if (!sl) {
		/* A place the scan did not visit (reached by a pointer into an
		 * unknown keyword, say): scan it now, with what it inherits. */
		scan(c, o, base, res, loc, depth, 0);
		if (c->status)
			return NULL;
		sl = slot_find(c, o);
		if (!sl) {
			cfail(c, JSCHEMA_ESCHEMA, loc, NULL, "not a schema");
			return NULL;
		}
	}
	if (sl->node)
		return sl->node;
	jnode *n = aalloc(c->s, sizeof *n);
	if (!n) {
		oom(c);
		return NULL;
	}
	n->kind = K_OBJECT;
	n->loc = sl->loc;
	n->res = sl->res;
	n->res->used = 1;
	n->obj = o;
	n->min_contains = 1;
	n->max_contains = -1;
	n->max_length = n->min_length = n->max_items = n->min_items = -1;
	n->max_props = n->min_props = -1;
	sl->node = n; /* before the children: a cycle finds it */
	if (track_node(c, n))
		return NULL;
	slot copy = *sl; /* the table may grow while compiling children */
	compile_keywords(c, n, o, &copy, depth);
	return c->status ? NULL : n;
}

/* ---- references ----------------------------------------------------------------- */

/* Decodes %XX in a fragment (RFC 3986) into a malloc'd string. */
static char *pct_decode(const char *s)
{
	size_t n = strlen(s);
	char *d = malloc(n + 1), *o = d;
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n + 1 && (hi = s[i + 1]) && (lo = s[i + 2]) &&
		    strchr("0123456789abcdefABCDEF", hi) && strchr("0123456789abcdefABCDEF", lo)) {
			char hx[3] = { (char)hi, (char)lo, 0 };
			*o++ = (char)strtol(hx, NULL, 16);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = 0;
	return d;
}

/* Follows a JSON pointer from a resource's root to a node. */
static jnode *follow_pointer(cstate *c, jres *r, const char *ptr, const pending *p)
{
	char *dec = pct_decode(ptr);
	if (!dec) {
		oom(c);
		return NULL;
	}
	json_object *cur = r->root;
	slot *sl = slot_find(c, cur);
	const char *base = sl ? sl->base : r->uri;
	jres *res = r;
	const char *loc = sl ? sl->loc : "";
	char *tok = dec;
	while (*tok == '/' && !c->status) {
		tok++;
		char *end = strchr(tok, '/');
		size_t tn = end ? (size_t)(end - tok) : strlen(tok);
		char *t = astrndup(c->s, tok, tn);
		if (!t) {
			oom(c);
			break;
		}
		/* ~1 is '/', ~0 is '~' (in that order) */
		char *w = t;
		for (char *q = t; *q; q++) {
			if (q[0] == '~' && q[1] == '1')
				*w++ = '/', q++;
			else if (q[0] == '~' && q[1] == '0')
				*w++ = '~', q++;
			else
				*w++ = *q;
		}
		*w = 0;
		json_object *next = NULL;
		if (json_object_is_type(cur, json_type_object)) {
			json_object_object_get_ex(cur, t, &next);
		} else if (json_object_is_type(cur, json_type_array)) {
			char *e;
			long i = strtol(t, &e, 10);
			if (*t && !*e && i >= 0 && (size_t)i < json_object_array_length(cur))
				next = json_object_array_get_idx(cur, (size_t)i);
		}
		if (!next) {
			cfail(c, JSCHEMA_ESCHEMA, p->node->loc, p->dynamic ? "$dynamicRef" : "$ref",
			      "\"%s\" points at nothing in %s", p->raw, r->uri);
			break;
		}
		loc = loc_child(c, loc, t);
		cur = next;
		slot *ns = json_object_is_type(cur, json_type_object) ? slot_find(c, cur) : NULL;
		if (ns) {
			base = ns->base;
			res = ns->res;
			loc = ns->loc;
		}
		tok = end ? end : tok + tn;
	}
	free(dec);
	if (c->status)
		return NULL;
	if (json_object_is_type(cur, json_type_boolean))
		return bool_node(c, json_object_get_boolean(cur), loc, res);
	if (!json_object_is_type(cur, json_type_object)) {
		cfail(c, JSCHEMA_ESCHEMA, p->node->loc, p->dynamic ? "$dynamicRef" : "$ref",
		      "\"%s\" points at a value that is not a schema", p->raw);
		return NULL;
	}
	return node_of(c, cur, base, res, loc, 0);
}

static jnode *resolve(cstate *c, const pending *p)
{
	const char *frag;
	char *bare = jschema_uri_strip(p->uri, &frag);
	if (!bare) {
		oom(c);
		return NULL;
	}
	jres *r = res_find(c->s, bare);
	const char *kw = p->dynamic ? "$dynamicRef" : "$ref";
	if (!r) {
		cfail(c, JSCHEMA_EREMOTE, p->node->loc, kw,
		      "\"%s\" names %s, which is not this schema or one given with it "
		      "(remote references are never fetched)",
		      p->raw, bare);
		free(bare);
		return NULL;
	}
	free(bare);
	if (!frag || !*frag) {
		slot *sl = slot_find(c, r->root);
		if (json_object_is_type(r->root, json_type_boolean))
			return bool_node(c, json_object_get_boolean(r->root), "", r);
		return node_of(c, r->root, sl ? sl->base : r->uri, r, sl ? sl->loc : "", 0);
	}
	if (*frag == '/')
		return follow_pointer(c, r, frag, p);
	anchor *a = anchor_find(c->s, r, frag);
	if (!a) {
		cfail(c, JSCHEMA_ESCHEMA, p->node->loc, kw, "\"%s\": no anchor \"%s\" in %s", p->raw,
		      frag, r->uri);
		return NULL;
	}
	slot *sl = slot_find(c, a->obj);
	return node_of(c, a->obj, sl->base, sl->res, sl->loc, 0);
}

static void resolve_all(cstate *c)
{
	while (c->work && !c->status) {
		pending *p = c->work;
		c->work = p->next;
		jnode *t = resolve(c, p);
		if (!t)
			return;
		if (!p->dynamic) {
			p->node->ref = t;
			continue;
		}
		p->node->dynref = t;
		/* Dynamic only when the fragment is a plain name and the
		 * static target carries that $dynamicAnchor ("bookending"). */
		const char *h = strchr(p->uri, '#');
		const char *name = h ? h + 1 : NULL;
		if (name && *name && *name != '/' && t->obj) {
			const char *da = str_member(t->obj, "$dynamicAnchor");
			if (da && strcmp(da, name) == 0)
				p->node->dyn_name = astrdup(c->s, name);
		}
	}
}

/* ---- pass 3: loops that never descend ------------------------------------------- */

/* The subschemas evaluated against the same instance as `n`. */
static jnode *in_place(const jnode *n, size_t k)
{
	if (k == 0)
		return n->ref;
	if (k == 1)
		return n->dynref;
	k -= 2;
	if (k < n->n_all_of)
		return n->all_of[k];
	k -= n->n_all_of;
	if (k < n->n_any_of)
		return n->any_of[k];
	k -= n->n_any_of;
	if (k < n->n_one_of)
		return n->one_of[k];
	k -= n->n_one_of;
	if (k < n->n_dep_schemas)
		return n->dep_schemas[k].node;
	k -= n->n_dep_schemas;
	switch (k) {
	case 0: return n->not_;
	case 1: return n->if_;
	case 2: return n->then_;
	case 3: return n->else_;
	default: return (jnode *)1; /* the end */
	}
}

static void find_loops(cstate *c)
{
	jschema *s = c->s;
	struct frame {
		jnode *n;
		size_t k;
	} *stack = malloc((s->nnodes + 1) * sizeof *stack);
	if (!stack) {
		oom(c);
		return;
	}
	for (size_t i = 0; i < s->nnodes && !c->status; i++) {
		if (s->nodes[i]->mark)
			continue;
		size_t sp = 0;
		stack[sp++] = (struct frame){ s->nodes[i], 0 };
		s->nodes[i]->mark = 1; /* on the stack */
		while (sp && !c->status) {
			struct frame *f = &stack[sp - 1];
			jnode *m = in_place(f->n, f->k++);
			if (m == (jnode *)1) {
				f->n->mark = 2; /* done */
				sp--;
				continue;
			}
			if (!m || m->kind != K_OBJECT || m->mark == 2)
				continue;
			if (m->mark == 1) {
				cfail(c, JSCHEMA_ESCHEMA, m->loc, "$ref",
				      "a loop: this subschema applies itself to the same value "
				      "again without descending into it, which never ends");
				break;
			}
			m->mark = 1;
			stack[sp++] = (struct frame){ m, 0 };
		}
	}
	free(stack);
}

/* ---- $schema and $vocabulary --------------------------------------------------- */

static void vocabularies(cstate *c, json_object *root)
{
	const char *meta = json_object_is_type(root, json_type_object)
				   ? str_member(root, "$schema")
				   : NULL;
	if (!meta)
		return;
	const char *frag;
	char *bare = jschema_uri_strip(meta, &frag);
	if (!bare) {
		oom(c);
		return;
	}
	jres *r = res_find(c->s, bare);
	free(bare);
	json_object *voc = r ? member(r->root, "$vocabulary") : NULL;
	/* A meta-schema we do not have (the standard one included) means
	 * the 2020-12 defaults. */
	if (!json_object_is_type(voc, json_type_object))
		return;
	int validation = 0;
	json_object_object_foreach(voc, uri, req)
	{
		int known = 0;
		for (size_t i = 0; i < sizeof known_vocabs / sizeof *known_vocabs; i++)
			known |= strcmp(known_vocabs[i], uri) == 0;
		if (!known && json_object_get_boolean(req)) {
			cfail(c, JSCHEMA_ESCHEMA, "", "$schema",
			      "the meta-schema requires the vocabulary %s, which is not supported",
			      uri);
			return;
		}
		if (strcmp(uri, VOCAB_VALIDATION) == 0)
			validation = 1;
		if (strcmp(uri, VOCAB_FORMAT_ASSERTION) == 0)
			c->s->formats = 1;
	}
	c->s->no_validation = !validation;
}

/* ---- compile --------------------------------------------------------------------- */

void jschema_free(jschema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nregexes; i++)
		jschema_regex_free(s->regexes[i]);
	free(s->regexes);
	free(s->nodes);
	for (size_t i = 0; i < s->ndocs; i++)
		json_object_put(s->docs[i]);
	free(s->docs);
	while (s->arena) {
		ablock *b = s->arena;
		s->arena = b->next;
		free(b);
	}
	free(s);
}

json_object *jschema_document(const jschema *s)
{
	return s && s->ndocs ? s->docs[0] : NULL;
}

int jschema_compile(json_object *schema, const jschema_opts *opts, jschema **out,
		    jschema_error *err)
{
	static const jschema_opts none;
	if (!opts)
		opts = &none;
	if (err)
		memset(err, 0, sizeof *err);
	*out = NULL;
	cstate c = { .err = err };
	c.max_depth = opts->max_schema_depth > 0 ? opts->max_schema_depth : DEFAULT_SCHEMA_DEPTH;
	c.max_nodes = opts->max_nodes ? opts->max_nodes : DEFAULT_MAX_NODES;
	if (!json_object_is_type(schema, json_type_object) &&
	    !json_object_is_type(schema, json_type_boolean)) {
		cfail(&c, JSCHEMA_ESCHEMA, "", NULL, "a schema is an object or a boolean");
		return c.status;
	}
	jschema *s = calloc(1, sizeof *s);
	if (!s) {
		oom(&c);
		return c.status;
	}
	c.s = s;
	s->formats = opts->formats;
	s->max_eval_depth = opts->max_eval_depth > 0 ? opts->max_eval_depth : DEFAULT_EVAL_DEPTH;
	s->max_steps = opts->max_steps ? opts->max_steps : DEFAULT_MAX_STEPS;
	s->match_limit = opts->regex_match_limit;
	s->docs = calloc(opts->ndocs + 1, sizeof *s->docs);
	if (!s->docs) {
		oom(&c);
		goto done;
	}
	for (size_t i = 0; i <= opts->ndocs; i++) {
		json_object *src = i == 0 ? schema : opts->docs[i - 1].schema;
		if (i > 0 && (!opts->docs[i - 1].uri || !src)) {
			cfail(&c, JSCHEMA_ESCHEMA, "", NULL, "a document without a URI or schema");
			goto done;
		}
		if (json_object_deep_copy(src, &s->docs[i], NULL) != 0) {
			oom(&c);
			goto done;
		}
		s->ndocs++;
	}
	/* Pass 1: every document's resources, anchors and subschemas. */
	for (size_t i = 0; i < s->ndocs && !c.status; i++) {
		const char *uri = i == 0 ? (opts->base_uri ? opts->base_uri : DEFAULT_BASE)
					 : opts->docs[i - 1].uri;
		const char *loc = "";
		if (i > 0) {
			char *l = aalloc(s, strlen(uri) + 2);
			if (!l) {
				oom(&c);
				break;
			}
			sprintf(l, "%s#", uri);
			loc = l;
		}
		jres *r = res_add(&c, uri, s->docs[i], loc);
		if (r)
			scan(&c, s->docs[i], r->uri, r, loc, 0, 1);
	}
	if (!c.status)
		vocabularies(&c, s->docs[0]);
	/* Pass 2: the root, what references reach, and every dynamic anchor
	 * (a $dynamicRef may land on any of them at run time). */
	if (!c.status) {
		jres *r0 = res_find(s, opts->base_uri ? opts->base_uri : DEFAULT_BASE);
		if (json_object_is_type(s->docs[0], json_type_boolean)) {
			s->root = bool_node(&c, json_object_get_boolean(s->docs[0]), "", r0);
		} else {
			slot *sl = slot_find(&c, s->docs[0]);
			s->root = sl ? node_of(&c, s->docs[0], sl->base, sl->res, sl->loc, 0) : NULL;
		}
	}
	resolve_all(&c);
	/* A dynamic scope holds only resources evaluation can enter, those
	 * with compiled nodes; compiling their anchors may reach more. */
	for (int more = 1; more && !c.status;) {
		more = 0;
		for (jres *r = s->resources; r && !c.status; r = r->next) {
			if (!r->used || r->dyn_done)
				continue;
			r->dyn_done = 1;
			more = 1;
			for (size_t i = 0; i < r->ndyn && !c.status; i++) {
				slot *sl = slot_find(&c, r->dyn[i].obj);
				r->dyn[i].node =
					node_of(&c, r->dyn[i].obj, sl->base, sl->res, sl->loc, 0);
				resolve_all(&c);
			}
		}
	}
	/* Pass 3. */
	if (!c.status)
		find_loops(&c);
done:
	free(c.slots);
	if (c.status) {
		jschema_free(s);
		return c.status;
	}
	*out = s;
	return JSCHEMA_OK;
}

/* ---- validation ----------------------------------------------------------------- */

/* A step of the instance path, on the C stack. */
typedef struct pathseg {
	const struct pathseg *up;
	const char *key;            /* NULL: an array index */
	size_t idx;
} pathseg;

/* The dynamic scope: the resources entered, innermost first. */
typedef struct scopeseg {
	const struct scopeseg *up;
	const jres *res;
} scopeseg;

/* Evaluated members or items of the current instance (annotations). */
typedef struct bits {
	uint64_t *w;
	size_t n;                   /* bits */
	uint64_t inl[4];
} bits;

typedef struct vstate {
	const jschema *s;
	uint64_t steps;
	int depth;
	int quiet;                  /* inside anyOf/oneOf/not/if/contains: no report */
	int status;                 /* JSCHEMA_ELIMIT or JSCHEMA_ENOMEM: stop */
	jschema_error *err;
	int have_err;
} vstate;

static int bits_init(vstate *v, bits *b, size_t n)
{
	b->n = n;
	size_t words = (n + 63) / 64;
	if (words <= 4) {
		b->w = b->inl;
		memset(b->inl, 0, sizeof b->inl);
		return 0;
	}
	b->w = calloc(words, sizeof *b->w);
	if (!b->w) {
		v->status = JSCHEMA_ENOMEM;
		return -1;
	}
	return 0;
}

static void bits_free(bits *b)
{
	if (b->w && b->w != b->inl)
		free(b->w);
	b->w = NULL;
}

static void bit_set(bits *b, size_t i)
{
	if (b && i < b->n)
		b->w[i / 64] |= UINT64_C(1) << (i % 64);
}

static int bit_get(const bits *b, size_t i)
{
	return i < b->n && (b->w[i / 64] >> (i % 64) & 1);
}

static void bits_or(bits *into, const bits *from)
{
	size_t words = (into->n + 63) / 64;
	for (size_t i = 0; i < words; i++)
		into->w[i] |= from->w[i];
}

static void bits_all(bits *b)
{
	for (size_t i = 0; i < b->n; i++)
		bit_set(b, i);
}

static const char *type_of(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null: return "null";
	case json_type_boolean: return "boolean";
	case json_type_object: return "object";
	case json_type_array: return "array";
	case json_type_string: return "string";
	case json_type_int: return "integer";
	case json_type_double: {
		double d = json_object_get_double(o);
		return isfinite(d) && d == floor(d) ? "integer" : "number";
	}
	default: return "unknown";
	}
}

static unsigned type_bits(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null: return T_NULL;
	case json_type_boolean: return T_BOOLEAN;
	case json_type_object: return T_OBJECT;
	case json_type_array: return T_ARRAY;
	case json_type_string: return T_STRING;
	case json_type_int: return T_NUMBER | T_INTEGER;
	case json_type_double: {
		double d = json_object_get_double(o);
		return T_NUMBER | (isfinite(d) && d == floor(d) ? T_INTEGER : 0);
	}
	default: return 0;
	}
}

/* Writes the JSON pointer of `p` into b (cut with "..." when too long). */
static void pointer_text(const pathseg *p, char *b, size_t cap)
{
	const pathseg *segs[512];
	size_t n = 0;
	for (; p && n < sizeof segs / sizeof *segs; p = p->up)
		segs[n++] = p;
	size_t o = 0;
	b[0] = 0;
	for (size_t i = n; i-- > 0;) {
		char tmp[32];
		const char *t = segs[i]->key;
		if (!t) {
			snprintf(tmp, sizeof tmp, "%zu", segs[i]->idx);
			t = tmp;
		}
		if (o + 1 >= cap)
			break;
		b[o++] = '/';
		for (; *t && o + 2 < cap; t++) {
			if (*t == '~' || *t == '/') {
				b[o++] = '~';
				b[o++] = *t == '~' ? '0' : '1';
			} else {
				b[o++] = *t;
			}
		}
		b[o] = 0;
		if (*t) {
			if (cap > 4)
				memcpy(b + cap - 4, "...", 4);
			return;
		}
	}
}

/* Records the failure (the first one, outside speculative branches). */
__attribute__((format(printf, 5, 6))) static void report(vstate *v, const jnode *n,
							 const pathseg *path, const char *kw,
							 const char *fmt, ...)
{
	if (v->quiet || v->have_err || !v->err)
		return;
	v->have_err = 1;
	jschema_error *e = v->err;
	pointer_text(path, e->instance, sizeof e->instance);
	set_text(e->keyword, sizeof e->keyword, kw);
	char where[JSCHEMA_PTR_MAX];
	snprintf(where, sizeof where, "%s/%s", n ? n->loc : "", kw);
	set_text(e->schema, sizeof e->schema, where);
	char msg[JSCHEMA_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char line[JSCHEMA_MSG_MAX + JSCHEMA_PTR_MAX + 48];
	snprintf(line, sizeof line, "%s: %s (%s)", e->instance[0] ? e->instance : "(root)", msg, kw);
	set_text(e->message, sizeof e->message, line);
}

/* A bound stopped the evaluation: reported even in quiet branches. */
static void limit(vstate *v, const jnode *n, const pathseg *path, const char *kw, const char *what)
{
	if (v->status)
		return;
	v->status = JSCHEMA_ELIMIT;
	int q = v->quiet;
	v->quiet = 0;
	v->have_err = 0;
	report(v, n, path, kw, "%s", what);
	v->quiet = q;
}

static int eval(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
		const scopeseg *scope, bits *ann);

/* Evaluates a subschema on a member or item and names a false schema's
 * failure after the keyword that applied it. */
static int eval_child(vstate *v, const jnode *parent, const jnode *child, json_object *inst,
		      const pathseg *path, const scopeseg *scope, const char *kw)
{
	if (child->kind == K_FALSE) {
		if (path->key)
			report(v, parent, path, kw, "property \"%s\" is not allowed", path->key);
		else
			report(v, parent, path, kw, "no item is allowed at index %zu", path->idx);
		return 0;
	}
	return eval(v, child, inst, path, scope, NULL);
}

static size_t utf8_length(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xC0) != 0x80;
	return k;
}

typedef struct hidx {
	uint64_t h;
	size_t i;
} hidx;

static int cmp_hidx(const void *a, const void *b)
{
	const hidx *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* uniqueItems by sorting hashes: O(n log n) instead of every pair. */
static int unique_items(vstate *v, const jnode *n, json_object *arr, const pathseg *path)
{
	size_t cnt = json_object_array_length(arr);
	if (cnt < 2)
		return 1;
	hidx *h = malloc(cnt * sizeof *h);
	if (!h) {
		v->status = JSCHEMA_ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < cnt; i++)
		h[i] = (hidx){ json_hash(json_object_array_get_idx(arr, i)), i };
	qsort(h, cnt, sizeof *h, cmp_hidx);
	v->steps += cnt;
	int ok = 1;
	for (size_t i = 0; ok && i < cnt; i++)
		for (size_t j = i + 1; ok && j < cnt && h[j].h == h[i].h; j++) {
			if (++v->steps > v->s->max_steps) {
				limit(v, n, path, "uniqueItems",
				      "too many equal-looking items to compare; refused");
				ok = 0;
				break;
			}
			if (json_equal(json_object_array_get_idx(arr, h[i].i),
				       json_object_array_get_idx(arr, h[j].i))) {
				report(v, n, path, "uniqueItems",
				       "items %zu and %zu are equal, but items must be unique", h[i].i,
				       h[j].i);
				ok = 0;
			}
		}
	free(h);
	return ok;
}

static const named *find_named(const named *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(key, v[mid].name);
		if (c == 0)
			return &v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int regex_match(vstate *v, const jnode *n, const pathseg *path, const char *kw,
		       const struct jschema_regex *re, const char *s, size_t len)
{
	v->steps++;
	int r = jschema_regex_search(re, s, len);
	if (r == JSCHEMA_ELIMIT)
		limit(v, n, path, kw,
		      "the regular expression needed more steps on this string than allowed; "
		      "the value was refused");
	else if (r == JSCHEMA_ENOMEM)
		v->status = JSCHEMA_ENOMEM;
	return r;
}

/* A readable name of the types a "type" keyword allows. */
static void types_text(unsigned types, char *b, size_t cap)
{
	size_t o = 0, k = 0, total = 0;
	for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
		total += (types & type_names[i].bit) != 0;
	b[0] = 0;
	for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++) {
		if (!(types & type_names[i].bit))
			continue;
		k++;
		int w = snprintf(b + o, cap - o, "%s%s", k == 1 ? "" : k == total ? " or " : ", ",
				 type_names[i].name);
		if (w < 0 || (size_t)w >= cap - o)
			return;
		o += (size_t)w;
	}
}

/* Which alternative of a failed anyOf/oneOf to explain: the first whose
 * "type" admits the instance, else the first. */
static size_t closest(jnode *const *alts, size_t n, json_object *inst)
{
	for (size_t i = 0; i < n; i++)
		if (alts[i]->kind == K_OBJECT &&
		    (!alts[i]->types || (alts[i]->types & type_bits(inst))))
			return i;
	return 0;
}

/* Reports an anyOf/oneOf with no passing alternative, quoting why the
 * closest one failed. */
static void report_none(vstate *v, const jnode *n, jnode *const *alts, size_t cnt,
			json_object *inst, const pathseg *path, const scopeseg *scope,
			const char *kw)
{
	if (v->quiet || v->have_err || !v->err)
		return;
	size_t k = closest(alts, cnt, inst);
	jschema_error detail, *save = v->err;
	memset(&detail, 0, sizeof detail);
	v->err = &detail;
	eval(v, alts[k], inst, path, scope, NULL);
	v->err = save;
	if (v->status) {
		*save = detail; /* the bound that stopped it is the news */
		v->have_err = 1;
		return;
	}
	v->have_err = 0;
	if (detail.message[0])
		report(v, n, path, kw, "matches none of the %zu alternatives; alternative %zu: %s",
		       cnt, k + 1, detail.message);
	else
		report(v, n, path, kw, "matches none of the %zu alternatives", cnt);
}

/* The target of a $dynamicRef: the outermost resource in the dynamic
 * scope with a $dynamicAnchor of that name, else the static target. */
static const jnode *dynamic_target(const jnode *n, const scopeseg *scope)
{
	if (!n->dyn_name)
		return n->dynref;
	const jnode *found = NULL;
	for (const scopeseg *sc = scope; sc; sc = sc->up)
		for (size_t i = 0; i < sc->res->ndyn; i++)
			if (strcmp(sc->res->dyn[i].name, n->dyn_name) == 0)
				found = sc->res->dyn[i].node; /* later = outer */
	return found ? found : n->dynref;
}

static int eval_object(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
		       const scopeseg *scope, bits *a)
{
	int64_t cnt = json_object_object_length(inst);
	for (size_t i = 0; i < n->n_required; i++)
		if (!json_object_object_get_ex(inst, n->required[i], NULL)) {
			report(v, n, path, "required", "missing required property \"%s\"",
			       n->required[i]);
			return 0;
		}
	if (n->max_props >= 0 && cnt > n->max_props) {
		report(v, n, path, "maxProperties", "must have at most %lld properties, has %lld",
		       (long long)n->max_props, (long long)cnt);
		return 0;
	}
	if (n->min_props >= 0 && cnt < n->min_props) {
		report(v, n, path, "minProperties", "must have at least %lld properties, has %lld",
		       (long long)n->min_props, (long long)cnt);
		return 0;
	}
	for (size_t i = 0; i < n->n_dep_req; i++) {
		const depreq *d = &n->dep_req[i];
		if (!json_object_object_get_ex(inst, d->name, NULL))
			continue;
		for (size_t j = 0; j < d->nreq; j++)
			if (!json_object_object_get_ex(inst, d->req[j], NULL)) {
				report(v, n, path, "dependentRequired",
				       "property \"%s\" is required when \"%s\" is present",
				       d->req[j], d->name);
				return 0;
			}
	}
	if (n->prop_names) {
		json_object_object_foreach(inst, key, val)
		{
			(void)val;
			json_object *ks = json_object_new_string(key);
			if (!ks) {
				v->status = JSCHEMA_ENOMEM;
				return 0;
			}
			pathseg ps = { path, key, 0 };
			v->quiet++;
			int ok = eval(v, n->prop_names, ks, &ps, scope, NULL);
			v->quiet--;
			json_object_put(ks);
			if (v->status)
				return 0;
			if (!ok) {
				report(v, n, &ps, "propertyNames",
				       "the property name \"%s\" does not match the propertyNames "
				       "schema",
				       key);
				return 0;
			}
		}
	}
	if (n->props || n->pats || n->addl_props || a) {
		size_t idx = 0;
		json_object_object_foreach(inst, key, val)
		{
			pathseg ps = { path, key, 0 };
			int matched = 0;
			const named *p = n->props ? find_named(n->props, n->n_props, key) : NULL;
			if (p) {
				matched = 1;
				if (!eval_child(v, n, p->node, val, &ps, scope, "properties"))
					return 0;
			}
			for (size_t k = 0; k < n->n_pats; k++) {
				int r = regex_match(v, n, &ps, "patternProperties", n->pats[k].re, key,
						    strlen(key));
				if (v->status)
					return 0;
				if (r == 1) {
					matched = 1;
					if (!eval_child(v, n, n->pats[k].node, val, &ps, scope,
							"patternProperties"))
						return 0;
				}
			}
			if (!matched && n->addl_props) {
				matched = 1;
				if (!eval_child(v, n, n->addl_props, val, &ps, scope,
						"additionalProperties"))
					return 0;
			}
			if (matched)
				bit_set(a, idx);
			idx++;
		}
	}
	for (size_t i = 0; i < n->n_dep_schemas; i++)
		if (json_object_object_get_ex(inst, n->dep_schemas[i].name, NULL) &&
		    !eval(v, n->dep_schemas[i].node, inst, path, scope, a))
			return 0;
	return 1;
}

static int eval_array(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
		      const scopeseg *scope, bits *a)
{
	size_t cnt = json_object_array_length(inst);
	if (n->max_items >= 0 && cnt > (uint64_t)n->max_items) {
		report(v, n, path, "maxItems", "must have at most %lld items, has %zu",
		       (long long)n->max_items, cnt);
		return 0;
	}
	if (n->min_items >= 0 && cnt < (uint64_t)n->min_items) {
		report(v, n, path, "minItems", "must have at least %lld items, has %zu",
		       (long long)n->min_items, cnt);
		return 0;
	}
	if (n->unique_items && !unique_items(v, n, inst, path))
		return 0;
	size_t i = 0;
	for (; i < n->n_prefix && i < cnt; i++) {
		pathseg ps = { path, NULL, i };
		if (!eval_child(v, n, n->prefix[i], json_object_array_get_idx(inst, i), &ps, scope,
				"prefixItems"))
			return 0;
		bit_set(a, i);
	}
	if (n->items)
		for (; i < cnt; i++) {
			pathseg ps = { path, NULL, i };
			if (!eval_child(v, n, n->items, json_object_array_get_idx(inst, i), &ps,
					scope, "items"))
				return 0;
			bit_set(a, i);
		}
	if (n->contains) {
		int64_t matches = 0;
		for (size_t k = 0; k < cnt; k++) {
			pathseg ps = { path, NULL, k };
			v->quiet++;
			int ok = eval(v, n->contains, json_object_array_get_idx(inst, k), &ps, scope,
				      NULL);
			v->quiet--;
			if (v->status)
				return 0;
			if (ok) {
				matches++;
				bit_set(a, k);
				/* Enough seen, and nobody needs the others. */
				if (!a && n->max_contains < 0 && matches >= n->min_contains)
					break;
			}
		}
		if (matches < n->min_contains) {
			if (n->min_contains == 1)
				report(v, n, path, "contains", "no item matches the contains schema");
			else
				report(v, n, path, "minContains",
				       "%lld items match the contains schema, at least %lld must",
				       (long long)matches, (long long)n->min_contains);
			return 0;
		}
		if (n->max_contains >= 0 && matches > n->max_contains) {
			report(v, n, path, "maxContains",
			       "%lld items match the contains schema, at most %lld may",
			       (long long)matches, (long long)n->max_contains);
			return 0;
		}
	}
	return 1;
}

static int eval_scalar(vstate *v, const jnode *n, json_object *inst, const pathseg *path)
{
	char b1[40], b2[40];
	if (is_number(inst)) {
		jnum x;
		num_of(inst, &x);
		if (n->has_multiple_of && !num_multiple(&x, &n->multiple_of)) {
			num_text(&n->multiple_of, b1, sizeof b1);
			report(v, n, path, "multipleOf", "must be a multiple of %s", b1);
			return 0;
		}
		struct {
			int has;
			const jnum *bound;
			int bad_when; /* compare result that fails, or 2: >= 0, -2: <= 0 */
			const char *kw, *text;
		} checks[] = {
			{ n->has_max, &n->maximum, 1, "maximum", "at most" },
			{ n->has_xmax, &n->xmaximum, 2, "exclusiveMaximum", "less than" },
			{ n->has_min, &n->minimum, -1, "minimum", "at least" },
			{ n->has_xmin, &n->xminimum, -2, "exclusiveMinimum", "greater than" },
		};
		for (size_t k = 0; k < sizeof checks / sizeof *checks; k++) {
			if (!checks[k].has)
				continue;
			int c = num_cmp(&x, checks[k].bound);
			int bad = checks[k].bad_when == 2    ? c >= 0
				  : checks[k].bad_when == -2 ? c <= 0
							     : c == checks[k].bad_when;
			if (bad) {
				num_text(checks[k].bound, b1, sizeof b1);
				num_text(&x, b2, sizeof b2);
				report(v, n, path, checks[k].kw, "must be %s %s, got %s",
				       checks[k].text, b1, b2);
				return 0;
			}
		}
	} else if (json_object_is_type(inst, json_type_string)) {
		const char *s = json_object_get_string(inst);
		size_t len = (size_t)json_object_get_string_len(inst);
		if (n->max_length >= 0 || n->min_length >= 0) {
			size_t chars = utf8_length(s, len);
			if (n->max_length >= 0 && chars > (uint64_t)n->max_length) {
				report(v, n, path, "maxLength",
				       "must be at most %lld characters long, is %zu",
				       (long long)n->max_length, chars);
				return 0;
			}
			if (n->min_length >= 0 && chars < (uint64_t)n->min_length) {
				report(v, n, path, "minLength",
				       "must be at least %lld characters long, is %zu",
				       (long long)n->min_length, chars);
				return 0;
			}
		}
		if (n->pattern) {
			int r = regex_match(v, n, path, "pattern", n->pattern, s, len);
			if (v->status)
				return 0;
			if (r != 1) {
				report(v, n, path, "pattern", "must match the pattern %s",
				       n->pattern_text);
				return 0;
			}
		}
		if (n->format && !jschema_format_check(n->format, s, len)) {
			report(v, n, path, "format", "must be a valid %s", n->format_name);
			return 0;
		}
	}
	return 1;
}

static int eval_applicators(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
			    const scopeseg *scope, bits *a)
{
	for (size_t i = 0; i < n->n_all_of; i++)
		if (!eval(v, n->all_of[i], inst, path, scope, a))
			return 0;
	bits tmp = { 0 };
	if (n->n_any_of) {
		int any = 0;
		for (size_t i = 0; i < n->n_any_of; i++) {
			if (a && bits_init(v, &tmp, a->n))
				return 0;
			v->quiet++;
			int ok = eval(v, n->any_of[i], inst, path, scope, a ? &tmp : NULL);
			v->quiet--;
			if (ok && a)
				bits_or(a, &tmp);
			bits_free(&tmp);
			if (v->status)
				return 0;
			any |= ok;
			if (ok && !a)
				break; /* nobody needs the other branches' annotations */
		}
		if (!any) {
			report_none(v, n, n->any_of, n->n_any_of, inst, path, scope, "anyOf");
			return 0;
		}
	}
	if (n->n_one_of) {
		size_t first = 0, passed = 0, second = 0;
		for (size_t i = 0; i < n->n_one_of; i++) {
			if (a && bits_init(v, &tmp, a->n))
				return 0;
			v->quiet++;
			int ok = eval(v, n->one_of[i], inst, path, scope, a ? &tmp : NULL);
			v->quiet--;
			if (ok && a && passed == 0)
				bits_or(a, &tmp);
			bits_free(&tmp);
			if (v->status)
				return 0;
			if (ok) {
				if (passed == 0)
					first = i;
				else if (passed == 1)
					second = i;
				passed++;
			}
		}
		if (passed == 0) {
			report_none(v, n, n->one_of, n->n_one_of, inst, path, scope, "oneOf");
			return 0;
		}
		if (passed > 1) {
			report(v, n, path, "oneOf",
			       "matches alternatives %zu and %zu, but exactly one of the %zu may match",
			       first + 1, second + 1, n->n_one_of);
			return 0;
		}
	}
	if (n->not_) {
		v->quiet++;
		int ok = eval(v, n->not_, inst, path, scope, NULL);
		v->quiet--;
		if (v->status)
			return 0;
		if (ok) {
			report(v, n, path, "not", "must not match the schema given in not");
			return 0;
		}
	}
	if (n->if_) {
		if (a && bits_init(v, &tmp, a->n))
			return 0;
		v->quiet++;
		int ok = eval(v, n->if_, inst, path, scope, a ? &tmp : NULL);
		v->quiet--;
		if (ok && a)
			bits_or(a, &tmp);
		bits_free(&tmp);
		if (v->status)
			return 0;
		const jnode *next = ok ? n->then_ : n->else_;
		if (next && !eval(v, next, inst, path, scope, a))
			return 0;
	}
	return 1;
}

static int eval_unevaluated(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
			    const scopeseg *scope, bits *local)
{
	if (n->uneval_props && json_object_is_type(inst, json_type_object)) {
		size_t idx = 0;
		json_object_object_foreach(inst, key, val)
		{
			if (!bit_get(local, idx)) {
				pathseg ps = { path, key, 0 };
				if (!eval_child(v, n, n->uneval_props, val, &ps, scope,
						"unevaluatedProperties"))
					return 0;
			}
			idx++;
		}
	}
	if (n->uneval_items && json_object_is_type(inst, json_type_array)) {
		size_t cnt = json_object_array_length(inst);
		for (size_t i = 0; i < cnt; i++) {
			if (bit_get(local, i))
				continue;
			pathseg ps = { path, NULL, i };
			if (!eval_child(v, n, n->uneval_items, json_object_array_get_idx(inst, i), &ps,
					scope, "unevaluatedItems"))
				return 0;
		}
	}
	return 1;
}

static int eval(vstate *v, const jnode *n, json_object *inst, const pathseg *path,
		const scopeseg *scope, bits *ann)
{
	if (v->status)
		return 0;
	if (n->kind == K_TRUE)
		return 1;
	if (n->kind == K_FALSE) {
		report(v, n, path, "false", "no value is allowed here (the schema is false)");
		return 0;
	}
	if (++v->steps > v->s->max_steps) {
		char what[96];
		snprintf(what, sizeof what, "checking this value took more than %llu steps; refused",
			 (unsigned long long)v->s->max_steps);
		limit(v, n, path, "$ref", what);
		return 0;
	}
	if (v->depth >= v->s->max_eval_depth) {
		limit(v, n, path, "$ref",
		      "the schema nests or refers to itself deeper than allowed; refused");
		return 0;
	}
	v->depth++;
	scopeseg sc;
	if (!scope || scope->res != n->res) {
		sc.up = scope;
		sc.res = n->res;
		scope = &sc;
	}
	int is_obj = json_object_is_type(inst, json_type_object);
	int is_arr = json_object_is_type(inst, json_type_array);
	if (!is_obj && !is_arr)
		ann = NULL;
	/* A node with unevaluated* collects its own annotations; it hands
	 * them all upwards once it passed (it evaluated every member). */
	bits local = { 0 };
	bits *a = ann;
	int own = (n->uneval_props && is_obj) || (n->uneval_items && is_arr);
	if (own) {
		if (bits_init(v, &local, is_obj ? (size_t)json_object_object_length(inst)
						: json_object_array_length(inst))) {
			v->depth--;
			return 0;
		}
		a = &local;
	}
	int ok = 0;
	if (n->ref && !eval(v, n->ref, inst, path, scope, a))
		goto out;
	if (n->dynref && !eval(v, dynamic_target(n, scope), inst, path, scope, a))
		goto out;
	if (n->types && !(n->types & type_bits(inst))) {
		char want[96];
		types_text(n->types, want, sizeof want);
		report(v, n, path, "type", "expected %s, got %s", want, type_of(inst));
		goto out;
	}
	if (n->has_const && !json_equal(inst, n->const_v)) {
		report(v, n, path, "const", "must be %s", n->const_text ? n->const_text : "the const");
		goto out;
	}
	if (n->has_enum) {
		size_t i = 0;
		while (i < n->n_enum && !json_equal(inst, n->enum_v[i]))
			i++;
		if (i == n->n_enum) {
			report(v, n, path, "enum", "must be one of %s",
			       n->enum_text && *n->enum_text ? n->enum_text : "(nothing)");
			goto out;
		}
	}
	if (!eval_scalar(v, n, inst, path))
		goto out;
	if (is_arr && !eval_array(v, n, inst, path, scope, a))
		goto out;
	if (is_obj && !eval_object(v, n, inst, path, scope, a))
		goto out;
	if (!eval_applicators(v, n, inst, path, scope, a))
		goto out;
	if (own && !eval_unevaluated(v, n, inst, path, scope, &local))
		goto out;
	ok = 1;
	if (own && ann)
		bits_all(ann);
out:
	bits_free(&local);
	v->depth--;
	return ok && !v->status;
}

int jschema_validate(const jschema *s, json_object *instance, jschema_error *err)
{
	/* `err` is written only on failure: clearing its kilobyte on every
	 * call would be a measurable share of checking a small argument. */
	vstate v = { .s = s, .err = err };
	int ok = eval(&v, s->root, instance, NULL, NULL, NULL);
	if (v.status) {
		if (v.status == JSCHEMA_ENOMEM && err) {
			memset(err, 0, sizeof *err);
			set_text(err->message, sizeof err->message,
				 "out of memory while checking the value");
		}
		return v.status;
	}
	return ok ? JSCHEMA_OK : JSCHEMA_INVALID;
}
