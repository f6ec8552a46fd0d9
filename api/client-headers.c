/*
 * client-headers.c - the client's half of SEP-2243 (2026-07-28, Streamable
 * HTTP): which arguments of a tool a client mirrors into Mcp-Param-<Name>
 * headers, whether a tool's x-mcp-header declarations are valid (a tool
 * with an invalid one is left out of tools/list), and how a value is
 * written into a header.
 *
 * The rules are the transports page's "Custom Headers from Tool
 * Parameters" and the tools page's "x-mcp-header": a name is a non-empty
 * HTTP token (RFC 9110 5.6.2, which also keeps out space, ':', control and
 * non-ASCII characters), unique without regard to case within the schema,
 * on a property of type string, integer or boolean (number is not
 * allowed), at any depth reached through "properties".  A value that is
 * not plain printable ASCII, has whitespace at either end, or looks like
 * the encoded form itself, is sent as =?base64?<standard Base64 of its
 * UTF-8 bytes>?=.  A null or absent argument sends no header.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "api/internal.h"
#include "api/client-headers.h"

/* "properties" nesting followed before a schema is refused as too deep:
 * a bound on a peer's input, far above any real tool. */
#define XH_MAX_DEPTH 32

/* RFC 9110 5.6.2: tchar. */
static int is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return 1;
	return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Why `name` (`len` bytes) cannot be an x-mcp-header, or NULL. */
static const char *name_problem(const char *name, size_t len)
{
	if (len == 0)
		return "is empty";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch < 0x20 || ch == 0x7f)
			return "has a control character";
		if (ch >= 0x80)
			return "has a non-ASCII character";
		if (ch == ' ')
			return "has a space";
		if (ch == ':')
			return "has a colon";
		if (!is_tchar(ch))
			return "is not an HTTP token";
	}
	return NULL;
}

/* Why a property of this schema cannot carry a header, or NULL. */
static const char *type_problem(json_object *prop)
{
	json_object *type = api_get(prop, "type");
	if (!json_object_is_type(type, json_type_string))
		return "is on a property without a single primitive type";
	const char *t = json_object_get_string(type);
	if (strcmp(t, "string") && strcmp(t, "integer") && strcmp(t, "boolean"))
		return "is on a property that is not a string, integer or boolean";
	return NULL;
}

/* Walks `schema`'s properties at `depth`, `path` holding the keys above.
 * Appends one binding per declaration; MCP_EINVAL with `why` at the first
 * invalid one. */
static int scan(json_object *schema, json_object *path, int depth, json_object *out, char *why,
		size_t whysz)
{
	json_object *props = api_get(schema, "properties");
	if (!json_object_is_type(props, json_type_object))
		return MCP_OK;
	if (depth >= XH_MAX_DEPTH) {
		snprintf(why, whysz, "its inputSchema nests properties deeper than %d levels",
			 XH_MAX_DEPTH);
		return MCP_EINVAL;
	}
	json_object_object_foreach(props, key, prop)
	{
		json_object *decl = api_get(prop, "x-mcp-header");
		if (decl) {
			const char *p = NULL;
			size_t len = 0;
			if (!json_object_is_type(decl, json_type_string)) {
				p = "is not a string";
			} else {
				len = (size_t)json_object_get_string_len(decl);
				p = name_problem(json_object_get_string(decl), len);
			}
			if (!p)
				p = type_problem(prop);
			for (size_t i = 0; !p && i < json_object_array_length(out); i++) {
				json_object *other = json_object_array_get_idx(
					json_object_array_get_idx(out, i), 0);
				if ((size_t)json_object_get_string_len(other) == len &&
				    strncasecmp(json_object_get_string(other),
						json_object_get_string(decl), len) == 0)
					p = "repeats another x-mcp-header (names are compared "
					    "without regard to case)";
			}
			if (p) {
				snprintf(why, whysz, "the x-mcp-header of property \"%.80s\" %s", key,
					 p);
				return MCP_EINVAL;
			}
			json_object *b = json_object_new_array();
			json_object_array_add(b, json_object_get(decl));
			for (size_t i = 0; i < json_object_array_length(path); i++)
				json_object_array_add(
					b, json_object_get(json_object_array_get_idx(path, i)));
			json_object_array_add(b, json_object_new_string(key));
			json_object_array_add(out, b);
		}
		if (json_object_is_type(api_get(prop, "properties"), json_type_object)) {
			json_object_array_add(path, json_object_new_string(key));
			int rc = scan(prop, path, depth + 1, out, why, whysz);
			json_object_array_del_idx(path, json_object_array_length(path) - 1, 1);
			if (rc != MCP_OK)
				return rc;
		}
	}
	return MCP_OK;
}

int api_xheaders_scan(json_object *input_schema, json_object **bindings, char *why, size_t whysz)
{
	*bindings = NULL;
	json_object *out = json_object_new_array(), *path = json_object_new_array();
	if (!out || !path) {
		json_object_put(out);
		json_object_put(path);
		snprintf(why, whysz, "out of memory");
		return MCP_ENOMEM;
	}
	int rc = scan(input_schema, path, 0, out, why, whysz);
	json_object_put(path);
	if (rc != MCP_OK) {
		json_object_put(out);
		return rc;
	}
	*bindings = out;
	return MCP_OK;
}

char *api_xheader_encode(const char *value, size_t len)
{
	static const char pre[] = "=?base64?", post[] = "?=";
	int plain = len == 0 || (value[0] != ' ' && value[len - 1] != ' ');
	for (size_t i = 0; plain && i < len; i++)
		plain = (unsigned char)value[i] >= 0x20 && (unsigned char)value[i] < 0x7f;
	/* A plain value that looks encoded would be decoded by the server. */
	if (plain && len >= sizeof pre - 1 + sizeof post - 1 &&
	    memcmp(value, pre, sizeof pre - 1) == 0 &&
	    memcmp(value + len - (sizeof post - 1), post, sizeof post - 1) == 0)
		plain = 0;
	if (plain) {
		char *out = malloc(len + 1);
		if (out) {
			memcpy(out, value, len);
			out[len] = 0;
		}
		return out;
	}
	size_t b64 = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(sizeof pre - 1 + b64 + sizeof post);
	if (!out)
		return NULL;
	memcpy(out, pre, sizeof pre - 1);
	sodium_bin2base64(out + sizeof pre - 1, b64, (const unsigned char *)value, len,
			  sodium_base64_VARIANT_ORIGINAL);
	strcat(out, post);
	return out;
}

/* The text of an argument for its header, in buf or borrowed from `v`;
 * NULL when it sends none (null, an object, an array). */
static const char *value_text(json_object *v, char *buf, size_t bufsz, size_t *len)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		*len = (size_t)json_object_get_string_len(v);
		return json_object_get_string(v);
	case json_type_boolean:
		snprintf(buf, bufsz, "%s", json_object_get_boolean(v) ? "true" : "false");
		break;
	case json_type_int:
		snprintf(buf, bufsz, "%lld", (long long)json_object_get_int64(v));
		break;
	case json_type_double:
		snprintf(buf, bufsz, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		break;
	default:
		return NULL;
	}
	*len = strlen(buf);
	return buf;
}

char **api_xheaders_lines(json_object *bindings, json_object *args)
{
	size_t n = json_object_array_length(bindings), k = 0;
	char **lines = calloc(n + 1, sizeof *lines);
	if (!lines)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(bindings, i), *v = args;
		for (size_t j = 1; v && j < json_object_array_length(b); j++)
			v = api_get(v, json_object_get_string(json_object_array_get_idx(b, j)));
		char num[64];
		size_t len = 0;
		const char *text = v ? value_text(v, num, sizeof num, &len) : NULL;
		if (!text)
			continue;
		char *enc = api_xheader_encode(text, len);
		const char *name = json_object_get_string(json_object_array_get_idx(b, 0));
		size_t sz = strlen(name) + strlen(enc ? enc : "") + 16;
		char *line = enc ? malloc(sz) : NULL;
		if (!line) {
			free(enc);
			api_xheaders_free(lines);
			return NULL;
		}
		/* libcurl drops a header written "Name:" with nothing after
		 * it; "Name;" is its way to send one with an empty value. */
		if (*enc)
			snprintf(line, sz, "Mcp-Param-%s: %s", name, enc);
		else
			snprintf(line, sz, "Mcp-Param-%s;", name);
		free(enc);
		lines[k++] = line;
	}
	return lines;
}

void api_xheaders_free(char **lines)
{
	for (size_t i = 0; lines && lines[i]; i++)
		free(lines[i]);
	free(lines);
}
