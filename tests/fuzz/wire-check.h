/*
 * wire-check.h - what the fuzzers and the allocation-failure test check on
 * everything a server wrote: each line is one strict, UTF-8 JSON-RPC 2.0
 * message (or a batch answer), and no id is answered more often than the
 * client used it.
 *
 * Test code only: it is compiled into the fuzz targets and the check
 * program, never into the library.
 */
#ifndef MCP_FUZZ_WIRE_CHECK_H
#define MCP_FUZZ_WIRE_CHECK_H

#include <stddef.h>
#include <json-c/json.h>

/* A multiset of request ids, keyed by their compact JSON text (so "5" and
 * 5 differ, as on the wire). */
typedef struct wire_ids {
	char **keys;
	size_t *counts;
	size_t n, cap;
} wire_ids;

void wire_ids_init(wire_ids *ids);
void wire_ids_free(wire_ids *ids);
/* Adds one use of `key` (copied).  0, or -1 when out of memory. */
int wire_ids_add(wire_ids *ids, const char *key);
size_t wire_ids_count(const wire_ids *ids, const char *key);

/* Strict UTF-8 (RFC 3629), written independently of transport/utf8.c so
 * the two can be compared. */
int wire_utf8_valid(const unsigned char *s, size_t len);

/* The compact JSON text of an id (a pointer into json-c's buffer, valid
 * until `id` changes). */
const char *wire_id_key(json_object *id);

/* Records the request ids found in one client line (an object or a batch
 * array) into `sent`.  Lines that do not parse are ignored. */
void wire_note_sent(const char *line, size_t len, wire_ids *sent);

/* Checks one server line: strict JSON, valid UTF-8, a JSON-RPC 2.0 message
 * or an array of them; answers with a non-null id are added to `answered`
 * and must not outnumber the uses of that id in `sent` (NULL: not
 * checked).  Returns 0, or -1 with a reason in why[0..whylen). */
int wire_check_line(const char *line, size_t len, const wire_ids *sent, wire_ids *answered,
		    char *why, size_t whylen);

/* Keeps the checker's tokeners from one line to the next (on: 1), for a
 * caller that parses many lines and only from one thread at a time;
 * wire_keep_tokeners(0) frees them.  Off by default. */
void wire_keep_tokeners(int on);

/* Looks for the answer to id `key` in one server line (an object or a
 * batch array): 1 for a result, 2 for an error (its code in *code), 0 when
 * the line does not answer `key`. */
int wire_answer_of(const char *line, size_t len, const char *key, int *code);

#endif /* MCP_FUZZ_WIRE_CHECK_H */
