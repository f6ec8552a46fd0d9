/*
 * conformance.h - the fixtures that the official MCP conformance suite
 * (@modelcontextprotocol/conformance, server scenarios) expects from an
 * "everything" server: its test_* tools, test:// resources and template,
 * and test_* prompts with completion.
 */
#ifndef MCP_EXAMPLES_CONFORMANCE_H
#define MCP_EXAMPLES_CONFORMANCE_H

#include <mcp/mcp.h>

/* Registers every conformance tool, resource, resource template and prompt
 * in `srv`.  Call it before running the server.  Returns MCP_OK, or the
 * first MCP_E* code a registration failed with (MCP_EINVAL for a NULL
 * server, MCP_EEXIST when a name is already taken, MCP_ENOMEM); fixtures
 * registered before the failure stay registered. */
int everything_register_conformance(mcp_server *srv);

#endif /* MCP_EXAMPLES_CONFORMANCE_H */
