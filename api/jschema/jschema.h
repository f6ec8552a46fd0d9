/*
 * jschema.h - a JSON Schema 2020-12 validator over json-c, internal to
 * libmcp (not installed): a schema is compiled once into an immutable form
 * that any number of threads then validate json-c instances against.
 *
 * What it covers: every keyword of the 2020-12 core, applicator,
 * unevaluated and validation vocabularies; $ref, $dynamicRef, $anchor,
 * $dynamicAnchor, $defs and $id-based resolution inside the document (and
 * inside documents the caller hands over with it); $vocabulary of a
 * meta-schema among those documents; "format" as an annotation, or as an
 * assertion when the caller asks (jschema_opts.formats), for date-time,
 * date, time, duration, email, idn-email (ASCII local parts), hostname,
 * ipv4, ipv6, uri, uri-reference, iri, iri-reference, uri-template, uuid,
 * regex, json-pointer and relative-json-pointer; other formats, and
 * idn-hostname, stay annotations.  The content vocabulary is annotation
 * only, as 2020-12 says.
 *
 * What it never does: fetch.  A $ref whose document is neither the schema
 * nor one of jschema_opts.docs is refused at compile time (JSCHEMA_EREMOTE)
 * with the URI in the message; MCP 2026-07-28 forbids fetching schemas, and
 * a server must not reach the network because a schema says so.  The 2020-12
 * meta-schema is not bundled either.
 *
 * Regular expressions ("pattern", "patternProperties", format "regex") are
 * ECMA-262 with the u flag, translated onto PCRE2 (jschema-regex.c):
 *  - \d \w \s \D \W \S and "." get their ECMA meaning (ASCII digits and word
 *    characters; Unicode white space and line terminators; "." stops at
 *    \n \r U+2028 U+2029); $ matches only at the very end; \b is ASCII
 *    (PCRE2_UCP is not set for that reason); \cX, \0, \xHH, \uHHHH
 *    (surrogate pairs joined), \u{H...} and \v are rewritten; [] never
 *    matches and [^] matches any character.
 *  - Not supported (compile error): lookbehind of varying length (PCRE2
 *    10.42 allows only fixed-length ones), lone surrogates (\uD800), the v
 *    flag's set operations, Unicode property names PCRE2 does not know,
 *    and escapes ECMA's u mode rejects (\a, \e, \z, \A, \Q, possessive
 *    quantifiers, inline flags such as (?i)).
 *  - Matching is bounded by PCRE2's match and depth limits, so a
 *    catastrophic pattern such as ^(a+)+$ ends with JSCHEMA_ELIMIT instead
 *    of running for minutes.
 *
 * Other bounds: schema nesting depth, the number of compiled subschemas, a
 * $ref cycle that never descends into the instance (refused at compile),
 * evaluation depth and total evaluation steps at validate time (so a
 * $dynamicRef loop the compiler cannot see, or uniqueItems over a huge
 * array, ends with JSCHEMA_ELIMIT).
 *
 * Numbers are json-c's: int64, uint64 or double.  json-c saturates
 * integers beyond the uint64 range while parsing, so such values are
 * compared as saturated.
 *
 * Nothing here prints, exits or aborts; every allocation failure is
 * JSCHEMA_ENOMEM with nothing leaked.
 */
#ifndef MCP_API_JSCHEMA_H
#define MCP_API_JSCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

typedef struct jschema jschema;

typedef enum jschema_status {
	JSCHEMA_OK = 0,
	JSCHEMA_INVALID = 1,    /* validate: the instance does not match */
	JSCHEMA_ESCHEMA = -1,   /* compile: not a valid schema */
	JSCHEMA_EREMOTE = -2,   /* compile: a $ref to a document not given */
	JSCHEMA_ELIMIT = -3,    /* a bound was reached (depth, steps, regex) */
	JSCHEMA_ENOMEM = -4
} jschema_status;

/* A document that $ref may name besides the schema itself, by its URI. */
typedef struct jschema_doc {
	const char *uri;        /* absolute, without fragment */
	json_object *schema;    /* borrowed for the call; copied */
} jschema_doc;

/* Compile options; a zeroed struct (or NULL) gives the defaults. */
typedef struct jschema_opts {
	int formats;            /* non-zero: "format" asserts (see above) */
	const char *base_uri;   /* the schema's retrieval URI when it has no
				   $id (default "urn:libmcp:schema") */
	const jschema_doc *docs;/* other documents $ref may name */
	size_t ndocs;
	int max_schema_depth;   /* nesting of schema objects (default 128) */
	size_t max_nodes;       /* subschemas compiled (default 100000) */
	int max_eval_depth;     /* nested evaluations (default 256) */
	uint64_t max_steps;     /* evaluation steps per validation
				   (default 10000000) */
	uint32_t regex_match_limit; /* PCRE2 match limit (default 1000000) */
} jschema_opts;

#define JSCHEMA_PTR_MAX 256
#define JSCHEMA_MSG_MAX 640

/* Why compiling or validating failed.  Strings are NUL-terminated and cut
 * (with "...") when longer than their buffer. */
typedef struct jschema_error {
	/* The JSON pointer of the instance value that failed ("" for the
	 * root); empty for compile errors. */
	char instance[JSCHEMA_PTR_MAX];
	/* The keyword that failed ("type", "required", ...), or "$ref",
	 * "pattern" ... for compile errors; "" when none applies (ENOMEM). */
	char keyword[32];
	/* Where that keyword is in the schema, as a JSON pointer from the
	 * schema's document root (prefixed by the document URI when it is
	 * one of jschema_opts.docs). */
	char schema[JSCHEMA_PTR_MAX];
	/* One line a person or a language model can act on:
	 *   "/a: expected number, got string (type)"
	 *   "(root): missing required property \"a\" (required)"
	 *   "schema /properties/a/pattern: invalid regular expression ..." */
	char message[JSCHEMA_MSG_MAX];
} jschema_error;

/* Compiles `schema` (a JSON object or boolean; borrowed: what the compiled
 * form needs is copied, so the caller may free or change it afterwards).
 * On JSCHEMA_OK *out holds the compiled schema, owned by the caller and
 * released with jschema_free().  Otherwise *out is NULL and `err` (may be
 * NULL) says why: JSCHEMA_ESCHEMA, JSCHEMA_EREMOTE, JSCHEMA_ELIMIT (too
 * deep or too large) or JSCHEMA_ENOMEM.  Any thread. */
int jschema_compile(json_object *schema, const jschema_opts *opts, jschema **out,
		    jschema_error *err);

/* Validates `instance` (borrowed, only read; never shared with another
 * thread during the call, as json-c requires).  Returns JSCHEMA_OK (`err`
 * untouched), JSCHEMA_INVALID with the first failure in `err` (may be NULL),
 * JSCHEMA_ELIMIT when a bound stopped the evaluation (`err` says which),
 * or JSCHEMA_ENOMEM.  Any number of threads may validate against one
 * compiled schema at once. */
int jschema_validate(const jschema *s, json_object *instance, jschema_error *err);

/* Releases a compiled schema.  NULL is ignored. */
void jschema_free(jschema *s);

/* The root of the schema's own document copy (borrowed, read-only, valid
 * until jschema_free): what was compiled, for callers that describe it. */
json_object *jschema_document(const jschema *s);

/* ---- shared by the module's files ---------------------------------------- */

/* RFC 3986 reference resolution (jschema-uri.c): `ref` against the
 * absolute `base`.  Returns a malloc'd absolute URI, or NULL when out of
 * memory.  A base without a scheme makes the result relative. */
char *jschema_uri_resolve(const char *base, const char *ref);
/* Splits off the fragment: returns a malloc'd copy of `uri` without it and
 * sets *frag to the fragment's start inside `uri` (NULL when none). */
char *jschema_uri_strip(const char *uri, const char **frag);
/* Whether `s` is a URI (scheme ':' ...), a URI reference, an IRI or an IRI
 * reference in the sense of RFC 3986 / 3987 (iri: non-ASCII allowed). */
int jschema_is_uri(const char *s, size_t len, int reference, int iri);
/* An IPv4 dotted quad, an IPv6 address (RFC 3986 section 3.2.2). */
int jschema_is_ipv4(const char *s, size_t n);
int jschema_is_ipv6(const char *s, size_t n);

/* ECMA-262 regular expressions on PCRE2 (jschema-regex.c). */
struct jschema_regex;
/* Compiles an ECMA-262 pattern whose matches stop after `match_limit`
 * PCRE2 steps (0: 1000000); NULL with a reason in `why` when it is not one
 * this module supports, or when out of memory (*oom set). */
struct jschema_regex *jschema_regex_new(const char *src, size_t len, uint32_t match_limit,
					char *why, size_t whylen, int *oom);
void jschema_regex_free(struct jschema_regex *re);
/* 1 match, 0 no match (also for a subject that is not valid UTF-8),
 * JSCHEMA_ELIMIT (PCRE2's limits) or JSCHEMA_ENOMEM. */
int jschema_regex_search(const struct jschema_regex *re, const char *s, size_t len);
/* The PCRE2 pattern an ECMA-262 one becomes (malloc'd, NUL-terminated),
 * for the tests; NULL with `why` set as jschema_regex_new. */
char *jschema_regex_translate(const char *src, size_t len, char *why, size_t whylen, int *oom);

/* Formats (jschema-format.c).  Returns the format's id, or 0 for a format
 * that stays an annotation. */
int jschema_format_id(const char *name);
/* 1 when the string is valid for format `id`, 0 when not. */
int jschema_format_check(int id, const char *s, size_t len);

#endif /* MCP_API_JSCHEMA_H */
