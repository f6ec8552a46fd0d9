/*
 * common.c - what every method of the protocol layer shares, at the bottom
 * of api/: the life of a request's context (begin, admission, the one
 * outcome at its end), the answers of methods served without a handler,
 * notifications, the 2026-07-28 decorations of a result, W3C trace
 * context, and the cursors of paged lists.
 *
 * Every other file of the layer may call this one; it calls only the
 * helpers below it (sess.c, authz.c, util.c, errors.c), never a method's
 * file (doc/design.md, "Where to look").
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/internal.h"

/* ---- log levels ------------------------------------------------------------- */

static const char *const log_level_names[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

int api_log_level_from_name(const char *name)
{
	for (int i = 0; name && i < 8; i++)
		if (strcmp(name, log_level_names[i]) == 0)
			return i;
	return -1;
}

const char *api_log_level_name(int level)
{
	return level >= 0 && level < 8 ? log_level_names[level] : "info";
}

/* ---- the answer of a method served without a handler ------------------------- */

void api_answer_result(api_answer *a, json_object *result)
{
	json_object_put(a->result);
	json_object_put(a->data);
	*a = (api_answer){ .result = result };
}

void api_answer_error(api_answer *a, int code, const char *message, json_object *data)
{
	json_object_put(a->result);
	json_object_put(a->data);
	*a = (api_answer){ .code = code, .message = message, .data = data };
}

/* Writes a method's answer from the reader (result or data taken). */
void api_answer_send(eng_session *s, json_object *id, api_answer *a)
{
	if (a->code)
		eng_session_respond_error(s, id, a->code, a->message, a->data);
	else
		eng_session_respond_result(s, id, a->result);
}

/* ---- notifications and results ---------------------------------------------- */

json_object *api_notification(const char *method, json_object *params)
{
	json_object *n = json_object_new_object();
	eng_obj_add(n, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(n, "method", json_object_new_string(method));
	if (params)
		eng_obj_add(n, "params", params);
	return n;
}

/* What every 2026-07-28 result carries: resultType, the server's identity
 * in _meta, and caching hints on the cacheable ones.  The hints are
 * conservative: a list can change at any time and a resource may be
 * specific to the caller, so nothing is to be reused without asking. */
void api_modern_decorate(mcp_server *srv, const char *method, json_object *result)
{
	if (!json_object_is_type(result, json_type_object))
		return;
	if (!api_get(result, "resultType"))
		eng_obj_add(result, "resultType", json_object_new_string("complete"));
	json_object *meta = api_get(result, "_meta");
	if (!json_object_is_type(meta, json_type_object)) {
		meta = json_object_new_object();
		eng_obj_add(result, "_meta", meta);
	}
	json_object *si = json_object_new_object();
	eng_obj_add(si, "name", json_object_new_string(srv->name));
	eng_obj_add(si, "version", json_object_new_string(srv->version));
	eng_obj_add(meta, API_META_SERVER, si);
	static const char *const cacheable[] = { "server/discover", "tools/list",
						 "resources/list", "resources/templates/list",
						 "prompts/list", "resources/read", "skills/list",
						 "skills/get" };
	for (size_t i = 0; method && i < sizeof cacheable / sizeof cacheable[0]; i++)
		if (strcmp(method, cacheable[i]) == 0) {
			eng_obj_add(result, "ttlMs", json_object_new_int(0));
			eng_obj_add(result, "cacheScope", json_object_new_string("private"));
			break;
		}
}

int api_ext_declared(json_object *caps, const char *ext)
{
	return json_object_is_type(api_get(api_get(caps, "extensions"), ext), json_type_object);
}

json_object *api_ext_required_data(const char *ext)
{
	json_object *one = json_object_new_object();
	eng_obj_add(one, ext, json_object_new_object());
	json_object *caps = json_object_new_object();
	eng_obj_add(caps, "extensions", one);
	json_object *data = json_object_new_object();
	eng_obj_add(data, "requiredCapabilities", caps);
	return data;
}

json_object *api_data_str(const char *key, const char *value)
{
	json_object *d = json_object_new_object();
	if (d)
		eng_obj_add(d, key, json_object_new_string(value));
	return d;
}

void api_finish_invalid(eng_req *r, const char *message, json_object *data)
{
	eng_req_finish_error(r, MCP_JSONRPC_INVALID_PARAMS, message, data);
}

/* ---- a request's context ------------------------------------------------------ */

static void trace(mcp_server *srv, const char *event, eng_req *r, const char *reason)
{
	if (srv->trace)
		srv->trace(event, eng_req_client_key(r), reason, srv->trace_user);
}

/* Prepares the context of a handler about to run for `r`. */
void api_ctx_begin(mcp_ctx *ctx, eng_req *r, json_object *params)
{
	api_ctx_init(ctx, r, params);
	ctx->traced = 1;
	trace(ctx->sess->srv, "started", r, NULL);
}

void api_ctx_init(mcp_ctx *ctx, eng_req *r, json_object *params)
{
	memset(ctx, 0, sizeof *ctx);
	ctx->req = r;
	ctx->sess = api_sess_of(r->sess);
	if (r->proto) {
		ctx->view = *(const api_view *)r->proto;
	} else {
		ctx->view.rev = ctx->sess->rev; /* the caps: api_ctx_caps */
	}
	json_object *pt = api_get(api_get(params, "_meta"), "progressToken");
	if (pt && (json_object_is_type(pt, json_type_string) ||
		   json_object_is_type(pt, json_type_int)))
		ctx->progress_token = pt;
	api_trace_begin(ctx, params);
}

void api_ctx_end_answer(mcp_ctx *ctx, api_answer *a)
{
	if (a->code)
		api_ctx_end(ctx, MCP_EPROTO, NULL, a->code, a->message, a->data);
	else
		api_ctx_end(ctx, a->result ? MCP_OK : MCP_ENOMEM, a->result, 0, NULL, NULL);
	*a = (api_answer){ 0 };
}

int api_ctx_admit(mcp_ctx *ctx, int kind, const char *key)
{
	api_denial no;
	if (!api_authz_admit(ctx, kind, key, &no))
		return 0;
	api_ctx_end(ctx, no.rc, NULL, no.code, no.message, no.data);
	/* The hook's own message, read by the end above. */
	free(ctx->refusal_message);
	ctx->refusal_message = NULL;
	return 1;
}

/* Ends a handler's run with exactly one outcome.  `result` is taken; the
 * error triple is the handler's own JSON-RPC error when code != 0 (data
 * taken). */
void api_ctx_end(mcp_ctx *ctx, int rc, json_object *result, int code, const char *message,
		 json_object *data)
{
	eng_req *r = ctx->req;
	int reason = eng_token_reason(&r->token);
	const char *why = "completed";
	if (reason == MCP_CANCEL_PEER || (rc != MCP_OK && reason != MCP_CANCEL_NONE))
		why = mcp_cancel_reason_name((mcp_cancel_reason)reason);
	int closing = reason != MCP_CANCEL_NONE || atomic_load(&r->sess->closed);

	if (ctx->view.modern && rc != MCP_OK && !code && ctx->missing_cap) {
		/* 2026-07-28: the handler needed a capability this request did
		 * not declare. */
		json_object *want = json_object_new_object();
		eng_obj_add(want, ctx->missing_cap, json_object_new_object());
		json_object_put(data);
		data = json_object_new_object();
		eng_obj_add(data, "requiredCapabilities", want);
		code = API_JSONRPC_MISSING_CAPABILITY;
		message = "Missing required client capability";
	}
	if ((rc == MCP_ECANCELED || rc == MCP_ECLOSED) && closing) {
		/* Stopped because of its token or the close: nothing is written
		 * (P1, P2, P6). */
		json_object_put(data);
		code = 0;
		eng_req_finish_silent(r);
	} else if (code) {
		/* An error the handler set is the answer, whatever it returned:
		 * `return mcp_result_set_error(...)` must not send success. */
		eng_req_finish_error(r, code, message, data);
	} else if (rc == MCP_OK && result) {
		json_object_put(data);
		code = 0;
		if (ctx->view.modern)
			api_modern_decorate(ctx->sess->srv, api_get_str(r->msg, "method"), result);
		eng_req_finish_result(r, result);
		result = NULL;
	} else {
		json_object_put(data);
		code = rc == MCP_EINVAL ? MCP_JSONRPC_INVALID_PARAMS : MCP_JSONRPC_INTERNAL_ERROR;
		eng_req_finish_error(r, code, rc == MCP_OK ? "out of memory" : mcp_strerror(rc),
				     NULL);
	}
	json_object_put(result);
	/* The reason read above may predate a peer cancel that won the
	 * outcome in the meantime (it decides first, then fires the token):
	 * the trace names what happened, not what the handler saw. */
	int outcome = atomic_load(&r->outcome);
	if (outcome == ENG_OUT_SUPPRESSED)
		why = mcp_cancel_reason_name(MCP_CANCEL_PEER);
	else if (outcome != ENG_OUT_RESPONDED && !r->sink && strcmp(why, "completed") == 0 &&
		 eng_token_reason(&r->token) != MCP_CANCEL_NONE)
		why = mcp_cancel_reason_name((mcp_cancel_reason)eng_token_reason(&r->token));
	/* Traced once the request has its outcome and has left the in-flight
	 * table: from "cleanup" on, its id may be reused (P5). */
	if (ctx->traced)
		trace(ctx->sess->srv, "cleanup", r, why);
	api_authz_after(ctx, why, outcome == ENG_OUT_RESPONDED ? code : 0);
}
json_object *api_ctx_caps(const mcp_ctx *ctx)
{
	return ctx->view.modern || ctx->view.caps ? ctx->view.caps : api_sess_caps(ctx->sess);
}

/* ---- trace context -------------------------------------------------------------
 *
 * W3C trace context in MCP (SEP-414): the traceparent and
 * tracestate of a request, checked against the W3C Trace Context formats,
 * given to its handler and passed on in the _meta of every request the
 * server sends on its behalf (sampling, elicitation, roots, and the input
 * requests of input_required results and tasks).
 *
 * The values come from the request's params._meta; over HTTP, the W3C
 * traceparent and tracestate headers of the POST stand in when _meta has
 * none (api_trace_from_headers).  A value that breaks the format is
 * dropped, never passed on: a client must not be able to push arbitrary
 * text into the requests the server makes, or into its traces.
 */

#define TRACEPARENT_LEN 55 /* version 00: 2-32-16-2 hex digits, 3 dashes */
#define TRACESTATE_MAX 512 /* W3C: propagate at least 512 characters */
#define TRACESTATE_MEMBERS 32

static int lower_hex(const char *p, size_t n, int *all_zero)
{
	*all_zero = 1;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		if (c != '0')
			*all_zero = 0;
	}
	return 1;
}

int api_trace_valid_parent(const char *v)
{
	/* 00-<trace-id>-<parent-id>-<flags>.  Only version 00 is defined; a
	 * value of another version is not passed on in a form this server
	 * cannot vouch for. */
	int zero;
	if (!v || strlen(v) != TRACEPARENT_LEN || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return 0;
	if (v[0] != '0' || v[1] != '0')
		return 0;
	if (!lower_hex(v + 3, 32, &zero) || zero) /* an all-zero trace id is invalid */
		return 0;
	if (!lower_hex(v + 36, 16, &zero) || zero) /* and so is a zero parent id */
		return 0;
	return lower_hex(v + 53, 2, &zero);
}

static int lcalpha(char c)
{
	return c >= 'a' && c <= 'z';
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

static int key_char(char c)
{
	return lcalpha(c) || digit(c) || c == '_' || c == '-' || c == '*' || c == '/';
}

/* One list member "key=value" (no surrounding spaces), [p, end). */
static int valid_member(const char *p, const char *end, const char **key_end)
{
	const char *eq = memchr(p, '=', (size_t)(end - p));
	if (!eq || eq == p)
		return 0;
	*key_end = eq;
	const char *at = memchr(p, '@', (size_t)(eq - p));
	if (!at) {
		/* simple-key: lcalpha 0*255(key chars) */
		if (!lcalpha(*p) || eq - p > 256)
			return 0;
		for (const char *q = p + 1; q < eq; q++)
			if (!key_char(*q))
				return 0;
	} else {
		/* tenant-id "@" system-id */
		if (at == p || at - p > 241 || !(lcalpha(*p) || digit(*p)) || eq - at - 1 < 1 ||
		    eq - at - 1 > 14 || !lcalpha(at[1]))
			return 0;
		for (const char *q = p + 1; q < at; q++)
			if (!key_char(*q))
				return 0;
		for (const char *q = at + 2; q < eq; q++)
			if (!key_char(*q))
				return 0;
	}
	/* value: 0*255(chr) nblk-chr; chr is space or nblk-chr, and nblk-chr
	 * is printable ASCII but ',' and '='. */
	const char *v = eq + 1;
	size_t n = (size_t)(end - v);
	if (n < 1 || n > 256 || v[n - 1] == ' ')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
			return 0;
	}
	return 1;
}

int api_trace_valid_state(const char *v)
{
	if (!v || strlen(v) > TRACESTATE_MAX)
		return 0;
	const char *keys[TRACESTATE_MEMBERS];
	size_t key_len[TRACESTATE_MEMBERS];
	int members = 0;
	const char *p = v;
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		const char *a = p, *b = end;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (a < b) { /* empty members are allowed and skipped */
			const char *kend;
			if (members == TRACESTATE_MEMBERS || !valid_member(a, b, &kend))
				return 0;
			for (int i = 0; i < members; i++)
				if (key_len[i] == (size_t)(kend - a) &&
				    memcmp(keys[i], a, key_len[i]) == 0)
					return 0; /* a key at most once */
			keys[members] = a;
			key_len[members++] = (size_t)(kend - a);
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return members > 0;
}

void api_trace_begin(mcp_ctx *ctx, json_object *params)
{
	json_object *meta = api_get(params, "_meta");
	json_object *tp = api_get(meta, "traceparent");
	json_object *ts = api_get(meta, "tracestate");
	ctx->traceparent = ctx->tracestate = NULL;
	if (!api_str(tp) || !api_trace_valid_parent(api_str(tp)))
		return;
	ctx->traceparent = api_str(tp);
	/* tracestate means nothing without the traceparent it belongs to. */
	if (api_str(ts) && api_trace_valid_state(api_str(ts)))
		ctx->tracestate = api_str(ts);
}

MCP_EXTERN int mcp_ctx_trace_context(const mcp_ctx *ctx, const char **traceparent,
				     const char **tracestate)
{
	const char *tp = ctx ? ctx->traceparent : NULL;
	if (traceparent)
		*traceparent = tp;
	if (tracestate)
		*tracestate = tp ? ctx->tracestate : NULL;
	return tp != NULL;
}

void api_trace_meta_add(const mcp_ctx *ctx, json_object *params)
{
	if (!ctx->traceparent || !json_object_is_type(params, json_type_object))
		return;
	json_object *meta = api_get(params, "_meta");
	if (!meta) {
		meta = json_object_new_object();
		if (eng_obj_add(params, "_meta", meta))
			return;
	}
	if (!json_object_is_type(meta, json_type_object))
		return;
	/* What the handler set itself (its own span, say) stays. */
	if (api_get(meta, "traceparent"))
		return;
	eng_obj_add(meta, "traceparent", json_object_new_string(ctx->traceparent));
	if (ctx->tracestate)
		eng_obj_add(meta, "tracestate", json_object_new_string(ctx->tracestate));
}

void api_trace_from_headers(json_object *msg, const char *traceparent, const char *tracestate)
{
	json_object *params = api_get(msg, "params");
	if (!traceparent || !json_object_is_type(params, json_type_object))
		return;
	json_object *meta = api_get(params, "_meta");
	if (meta && (!json_object_is_type(meta, json_type_object) || api_get(meta, "traceparent")))
		return; /* _meta is the MCP carrier: it wins */
	/* HTTP allows spaces around a field value (RFC 9110 section 5.5). */
	char tp[TRACEPARENT_LEN + 1];
	while (*traceparent == ' ' || *traceparent == '\t')
		traceparent++;
	size_t n = strlen(traceparent);
	while (n && (traceparent[n - 1] == ' ' || traceparent[n - 1] == '\t'))
		n--;
	if (n != TRACEPARENT_LEN)
		return;
	memcpy(tp, traceparent, n);
	tp[n] = 0;
	if (!api_trace_valid_parent(tp))
		return;
	if (!meta) {
		meta = json_object_new_object();
		if (eng_obj_add(params, "_meta", meta))
			return;
	}
	eng_obj_add(meta, "traceparent", json_object_new_string(tp));
	if (tracestate && !api_get(meta, "tracestate") && api_trace_valid_state(tracestate))
		eng_obj_add(meta, "tracestate", json_object_new_string(tracestate));
}

/* ---- cursors -------------------------------------------------------------------
 *
 * The cursors of paged lists (tools/list, resources/list,
 * resources/templates/list, prompts/list, tasks/list): opaque to the
 * client, issued and checked here.
 *
 * A cursor is the offset of the next page and a MAC (libsodium's
 * crypto_auth, HMAC-SHA-512-256) over the list's name and that offset,
 * base64url without padding.  So a cursor the server did not issue, one
 * edited by hand, or one of another list fails verification and is
 * answered -32602, as the spec asks of an invalid cursor.  The MAC key is
 * derived from the state key (mcp_server_set_state_key): processes behind
 * one load balancer that share it accept each other's cursors, and a key
 * rotation keeps the previous key's cursors valid like its states.
 */

#define CURSOR_RAW (8 + crypto_auth_BYTES)

void api_cursor_keys_derive(mcp_server *srv)
{
	/* A subkey per purpose: the sealing key itself never signs cursors. */
	crypto_kdf_derive_from_key(srv->cursor_key, sizeof srv->cursor_key, 1, "mcp_curs",
				   srv->state_key);
	if (srv->have_state_key_old)
		crypto_kdf_derive_from_key(srv->cursor_key_old, sizeof srv->cursor_key_old, 1,
					   "mcp_curs", srv->state_key_old);
	else
		sodium_memzero(srv->cursor_key_old, sizeof srv->cursor_key_old);
}

/* The MAC of (list, offset) under `key`. */
static void cursor_mac(unsigned char tag[crypto_auth_BYTES], const char *list,
		       const unsigned char off[8], const unsigned char key[32])
{
	crypto_auth_hmacsha512256_state st;
	static const char label[] = "libmcp cursor 1";
	crypto_auth_hmacsha512256_init(&st, key, 32);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)label, sizeof label);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)list, strlen(list) + 1);
	crypto_auth_hmacsha512256_update(&st, off, 8);
	crypto_auth_hmacsha512256_final(&st, tag);
}

char *api_make_cursor(const mcp_server *srv, const char *list, size_t offset)
{
	unsigned char raw[CURSOR_RAW];
	uint64_t v = offset;
	for (int i = 7; i >= 0; i--, v >>= 8)
		raw[i] = (unsigned char)v;
	cursor_mac(raw + 8, list, raw, srv->cursor_key);
	size_t n = sodium_base64_ENCODED_LEN(sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = malloc(n);
	if (out)
		sodium_bin2base64(out, n, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return out;
}

int api_parse_cursor(const mcp_server *srv, const char *cursor, const char *list,
		     size_t *offset)
{
	unsigned char raw[CURSOR_RAW];
	size_t got = 0;
	const char *end = NULL;
	if (strlen(cursor) > 2 * sizeof raw ||
	    sodium_base642bin(raw, sizeof raw, cursor, strlen(cursor), NULL, &got, &end,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    got != sizeof raw || *end)
		return -1;
	unsigned char tag[crypto_auth_BYTES];
	cursor_mac(tag, list, raw, srv->cursor_key);
	int ok = sodium_memcmp(tag, raw + 8, sizeof tag) == 0;
	if (!ok && srv->have_state_key_old) {
		cursor_mac(tag, list, raw, srv->cursor_key_old);
		ok = sodium_memcmp(tag, raw + 8, sizeof tag) == 0;
	}
	if (!ok)
		return -1;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | raw[i];
	if (v > SIZE_MAX)
		return -1;
	*offset = (size_t)v;
	return 0;
}
