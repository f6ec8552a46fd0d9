/* conformance-auth.h - the auth scenarios (auth/...) of tests/client/conformance-client. */
#ifndef CONFORMANCE_AUTH_H
#define CONFORMANCE_AUTH_H

#include <mcp/client.h>

/* For an auth/... scenario, OAuth on `c` as MCP_CONFORMANCE_CONTEXT says;
 * nothing for the others.  MCP_OK or the MCP_E* code of the setter. */
int conformance_auth_setup(mcp_client *c, const char *scenario);

#endif
