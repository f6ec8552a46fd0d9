/*
 * mrtr.c - Multi Round-Trip Requests: a handler that needs input from the
 * client (an elicitation, a sampling, the roots) asks for it by name with
 * mcp_ctx_require_input() and returns MCP_EINPUT; it is called again with
 * the answers (mcp_ctx_input_response) and the state it left
 * (mcp_ctx_request_state).  One handler serves both eras:
 *
 *  - 2026-07-28: the request is answered with an input_required result
 *    holding the named requests and the state, sealed; the client retries
 *    the same request with inputResponses and requestState.  Nothing is
 *    kept in the process, so this works behind a load balancer when every
 *    process has the same key (mcp_server_set_state_key).
 *  - the legacy revisions: the library sends each named request to the
 *    client as a real server-to-client request over the connection, and
 *    calls the handler again with the answers, up to a number of rounds.
 *
 * The requestState the client echoes is attacker-controlled.  It is sealed
 * with libsodium's crypto_secretbox (XSalsa20-Poly1305) under the server's
 * key, and bound to the method, the tool or prompt name or URI, a digest of
 * the arguments, and an expiry (10 minutes by default); any verification
 * failure is the same -32602, whatever failed.
 *
 * The legacy bridge, which sends the named requests as real client calls,
 * is in ctx.c (api_ctx_run_rounds), beside those calls: a 2026-07-28
 * handler's blocking calls come here to be parked, so the two files would
 * otherwise call each other.
 *
 * Parked handlers (the second half of this file): the blocking client
 * calls (mcp_ctx_list_roots, mcp_ctx_sample, mcp_ctx_elicit) of a
 * 2026-07-28 request, which cannot send a request to the client.
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
#include <time.h>

#include <sodium.h>

#include "api/internal.h"

#define STATE_MAX (64 * 1024)          /* longest handler state */
#define STATE_INVALID "Invalid params: requestState is not valid for this request"

int api_state_key_init(mcp_server *srv)
{
	if (sodium_init() < 0)
		return MCP_ESYS;
	randombytes_buf(srv->state_key, sizeof srv->state_key);
	api_cursor_keys_derive(srv);
	srv->input_rounds = 8;
	srv->state_ttl_ms = 10 * 60 * 1000;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_state_key(mcp_server *srv, const unsigned char key[32],
					const unsigned char *previous)
{
	if (!srv || !key)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	memcpy(srv->state_key, key, sizeof srv->state_key);
	srv->have_state_key_old = previous != NULL;
	if (previous)
		memcpy(srv->state_key_old, previous, sizeof srv->state_key_old);
	else
		sodium_memzero(srv->state_key_old, sizeof srv->state_key_old);
	api_cursor_keys_derive(srv);
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_state_ttl(mcp_server *srv, int64_t ms)
{
	if (!srv || ms < 1000 || ms > 24 * 3600 * 1000)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	srv->state_ttl_ms = ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_input_rounds(mcp_server *srv, int rounds)
{
	if (!srv || rounds < 1 || rounds > 64)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	srv->input_rounds = rounds;
	return MCP_OK;
}

/* ---- sealing ------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Hex digest of the arguments' compact JSON text. */
static void args_digest(json_object *args, char out[65])
{
	const char *text = args ? json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN)
				: "{}";
	unsigned char d[32];
	crypto_generichash(d, sizeof d, (const unsigned char *)text, strlen(text), NULL, 0);
	sodium_bin2hex(out, 65, d, sizeof d);
}

/* What the seal binds: the state, and where it may be used until when. */
static json_object *state_claims(const mcp_ctx *ctx, const char *state, int64_t expires,
				 int park)
{
	char digest[65];
	args_digest(ctx->mrtr_args, digest);
	json_object *c = json_object_new_object();
	eng_obj_add(c, "v", json_object_new_int(1));
	eng_obj_add(c, "m", json_object_new_string(ctx->mrtr_method));
	eng_obj_add(c, "n", json_object_new_string(ctx->mrtr_name));
	eng_obj_add(c, "a", json_object_new_string(digest));
	eng_obj_add(c, "x", json_object_new_int64(expires));
	eng_obj_add(c, "s", json_object_new_string(state));
	if (park) /* names a parked handler (below), not a handler's state */
		eng_obj_add(c, "k", json_object_new_string("park"));
	return c;
}

/* The sealed form of `state` for this request (caller frees), or NULL. */
static char *seal_kind(const mcp_ctx *ctx, const char *state, int park)
{
	json_object *c = state_claims(ctx, state, now_ms() + ctx->sess->srv->state_ttl_ms, park);
	const char *plain = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN);
	size_t plen = strlen(plain);
	size_t blen = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plen;
	unsigned char *box = malloc(blen);
	char *out = NULL;
	if (box) {
		randombytes_buf(box, crypto_secretbox_NONCEBYTES);
		crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES,
				      (const unsigned char *)plain, plen, box,
				      ctx->sess->srv->state_key);
		size_t olen = sodium_base64_ENCODED_LEN(blen, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		out = malloc(olen);
		if (out)
			sodium_bin2base64(out, olen, box, blen,
					  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		free(box);
	}
	json_object_put(c);
	return out;
}

static char *seal(const mcp_ctx *ctx, const char *state)
{
	return seal_kind(ctx, state, 0);
}

/* Opens a sealed state under one key; the claims object, or NULL. */
static json_object *open_with(const unsigned char *bin, size_t blen, const unsigned char *key)
{
	size_t plen = blen - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES;
	unsigned char *plain = malloc(plen + 1);
	if (!plain)
		return NULL;
	json_object *c = NULL;
	if (crypto_secretbox_open_easy(plain, bin + crypto_secretbox_NONCEBYTES,
				       blen - crypto_secretbox_NONCEBYTES, bin, key) == 0) {
		plain[plen] = 0;
		c = json_tokener_parse((const char *)plain);
	}
	sodium_memzero(plain, plen);
	free(plain);
	return c;
}

/* Verifies a sealed state for this request; the handler's state (caller
 * frees) or NULL, whatever the reason.  *park tells a parked handler's. */
static char *unseal(const mcp_ctx *ctx, const char *sealed, int *park)
{
	mcp_server *srv = ctx->sess->srv;
	size_t slen = strlen(sealed);
	if (slen > 2 * STATE_MAX)
		return NULL;
	unsigned char *bin = malloc(slen + 1);
	if (!bin)
		return NULL;
	size_t blen = 0;
	char *state = NULL;
	json_object *c = NULL;
	if (sodium_base642bin(bin, slen + 1, sealed, slen, NULL, &blen, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0 &&
	    blen > crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) {
		c = open_with(bin, blen, srv->state_key);
		if (!c && srv->have_state_key_old)
			c = open_with(bin, blen, srv->state_key_old);
	}
	free(bin);
	json_object *s = api_get(c, "s"), *x = api_get(c, "x");
	*park = api_get(c, "k") != NULL;
	if (json_object_is_type(s, json_type_string) && json_object_is_type(x, json_type_int) &&
	    json_object_get_int64(x) >= now_ms()) {
		/* Bound to this request: the same claims, rebuilt here. */
		json_object *want = state_claims(ctx, json_object_get_string(s),
						 json_object_get_int64(x), *park);
		if (json_object_equal(want, c))
			state = strdup(json_object_get_string(s));
		json_object_put(want);
	}
	json_object_put(c);
	return state;
}

/* ---- the handler's side ---------------------------------------------------- */

/* The capability an input request needs from the client. */
static const char *needed_capability(const char *method)
{
	if (strcmp(method, "elicitation/create") == 0)
		return "elicitation";
	if (strcmp(method, "sampling/createMessage") == 0)
		return "sampling";
	if (strcmp(method, "roots/list") == 0)
		return "roots";
	return NULL;
}

MCP_EXTERN int mcp_ctx_require_input(mcp_ctx *ctx, const char *key, const char *method,
				     json_object *params)
{
	if (!ctx || !key || !*key || !method || (params && !json_object_is_type(params,
										     json_type_object)))
		return MCP_EINVAL;
	const char *cap = needed_capability(method);
	if (!cap)
		return MCP_EINVAL;
	if (!ctx->mrtr_method)
		return MCP_ESTATE;
	if (!json_object_object_get_ex(api_ctx_caps(ctx), cap, NULL)) {
		if (ctx->view.modern)
			ctx->missing_cap = cap;
		return MCP_ENOTSUP;
	}
	if (!ctx->input_requests && !(ctx->input_requests = json_object_new_object()))
		return MCP_ENOMEM;
	json_object *req = json_object_new_object();
	json_object *p = params ? api_json_copy(params) : json_object_new_object();
	if (!req || !p) {
		json_object_put(req);
		json_object_put(p);
		return MCP_ENOMEM;
	}
	api_trace_meta_add(ctx, p);
	eng_obj_add(req, "method", json_object_new_string(method));
	eng_obj_add(req, "params", p);
	eng_obj_add(ctx->input_requests, key, req);
	return MCP_OK;
}

MCP_EXTERN json_object *mcp_ctx_input_response(mcp_ctx *ctx, const char *key)
{
	json_object *v = ctx && key ? api_get(ctx->input_responses, key) : NULL;
	return json_object_is_type(v, json_type_object) ? v : NULL;
}

MCP_EXTERN const char *mcp_ctx_request_state(const mcp_ctx *ctx)
{
	return ctx ? ctx->state_in : NULL;
}

MCP_EXTERN int mcp_ctx_set_request_state(mcp_ctx *ctx, const char *state)
{
	if (!ctx || !state || strlen(state) > STATE_MAX)
		return MCP_EINVAL;
	if (!ctx->mrtr_method)
		return MCP_ESTATE;
	char *copy = strdup(state);
	if (!copy)
		return MCP_ENOMEM;
	free(ctx->state_out);
	ctx->state_out = copy;
	return MCP_OK;
}

/* ---- the library's side ------------------------------------------------- */

static int park_resume(mcp_ctx *ctx, const char *state, json_object *responses);

int api_mrtr_begin(mcp_ctx *ctx, json_object *params, const char *method, const char *name,
		   json_object *args, const char **why)
{
	ctx->mrtr_method = method;
	ctx->mrtr_name = name;
	ctx->mrtr_args = args;
	if (!ctx->view.modern)
		return 0; /* legacy clients never send these */
	json_object *responses = api_get(params, "inputResponses");
	json_object *state = api_get(params, "requestState");
	if (responses && !json_object_is_type(responses, json_type_object)) {
		*why = "Invalid params: inputResponses must be an object";
		return -1;
	}
	int park = 0;
	if (state) {
		if (!api_str(state) || !(ctx->state_in = unseal(ctx, api_str(state), &park))) {
			*why = STATE_INVALID;
			return -1;
		}
	}
	if (park) {
		/* A retry for a parked handler: it gets the input, and this
		 * request answers with what the handler says next. */
		int rc = park_resume(ctx, ctx->state_in, responses);
		if (rc < 0)
			*why = STATE_INVALID;
		return rc;
	}
	ctx->input_responses = json_object_get(responses);
	return 0;
}

json_object *api_mrtr_input_required(mcp_ctx *ctx)
{
	if (!ctx->view.modern || (!ctx->input_requests && !ctx->state_out))
		return NULL;
	json_object *r = json_object_new_object();
	if (!r)
		return NULL;
	eng_obj_add(r, "resultType", json_object_new_string("input_required"));
	if (ctx->input_requests) {
		eng_obj_add(r, "inputRequests", ctx->input_requests);
		ctx->input_requests = NULL;
	}
	if (ctx->state_out) {
		char *sealed = seal(ctx, ctx->state_out);
		if (!sealed) {
			json_object_put(r);
			return NULL;
		}
		eng_obj_add(r, "requestState", json_object_new_string(sealed));
		free(sealed);
	}
	return r;
}

void api_mrtr_end(mcp_ctx *ctx)
{
	json_object_put(ctx->input_responses);
	json_object_put(ctx->input_requests);
	free(ctx->state_in);
	free(ctx->state_out);
	ctx->input_responses = ctx->input_requests = NULL;
	ctx->state_in = ctx->state_out = NULL;
}

/* ---- parked handlers ------------------------------------------------------ */

struct park_host {
	eng_req *req;         /* the retry waiting (its worker's stack) */
	json_object *out;     /* under req->token.mu: {"result":...} or
				 {"error":...}, owned; NULL with done: the
				 handler ended without an answer */
	int ready;
};

struct api_park {
	api_park *next;          /* srv->parks, under srv->park_mu */
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

static void park_unref(api_park *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	json_object_put(p->responses);
	eng_req_unref(p->owner);
	free(p);
}

/* Under srv->park_mu. */
static void unlink_locked(api_park *p)
{
	if (!p->linked)
		return;
	mcp_server *srv = p->srv;
	for (api_park **pp = &srv->parks; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->linked = 0;
	srv->nparks--;
}

/* Hands `out` (taken; NULL: no answer) to the retry waiting on `p`, if
 * any; else drops it. */
static void post(api_park *p, json_object *out)
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
	api_park *p = arg;
	json_object *out = NULL;
	json_object *res = api_get(msg, "result"), *err = api_get(msg, "error");
	if (res || err) {
		/* A deep copy: json-c's reference counts are not atomic, and
		 * the message shares the id with the owner's request. */
		json_object *part = api_json_copy(res ? res : err);
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

void api_park_init(mcp_server *srv)
{
	pthread_mutex_init(&srv->park_mu, NULL);
	srv->park_max = 64;
	srv->park_ttl_ms = 60 * 1000;
}

void api_park_destroy(mcp_server *srv)
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
static int input_required(mcp_ctx *ctx, api_park *p, const char *method, json_object *params,
			  const char *key, json_object **out)
{
	char state[48];
	snprintf(state, sizeof state, "%s:%d", p->id, p->rounds);
	char *sealed = seal_kind(ctx, state, 1);
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
	api_trace_meta_add(ctx, params);
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
static int wait_input(mcp_ctx *ctx, api_park *p, const char *key, int64_t timeout_ms,
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
	json_object *v = api_get(resp, key);
	int rc = MCP_EPROTO;
	if (json_object_is_type(v, json_type_object)) {
		*result = json_object_get(v);
		rc = MCP_OK;
	}
	json_object_put(resp);
	return rc;
}

int api_park_call(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
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
	api_park *p = ctx->park;
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
	api_modern_decorate(srv, ctx->mrtr_method, ir);

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

static int park_resume(mcp_ctx *ctx, const char *state, json_object *responses)
{
	mcp_server *srv = ctx->sess->srv;
	eng_req *r2 = ctx->req;
	char id[33];
	int round = 0;
	if (sscanf(state, "%32[0-9a-f]:%d", id, &round) != 2)
		return -1;
	json_object *copy = responses ? api_json_copy(responses) : json_object_new_object();
	if (!copy) {
		api_ctx_end(ctx, MCP_ENOMEM, NULL, 0, NULL, NULL);
		return 1;
	}
	struct park_host h = { r2, NULL, 0 };
	pthread_mutex_lock(&srv->park_mu);
	api_park *p = srv->parks;
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
		api_ctx_end(ctx, MCP_ECANCELED, NULL, 0, NULL, NULL);
		return 1;
	}
	park_unref(p);
	json_object *res = api_get(h.out, "result"), *err = api_get(h.out, "error");
	if (res) {
		api_ctx_end(ctx, MCP_OK, json_object_get(res), 0, NULL, NULL);
	} else if (err) {
		json_object *code = api_get(err, "code"), *data = api_get(err, "data");
		const char *message = json_object_get_string(api_get(err, "message"));
		api_ctx_end(ctx, MCP_EREMOTE, NULL,
			    code ? json_object_get_int(code) : MCP_JSONRPC_INTERNAL_ERROR,
			    message ? message : "error", json_object_get(data));
	} else {
		api_ctx_end(ctx, MCP_EREMOTE, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "the parked request ended without an answer", NULL);
	}
	json_object_put(h.out);
	return 1;
}
