/*
 * internal.h - the MCP protocol layer's private types: the server object,
 * the per-connection protocol state, the tool registry and the handler
 * context.
 *
 * Everything MCP-specific lives above the engine: method names, the
 * lifecycle, version negotiation, capabilities and result shapes.
 */
#ifndef MCP_API_INTERNAL_H
#define MCP_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/eng.h"

/* Protocol revisions, oldest first.  Index order is chronological, so
 * "at least revision X" is an integer comparison. */
enum {
	MCP_REV_2025_03_26 = 0,
	MCP_REV_2025_06_18,
	MCP_REV_2025_11_25,
	MCP_REV_COUNT
};
extern const char *const mcp_revision_names[MCP_REV_COUNT];
/* Index of a supported revision, or -1. */
int mcp_revision_index(const char *version);

/* A registered tool.  Counted: a call holds a reference, so removing the
 * tool while it runs is safe. */
typedef struct mcp_tool_entry {
	_Atomic int refs;
	char *name, *title, *description;
	json_object *input_schema;   /* owned; read-only after registration */
	json_object *output_schema;  /* owned or NULL */
	mcp_tool_fn fn;
	void *user;
} mcp_tool_entry;

void mcp_tool_entry_unref(mcp_tool_entry *t);

struct mcp_server {
	char *name, *version, *instructions;
	int workers;
	int grace_ms;
	size_t max_message;
	int max_depth;
	int max_queue;
	int max_pending;
	mcp_trace_fn trace;
	void *trace_user;

	pthread_rwlock_t reg_lock;   /* the registries below */
	mcp_tool_entry **tools;
	size_t ntools, tools_cap;

	eng_pool pool;
	eng_stats stats;
	int wake_fd;                 /* eventfd: shutdown (signal-safe) */
	_Atomic int running;
	_Atomic int has_run;
	pthread_mutex_t sess_mu;     /* the current session */
	eng_session *session;
};

/* Connection state of the lifecycle. */
enum { MCP_SESS_NEW = 0, MCP_SESS_INITIALIZING, MCP_SESS_READY };

/* Per-connection protocol state (the engine session's proto_data). */
typedef struct mcp_sess {
	mcp_server *srv;
	_Atomic int state;
	int rev;                     /* negotiated revision index */
	json_object *client_caps;    /* set once by initialize, then read-only */
	json_object *client_info;
	_Atomic int log_level;       /* notifications below it are not sent */
} mcp_sess;

extern const eng_proto mcp_protocol;
mcp_sess *mcp_sess_new(mcp_server *srv);

struct mcp_result {
	json_object *content;        /* array */
	json_object *structured;
	int is_error;
	int err_code;                /* JSON-RPC error instead of a result */
	char *err_message;
	json_object *err_data;
	int rev;
};

struct mcp_ctx {
	eng_req *req;
	mcp_sess *sess;
	json_object *progress_token; /* borrowed from the request, or NULL */
	double last_progress;
	int sent_progress;
};

void mcp_result_init(mcp_result *r, int rev);
void mcp_result_clear(mcp_result *r);
/* Builds the CallToolResult (taken by the caller). */
json_object *mcp_result_to_json(mcp_result *r);

/* base64 of bytes; caller frees.  NULL when out of memory. */
char *mcp_base64(const void *data, size_t len);

/* Runs one connection over any transport (taken) on the calling thread,
 * starting and stopping the pool around it; the public run functions and
 * the in-process tests use it. */
int mcp_server_run_tp(mcp_server *srv, tp_conn *tp);

/* The tool registry (tools.c). */
mcp_tool_entry *mcp_tools_find(mcp_server *srv, const char *name);
json_object *mcp_tools_list_json(mcp_server *srv, int rev);
void mcp_tools_free_all(mcp_server *srv);

#endif /* MCP_API_INTERNAL_H */
