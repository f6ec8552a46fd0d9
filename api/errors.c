/*
 * errors.c - names for the library's error codes, cancellation reasons and
 * protocol revisions, and the library's version.
 */
#include <string.h>

#include "api/internal.h"

MCP_EXTERN unsigned int mcp_version(void)
{
	return MCP_VERSION_NUM;
}

MCP_EXTERN const char *mcp_version_string(void)
{
	return MCP_VERSION_STRING;
}

MCP_EXTERN const char *mcp_strerror(int err)
{
	switch (err) {
	case MCP_OK: return "success";
	case MCP_ENOMEM: return "out of memory";
	case MCP_EINVAL: return "invalid argument";
	case MCP_ECANCELED: return "request cancelled";
	case MCP_ETIMEDOUT: return "timed out";
	case MCP_ECLOSED: return "connection closed";
	case MCP_ENOTSUP: return "not supported by the client or on this request's transport";
	case MCP_EREMOTE: return "the client answered with an error";
	case MCP_EBUSY: return "a configured limit was reached";
	case MCP_ESTATE: return "not allowed in the current state";
	case MCP_EEXIST: return "already exists";
	case MCP_ENOENT: return "not found";
	case MCP_ESYS: return "a system call failed";
	case MCP_EPROTO: return "protocol violation by the peer";
	case MCP_EINPUT: return "input from the client is required";
	case MCP_ERESULT: return "answered with the error set on the result";
	default: return "unknown error";
	}
}

MCP_EXTERN const char *mcp_cancel_reason_name(mcp_cancel_reason reason)
{
	switch (reason) {
	case MCP_CANCEL_NONE: return "none";
	case MCP_CANCEL_PEER: return "peer_cancelled";
	case MCP_CANCEL_TRANSPORT_CLOSED: return "transport_closed";
	case MCP_CANCEL_SHUTDOWN: return "shutdown";
	case MCP_CANCEL_TIMEOUT: return "timeout";
	case MCP_CANCEL_SESSION_DELETED: return "session_deleted";
	case MCP_CANCEL_SESSION_EXPIRED: return "session_expired";
	}
	return "unknown";
}

const char *const api_revision_names[API_REV_COUNT] = {
	"2024-11-05",
	"2025-03-26",
	"2025-06-18",
	"2025-11-25",
	"2026-07-28",
};

int api_revision_index(const char *version)
{
	if (!version)
		return -1;
	for (int i = 0; i < API_REV_COUNT; i++)
		if (strcmp(version, api_revision_names[i]) == 0)
			return i;
	return -1;
}

MCP_EXTERN int mcp_protocol_supported(const char *version)
{
	return api_revision_index(version) >= 0;
}
