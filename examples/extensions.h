/*
 * extensions.h - the fixtures of the extension scenarios of the official
 * MCP conformance suite (tasks, skills, MCP Apps) for mcp-everything.
 */
#ifndef MCP_EXAMPLES_EXTENSIONS_H
#define MCP_EXAMPLES_EXTENSIONS_H

#include <mcp/mcp.h>

/* Registers the extension fixtures in `srv`; call before running.
 * MCP_OK, or the first MCP_E* code a registration failed with
 * (MCP_EINVAL for a NULL server). */
int everything_register_extensions(mcp_server *srv);

#endif /* MCP_EXAMPLES_EXTENSIONS_H */
