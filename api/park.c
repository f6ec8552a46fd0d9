/*
 * park.c - the blocking client calls (mcp_ctx_list_roots, mcp_ctx_sample,
 * mcp_ctx_elicit) for 2026-07-28 requests, which cannot send a request to
 * the client.
 *
 * Where this process holds the connection (stdio, an in-process
 * connection), the handler's worker is parked instead: the request is
 * answered input_required, naming the one input it needs, with a sealed
 * requestState that names the parked handler.  The client's retry of the
 * same request (same method, name and arguments, on the same connection)
 * carries the input; it wakes the parked handler and then waits, on its
 * own worker, for what the handler says next: another input_required (the
 * handler asked again) or its final answer.
 *
 *   handler (owner request)          retry requests
 *   ------------------------          --------------
 *   park: answer input_required  -->  client retries
 *   wait for the input           <--  hand over inputResponses
 *   ... asks again: post it to   -->  answered input_required
 *   the waiting retry, wait      <--  next retry hands over its input
 *   returns: final answer posted -->  answered with it
 *
 * A parked handler is a request of the connection like any other (its
 * in-flight key is "#park:<id>"): a shutdown fires its token, and a peer
 * cancel of the retry waiting on it cancels it too.  It waits at most the
 * park TTL for each input (MCP_ETIMEDOUT), and at most max_parked handlers
 * are parked at once (MCP_EBUSY).  Stateless HTTP sessions end with their
 * one answer, so there nothing can be parked: the call returns
 * MCP_ENOTSUP and the handler should use mcp_ctx_require_input().
 *
 * Locks: srv->park_mu (the table and each park's host slot) before any
 * request token's mutex; the handler waits under its own token's mutex, a
 * retry under its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/internal.h"

struct park_host {
	eng_req *req;         /* the retry waiting (its worker's stack) */
	json_object *out;     /* under req->token.mu: {"result":...} or
				 {"error":...}, owned; NULL with done: the
				 handler ended without an answer */
	int ready;
};

struct mcp_park {
	mcp_park *next;          /* srv->parks, under srv->park_mu */
	_Atomic int refs;
	char id[33];
	mcp_server *srv;
	eng_req *owner;          /* counted: the parked handler's request */
	int rounds;              /* inputs asked for so far (written by the
				    handler under srv->park_mu) */
	/* Under srv->park_mu: */
	struct park_host *host;  /* the retry waiting for the next output */
	int linked;              /* in the table: a retry can find it */
	/* Under owner->token.mu: */
	json_object *responses;  /* the retry's inputResponses (a copy) */
	int answered;
};

static void park_unref(mcp_park *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	json_object_put(p->responses);
	eng_req_unref(p->owner);
	free(p);
}

/* Under srv->park_mu. */
static void unlink_locked(mcp_park *p)
{
	if (!p->linked)
		return;
	mcp_server *srv = p->srv;
	for (mcp_park **pp = &srv->parks; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->linked = 0;
	srv->nparks--;
}

/* Hands `out` (taken; NULL: no answer) to the retry waiting on `p`, if
 * any; else drops it. */
static void post(mcp_park *p, json_object *out)
{
	mcp_server *srv = p->srv;
	pthread_mutex_lock(&srv->park_mu);
	struct park_host *h = p->host;
	p->host = NULL;
	if (h) {
		eng_token *t = &h->req->token;
		pthread_mutex_lock(&t->mu);
		h->out = out;
		h->ready = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		out = NULL;
	}
	pthread_mutex_unlock(&srv->park_mu);
	json_object_put(out);
}

/* The detached owner's final message (taken; NULL when it ended without
 * an answer): its result or error goes to the waiting retry. */
static void park_sink(eng_req *r, json_object *msg, void *arg)
{
	(void)r;
	mcp_park *p = arg;
	json_object *out = NULL;
	json_object *res = mcp_get(msg, "result"), *err = mcp_get(msg, "error");
	if (res || err) {
		/* A deep copy: json-c's reference counts are not atomic, and
		 * the message shares the id with the owner's request. */
		json_object *part = mcp_json_copy(res ? res : err);
		out = json_object_new_object();
		if (part && out)
			eng_obj_add(out, res ? "result" : "error", part);
		else {
			json_object_put(part);
			json_object_put(out);
			out = NULL;
		}
	}
	json_object_put(msg);
	pthread_mutex_lock(&p->srv->park_mu);
	unlink_locked(p);
	pthread_mutex_unlock(&p->srv->park_mu);
	post(p, out);
	park_unref(p);
}

void mcp_park_init(mcp_server *srv)
{
	pthread_mutex_init(&srv->park_mu, NULL);
	srv->park_max = 64;
	srv->park_ttl_ms = 60 * 1000;
}

void mcp_park_destroy(mcp_server *srv)
{
	pthread_mutex_destroy(&srv->park_mu);
}

MCP_EXTERN int mcp_server_set_parking(mcp_server *srv, int max_parked, int64_t ttl_ms)
{
	if (!srv || max_parked < 0 || max_parked > 65536 || ttl_ms < 1 ||
	    ttl_ms > 24 * 3600 * 1000)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	srv->park_max = max_parked;
	srv->park_ttl_ms = ttl_ms;
	return MCP_OK;
}

/* The input_required result naming one input (`params` taken). */
static int input_required(mcp_ctx *ctx, mcp_park *p, const char *method, json_object *params,
			  const char *key, json_object **out)
{
	char state[48];
	snprintf(state, sizeof state, "%s:%d", p->id, p->rounds);
	char *sealed = mcp_mrtr_seal_park(ctx, state);
	json_object *r = json_object_new_object();
	json_object *reqs = json_object_new_object();
	json_object *one = json_object_new_object();
	if (!params)
		params = json_object_new_object();
	if (!sealed || !r || !reqs || !one || !params) {
		free(sealed);
		json_object_put(r);
		json_object_put(reqs);
		json_object_put(one);
		json_object_put(params);
		return MCP_ENOMEM;
	}
	mcp_trace_meta_add(ctx, params);
	eng_obj_add(one, "method", json_object_new_string(method));
	eng_obj_add(one, "params", params);
	eng_obj_add(reqs, key, one);
	eng_obj_add(r, "resultType", json_object_new_string("input_required"));
	eng_obj_add(r, "inputRequests", reqs);
	eng_obj_add(r, "requestState", json_object_new_string(sealed));
	free(sealed);
	*out = r;
	return MCP_OK;
}

/* The handler waits for the retry carrying its input. */
static int wait_input(mcp_ctx *ctx, mcp_park *p, const char *key, int64_t timeout_ms,
		      json_object **result)
{
	eng_token *t = &ctx->req->token;
	int64_t ms = p->srv->park_ttl_ms;
	if (timeout_ms >= 0 && timeout_ms < ms)
		ms = timeout_ms;
	struct timespec ts;
	eng_abstime(eng_now_ns() + ms * ENG_NS_PER_MS, &ts);
	eng_pool_blocking();
	pthread_mutex_lock(&t->mu);
	while (!p->answered && atomic_load(&t->reason) == MCP_CANCEL_NONE)
		if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT)
			break;
	json_object *resp = p->responses;
	p->responses = NULL;
	int answered = p->answered;
	p->answered = 0;
	int reason = atomic_load(&t->reason);
	pthread_mutex_unlock(&t->mu);
	eng_pool_unblocked();
	if (reason != MCP_CANCEL_NONE || !answered) {
		json_object_put(resp);
		/* No retry is taken any more; one already waiting gets the
		 * handler's final answer. */
		pthread_mutex_lock(&p->srv->park_mu);
		unlink_locked(p);
		pthread_mutex_unlock(&p->srv->park_mu);
		return reason != MCP_CANCEL_NONE ? MCP_ECANCELED : MCP_ETIMEDOUT;
	}
	/* resp came over as a private copy: this thread owns all of it. */
	json_object *v = mcp_get(resp, key);
	int rc = MCP_EPROTO;
	if (json_object_is_type(v, json_type_object)) {
		*result = json_object_get(v);
		rc = MCP_OK;
	}
	json_object_put(resp);
	return rc;
}

int mcp_park_call(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
		  json_object **result)
{
	mcp_server *srv = ctx->sess->srv;
	eng_req *r = ctx->req;
	if (ctx->sess->stateless_only || srv->park_max == 0 || !ctx->mrtr_method || ctx->task) {
		/* Nowhere to park (or not a method that may answer
		 * input_required): the handler must use
		 * mcp_ctx_require_input. */
		json_object_put(params);
		return MCP_ENOTSUP;
	}
	if (atomic_load(&r->sess->closed)) {
		json_object_put(params);
		return eng_req_closed(r);
	}
	mcp_park *p = ctx->park;
	int first = p == NULL;
	if (first) {
		p = calloc(1, sizeof *p);
		if (!p) {
			json_object_put(params);
			return MCP_ENOMEM;
		}
		unsigned char rnd[16];
		randombytes_buf(rnd, sizeof rnd);
		sodium_bin2hex(p->id, sizeof p->id, rnd, sizeof rnd);
		p->srv = srv;
		p->owner = r;
		eng_req_ref(r);
		atomic_init(&p->refs, 1);
	}
	/* Retries read the round under the lock; only this thread writes it. */
	pthread_mutex_lock(&srv->park_mu);
	p->rounds++;
	pthread_mutex_unlock(&srv->park_mu);
	char key[32];
	snprintf(key, sizeof key, "input-%d", p->rounds);
	json_object *ir = NULL;
	int rc = input_required(ctx, p, method, params, key, &ir);
	if (rc != MCP_OK) {
		if (first)
			park_unref(p);
		return rc;
	}
	mcp_modern_decorate(srv, ctx->mrtr_method, ir);

	if (!first) {
		/* Asked again: the retry that woke us answers input_required. */
		json_object *out = json_object_new_object();
		if (!out) {
			json_object_put(ir);
			return MCP_ENOMEM;
		}
		eng_obj_add(out, "result", ir);
		post(p, out);
		return wait_input(ctx, p, key, timeout_ms, result);
	}
	pthread_mutex_lock(&srv->park_mu);
	int full = srv->nparks >= srv->park_max;
	if (!full) {
		p->next = srv->parks;
		srv->parks = p;
		p->linked = 1;
		srv->nparks++;
	}
	pthread_mutex_unlock(&srv->park_mu);
	if (full) {
		json_object_put(ir);
		park_unref(p);
		return MCP_EBUSY;
	}
	/* The handler's own request is answered input_required now; it stays
	 * in flight as "#park:<id>" for what comes next, and its final answer
	 * goes to park_sink, which takes the reference held here. */
	char dkey[48];
	snprintf(dkey, sizeof dkey, "#park:%s", p->id);
	rc = eng_req_detach(r, ir, dkey, park_sink, p);
	if (rc != MCP_OK) {
		pthread_mutex_lock(&srv->park_mu);
		unlink_locked(p);
		pthread_mutex_unlock(&srv->park_mu);
		park_unref(p);
		return rc;
	}
	ctx->park = p;
	return wait_input(ctx, p, key, timeout_ms, result);
}

int mcp_park_resume(mcp_ctx *ctx, const char *state, json_object *responses)
{
	mcp_server *srv = ctx->sess->srv;
	eng_req *r2 = ctx->req;
	char id[33];
	int round = 0;
	if (sscanf(state, "%32[0-9a-f]:%d", id, &round) != 2)
		return -1;
	json_object *copy = responses ? mcp_json_copy(responses) : json_object_new_object();
	if (!copy) {
		mcp_ctx_end(ctx, MCP_ENOMEM, NULL, 0, NULL, NULL);
		return 1;
	}
	struct park_host h = { r2, NULL, 0 };
	pthread_mutex_lock(&srv->park_mu);
	mcp_park *p = srv->parks;
	while (p && strcmp(p->id, id) != 0)
		p = p->next;
	/* Only the retry of the round asked last, on the same connection,
	 * and only one at a time. */
	if (!p || p->host || p->rounds != round || p->owner->sess != r2->sess) {
		pthread_mutex_unlock(&srv->park_mu);
		json_object_put(copy);
		return -1;
	}
	p->host = &h;
	atomic_fetch_add(&p->refs, 1);
	pthread_mutex_unlock(&srv->park_mu);

	eng_token *ot = &p->owner->token;
	pthread_mutex_lock(&ot->mu);
	json_object_put(p->responses);
	p->responses = copy;
	p->answered = 1;
	pthread_cond_broadcast(&ot->cv);
	pthread_mutex_unlock(&ot->mu);

	eng_token *t = &r2->token;
	eng_pool_blocking();
	pthread_mutex_lock(&t->mu);
	while (!h.ready && atomic_load(&t->reason) == MCP_CANCEL_NONE)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	eng_pool_unblocked();
	int reason = eng_token_reason(t);
	if (reason != MCP_CANCEL_NONE) {
		pthread_mutex_lock(&srv->park_mu);
		if (p->host == &h)
			p->host = NULL;
		pthread_mutex_unlock(&srv->park_mu);
		/* A poster that took h before we withdrew it has finished
		 * with it (it held park_mu throughout). */
		json_object_put(h.out);
		/* The client gave up on the whole operation. */
		if (reason == MCP_CANCEL_PEER)
			eng_token_fire(ot, MCP_CANCEL_PEER);
		park_unref(p);
		mcp_ctx_end(ctx, MCP_ECANCELED, NULL, 0, NULL, NULL);
		return 1;
	}
	park_unref(p);
	json_object *res = mcp_get(h.out, "result"), *err = mcp_get(h.out, "error");
	if (res) {
		mcp_ctx_end(ctx, MCP_OK, json_object_get(res), 0, NULL, NULL);
	} else if (err) {
		json_object *code = mcp_get(err, "code"), *data = mcp_get(err, "data");
		const char *message = json_object_get_string(mcp_get(err, "message"));
		mcp_ctx_end(ctx, MCP_EREMOTE, NULL,
			    code ? json_object_get_int(code) : MCP_JSONRPC_INTERNAL_ERROR,
			    message ? message : "error", json_object_get(data));
	} else {
		mcp_ctx_end(ctx, MCP_EREMOTE, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "the parked request ended without an answer", NULL);
	}
	json_object_put(h.out);
	return 1;
}
