/*
 * client-headers.h - SEP-2243 on the client (api/client-headers.c): the
 * x-mcp-header declarations of a tool's inputSchema, checked, and the
 * Mcp-Param-<Name> header lines a tools/call sends for them.
 */
#ifndef MCP_API_CLIENT_HEADERS_H
#define MCP_API_CLIENT_HEADERS_H

#include <stddef.h>

#include <json-c/json.h>

/* Every x-mcp-header of `input_schema` (borrowed), at any depth reached
 * through "properties".  MCP_OK with *bindings a new array (the caller's;
 * empty when there is none) of arrays [header name, key, key...], the keys
 * leading from the arguments to the value; MCP_EINVAL with `why` naming
 * the first invalid declaration (the tool must then be left out);
 * MCP_ENOMEM. */
int api_xheaders_scan(json_object *input_schema, json_object **bindings, char *why, size_t whysz);

/* The header value for `len` bytes of `value`: the bytes themselves when
 * they are printable ASCII without a space at either end and do not look
 * encoded, else "=?base64?...?=" (standard alphabet, padded).  Newly
 * allocated, or NULL when out of memory. */
char *api_xheader_encode(const char *value, size_t len);

/* The "Mcp-Param-<Name>: <value>" lines (an empty value is written
 * "Mcp-Param-<Name>;", libcurl's form for it) for the arguments `args`
 * (borrowed) of a tool whose bindings api_xheaders_scan gave: strings,
 * integers and booleans, nothing for a null or absent argument.  A
 * NULL-terminated array freed with api_xheaders_free, or NULL when out of
 * memory. */
char **api_xheaders_lines(json_object *bindings, json_object *args);
void api_xheaders_free(char **lines);

#endif
