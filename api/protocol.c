/*
 * protocol.c - the MCP methods of a connection: the lifecycle (initialize,
 * version negotiation, initialized), ping, logging/setLevel, cancellation,
 * tools/list and tools/call, routed through one table of handlers.
 *
 * Cheap methods whose effect orders later messages (initialize, setLevel)
 * or that must never wait for a worker (ping) are answered on the reader
 * thread; tool calls go to the pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

/* ---- helpers ----------------------------------------------------------- */

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	if (o && json_object_object_get_ex(o, key, &v))
		return v;
	return NULL;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static mcp_sess *sess_of(eng_session *s)
{
	return s->proto_data;
}

static const char *const log_level_names[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

static int log_level_from_name(const char *name)
{
	for (int i = 0; name && i < 8; i++)
		if (strcmp(name, log_level_names[i]) == 0)
			return i;
	return -1;
}

const char *mcp_log_level_name(int level);
const char *mcp_log_level_name(int level)
{
	return level >= 0 && level < 8 ? log_level_names[level] : "info";
}

/* ---- inline methods (reader thread) ------------------------------------ */

typedef void (*inline_fn)(eng_session *s, json_object *id, json_object *params);

static json_object *server_capabilities(mcp_server *srv)
{
	json_object *caps = json_object_new_object();
	json_object *tools = json_object_new_object();
	json_object_object_add(tools, "listChanged", json_object_new_boolean(1));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(caps, "logging", json_object_new_object());
	(void)srv;
	return caps;
}

static void m_initialize(eng_session *s, json_object *id, json_object *params)
{
	mcp_sess *ms = sess_of(s);
	if (!json_object_is_type(params, json_type_object)) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_PARAMS,
					  "Invalid params: initialize needs an object", NULL);
		return;
	}
	const char *asked = get_str(params, "protocolVersion");
	if (!asked) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_PARAMS,
					  "Invalid params: protocolVersion (string) is required",
					  NULL);
		return;
	}
	json_object *caps = get(params, "capabilities");
	if (caps && !json_object_is_type(caps, json_type_object)) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_PARAMS,
					  "Invalid params: capabilities must be an object", NULL);
		return;
	}
	int expect = MCP_SESS_NEW;
	if (!atomic_compare_exchange_strong(&ms->state, &expect, MCP_SESS_INITIALIZING)) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: initialize was already received", NULL);
		return;
	}
	/* Negotiation: the client's revision when we speak it, else our
	 * newest and the client decides whether to go on. */
	int rev = mcp_revision_index(asked);
	ms->rev = rev >= 0 ? rev : MCP_REV_COUNT - 1;
	ms->client_caps = caps ? json_object_get(caps) : json_object_new_object();
	json_object *info = get(params, "clientInfo");
	ms->client_info = info ? json_object_get(info) : NULL;

	mcp_server *srv = ms->srv;
	json_object *res = json_object_new_object();
	json_object_object_add(res, "protocolVersion",
			       json_object_new_string(mcp_revision_names[ms->rev]));
	json_object_object_add(res, "capabilities", server_capabilities(srv));
	json_object *si = json_object_new_object();
	json_object_object_add(si, "name", json_object_new_string(srv->name));
	json_object_object_add(si, "version", json_object_new_string(srv->version));
	json_object_object_add(res, "serverInfo", si);
	if (srv->instructions)
		json_object_object_add(res, "instructions",
				       json_object_new_string(srv->instructions));
	eng_session_respond_result(s, id, res);
}

static void m_ping(eng_session *s, json_object *id, json_object *params)
{
	(void)params;
	eng_session_respond_result(s, id, json_object_new_object());
}

static void m_set_level(eng_session *s, json_object *id, json_object *params)
{
	int level = log_level_from_name(get_str(params, "level"));
	if (level < 0) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_PARAMS,
					  "Invalid params: level must be one of debug, info, "
					  "notice, warning, error, critical, alert, emergency",
					  NULL);
		return;
	}
	atomic_store(&sess_of(s)->log_level, level);
	eng_session_respond_result(s, id, json_object_new_object());
}

static void m_tools_list(eng_session *s, json_object *id, json_object *params)
{
	(void)params;
	json_object *res = json_object_new_object();
	json_object_object_add(res, "tools", mcp_tools_list_json(sess_of(s)->srv,
								 sess_of(s)->rev));
	eng_session_respond_result(s, id, res);
}

/* ---- pooled methods (worker threads) ----------------------------------- */

static void trace(mcp_server *srv, const char *event, eng_req *r, const char *reason)
{
	if (srv->trace)
		srv->trace(event, r->id_key, reason, srv->trace_user);
}

static void run_tools_call(eng_req *r)
{
	mcp_sess *ms = sess_of(r->sess);
	mcp_server *srv = ms->srv;
	json_object *params = get(r->msg, "params");
	const char *name = get_str(params, "name");
	json_object *args = get(params, "arguments");

	if (!name) {
		eng_req_finish_error(r, MCP_JSONRPC_INVALID_PARAMS,
				     "Invalid params: tools/call needs a tool name", NULL);
		return;
	}
	if (args && !json_object_is_type(args, json_type_object)) {
		eng_req_finish_error(r, MCP_JSONRPC_INVALID_PARAMS,
				     "Invalid params: arguments must be an object", NULL);
		return;
	}
	mcp_tool_entry *tool = mcp_tools_find(srv, name);
	if (!tool) {
		json_object *data = json_object_new_object();
		json_object_object_add(data, "name", json_object_new_string(name));
		size_t n = strlen(name) + 32;
		char *msg = malloc(n);
		if (msg)
			snprintf(msg, n, "Unknown tool: %s", name);
		eng_req_finish_error(r, MCP_JSONRPC_INVALID_PARAMS, msg ? msg : "Unknown tool",
				     data);
		free(msg);
		return;
	}
	json_object *own_args = NULL;
	if (!args)
		args = own_args = json_object_new_object();

	mcp_ctx ctx = { .req = r, .sess = ms };
	json_object *meta = get(params, "_meta");
	json_object *pt = get(meta, "progressToken");
	if (pt && (json_object_is_type(pt, json_type_string) ||
		   json_object_is_type(pt, json_type_int)))
		ctx.progress_token = pt;

	mcp_result res;
	mcp_result_init(&res, ms->rev);
	trace(srv, "started", r, NULL);
	int rc = tool->fn(&ctx, args, &res, tool->user);
	int reason = eng_token_reason(&r->token);
	const char *why = "completed";
	if (reason == MCP_CANCEL_PEER || (rc != MCP_OK && reason != MCP_CANCEL_NONE))
		why = mcp_cancel_reason_name((mcp_cancel_reason)reason);
	trace(srv, "cleanup", r, why);

	if (rc == MCP_OK) {
		eng_req_finish_result(r, mcp_result_to_json(&res));
	} else if (rc == MCP_ECANCELED && reason != MCP_CANCEL_NONE) {
		/* Stopped because of its token: nothing is written (P1, P2). */
		eng_req_finish_silent(r);
	} else if (res.err_code) {
		eng_req_finish_error(r, res.err_code, res.err_message, res.err_data);
		res.err_data = NULL;
	} else {
		eng_req_finish_error(r,
				     rc == MCP_EINVAL ? MCP_JSONRPC_INVALID_PARAMS
						      : MCP_JSONRPC_INTERNAL_ERROR,
				     mcp_strerror(rc), NULL);
	}
	mcp_result_clear(&res);
	json_object_put(own_args);
	mcp_tool_entry_unref(tool);
}

/* ---- the method table --------------------------------------------------- */

enum {
	M_ANY_STATE = 1, /* allowed before initialize */
};

typedef struct method {
	const char *name;
	inline_fn on_reader;        /* answered on the reader thread */
	void (*on_worker)(eng_req *r);
	int flags;
} method;

static const method methods[] = {
	{ "initialize", m_initialize, NULL, M_ANY_STATE },
	{ "ping", m_ping, NULL, M_ANY_STATE },
	{ "logging/setLevel", m_set_level, NULL, 0 },
	{ "tools/list", m_tools_list, NULL, 0 },
	{ "tools/call", NULL, run_tools_call, 0 },
};

static const method *find_method(const char *name)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

static void on_request(eng_session *s, json_object *msg, json_object *id,
		       const char *method_name, json_object *params)
{
	const method *m = find_method(method_name);
	if (!m) {
		json_object *data = json_object_new_object();
		json_object_object_add(data, "method", json_object_new_string(method_name));
		eng_session_respond_error(s, id, MCP_JSONRPC_METHOD_NOT_FOUND,
					  "Method not found", data);
		json_object_put(msg);
		return;
	}
	if (!(m->flags & M_ANY_STATE) && atomic_load(&sess_of(s)->state) == MCP_SESS_NEW) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: the server is not initialized "
					  "(send initialize first)",
					  NULL);
		json_object_put(msg);
		return;
	}
	if (m->on_reader) {
		/* Answered now, but a duplicate of an id in flight is still a
		 * duplicate (P5). */
		if (eng_session_id_in_flight(s, id)) {
			json_object *data = json_object_new_object();
			json_object_object_add(data, "id", json_object_get(id));
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
						  "Invalid Request: id is already in flight", data);
		} else {
			m->on_reader(s, id, params);
		}
		json_object_put(msg);
		return;
	}
	eng_session_submit(s, msg, id, m->on_worker, NULL, NULL);
}

static void on_notification(eng_session *s, json_object *msg, const char *name,
			    json_object *params)
{
	mcp_sess *ms = sess_of(s);
	if (strcmp(name, "notifications/cancelled") == 0) {
		eng_session_cancel_peer(s, get(params, "requestId"));
	} else if (strcmp(name, "notifications/initialized") == 0) {
		int expect = MCP_SESS_INITIALIZING;
		atomic_compare_exchange_strong(&ms->state, &expect, MCP_SESS_READY);
	}
	/* Anything else (roots/list_changed, progress, unknown ones) needs no
	 * action and is never answered. */
	json_object_put(msg);
}

static int batches_allowed(eng_session *s)
{
	mcp_sess *ms = sess_of(s);
	return atomic_load(&ms->state) != MCP_SESS_NEW && ms->rev == MCP_REV_2025_03_26;
}

static json_object *cancel_notification(int64_t id, const char *reason)
{
	json_object *n = json_object_new_object();
	json_object *p = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(n, "method", json_object_new_string("notifications/cancelled"));
	json_object_object_add(p, "requestId", json_object_new_int64(id));
	json_object_object_add(p, "reason", json_object_new_string(reason));
	json_object_object_add(n, "params", p);
	return n;
}

static void on_free(eng_session *s)
{
	mcp_sess *ms = sess_of(s);
	json_object_put(ms->client_caps);
	json_object_put(ms->client_info);
	free(ms);
}

const eng_proto mcp_protocol = {
	.on_request = on_request,
	.on_notification = on_notification,
	.batches_allowed = batches_allowed,
	.cancel_notification = cancel_notification,
	.on_free = on_free,
};

mcp_sess *mcp_sess_new(mcp_server *srv)
{
	mcp_sess *ms = calloc(1, sizeof *ms);
	if (!ms)
		return NULL;
	ms->srv = srv;
	atomic_init(&ms->state, MCP_SESS_NEW);
	ms->rev = MCP_REV_COUNT - 1;
	atomic_init(&ms->log_level, MCP_LOG_DEBUG);
	return ms;
}
