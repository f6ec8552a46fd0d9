/*
 * result.c - building a tool's CallToolResult: content blocks of every kind,
 * structured content, isError, or a JSON-RPC error instead.
 *
 * A result belongs to the handler's thread until it returns; what the
 * negotiated revision does not know is downgraded or left out here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/internal.h"

/* Standard base64 with padding (RFC 4648 section 4), libsodium's
 * encoder: the one base64 of the library.  Malloc'd; NULL when out of
 * memory or when the encoding would not fit a size_t. */
char *api_base64(const void *data, size_t len)
{
	if (len > (SIZE_MAX - 8) / 4 * 3)
		return NULL;
	size_t out_len = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(out_len);
	if (!out)
		return NULL;
	return sodium_bin2base64(out, out_len, data, len, sodium_base64_VARIANT_ORIGINAL);
}

void api_result_init(mcp_result *r, int rev)
{
	memset(r, 0, sizeof *r);
	r->rev = rev;
}

void api_result_clear(mcp_result *r)
{
	json_object_put(r->content);
	json_object_put(r->structured);
	json_object_put(r->err_data);
	free(r->err_message);
	memset(r, 0, sizeof *r);
}

/* The text a 2024-11-05 client gets for an audio block: the model learns
 * that there was audio and of which type, not what was said. */
static json_object *audio_note(json_object *block)
{
	const char *mime = api_get_str(block, "mimeType");
	const char *data = api_get_str(block, "data");
	size_t b64 = data ? strlen(data) : 0;
	char *t = NULL;
	int n = asprintf(&t, "[audio (%s, about %zu bytes) left out: protocol revision "
			     "2024-11-05 has no audio content]",
			 mime ? mime : "unknown type", b64 / 4 * 3);
	json_object *text = n < 0 ? NULL : api_block_text(t, (size_t)n);
	free(t);
	return text;
}

/* "name <uri>", what a client before 2025-06-18 gets for a resource_link. */
static json_object *link_text(json_object *block)
{
	const char *name = api_get_str(block, "name");
	const char *uri = api_get_str(block, "uri");
	char *t = NULL;
	int n = asprintf(&t, "%s <%s>", name ? name : "resource", uri ? uri : "");
	json_object *text = n < 0 ? NULL : api_block_text(t, (size_t)n);
	free(t);
	return text;
}

json_object *api_block_for_rev(json_object *block, int rev)
{
	const char *type = api_get_str(block, "type");
	json_object *text = NULL;
	if (!type)
		return block;
	if (rev < API_REV_2025_03_26 && strcmp(type, "audio") == 0)
		text = audio_note(block);
	else if (rev < API_REV_2025_06_18 && strcmp(type, "resource_link") == 0)
		text = link_text(block);
	else
		return block;
	json_object_put(block);
	return text;
}

static int lacks_kind(json_object *content, int rev)
{
	if (json_object_is_type(content, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(content); i++)
			if (lacks_kind(json_object_array_get_idx(content, i), rev))
				return 1;
		return 0;
	}
	const char *type = api_get_str(content, "type");
	return type && rev < API_REV_2025_03_26 && strcmp(type, "audio") == 0;
}

int api_sampling_lacks_kind(json_object *params, int rev)
{
	json_object *msgs = api_get(params, "messages");
	for (size_t i = 0; json_object_is_type(msgs, json_type_array) &&
			   i < json_object_array_length(msgs);
	     i++)
		if (lacks_kind(api_get(json_object_array_get_idx(msgs, i), "content"), rev))
			return 1;
	return 0;
}

static int add_block(mcp_result *out, json_object *block)
{
	if (block)
		block = api_block_for_rev(block, out->rev);
	if (!block)
		return MCP_ENOMEM;
	if (!out->content) {
		out->content = json_object_new_array();
		if (!out->content) {
			json_object_put(block);
			return MCP_ENOMEM;
		}
	}
	if (eng_arr_add(out->content, block))
		return MCP_ENOMEM;
	return MCP_OK;
}

static json_object *typed(const char *type)
{
	int bad = 0;
	json_object *b = json_object_new_object();
	eng_obj_set(b, "type", json_object_new_string(type), &bad);
	if (bad) {
		json_object_put(b);
		return NULL;
	}
	return b;
}

json_object *api_block_text(const char *text, size_t len)
{
	int bad = 0;
	json_object *b = typed("text");
	eng_obj_set(b, "text", json_object_new_string_len(text, (int)len), &bad);
	if (bad) {
		json_object_put(b);
		return NULL;
	}
	return b;
}

json_object *api_block_media(const char *type, const void *data, size_t len,
			     const char *mime_type)
{
	char *b64 = api_base64(data, len);
	json_object *b = b64 ? typed(type) : NULL;
	if (b) {
		eng_obj_add(b, "data", json_object_new_string(b64));
		eng_obj_add(b, "mimeType", json_object_new_string(mime_type));
	}
	free(b64);
	return b;
}

json_object *api_block_resource(const char *uri, const char *mime_type, const char *key,
				json_object *value)
{
	json_object *res = json_object_new_object();
	json_object *b = typed("resource");
	if (!res || !b || !value) {
		json_object_put(res);
		json_object_put(b);
		json_object_put(value);
		return NULL;
	}
	eng_obj_add(res, "uri", json_object_new_string(uri));
	api_json_add_str(res, "mimeType", mime_type);
	eng_obj_add(res, key, value);
	eng_obj_add(b, "resource", res);
	return b;
}

MCP_EXTERN int mcp_result_add_text_len(mcp_result *out, const char *text, size_t len)
{
	if (!out || (!text && len))
		return MCP_EINVAL;
	return add_block(out, api_block_text(text ? text : "", len));
}

MCP_EXTERN int mcp_result_add_text(mcp_result *out, const char *text)
{
	if (!text)
		return MCP_EINVAL;
	return mcp_result_add_text_len(out, text, strlen(text));
}

MCP_EXTERN int mcp_result_add_image(mcp_result *out, const void *data, size_t len,
				    const char *mime_type)
{
	if (!out || !mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, api_block_media("image", data, len, mime_type));
}

MCP_EXTERN int mcp_result_add_audio(mcp_result *out, const void *data, size_t len,
				    const char *mime_type)
{
	if (!out || !mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, api_block_media("audio", data, len, mime_type));
}

MCP_EXTERN int mcp_result_add_resource_link(mcp_result *out, const char *uri,
					    const char *name, const char *description,
					    const char *mime_type)
{
	if (!out || !uri || !name)
		return MCP_EINVAL;
	/* Before 2025-06-18 add_block makes it text (api_block_for_rev). */
	json_object *b = typed("resource_link");
	if (!b)
		return MCP_ENOMEM;
	eng_obj_add(b, "uri", json_object_new_string(uri));
	eng_obj_add(b, "name", json_object_new_string(name));
	api_json_add_str(b, "description", description);
	api_json_add_str(b, "mimeType", mime_type);
	return add_block(out, b);
}

MCP_EXTERN int mcp_result_add_resource_text(mcp_result *out, const char *uri,
					    const char *mime_type, const char *text)
{
	if (!out || !uri || !text)
		return MCP_EINVAL;
	return add_block(out, api_block_resource(uri, mime_type, "text",
						 json_object_new_string(text)));
}

MCP_EXTERN int mcp_result_add_resource_blob(mcp_result *out, const char *uri,
					    const char *mime_type, const void *data,
					    size_t len)
{
	if (!out || !uri || (!data && len))
		return MCP_EINVAL;
	char *b64 = api_base64(data, len);
	if (!b64)
		return MCP_ENOMEM;
	json_object *v = json_object_new_string(b64);
	free(b64);
	return add_block(out, api_block_resource(uri, mime_type, "blob", v));
}

MCP_EXTERN int mcp_result_add_content(mcp_result *out, json_object *block)
{
	if (!out || !json_object_is_type(block, json_type_object) || !eng_json_finite(block)) {
		json_object_put(block);
		return MCP_EINVAL;
	}
	return add_block(out, block);
}

MCP_EXTERN int mcp_result_set_structured(mcp_result *out, json_object *value)
{
	if (!out || !json_object_is_type(value, json_type_object) || !eng_json_finite(value)) {
		json_object_put(value);
		return MCP_EINVAL;
	}
	json_object_put(out->structured);
	out->structured = value;
	return MCP_OK;
}

MCP_EXTERN void mcp_result_set_is_error(mcp_result *out, int is_error)
{
	if (out)
		out->is_error = is_error != 0;
}

MCP_EXTERN int mcp_result_set_error(mcp_result *out, int code, const char *message,
				    json_object *data)
{
	if (!out || !message || code == 0) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	char *m = strdup(message);
	if (!m) {
		json_object_put(data);
		return MCP_ENOMEM;
	}
	free(out->err_message);
	json_object_put(out->err_data);
	out->err_code = code;
	out->err_message = m;
	out->err_data = data;
	/* Not MCP_OK: a handler that returns what this returned must send
	 * the error, not an empty success. */
	return MCP_ERESULT;
}

MCP_EXTERN int mcp_result_tool_error(mcp_result *out, const char *fmt, ...)
{
	if (!out || !fmt)
		return MCP_EINVAL;
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MCP_ENOMEM;
	/* The answer is the failure: what the handler built before it goes. */
	json_object_put(out->content);
	out->content = NULL;
	json_object_put(out->structured);
	out->structured = NULL;
	out->is_error = 1;
	int rc = add_block(out, api_block_text(text, (size_t)n));
	free(text);
	return rc;
}

json_object *api_result_to_json(mcp_result *r)
{
	int bad = 0;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_set(o, "content", r->content ? r->content : json_object_new_array(), &bad);
	r->content = NULL;
	if (r->structured && r->rev >= API_REV_2025_06_18) {
		eng_obj_set(o, "structuredContent", r->structured, &bad);
		r->structured = NULL;
	}
	if (r->is_error)
		eng_obj_set(o, "isError", json_object_new_boolean(1), &bad);
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
