/*
 * args.c - typed reading of a tool's arguments (mcp_args_*), for handlers
 * whose arguments the library has already checked against input_schema.
 *
 * All of them share one rule: 1 and the value when the member is there
 * with the type asked for, 0 and *out untouched when it is absent or
 * null (so *out holds the handler's default), MCP_EINVAL when it has
 * another type.  Nothing is copied: strings and containers are borrowed
 * from the handler's arguments.
 */
#include <math.h>
#include <string.h>

#include "api/internal.h"

/* The member, or NULL with *rc set: 0 (absent or null) or MCP_EINVAL. */
static json_object *arg(json_object *args, const char *key, const void *out, int *rc)
{
	*rc = MCP_EINVAL;
	if (!json_object_is_type(args, json_type_object) || !key || !out)
		return NULL;
	json_object *v = NULL;
	json_object_object_get_ex(args, key, &v);
	*rc = 0;
	return v; /* json-c's null is a NULL member: absent too */
}

MCP_EXTERN int mcp_args_string(json_object *args, const char *key, const char **out)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (!json_object_is_type(v, json_type_string))
		return MCP_EINVAL;
	const char *s = json_object_get_string(v);
	/* Cut at a U+0000 it would be another string than the one the
	 * schema checked. */
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return MCP_EINVAL;
	*out = s;
	return 1;
}

MCP_EXTERN int mcp_args_string_len(json_object *args, const char *key, const char **out,
				   size_t *len)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (!len || !json_object_is_type(v, json_type_string))
		return MCP_EINVAL;
	*out = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	return 1;
}

MCP_EXTERN int mcp_args_int64(json_object *args, const char *key, int64_t *out)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);
		/* json-c saturates: INT64_MAX may stand for a larger value. */
		if (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
			return MCP_EINVAL;
		*out = i;
		return 1;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		/* 2^63 is the first double past INT64_MAX. */
		if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 ||
		    d >= 9223372036854775808.0)
			return MCP_EINVAL;
		*out = (int64_t)d;
		return 1;
	}
	return MCP_EINVAL;
}

MCP_EXTERN int mcp_args_double(json_object *args, const char *key, double *out)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return MCP_EINVAL;
	if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) == INT64_MAX)
		*out = (double)json_object_get_uint64(v);
	else
		*out = json_object_get_double(v);
	return 1;
}

MCP_EXTERN int mcp_args_bool(json_object *args, const char *key, int *out)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (!json_object_is_type(v, json_type_boolean))
		return MCP_EINVAL;
	*out = json_object_get_boolean(v) ? 1 : 0;
	return 1;
}

static int container(json_object *args, const char *key, json_object **out, json_type type)
{
	int rc;
	json_object *v = arg(args, key, out, &rc);
	if (!v)
		return rc;
	if (!json_object_is_type(v, type))
		return MCP_EINVAL;
	*out = v;
	return 1;
}

MCP_EXTERN int mcp_args_object(json_object *args, const char *key, json_object **out)
{
	return container(args, key, out, json_type_object);
}

MCP_EXTERN int mcp_args_array(json_object *args, const char *key, json_object **out)
{
	return container(args, key, out, json_type_array);
}
