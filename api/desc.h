/*
 * desc.h - reading a caller's descriptor (mcp_tool, mcp_resource, ...) by
 * the size it declares.
 *
 * Every descriptor of <mcp/mcp.h> starts with `size_t struct_size`, the
 * size of the struct the caller was compiled with (see "Descriptors" in
 * the header and doc/packaging.md, "The binary interface").  The library
 * never reads a caller's struct directly: desc_read() copies it into one
 * of the library's own size, so that
 *   - members an older caller does not have read as zero;
 *   - a newer caller's members this library does not know are accepted
 *     only while they are zero (MCP_ENOTSUP otherwise: the caller asked
 *     for something this library cannot do);
 *   - a size below the struct's first release (0: MCP_*_INIT forgotten)
 *     is MCP_EINVAL.
 */
#ifndef MCP_API_DESC_H
#define MCP_API_DESC_H

#include <stddef.h>
#include <string.h>

#include "mcp/mcp.h"

/* The size of each descriptor in the first release (1.0): up to the end
 * of its last member then.  A member added later does not change these. */
#define DESC_TOOL_V1 (offsetof(mcp_tool, flags) + sizeof(unsigned))
#define DESC_RESOURCE_V1 (offsetof(mcp_resource, user) + sizeof(void *))
#define DESC_TEMPLATE_V1 (offsetof(mcp_resource_template, user) + sizeof(void *))
#define DESC_PROMPT_V1 (offsetof(mcp_prompt, user) + sizeof(void *))
#define DESC_PROMPT_ARG_V1 (offsetof(mcp_prompt_arg, required) + sizeof(int))
#define DESC_FIELD_V1 (offsetof(mcp_field, ndefault_options) + sizeof(size_t))

/* Copies the caller's descriptor `src` (NULL: MCP_EINVAL) into `dst`, the
 * library's struct of `dst_size` bytes; `v1_size` is the struct's first
 * release size (DESC_*_V1).  On MCP_OK, dst->struct_size is dst_size.
 * Returns MCP_OK, MCP_EINVAL or MCP_ENOTSUP, as the header documents. */
static inline int desc_read(void *dst, size_t dst_size, const void *src, size_t v1_size)
{
	size_t n;

	if (!src)
		return MCP_EINVAL;
	memcpy(&n, src, sizeof n);
	if (n < v1_size)
		return MCP_EINVAL;
	if (n > dst_size) {
		const unsigned char *tail = (const unsigned char *)src + dst_size;
		for (size_t i = 0; i < n - dst_size; i++)
			if (tail[i])
				return MCP_ENOTSUP;
		n = dst_size;
	}
	memset(dst, 0, dst_size);
	memcpy(dst, src, n);
	memcpy(dst, &dst_size, sizeof dst_size);
	return MCP_OK;
}

/* The reason desc_read() gave `rc`, for a "why" text. */
static inline const char *desc_why(int rc)
{
	return rc == MCP_ENOTSUP ? "struct_size: the struct is newer than this library and sets "
				   "members it does not know"
				 : "struct_size: not set (use the struct's MCP_*_INIT) or too small";
}

#endif /* MCP_API_DESC_H */
