/*
 * client-skills.c - the host's side of the Skills extension
 * (io.modelcontextprotocol/skills, SEP-2640): reading a listed skill's
 * files and refusing any that do not match the entry the listing gave.
 *
 * The listing (skills/list) is the trust anchor: each entry names the
 * skill's files with a sha256 digest and a size, and carries the SKILL.md
 * frontmatter as JSON.  A file is read only when the host asks for it
 * (never on connection or listing: the extension forbids prefetching), and
 * its bytes are handed over only when their size and digest match; for
 * the SKILL.md itself the frontmatter parsed from the bytes must also
 * equal the entry's, field by field.  Anything else is MCP_EPROTO with a
 * reason, and the content is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/internal.h"
#include "mcp/client.h"

#define DIGEST_PREFIX "sha256:"

static void say(char *why, size_t whylen, const char *fmt, const char *a, const char *b)
{
	if (why && whylen)
		snprintf(why, whylen, fmt, a, b);
}

/* The entry's record of `uri`: its resources[] element, or NULL. */
static json_object *listed(json_object *entry, const char *uri)
{
	json_object *files = NULL;
	if (!json_object_object_get_ex(entry, "resources", &files) ||
	    !json_object_is_type(files, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		json_object *f = json_object_array_get_idx(files, i);
		const char *u = api_get_str(f, "uri");
		if (u && strcmp(u, uri) == 0)
			return f;
	}
	return NULL;
}

/* The bytes of the first content of a ReadResourceResult: its text, or its
 * blob decoded.  *data is malloc'd and NUL-terminated.  MCP_OK,
 * MCP_ENOMEM or MCP_EPROTO with a reason. */
static int content_bytes(json_object *res, const char *uri, char **data, size_t *len, char *why,
			 size_t whylen)
{
	json_object *contents = NULL, *first = NULL, *v = NULL;
	if (json_object_object_get_ex(res, "contents", &contents) &&
	    json_object_is_type(contents, json_type_array) &&
	    json_object_array_length(contents) > 0)
		first = json_object_array_get_idx(contents, 0);
	if (first && json_object_object_get_ex(first, "text", &v) &&
	    json_object_is_type(v, json_type_string)) {
		size_t n = (size_t)json_object_get_string_len(v);
		char *p = malloc(n + 1);
		if (!p)
			return MCP_ENOMEM;
		memcpy(p, json_object_get_string(v), n);
		p[n] = 0;
		*data = p;
		*len = n;
		return MCP_OK;
	}
	if (first && json_object_object_get_ex(first, "blob", &v) &&
	    json_object_is_type(v, json_type_string)) {
		size_t n = (size_t)json_object_get_string_len(v);
		char *p = malloc(n / 4 * 3 + 4);
		size_t got = 0;
		if (!p)
			return MCP_ENOMEM;
		if (sodium_base642bin((unsigned char *)p, n / 4 * 3 + 3, json_object_get_string(v), n,
				      NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
			free(p);
			say(why, whylen, "%s: the blob is not Base64%s", uri, "");
			return MCP_EPROTO;
		}
		p[got] = 0;
		*data = p;
		*len = got;
		return MCP_OK;
	}
	say(why, whylen, "%s: the read returned no text or blob content%s", uri, "");
	return MCP_EPROTO;
}

/* Size, digest and (for the SKILL.md) frontmatter of `data` against the
 * entry.  MCP_OK, MCP_ENOMEM or MCP_EPROTO with a reason. */
static int verify(json_object *entry, json_object *rec, const char *uri, const char *data,
		  size_t len, char *why, size_t whylen)
{
	json_object *size = NULL;
	if (json_object_object_get_ex(rec, "size", &size)) {
		if (!json_object_is_type(size, json_type_int) || json_object_get_int64(size) < 0) {
			say(why, whylen, "%s: the entry's size is not a count of bytes%s", uri, "");
			return MCP_EPROTO;
		}
		if ((uint64_t)json_object_get_int64(size) != (uint64_t)len) {
			char got[64];
			snprintf(got, sizeof got, "%zu bytes, the entry says %lld", len,
				 (long long)json_object_get_int64(size));
			say(why, whylen, "%s: size mismatch (%s)", uri, got);
			return MCP_EPROTO;
		}
	}
	const char *want = api_get_str(rec, "digest");
	size_t plen = strlen(DIGEST_PREFIX);
	if (!want || strncmp(want, DIGEST_PREFIX, plen) != 0 ||
	    strlen(want) != plen + 2 * crypto_hash_sha256_BYTES) {
		say(why, whylen, "%s: the entry has no sha256 digest to verify against%s", uri, "");
		return MCP_EPROTO;
	}
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * crypto_hash_sha256_BYTES + 1];
	crypto_hash_sha256(h, (const unsigned char *)data, len);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	for (size_t i = 0; i < sizeof hex - 1; i++) {
		char w = want[plen + i];
		if (w >= 'A' && w <= 'F')
			w = (char)(w - 'A' + 'a');
		if (w != hex[i]) {
			say(why, whylen, "%s: digest mismatch (the content is sha256:%s)", uri, hex);
			return MCP_EPROTO;
		}
	}
	const char *skill_uri = api_get_str(entry, "uri");
	if (!skill_uri || strcmp(skill_uri, uri) != 0)
		return MCP_OK;
	json_object *fm_want = NULL;
	if (!json_object_object_get_ex(entry, "frontmatter", &fm_want)) {
		say(why, whylen, "%s: the entry carries no frontmatter to compare%s", uri, "");
		return MCP_EPROTO;
	}
	char reason[200] = "";
	json_object *fm = api_skill_parse_frontmatter(data, len, NULL, reason, sizeof reason);
	if (!fm) {
		say(why, whylen, "%s: its frontmatter cannot be read: %s", uri, reason);
		return MCP_EPROTO;
	}
	int same = json_object_equal(fm, fm_want);
	const char *field = NULL;
	if (!same && json_object_is_type(fm, json_type_object) &&
	    json_object_is_type(fm_want, json_type_object)) {
		/* Name the first field that differs, for the reason. */
		json_object_object_foreach(fm_want, k, v)
		{
			json_object *g = NULL;
			if (!json_object_object_get_ex(fm, k, &g) || !json_object_equal(g, v)) {
				field = k;
				break;
			}
		}
		if (!field) {
			json_object_object_foreach(fm, k2, v2)
			{
				(void)v2;
				if (!json_object_object_get_ex(fm_want, k2, NULL)) {
					field = k2;
					break;
				}
			}
		}
	}
	if (!same)
		say(why, whylen, "%s: frontmatter differs from the entry's (field \"%s\")", uri,
		    field ? field : "(the whole object)");
	json_object_put(fm);
	return same ? MCP_OK : MCP_EPROTO;
}

MCP_EXTERN int mcp_client_read_skill_file(mcp_client *c, json_object *entry, const char *uri,
					  int64_t timeout_ms, mcp_token *tok, char **data,
					  size_t *len, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (data)
		*data = NULL;
	if (len)
		*len = 0;
	if (!c || !data || !json_object_is_type(entry, json_type_object))
		return MCP_EINVAL;
	if (!uri)
		uri = api_get_str(entry, "uri");
	if (!uri) {
		say(why, whylen, "the entry has no uri%s%s", "", "");
		return MCP_EINVAL;
	}
	json_object *rec = listed(entry, uri);
	if (!rec) {
		/* Nothing to verify it against, so it cannot be used. */
		say(why, whylen, "%s is not among the files the skill's entry lists%s", uri, "");
		return MCP_ENOENT;
	}
	json_object *res = NULL;
	int rc = mcp_client_read_resource(c, uri, timeout_ms, tok, &res);
	if (rc != MCP_OK) {
		say(why, whylen, "%s: the read failed: %s", uri, mcp_strerror(rc));
		json_object_put(res);
		return rc;
	}
	char *bytes = NULL;
	size_t n = 0;
	rc = content_bytes(res, uri, &bytes, &n, why, whylen);
	json_object_put(res);
	if (rc == MCP_OK)
		rc = verify(entry, rec, uri, bytes, n, why, whylen);
	if (rc != MCP_OK) {
		free(bytes); /* never handed over unverified */
		return rc;
	}
	*data = bytes;
	if (len)
		*len = n;
	return MCP_OK;
}
