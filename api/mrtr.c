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
 * failure is the same
 * -32602, whatever failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "api/internal.h"

#define STATE_MAX (64 * 1024)          /* longest handler state */
#define STATE_INVALID "Invalid params: requestState is not valid for this request"

int mcp_state_key_init(mcp_server *srv)
{
	if (sodium_init() < 0)
		return MCP_ESYS;
	randombytes_buf(srv->state_key, sizeof srv->state_key);
	mcp_cursor_keys_derive(srv);
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
	mcp_cursor_keys_derive(srv);
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
	if (park) /* names a parked handler (api/park.c), not a handler's state */
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

char *mcp_mrtr_seal_park(const mcp_ctx *ctx, const char *state)
{
	return seal_kind(ctx, state, 1);
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
	json_object *s = mcp_get(c, "s"), *x = mcp_get(c, "x");
	*park = mcp_get(c, "k") != NULL;
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
	if (!json_object_object_get_ex(mcp_ctx_caps(ctx), cap, NULL)) {
		if (ctx->view.modern)
			ctx->missing_cap = cap;
		return MCP_ENOTSUP;
	}
	if (!ctx->input_requests && !(ctx->input_requests = json_object_new_object()))
		return MCP_ENOMEM;
	json_object *req = json_object_new_object();
	json_object *p = params ? mcp_json_copy(params) : json_object_new_object();
	if (!req || !p) {
		json_object_put(req);
		json_object_put(p);
		return MCP_ENOMEM;
	}
	mcp_trace_meta_add(ctx, p);
	eng_obj_add(req, "method", json_object_new_string(method));
	eng_obj_add(req, "params", p);
	eng_obj_add(ctx->input_requests, key, req);
	return MCP_OK;
}

MCP_EXTERN json_object *mcp_ctx_input_response(mcp_ctx *ctx, const char *key)
{
	json_object *v = ctx && key ? mcp_get(ctx->input_responses, key) : NULL;
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

int mcp_mrtr_begin(mcp_ctx *ctx, json_object *params, const char *method, const char *name,
		   json_object *args, const char **why)
{
	ctx->mrtr_method = method;
	ctx->mrtr_name = name;
	ctx->mrtr_args = args;
	if (!ctx->view.modern)
		return 0; /* legacy clients never send these */
	json_object *responses = mcp_get(params, "inputResponses");
	json_object *state = mcp_get(params, "requestState");
	if (responses && !json_object_is_type(responses, json_type_object)) {
		*why = "Invalid params: inputResponses must be an object";
		return -1;
	}
	int park = 0;
	if (state) {
		if (!json_object_is_type(state, json_type_string) ||
		    !(ctx->state_in = unseal(ctx, json_object_get_string(state), &park))) {
			*why = STATE_INVALID;
			return -1;
		}
	}
	if (park) {
		/* A retry for a parked handler: it gets the input, and this
		 * request answers with what the handler says next. */
		int rc = mcp_park_resume(ctx, ctx->state_in, responses);
		if (rc < 0)
			*why = STATE_INVALID;
		return rc;
	}
	ctx->input_responses = json_object_get(responses);
	return 0;
}

/* Sends one named input request to a legacy client; its answer, or an
 * MCP_E* code. */
static int ask_client(mcp_ctx *ctx, json_object *req, json_object **answer)
{
	json_object *m = mcp_get(req, "method");
	json_object *p = mcp_get(req, "params");
	const char *method = json_object_get_string(m);
	if (strcmp(method, "roots/list") == 0)
		return mcp_ctx_list_roots(ctx, -1, answer);
	if (strcmp(method, "sampling/createMessage") == 0)
		return mcp_ctx_sample(ctx, p, -1, answer);
	return mcp_ctx_elicit(ctx, p, -1, answer);
}

int mcp_mrtr_run(mcp_ctx *ctx, int (*invoke)(void *arg), void (*reset)(void *arg), void *arg)
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

json_object *mcp_mrtr_input_required(mcp_ctx *ctx)
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

void mcp_mrtr_end(mcp_ctx *ctx)
{
	json_object_put(ctx->input_responses);
	json_object_put(ctx->input_requests);
	free(ctx->state_in);
	free(ctx->state_out);
	ctx->input_responses = ctx->input_requests = NULL;
	ctx->state_in = ctx->state_out = NULL;
}
