/*
 * util.c - small helpers shared by the protocol layer: optional string
 * copies, JSON copies and fields, and random identifiers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/internal.h"

char *api_strdup_opt(const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

json_object *api_json_copy(json_object *o)
{
	json_object *c = NULL;
	if (o && json_object_deep_copy(o, &c, NULL) != 0)
		return NULL;
	return c;
}

json_object *api_get(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

const char *api_str(json_object *v)
{
	if (!json_object_is_type(v, json_type_string))
		return NULL;
	const char *s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

const char *api_get_str(json_object *o, const char *key)
{
	json_object *v = api_get(o, key);
	if (!json_object_is_type(v, json_type_string))
		return NULL;
	/* Names, uris, levels and versions are looked up as C strings: one
	 * holding U+0000 would be taken for its beginning ("echo\u0000junk"
	 * for echo).  None can hold one, so it is no such string. */
	const char *s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

void api_json_add_str(json_object *o, const char *key, const char *value)
{
	if (value)
		eng_obj_add(o, key, json_object_new_string(value));
}

void api_random_hex(char out[33])
{
	unsigned char raw[16];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	/* getrandom does not fail for 16 bytes once the pool is ready; the
	 * clock is a last resort that still gives distinct ids. */
	if (got < sizeof raw) {
		uint64_t x = (uint64_t)eng_now_ns();
		memcpy(raw, &x, sizeof x);
	}
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

int api_rpc_error_set(api_rpc_error *e, int code, const char *message, json_object *data)
{
	if (!e || !message || code == 0) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	char *m = strdup(message);
	if (!m) {
		json_object_put(data);
		return MCP_ENOMEM;
	}
	api_rpc_error_clear(e);
	e->code = code;
	e->message = m;
	e->data = data;
	return MCP_OK;
}

void api_rpc_error_clear(api_rpc_error *e)
{
	free(e->message);
	json_object_put(e->data);
	e->code = 0;
	e->message = NULL;
	e->data = NULL;
}

/* An RFC 3986 URI as far as its characters go: a scheme, a colon, and only
 * unreserved, reserved or percent-encoded characters.  Anything else cannot
 * name a resource and would make the answer invalid. */
int api_uri_valid(const char *uri)
{
	const char *p = uri;
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '+' || *p == '-' || *p == '.')
		p++;
	if (*p != ':')
		return 0;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~:/?#[]@!$&'()*+,;=%{}", c))
			continue;
		return 0;
	}
	return 1;
}
