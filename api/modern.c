/*
 * modern.c - the checks of a 2026-07-28 request and the view it is served
 * with.  Such a request names its protocol version in its own _meta and is
 * served from its own envelope, beside the connection's legacy traffic,
 * through the same handlers: its view (revision, capabilities, log level)
 * travels with it as the engine request's protocol data.
 *
 * The ladder here runs before any method is looked up, on the reader and
 * in the HTTP transport alike; whether the method exists in the era is the
 * method table's to say (dispatch.c, api_request_check).
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

json_object *api_modern_versions(void)
{
	json_object *a = json_object_new_array();
	for (int i = API_REV_LEGACY_COUNT; i < API_REV_COUNT; i++)
		eng_arr_add(a, json_object_new_string(api_revision_names[i]));
	return a;
}

int api_modern_check(json_object *params, const char *header_version, const char **message,
		     json_object **data)
{
	*data = NULL;
	json_object *meta = api_get(params, "_meta");
	json_object *pv = api_get(meta, API_META_VERSION);
	json_object *caps = api_get(meta, API_META_CAPS);
	json_object *level = api_get(meta, API_META_LOG);
	if (!api_str(pv) || !json_object_is_type(caps, json_type_object)) {
		*message = "Invalid params: a request without a session needs _meta with "
			   "\"" API_META_VERSION "\" (a string without U+0000) and \"" API_META_CAPS
			   "\" (an object)";
		return MCP_JSONRPC_INVALID_PARAMS;
	}
	const char *version = json_object_get_string(pv);
	if (header_version && strcmp(header_version, version) != 0) {
		*message = "Header mismatch: the MCP-Protocol-Version header must equal "
			   "_meta \"" API_META_VERSION "\"";
		return API_JSONRPC_HEADER_MISMATCH;
	}
	if (api_revision_index(version) < API_REV_LEGACY_COUNT) {
		*message = "Unsupported protocol version";
		*data = json_object_new_object();
		eng_obj_add(*data, "supported", api_modern_versions());
		eng_obj_add(*data, "requested", json_object_new_string(version));
		return API_JSONRPC_UNSUPPORTED_VERSION;
	}
	if (level && api_log_level_from_name(api_str(level) ? api_str(level) : "") < 0) {
		*message = "Invalid params: _meta \"" API_META_LOG "\" must be a log level";
		return MCP_JSONRPC_INVALID_PARAMS;
	}
	return 0;
}

void api_view_free(void *p)
{
	api_view *v = p;
	json_object_put(v->caps);
	free(v);
}

api_view *api_view_new(json_object *params)
{
	api_view *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	json_object *meta = api_get(params, "_meta");
	v->modern = 1;
	v->rev = API_REV_2026_07_28;
	v->caps = json_object_get(api_get(meta, API_META_CAPS));
	const char *level = api_get_str(meta, API_META_LOG);
	v->log_level = level ? api_log_level_from_name(level) : -1;
	return v;
}
