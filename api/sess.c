/*
 * sess.c - a connection's protocol state (api_sess): its creation and
 * free, the client's capabilities, the URL elicitations sent on it, and
 * the server's list of live connections, which notifications walk.
 *
 * A connection speaks the server's protocol (srv->proto, the method table
 * of dispatch.c, set by mcp_server_new): opening one here needs no name
 * from the files above, so tasks.c can open its task host.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

api_sess *api_sess_new(mcp_server *srv)
{
	api_sess *ms = calloc(1, sizeof *ms);
	if (!ms)
		return NULL;
	ms->srv = srv;
	pthread_mutex_init(&ms->mu, NULL);
	atomic_init(&ms->state, API_SESS_NEW);
	ms->rev = API_REV_LEGACY_COUNT - 1;
	atomic_init(&ms->log_level, MCP_LOG_DEBUG);
	return ms;
}

void api_sess_free(api_sess *ms)
{
	for (size_t i = 0; i < ms->nelicitations; i++)
		free(ms->elicitations[i]);
	free(ms->elicitations);
	json_object_put(atomic_load(&ms->client_caps));
	free(ms->client_caps_text);
	api_authz_sess_free(ms);
	for (size_t i = 0; i < ms->nsubs; i++)
		free(ms->subs[i]);
	free(ms->subs);
	pthread_mutex_destroy(&ms->mu);
	free(ms);
}

json_object *api_sess_caps(api_sess *ms)
{
	json_object *c = atomic_load_explicit(&ms->client_caps, memory_order_acquire);
	if (c || !ms->client_caps_text)
		return c;
	pthread_mutex_lock(&ms->mu);
	c = atomic_load_explicit(&ms->client_caps, memory_order_relaxed);
	if (!c) {
		/* As deep as the message that carried it could be. */
		json_tokener *tok = json_tokener_new_ex(ms->srv->max_depth);
		if (tok) {
			c = json_tokener_parse_ex(tok, ms->client_caps_text, -1);
			json_tokener_free(tok);
		}
		atomic_store_explicit(&ms->client_caps, c, memory_order_release);
	}
	pthread_mutex_unlock(&ms->mu);
	return c;
}

/* At most this many URL elicitations are remembered per connection; the
 * oldest is forgotten first. */
#define MAX_ELICITATIONS 256

void api_sess_remember_elicitation(api_sess *ms, const char *id)
{
	char *d = strdup(id);
	if (!d)
		return;
	pthread_mutex_lock(&ms->mu);
	if (!ms->elicitations)
		ms->elicitations = calloc(MAX_ELICITATIONS, sizeof *ms->elicitations);
	if (!ms->elicitations) {
		pthread_mutex_unlock(&ms->mu);
		free(d);
		return;
	}
	if (ms->nelicitations == MAX_ELICITATIONS) {
		free(ms->elicitations[0]);
		memmove(ms->elicitations, ms->elicitations + 1,
			(MAX_ELICITATIONS - 1) * sizeof *ms->elicitations);
		ms->nelicitations--;
	}
	ms->elicitations[ms->nelicitations++] = d;
	pthread_mutex_unlock(&ms->mu);
}

int api_sess_forget_elicitation(api_sess *ms, const char *id)
{
	int found = 0;
	pthread_mutex_lock(&ms->mu);
	for (size_t i = 0; i < ms->nelicitations; i++) {
		if (strcmp(ms->elicitations[i], id) == 0) {
			free(ms->elicitations[i]);
			memmove(ms->elicitations + i, ms->elicitations + i + 1,
				(ms->nelicitations - i - 1) * sizeof *ms->elicitations);
			ms->nelicitations--;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	return found;
}

/* ---- the server's connections ------------------------------------------------ */

eng_session *api_server_open_session(mcp_server *srv, tp_conn *tp, int preset_rev, int push)
{
	api_sess *ms = api_sess_new(srv);
	if (ms && preset_rev >= 0) {
		/* Stateless HTTP: no initialize will come; the request is
		 * served as from a client with no capabilities. */
		ms->client_caps_text = strdup("{}");
		if (!ms->client_caps_text) {
			free(ms);
			ms = NULL;
		} else if (preset_rev >= API_REV_LEGACY_COUNT) {
			/* HTTP without a session: 2026-07-28 requests only. */
			ms->stateless_only = 1;
			atomic_store(&ms->state, API_SESS_READY);
		} else {
			ms->rev = preset_rev;
			atomic_store(&ms->state, API_SESS_READY);
		}
	}
	if (!ms) {
		tp->ops->free(tp);
		return NULL;
	}
	eng_limits lim = {
		.max_message = srv->max_message,
		.max_depth = srv->max_depth,
		.max_values = srv->max_values,
		.max_pending = (size_t)srv->max_pending,
		.grace_ms = srv->grace_ms,
		.push = push,
	};
	if (push) {
		/* Sessions share the pool: one session's burst leaves a worker
		 * for the others (see eng_limits.max_running). */
		lim.max_running = srv->session_workers ? srv->session_workers
			: srv->workers > 1		  ? srv->workers - 1
							  : 1;
		lim.max_waiting = (size_t)srv->session_queue;
	}
	eng_session *s = eng_session_new(tp, &srv->pool, &srv->stats, &lim, srv->proto, ms);
	if (!s) {
		free(ms->client_caps_text);
		pthread_mutex_destroy(&ms->mu);
		free(ms);
		tp->ops->free(tp);
		return NULL;
	}
	ms->es = s;
	if (preset_rev >= 0 && preset_rev >= API_REV_2025_11_25 && preset_rev < API_REV_LEGACY_COUNT)
		eng_session_set_transport_features(s, TP_FEATURE_RESUMABLE);
	pthread_mutex_lock(&srv->sess_mu);
	ms->prev = NULL;
	ms->next = srv->sessions;
	if (srv->sessions)
		srv->sessions->prev = ms;
	srv->sessions = ms;
	pthread_mutex_unlock(&srv->sess_mu);
	return s;
}

void api_server_drop_session(mcp_server *srv, eng_session *es)
{
	api_sess *ms = es->proto_data;
	pthread_mutex_lock(&srv->sess_mu);
	if (ms->prev)
		ms->prev->next = ms->next;
	else if (srv->sessions == ms)
		srv->sessions = ms->next;
	if (ms->next)
		ms->next->prev = ms->prev;
	ms->next = ms->prev = NULL;
	pthread_mutex_unlock(&srv->sess_mu);
	eng_session_unref(es);
}

