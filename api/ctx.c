/*
 * ctx.c - the handler context: what a running tool handler can ask of the
 * library (its cancellation state, token-aware waits, progress, logging and
 * server-to-client requests), and the legacy bridge of multi round-trip
 * requests, which asks the client through those same calls.
 *
 * Every blocking call here wakes when the request's token fires, when the
 * connection closes, or at its timeout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "api/jschema/jschema.h"

MCP_EXTERN mcp_cancel_reason mcp_ctx_cancelled(const mcp_ctx *ctx)
{
	return (mcp_cancel_reason)eng_token_reason(&ctx->req->token);
}

MCP_EXTERN const char *mcp_ctx_request_id(const mcp_ctx *ctx)
{
	return eng_req_client_key(ctx->req);
}

MCP_EXTERN const char *mcp_ctx_protocol_version(const mcp_ctx *ctx)
{
	return api_revision_names[ctx->view.rev];
}

MCP_EXTERN json_object *mcp_ctx_client_capabilities(const mcp_ctx *ctx)
{
	return api_ctx_caps(ctx);
}

void api_entry_demote(mcp_server *srv, api_entry *e, eng_req *r, const char *event)
{
	if (atomic_exchange(&e->demoted, 1))
		return; /* told once */
	if (srv->trace)
		srv->trace(event, eng_req_client_key(r), e->key, srv->trace_user);
}

int api_ctx_here_refuses(mcp_ctx *ctx)
{
	mcp_server *srv = ctx->sess->srv;
	atomic_fetch_add(&srv->stats.ran_here_refused, 1);
	if (ctx->item)
		api_entry_demote(srv, ctx->item, ctx->req, "nonblocking_refused");
	return MCP_ESTATE;
}

MCP_EXTERN int mcp_ctx_sleep(mcp_ctx *ctx, int64_t ms)
{
	if (eng_req_here(ctx->req))
		return api_ctx_here_refuses(ctx);
	return eng_token_sleep(&ctx->req->token, ms);
}

MCP_EXTERN int mcp_ctx_wait(mcp_ctx *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
			    int64_t timeout_ms)
{
	if (!ctx || !cond || !mutex)
		return MCP_EINVAL;
	if (eng_req_here(ctx->req))
		return api_ctx_here_refuses(ctx);
	return eng_token_wait_external(&ctx->req->token, cond, mutex, timeout_ms);
}

MCP_EXTERN int mcp_ctx_cancel_fd(mcp_ctx *ctx)
{
	return eng_token_fd(&ctx->req->token);
}

MCP_EXTERN int mcp_ctx_on_cancel(mcp_ctx *ctx, mcp_cancel_fn fn, void *arg, int *handle)
{
	if (!ctx)
		return MCP_EINVAL;
	return eng_token_on_cancel(&ctx->req->token, fn, arg, handle);
}

MCP_EXTERN int mcp_ctx_off_cancel(mcp_ctx *ctx, int handle)
{
	if (!ctx)
		return MCP_EINVAL;
	return eng_token_off_cancel(&ctx->req->token, handle);
}

MCP_EXTERN int mcp_ctx_close_stream(mcp_ctx *ctx, int64_t retry_ms)
{
	if (!ctx || retry_ms < 0 || retry_ms > 86400000)
		return MCP_EINVAL;
	if (ctx->task)
		return MCP_ENOTSUP; /* a task's answer travels by tasks/result */
	return eng_session_close_stream(ctx->req->sess, ctx->req, (int)retry_ms);
}

static json_object *notification(const char *method, json_object *params)
{
	json_object *n = json_object_new_object();
	if (!n) {
		json_object_put(params);
		return NULL;
	}
	eng_obj_add(n, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(n, "method", json_object_new_string(method));
	eng_obj_add(n, "params", params);
	return n;
}

/* Whether the request may still emit.  After a peer cancel nothing more is
 * written for it (P2); after EOF the output stays open for what handlers
 * still produce (P1), and the writer refuses once it is closed. */
static int emit_gate(mcp_ctx *ctx)
{
	return eng_token_reason(&ctx->req->token) == MCP_CANCEL_PEER ? MCP_ECANCELED : MCP_OK;
}

MCP_EXTERN int mcp_ctx_progress(mcp_ctx *ctx, double progress, double total,
				const char *message)
{
	if (!ctx || !isfinite(progress) || !isfinite(total))
		return MCP_EINVAL; /* json-c would write NaN or Infinity: not JSON */
	if (ctx->sent_progress && !(progress > ctx->last_progress))
		return MCP_EINVAL; /* P10: progress only increases */
	int rc = emit_gate(ctx);
	if (rc != MCP_OK)
		return rc;
	/* No progress for a 2026-07-28 task (SEP-2663): its request is
	 * answered, and its status is what tasks/get reports. */
	if (!ctx->progress_token || (ctx->task && ctx->view.modern))
		return MCP_OK;
	json_object *p = json_object_new_object();
	if (!p)
		return MCP_ENOMEM;
	eng_obj_add(p, "progressToken", json_object_get(ctx->progress_token));
	eng_obj_add(p, "progress", json_object_new_double(progress));
	if (total > 0)
		eng_obj_add(p, "total", json_object_new_double(total));
	/* The message came with 2025-03-26: a 2024-11-05 client gets the
	 * numbers alone. */
	if (message && ctx->view.rev >= API_REV_2025_03_26)
		eng_obj_add(p, "message", json_object_new_string(message));
	json_object *n = notification("notifications/progress", p);
	if (!n)
		return MCP_ENOMEM;
	rc = eng_req_emit(ctx->req, n);
	if (rc == MCP_OK) {
		ctx->sent_progress = 1;
		ctx->last_progress = progress;
	}
	return rc;
}

MCP_EXTERN int mcp_ctx_log(mcp_ctx *ctx, mcp_log_level level, const char *logger,
			   json_object *data)
{
	if (!ctx || (int)level < MCP_LOG_DEBUG || level > MCP_LOG_EMERGENCY) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	int rc = emit_gate(ctx);
	/* A 2026-07-28 request is logged only at the level it asked for. */
	int threshold = ctx->view.modern ? ctx->view.log_level : atomic_load(&ctx->sess->log_level);
	/* Nor logging (SEP-2663: not on the listen stream, not for tasks). */
	if (ctx->task && ctx->view.modern)
		threshold = -1;
	if (rc != MCP_OK || threshold < 0 || (int)level < threshold) {
		json_object_put(data);
		return rc;
	}
	json_object *p = json_object_new_object();
	if (!p) {
		json_object_put(data);
		return MCP_ENOMEM;
	}
	eng_obj_add(p, "level", json_object_new_string(api_log_level_name(level)));
	if (logger)
		eng_obj_add(p, "logger", json_object_new_string(logger));
	eng_obj_add(p, "data", data);
	json_object *n = notification("notifications/message", p);
	if (!n)
		return MCP_ENOMEM;
	return eng_req_emit(ctx->req, n);
}

MCP_EXTERN int mcp_ctx_log_text(mcp_ctx *ctx, mcp_log_level level, const char *logger,
				const char *text)
{
	if (!text)
		return MCP_EINVAL;
	json_object *d = json_object_new_string(text);
	if (!d)
		return MCP_ENOMEM;
	return mcp_ctx_log(ctx, level, logger, d);
}

/* Whether the client declared capabilities.<a>[.<b>] (for this request). */
static int client_has(const mcp_ctx *ctx, const char *a, const char *b)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(api_ctx_caps(ctx), a, &v))
		return 0;
	return !b || json_object_object_get_ex(v, b, NULL);
}

/* A client call of a 2026-07-28 request (`params` taken): it cannot be
 * sent as a request, so the handler is parked (api/mrtr.c), or inside a
 * task asks through the task (api/tasks.c).  Without the capability the
 * handler's failure becomes -32021 naming it. */
static int modern_call(mcp_ctx *ctx, const char *capability, const char *method,
		       json_object *params, int64_t timeout_ms, json_object **result)
{
	if (!client_has(ctx, capability, NULL)) {
		ctx->missing_cap = capability;
		json_object_put(params);
		return MCP_ENOTSUP;
	}
	/* Inside a task the input travels by tasks/get and tasks/update. */
	if (ctx->task) {
		if (params)
			api_trace_meta_add(ctx, params);
		return api_task_ask(ctx, method, params, timeout_ms, result);
	}
	if (eng_req_here(ctx->req)) {
		json_object_put(params);
		return api_ctx_here_refuses(ctx);
	}
	return api_park_call(ctx, method, params, timeout_ms, result);
}

/* Sends a server-to-client request (`params` taken) and waits for its
 * answer.  The caller has checked the capability. */
static int call_client(mcp_ctx *ctx, const char *method, json_object *params,
		       int64_t timeout_ms, json_object **result)
{
	api_sess *ms = ctx->sess;
	if (atomic_load(&ctx->req->sess->closed)) {
		json_object_put(params);
		return eng_req_closed(ctx->req);
	}
	if (eng_req_here(ctx->req)) {
		json_object_put(params);
		return api_ctx_here_refuses(ctx);
	}
	/* MCP lifecycle: no requests to the client before it said
	 * notifications/initialized. */
	if (atomic_load(&ms->state) != API_SESS_READY) {
		json_object_put(params);
		return MCP_ESTATE;
	}
	json_object *msg = json_object_new_object();
	if (!msg) {
		json_object_put(params);
		return MCP_ENOMEM;
	}
	eng_obj_add(msg, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(msg, "method", json_object_new_string(method));
	if (ctx->task) {
		/* A task asking for input: tag the request with the task and show
		 * input_required while it waits. */
		if (!params)
			params = json_object_new_object();
		json_object *meta = NULL;
		if (!json_object_object_get_ex(params, "_meta", &meta)) {
			meta = json_object_new_object();
			eng_obj_add(params, "_meta", meta);
		}
		json_object *rel = json_object_new_object();
		eng_obj_add(rel, "taskId", json_object_new_string(api_task_id(ctx->task)));
		eng_obj_add(meta, "io.modelcontextprotocol/related-task", rel);
		api_task_set_input_required(ctx->task, 1);
	}
	/* The request's trace goes on into what the server asks for it. */
	if (ctx->traceparent) {
		if (!params)
			params = json_object_new_object();
		api_trace_meta_add(ctx, params);
	}
	if (params)
		eng_obj_add(msg, "params", params);
	json_object *answer = NULL;
	int rc = eng_req_call(ctx->req, msg, timeout_ms, &answer);
	if (ctx->task)
		api_task_set_input_required(ctx->task, 0);
	if (rc != MCP_OK)
		return rc;
	json_object *v = NULL;
	if (json_object_object_get_ex(answer, "result", &v) &&
	    json_object_is_type(v, json_type_object)) {
		*result = json_object_get(v);
		rc = MCP_OK;
	} else if (json_object_object_get_ex(answer, "error", &v) &&
		   json_object_is_type(v, json_type_object)) {
		*result = json_object_get(v);
		rc = MCP_EREMOTE;
	} else {
		rc = MCP_EPROTO;
	}
	json_object_put(answer);
	return rc;
}

/* Common argument checks; returns MCP_OK or an error with *result NULL. */
static int begin_call(mcp_ctx *ctx, json_object **result)
{
	if (!result)
		return MCP_EINVAL;
	*result = NULL;
	return ctx ? MCP_OK : MCP_EINVAL;
}

MCP_EXTERN int mcp_ctx_list_roots(mcp_ctx *ctx, int64_t timeout_ms, json_object **result)
{
	int rc = begin_call(ctx, result);
	if (rc != MCP_OK)
		return rc;
	if (ctx->view.modern)
		return modern_call(ctx, "roots", "roots/list", NULL, timeout_ms, result);
	if (!client_has(ctx, "roots", NULL))
		return MCP_ENOTSUP;
	return call_client(ctx, "roots/list", NULL, timeout_ms, result);
}

MCP_EXTERN int mcp_ctx_sample(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
			      json_object **result)
{
	int rc = begin_call(ctx, result);
	if (rc != MCP_OK)
		return rc;
	if (!json_object_is_type(params, json_type_object))
		return MCP_EINVAL;
	if (ctx->view.modern) {
		json_object *p = api_json_copy(params);
		if (!p)
			return MCP_ENOMEM;
		return modern_call(ctx, "sampling", "sampling/createMessage", p, timeout_ms,
				   result);
	}
	if (!client_has(ctx, "sampling", NULL))
		return MCP_ENOTSUP;
	/* Tool use in sampling exists from 2025-11-25 and only for clients that
	 * declared sampling.tools. */
	if ((json_object_object_get_ex(params, "tools", NULL) ||
	     json_object_object_get_ex(params, "toolChoice", NULL)) &&
	    (ctx->view.rev < API_REV_2025_11_25 || !client_has(ctx, "sampling", "tools")))
		return MCP_ENOTSUP;
	/* Audio to sample from came with 2025-03-26.  Unlike a result's, the
	 * messages are the handler's question: rewritten, they would ask
	 * something else, so the call is refused. */
	if (api_sampling_lacks_kind(params, ctx->view.rev))
		return MCP_ENOTSUP;
	json_object *p = api_json_copy(params);
	if (!p)
		return MCP_ENOMEM;
	return call_client(ctx, "sampling/createMessage", p, timeout_ms, result);
}

MCP_EXTERN int mcp_ctx_sample_text(mcp_ctx *ctx, const char *system_prompt,
				   const char *user_text, int max_tokens, int64_t timeout_ms,
				   json_object **result)
{
	int rc = begin_call(ctx, result);
	if (rc != MCP_OK)
		return rc;
	if (!user_text || max_tokens <= 0)
		return MCP_EINVAL;
	json_object *p = json_object_new_object();
	json_object *msgs = json_object_new_array();
	json_object *m = json_object_new_object();
	if (!p || !msgs || !m) {
		json_object_put(p);
		json_object_put(msgs);
		json_object_put(m);
		return MCP_ENOMEM;
	}
	eng_obj_add(m, "role", json_object_new_string("user"));
	eng_obj_add(m, "content", api_block_text(user_text, strlen(user_text)));
	eng_arr_add(msgs, m);
	eng_obj_add(p, "messages", msgs);
	api_json_add_str(p, "systemPrompt", system_prompt);
	eng_obj_add(p, "maxTokens", json_object_new_int(max_tokens));
	rc = mcp_ctx_sample(ctx, p, timeout_ms, result);
	json_object_put(p);
	return rc;
}

int api_elicit_send(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
		    json_object **result)
{
	json_object *jm = NULL;
	json_object_object_get_ex(params, "mode", &jm);
	int url = jm && strcmp(json_object_get_string(jm), "url") == 0;
	int ok;
	int rev = ctx->view.rev;
	if (ctx->view.modern)
		return modern_call(ctx, "elicitation", "elicitation/create", params, timeout_ms,
				   result);
	if (rev < API_REV_2025_06_18 || !client_has(ctx, "elicitation", NULL))
		ok = 0; /* no elicitation before 2025-06-18 */
	else if (url)
		ok = rev >= API_REV_2025_11_25 && client_has(ctx, "elicitation", "url");
	else
		/* Form mode: an empty elicitation capability means form (the
		 * only mode before 2025-11-25). */
		ok = client_has(ctx, "elicitation", "form") || !client_has(ctx, "elicitation", "url");
	if (!ok) {
		json_object_put(params);
		return MCP_ENOTSUP;
	}
	if (rev < API_REV_2025_11_25)
		json_object_object_del(params, "mode"); /* not in older schemas */
	return call_client(ctx, "elicitation/create", params, timeout_ms, result);
}

/* The user's answer comes through a client we do not control: accepted
 * content is held to the schema the form asked for, so a handler only
 * sees answers that fit it (the same promise as for tool arguments). */
int api_elicit_checked(mcp_ctx *ctx, json_object *params, json_object *requested,
		       int64_t timeout_ms, json_object **result)
{
	jschema *check = NULL;
	if (requested) {
		/* Formats assert: the form promised e-mail addresses, dates... */
		jschema_opts opts = { .formats = 1 };
		int c = jschema_compile(requested, &opts, &check, NULL);
		if (c != JSCHEMA_OK) {
			json_object_put(params);
			return c == JSCHEMA_ENOMEM ? MCP_ENOMEM : MCP_EINVAL;
		}
	}
	int rc = api_elicit_send(ctx, params, timeout_ms, result);
	const char *action = NULL;
	if (rc == MCP_OK && check) {
		json_object *a = api_get(*result, "action");
		action = json_object_is_type(a, json_type_string) ? json_object_get_string(a) : "";
	}
	if (action && strcmp(action, "accept") == 0) {
		json_object *content = api_get(*result, "content");
		json_object *none = content ? NULL : json_object_new_object();
		int v = content || none ? jschema_validate(check, content ? content : none, NULL)
					: JSCHEMA_ENOMEM;
		json_object_put(none);
		if (v != JSCHEMA_OK) {
			json_object_put(*result);
			*result = NULL;
			rc = v == JSCHEMA_ENOMEM ? MCP_ENOMEM : MCP_EPROTO;
		}
	}
	jschema_free(check);
	return rc;
}

MCP_EXTERN int mcp_ctx_elicit(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
			      json_object **result)
{
	int rc = begin_call(ctx, result);
	if (rc != MCP_OK)
		return rc;
	if (!json_object_is_type(params, json_type_object))
		return MCP_EINVAL;
	json_object *p = api_json_copy(params);
	if (!p)
		return MCP_ENOMEM;
	return api_elicit_checked(ctx, p, api_get(params, "requestedSchema"), timeout_ms, result);
}

/* ---- the legacy bridge of MRTR (mrtr.c) ------------------------------------- */

/* Sends one named input request to a legacy client; its answer, or an
 * MCP_E* code. */
static int ask_client(mcp_ctx *ctx, json_object *req, json_object **answer)
{
	json_object *m = api_get(req, "method");
	json_object *p = api_get(req, "params");
	const char *method = json_object_get_string(m);
	if (strcmp(method, "roots/list") == 0)
		return mcp_ctx_list_roots(ctx, -1, answer);
	if (strcmp(method, "sampling/createMessage") == 0)
		return mcp_ctx_sample(ctx, p, -1, answer);
	return mcp_ctx_elicit(ctx, p, -1, answer);
}

int api_ctx_run_rounds(mcp_ctx *ctx, int (*invoke)(void *arg), void (*reset)(void *arg),
		       void *arg)
{
	int rc = invoke(arg);
	if (ctx->view.modern)
		return rc;
	/* Legacy bridge: real requests to the client, then the handler again. */
	for (int round = 1; rc == MCP_EINPUT && ctx->input_requests &&
			    round < ctx->sess->srv->input_rounds;
	     round++) {
		json_object *answers = json_object_new_object();
		if (!answers)
			return MCP_ENOMEM;
		json_object_object_foreach(ctx->input_requests, key, req)
		{
			json_object *answer = NULL;
			int crc = ask_client(ctx, req, &answer);
			if (crc != MCP_OK) {
				json_object_put(answer);
				json_object_put(answers);
				return crc;
			}
			eng_obj_add(answers, key, answer);
		}
		json_object_put(ctx->input_responses);
		ctx->input_responses = answers;
		json_object_put(ctx->input_requests);
		ctx->input_requests = NULL;
		free(ctx->state_in);
		ctx->state_in = ctx->state_out;
		ctx->state_out = NULL;
		reset(arg);
		rc = invoke(arg);
	}
	return rc;
}
