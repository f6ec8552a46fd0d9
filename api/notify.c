/*
 * notify.c - telling clients that something changed: list_changed to the
 * ready legacy connections that were promised it, and every event to the
 * 2026-07-28 subscriptions/listen streams that asked for it (list changes,
 * resource updates, task status), tagged with the stream's id.
 *
 * The streams themselves (srv->listens) are kept here: a stream is opened
 * by the subscriptions/listen method (listen.c) once its filter is agreed,
 * and ends here when its request's token fires.  A listen request stays
 * in flight, held by the engine without a worker, until its client cancels
 * it (nothing more is written), the connection closes (no answer) or the
 * server shuts down (the listen result ends it).
 *
 * Locks: srv->sess_mu guards the list of connections and of streams; an
 * event is queued on a stream under it only for the acknowledgement, every
 * other event is delivered outside it to the streams it collected.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

/* Sends `method` (params taken, may be NULL) on a listen stream, tagged.
 * Never blocks: the engine's queue takes it. */
static void listen_emit(eng_req *r, const char *method, json_object *params)
{
	if (!params)
		params = json_object_new_object();
	json_object *meta = json_object_new_object();
	eng_obj_add(meta, "io.modelcontextprotocol/subscriptionId",
			       json_object_get(r->id));
	eng_obj_add(params, "_meta", meta);
	json_object *n = api_notification(method, params);
	size_t len;
	char *line = atomic_load(&r->outcome) == ENG_OUT_NONE ? eng_json_dup(n, &len) : NULL;
	json_object_put(n);
	if (line)
		eng_writer_push(&r->sess->writer, line, len, r, 0);
}

/* The listen request's token fired: peer cancel, close or shutdown. */
static void listen_end(mcp_cancel_reason reason, void *arg)
{
	api_listen *l = arg;
	mcp_server *srv = l->srv;
	pthread_mutex_lock(&srv->sess_mu);
	for (api_listen **pp = &srv->listens; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			srv->nlistens--;
			break;
		}
	pthread_mutex_unlock(&srv->sess_mu);
	if (reason == MCP_CANCEL_SHUTDOWN) {
		json_object *res = json_object_new_object();
		json_object *meta = json_object_new_object();
		eng_obj_add(meta, "io.modelcontextprotocol/subscriptionId",
				       json_object_get(l->r->id));
		eng_obj_add(res, "_meta", meta);
		api_modern_decorate(srv, "subscriptions/listen", res);
		eng_req_finish_result(l->r, res);
	} else {
		eng_req_finish_silent(l->r);
	}
	eng_req_unref(l->r);
	json_object_put(l->uris);
	json_object_put(l->task_ids);
	free(l);
}

int api_listen_reserve(mcp_server *srv)
{
	pthread_mutex_lock(&srv->sess_mu);
	int full = srv->nlistens >= API_MAX_LISTENS;
	if (!full)
		srv->nlistens++; /* the place is taken before the request is held */
	pthread_mutex_unlock(&srv->sess_mu);
	return !full;
}

/* Gives back a listen's place when its request could not be held. */
void api_listen_drop(api_listen *l, json_object *agreed)
{
	pthread_mutex_lock(&l->srv->sess_mu);
	l->srv->nlistens--;
	pthread_mutex_unlock(&l->srv->sess_mu);
	json_object_put(agreed);
	json_object_put(l->uris);
	json_object_put(l->task_ids);
	free(l);
}

/* Opens the stream of `l` on its request `r` (a counted reference, which
 * the listen keeps): the acknowledgement, then the events. */
void api_listen_open(api_listen *l, eng_req *r, json_object *agreed)
{
	mcp_server *srv = l->srv;
	l->r = r;
	/* The acknowledgement is the first message of the stream: it is
	 * queued under the lock that lists the stream, so a change event
	 * (queued by whoever finds the stream in the list) comes after it,
	 * and none from the moment it is listed is missed. */
	json_object *ack = json_object_new_object();
	eng_obj_add(ack, "notifications", agreed);
	pthread_mutex_lock(&srv->sess_mu);
	l->next = srv->listens;
	srv->listens = l;
	listen_emit(r, "notifications/subscriptions/acknowledged", ack);
	pthread_mutex_unlock(&srv->sess_mu);
	/* Runs at once when the token already fired. */
	if (eng_token_on_cancel(&r->token, listen_end, l, NULL) != MCP_OK) {
		listen_end(MCP_CANCEL_SHUTDOWN, l);
	}
}

/* The listen streams that want an event, each counted, for delivery
 * outside the lock. */
static eng_req **listeners(mcp_server *srv, unsigned kind, const char *uri, size_t *n)
{
	*n = 0;
	pthread_mutex_lock(&srv->sess_mu);
	eng_req **out = srv->nlistens ? malloc(srv->nlistens * sizeof *out) : NULL;
	for (api_listen *l = srv->listens; out && l; l = l->next) {
		int want = kind ? (l->kinds & kind) != 0 : 0;
		for (size_t i = 0; uri && !want && i < json_object_array_length(l->uris); i++)
			want = strcmp(json_object_get_string(json_object_array_get_idx(l->uris, i)),
				      uri) == 0;
		if (want) {
			eng_req_ref(l->r);
			out[(*n)++] = l->r;
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	return out;
}

void api_listen_task_status(mcp_server *srv, const char *task_id, json_object *params)
{
	size_t n = 0;
	pthread_mutex_lock(&srv->sess_mu);
	eng_req **out = srv->nlistens ? malloc(srv->nlistens * sizeof *out) : NULL;
	for (api_listen *l = srv->listens; out && l; l = l->next) {
		int want = 0;
		size_t nt = l->task_ids ? json_object_array_length(l->task_ids) : 0;
		for (size_t i = 0; !want && i < nt; i++)
			want = strcmp(json_object_get_string(
					      json_object_array_get_idx(l->task_ids, i)),
				      task_id) == 0;
		if (want) {
			eng_req_ref(l->r);
			out[n++] = l->r;
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	for (size_t i = 0; i < n; i++) {
		json_object *p = i + 1 < n ? api_json_copy(params) : json_object_get(params);
		if (p)
			listen_emit(out[i], "notifications/tasks", p);
		eng_req_unref(out[i]);
	}
	free(out);
	json_object_put(params);
}

void api_notify_list_changed_here(mcp_server *srv, int kind)
{
	const char *method = kind == API_KIND_TOOLS	  ? "notifications/tools/list_changed"
			     : kind == API_KIND_RESOURCES ? "notifications/resources/list_changed"
							  : "notifications/prompts/list_changed";
	/* Built once for every session (thousands of HTTP streams may wait
	 * for it). */
	json_object *note = api_notification(method, NULL);
	size_t len = 0;
	const char *text = note ? eng_json_text(note, &len) : NULL;
	pthread_mutex_lock(&srv->sess_mu);
	for (api_sess *ms = srv->sessions; text && ms; ms = ms->next)
		if (atomic_load(&ms->state) == API_SESS_READY && (ms->caps_sent & (unsigned)kind))
			eng_session_notify_text(ms->es, text, len);
	pthread_mutex_unlock(&srv->sess_mu);
	json_object_put(note);
	size_t n;
	eng_req **ls = listeners(srv, (unsigned)kind, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		listen_emit(ls[i], method, NULL);
		eng_req_unref(ls[i]);
	}
	free(ls);
}

void api_notify_list_changed(mcp_server *srv, int kind)
{
	api_notify_list_changed_here(srv, kind);
	/* The streams of the other processes that share a store hear it
	 * too (a store call: never from a reader; registries change on the
	 * application's threads). */
	if (srv->tstore)
		api_tstore_broadcast_list(srv->tstore, kind);
}

void api_listen_resource_updated(mcp_server *srv, const char *uri)
{
	size_t n;
	eng_req **ls = listeners(srv, 0, uri, &n);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_new_object();
		eng_obj_add(p, "uri", json_object_new_string(uri));
		listen_emit(ls[i], "notifications/resources/updated", p);
		eng_req_unref(ls[i]);
	}
	free(ls);
}
