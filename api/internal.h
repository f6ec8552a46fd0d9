/*
 * internal.h - the MCP protocol layer's private types (the server object,
 * the per-connection protocol state, the registries, the handler context)
 * and the functions its files share.
 *
 * Everything MCP-specific lives above the engine: method names, the
 * lifecycle, version negotiation, capabilities and result shapes.  The
 * functions below are grouped by the file that defines them, in the
 * order the files stack: each file calls only files listed before it
 * (tests/pkg/check-layers.sh checks it; doc/design.md has the picture).
 */
#ifndef MCP_API_INTERNAL_H
#define MCP_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/eng.h"

struct jschema;

/* The longest instance tag (mcp_server_set_instance_id) and task id. */
#define API_INSTANCE_ID_MAX 32
#define API_TASK_ID_MAX (API_INSTANCE_ID_MAX + 1 + 32 + 1)

/* Protocol revisions, oldest first.  Index order is chronological, so
 * "at least revision X" is an integer comparison; "exactly X" tests (the
 * batches of 2025-03-26) name X, never "the oldest". */
enum {
	API_REV_2024_11_05 = 0,         /* the first revision: stdio, HTTP+SSE */
	API_REV_2025_03_26,
	API_REV_2025_06_18,
	API_REV_2025_11_25,
	API_REV_LEGACY_COUNT,           /* the revisions initialize negotiates */
	API_REV_2026_07_28 = API_REV_LEGACY_COUNT, /* stateless: _meta per request */
	API_REV_COUNT
};
extern const char *const api_revision_names[API_REV_COUNT];
/* Index of a supported revision, or -1. */
int api_revision_index(const char *version);

/* The _meta keys of a 2026-07-28 request. */
#define API_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define API_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define API_META_INFO "io.modelcontextprotocol/clientInfo"
#define API_META_LOG "io.modelcontextprotocol/logLevel"
#define API_META_SERVER "io.modelcontextprotocol/serverInfo"

/* Extension identifiers (capabilities.extensions). */
#define API_EXT_TASKS "io.modelcontextprotocol/tasks"
#define API_EXT_UI "io.modelcontextprotocol/ui"
#define API_EXT_SKILLS "io.modelcontextprotocol/skills"

/* The 2026-07-28 error codes. */
#define API_JSONRPC_HEADER_MISMATCH (-32020)
#define API_JSONRPC_MISSING_CAPABILITY (-32021)
#define API_JSONRPC_UNSUPPORTED_VERSION (-32022)

/* How one request is served: its revision, the client's capabilities and
 * log level.  A legacy request takes them from its connection; a modern
 * (2026-07-28) one from its own _meta. */
typedef struct api_view {
	int modern;
	int rev;
	json_object *caps;          /* counted */
	int log_level;              /* modern: -1 when the request asked for none */
} api_view;

/* A registry entry: embedded first in every registered object. */
typedef struct api_entry {
	_Atomic int refs;
	char *key;                       /* name, URI or URI template */
	void (*destroy)(struct api_entry *e);
	/* A tool, prompt or resource declared *_NONBLOCKING: its calls run
	 * where they were read (dispatch.c), until it breaks the promise
	 * and is `demoted` to the workers for good (api_entry_demote). */
	int nonblocking;
	_Atomic int demoted;
} api_entry;

/* Entries in registration order, under the server's reg_lock.  Adding or
 * removing an entry tells ready connections about it (list_changed of
 * `kind`: API_KIND_*). */
typedef struct api_registry {
	api_entry **items;
	size_t n, cap;
	int kind;                        /* API_KIND_* */
} api_registry;

/* A registered tool.  Counted: a call holds a reference, so removing the
 * tool while it runs is safe. */
typedef struct api_tool_entry {
	api_entry base;                  /* key: the name */
	char *title, *description;
	json_object *input_schema;       /* owned; read-only after registration */
	json_object *output_schema;      /* owned or NULL */
	json_object *annotations;        /* owned or NULL */
	/* The schemas compiled (api/jschema/jschema.h): immutable, shared by every
	 * worker; NULL when the check is off (or, for output, no schema). */
	struct jschema *in_check, *out_check;
	mcp_tool_fn fn;
	void *user;
	mcp_task_support task_support;
	unsigned flags;                  /* MCP_TOOL_* */
	struct mcp_server *srv;          /* its server (the UI links: apps.c) */
} api_tool_entry;

typedef struct api_resource_entry {
	api_entry base;                  /* key: the URI or the template */
	int is_template;
	char *name, *title, *description, *mime_type;
	int64_t size;
	mcp_resource_fn read;
	mcp_complete_fn complete;
	void *user;
	/* Resources the library registers itself (MCP Apps, skills): `user`
	 * is theirs, released with free_user; `meta` is the _meta of their
	 * listing (owned, read-only). */
	void (*free_user)(void *user);
	json_object *meta;
	int unlisted;                    /* readable, left out of resources/list */
} api_resource_entry;

typedef struct api_prompt_entry {
	api_entry base;                  /* key: the name */
	char *title, *description;
	mcp_prompt_arg *args;            /* owned copies */
	size_t nargs;
	struct jschema *arg_check;       /* what the arguments must be */
	mcp_prompt_fn get;
	mcp_complete_fn complete;
	void *user;
} api_prompt_entry;

struct mcp_server {
	char *name, *version, *instructions;
	const eng_proto *proto;      /* what its connections speak (dispatch.c) */
	int workers;
	int grace_ms;
	/* What a call run where it was read may take (MCP_TOOL_NONBLOCKING). */
	int64_t nonblocking_budget_ms;
	size_t max_message;
	int max_depth;
	size_t max_values;
	int max_queue;
	int max_pending;
	int idle_poll_us;
	mcp_trace_fn trace;
	void *trace_user;

	int page_size;
	char *http_path;             /* NULL: "/mcp" */
	int http_json_only;
	int http_stateless;
	int http_legacy_sse;         /* HTTP+SSE (2024-11-05) served too */
	char *http_sse_path;         /* NULL: "/sse" */
	char *http_messages_path;    /* NULL: "/messages" */
	char **http_hosts;           /* extra allowed Host names */
	size_t n_http_hosts;
	char **http_origins;         /* extra allowed Origins */
	size_t n_http_origins;
	mcp_http_auth_fn http_auth;
	void *http_auth_user;
	unsigned char state_key[32];     /* seals requestState (api/mrtr.c) */
	unsigned char state_key_old[32];
	int have_state_key_old;
	/* MAC keys of list cursors, derived from the state keys */
	unsigned char cursor_key[32], cursor_key_old[32];
	int input_rounds;                /* legacy bridge: rounds per request */
	int64_t state_ttl_ms;            /* how long a sealed state is valid */
	int max_sessions;
	int64_t session_idle_ms;
	int max_connections;             /* HTTP connections open at once */
	int max_streams;                 /* HTTP GET streams open at once */
	size_t stream_backlog;           /* SSE bytes a slow reader may owe */
	int64_t http_header_timeout_ms;  /* a request's header must be in by then */
	int64_t http_body_timeout_ms;    /* and its body this long after it */
	int session_workers;             /* per-session cap; 0: workers - 1 */
	int session_queue;               /* requests waiting for that cap */
	int64_t task_ttl_default, task_ttl_max;
	/* Tasks of both eras (api/tasks.c): one table for the server. */
	pthread_mutex_t task_mu;         /* the table, every task, task_host */
	pthread_cond_t task_cv;          /* a task reached a final state */
	eng_idtable tasks;               /* by id */
	struct api_task *task_list, *task_tail; /* oldest first */
	size_t ntasks;
	int max_tasks;
	int max_tasks_per_principal;     /* per principal, or per session */
	char instance[API_INSTANCE_ID_MAX + 1]; /* task id prefix, or "" */
	eng_session *task_host;          /* where HTTP's 2026-07-28 tasks run */
	/* The shared state store (api/tasks-store.c): the URL set, opened
	 * when the server starts; NULL without one. */
	char *store_url;
	int64_t store_timeout_ms, task_lease_ms;
	struct api_tstore *tstore;
	char store_err[256];             /* why the store last failed */
	/* MCP Apps: tool -> UI links (api/apps.c), under reg_lock. */
	struct tool_ui *tool_ui;
	size_t ntool_ui;
	/* Skills (api/skills.c), in registration order, under reg_lock. */
	struct mcp_skill **skills;
	size_t nskills;
	/* Parked handlers (api/mrtr.c). */
	pthread_mutex_t park_mu;
	struct api_park *parks;          /* under park_mu */
	int nparks;
	int park_max;                    /* 0: parking off */
	int64_t park_ttl_ms;             /* wait for each input at most this */
	pthread_rwlock_t reg_lock;   /* the registries below */
	api_registry tools, resources, templates, prompts;
	/* A tool, prompt or resource declared non-blocking was ever
	 * registered: its methods are then routed from their tree, never
	 * their raw line (dispatch.c). */
	_Atomic int any_nonblocking;

	eng_pool pool;
	eng_stats stats;
	int wake_fd;                 /* eventfd: shutdown (signal-safe) */
	_Atomic int running;
	_Atomic int has_run;
	pthread_mutex_t sess_mu;     /* the list of live connections, and: */
	struct api_sess *sessions;
	struct api_listen *listens;  /* open subscriptions/listen streams */
	size_t nlistens;
	/* Authorization (api/authz.c): made by the first auth setter, never
	 * moved until mcp_server_free; NULL while nothing is configured. */
	struct auth_conf *_Atomic auth;
};

/* At most this many subscriptions/listen streams are open at once. */
#define API_MAX_LISTENS 1024

/* What a list_changed notification is about. */
enum { API_KIND_TOOLS = 1, API_KIND_RESOURCES = 2, API_KIND_PROMPTS = 4 };

/* Connection state of the lifecycle. */
enum { API_SESS_NEW = 0, API_SESS_INITIALIZING, API_SESS_READY };

/* Per-connection protocol state (the engine session's proto_data). */
typedef struct api_sess {
	mcp_server *srv;
	eng_session *es;             /* not counted: unlinked before it dies */
	struct api_sess *next, *prev; /* srv->sessions, under srv->sess_mu */
	pthread_mutex_t mu;          /* subscriptions */
	char **subs;
	size_t nsubs, subs_cap;
	unsigned caps_sent;          /* API_KIND_* bits whose listChanged was advertised */
	char **elicitations;         /* URL elicitation ids sent here (under mu) */
	size_t nelicitations;
	_Atomic int state;
	int rev;                     /* negotiated revision index */
	/* The client's capabilities: the compact JSON text initialize sent,
	 * set once, and the object parsed from it at first use (an idle HTTP
	 * session keeps only the text: a json-c object costs about 800
	 * bytes).  Read-only once set.  See api_sess_caps. */
	char *client_caps_text;
	_Atomic(json_object *) client_caps;
	_Atomic int log_level;       /* notifications below it are not sent */
	int stateless_only;          /* HTTP without a session: 2026-07-28 only */
	struct auth_binding *auth;   /* principals bound to it (api/authz.c; under mu) */
} api_sess;

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
	api_sess *sess;
	api_view view;               /* borrowed from the request or the session */
	const char *missing_cap;     /* modern: a client call lacked this capability */
	/* Multi round-trip requests (api/mrtr.c). */
	json_object *input_responses; /* this round's answers (counted) or NULL */
	char *state_in;              /* the state of the previous round, verified */
	json_object *input_requests; /* asked for this round (owned) or NULL */
	char *state_out;             /* the state for the next round */
	const char *mrtr_method;     /* tools/call, prompts/get, resources/read */
	const char *mrtr_name;       /* tool or prompt name, or URI */
	json_object *mrtr_args;      /* borrowed: bound into the sealed state */
	struct api_task *task;       /* the task this handler runs for, or NULL */
	char task_refusal[200];      /* why a task was refused busy (which limit) */
	struct api_tool_entry *tool; /* tools/call: the tool (borrowed) */
	/* The tool, prompt or resource it runs (borrowed), or NULL. */
	api_entry *item;
	struct api_park *park;       /* 2026-07-28: this handler is parked */
	json_object *progress_token; /* borrowed from the request, or NULL */
	/* Its W3C trace context, checked (api/common.c); borrowed from the
	 * request's _meta, NULL when absent or invalid. */
	const char *traceparent, *tracestate;
	double last_progress;
	int sent_progress;
	/* Authorization and hooks (api/authz.c). */
	mcp_principal *principal;    /* borrowed from the session, or NULL */
	const char *target;          /* tool or prompt name, or URI; borrowed */
	int64_t hook_start_ns;
	int hooked;                  /* the after-hook is due at api_ctx_end */
	int refused;                 /* answered by api_ctx_admit */
	int traced;                  /* a handler's run: traced started/cleanup */
	int refusal;                 /* 1 + mcp_refusal from mcp_ctx_refuse, or 0 */
	char *refusal_message;
	int64_t retry_after_ms;
};

/* A handler's own JSON-RPC error for its answer (code 0: none). */
typedef struct api_rpc_error {
	int code;
	char *message;
	json_object *data;
} api_rpc_error;

struct mcp_contents {
	json_object *items;          /* array */
	api_rpc_error err;
};

struct mcp_prompt_result {
	json_object *messages;       /* array */
	char *description;
	int rev;
	api_rpc_error err;
};

struct mcp_completion {
	json_object *values;         /* array, at most 100 */
	int64_t total;               /* -1: not set */
	int has_more;
	size_t added;
};

/* The answer of a method served without a handler (initialize, ping, the
 * lists, subscriptions, tasks/get...).  Such a method fills it and its
 * caller writes it: on the reader (eng_session_respond_*), or, with
 * request hooks installed, on the worker that ran the method between
 * them (api_ctx_end).  Either a result or an error (code != 0). */
typedef struct api_answer {
	json_object *result;         /* owned */
	int code;
	const char *message;         /* static text */
	json_object *data;           /* owned, or NULL */
} api_answer;

/* Such a method, as a row of the method table (dispatch.c) calls it: `v`
 * is the 2026-07-28 request's view, NULL for a request of a connection
 * of an earlier revision. */
typedef void (*api_inline_fn)(eng_session *s, json_object *params, const api_view *v,
			      api_answer *out);

/* An open subscriptions/listen stream (notify.c; agreed by listen.c). */
typedef struct api_listen {
	struct api_listen *next;     /* srv->listens, under srv->sess_mu */
	eng_req *r;                  /* counted */
	mcp_server *srv;
	unsigned kinds;              /* API_KIND_* agreed */
	json_object *uris;           /* array of resource URIs agreed */
	json_object *task_ids;       /* array of task ids agreed (tasks extension) */
} api_listen;

/* How a request refused at admission must end (authz.c, for
 * api_ctx_admit): its message borrowed from the context or static, its
 * data taken by whoever ends it. */
typedef struct api_denial {
	int rc;                      /* for api_ctx_end */
	int code;
	const char *message;
	json_object *data;
} api_denial;

/* ==== util.c, errors.c, result.c: helpers with no state ===================== */

char *api_strdup_opt(const char *s, int *failed);
json_object *api_json_copy(json_object *o);
/* The member `key` of `o` (borrowed), or NULL when `o` is not an object
 * (NULL included) or has no such member. */
json_object *api_get(json_object *o, const char *key);
/* The same when it is a string without U+0000: its text (borrowed), else
 * NULL.  Every name, uri, version, level, cursor and token the library
 * looks up is read through these two: a C string would end at a U+0000
 * and find what the string begins with ("echo\u0000junk" for "echo"). */
const char *api_get_str(json_object *o, const char *key);
/* The text of `v` when it is a string without U+0000, else NULL. */
const char *api_str(json_object *v);
void api_json_add_str(json_object *o, const char *key, const char *value);
/* 32 lowercase hex digits from the kernel's CSPRNG (session and task ids). */
void api_random_hex(char out[33]);
/* An RFC 3986 URI as far as its characters go: a scheme, a colon, and
 * only unreserved, reserved or percent-encoded characters. */
int api_uri_valid(const char *uri);
int api_rpc_error_set(api_rpc_error *e, int code, const char *message, json_object *data);
void api_rpc_error_clear(api_rpc_error *e);

void api_result_init(mcp_result *r, int rev);
void api_result_clear(mcp_result *r);
/* Builds the CallToolResult (taken by the caller). */
json_object *api_result_to_json(mcp_result *r);
/* base64 of bytes; caller frees.  NULL when out of memory. */
char *api_base64(const void *data, size_t len);
/* Content blocks shared by tool results and prompt messages. */
json_object *api_block_text(const char *text, size_t len);
json_object *api_block_media(const char *type, const void *data, size_t len,
			     const char *mime_type);
json_object *api_block_resource(const char *uri, const char *mime_type, const char *key,
				json_object *value);
/* The block `block` (taken) as revision `rev` can carry it: a kind the
 * revision lacks becomes a text block (audio before 2025-03-26 a note of
 * what was left out, resource_link before 2025-06-18 "name <uri>"); any
 * other is returned as it is.  NULL when out of memory. */
json_object *api_block_for_rev(json_object *block, int rev);
/* Whether a sampling/createMessage params object holds a content block of a
 * kind revision `rev` lacks (audio before 2025-03-26). */
int api_sampling_lacks_kind(json_object *params, int rev);

/* ==== authz.c: authorization (the token machinery is in auth.h) ============= */

/* admit is api_ctx_admit's check: 0 to let the request through, 1 with
 * *out saying how it must end.  after runs the after-hook, once. */
int api_authz_admit(mcp_ctx *ctx, int kind, const char *key, api_denial *out);
void api_authz_after(mcp_ctx *ctx, const char *why, int code);
/* Whether request hooks are installed: then every method runs on a worker
 * between them, also those otherwise answered on the reader.  Fixed once
 * the server runs; one atomic load.  Any thread. */
int api_authz_hooked(mcp_server *srv);
/* Whether a request may be refused on its worker with a status of its own
 * (a scope it lacks, a before-hook): the HTTP layer then holds back the
 * start of an SSE response until the request is let through
 * (eng_req_admitted), so that the refusal can still be a 403 or 429. */
int api_authz_may_refuse(mcp_server *srv);
/* Lists: whether `p` (NULL: no principal) may see an item, with reg_lock
 * held; whether filtering is needed at all. */
int api_authz_visible(mcp_server *srv, int kind, const char *key, const mcp_principal *p);
int api_authz_filters(mcp_server *srv, const mcp_principal *p);
/* A session's principal: bind the one of a new request (counted; another
 * party's gives MCP_ENOENT, to be answered as an unknown session), read
 * the current one (borrowed for the session's life). */
int api_authz_bind(api_sess *ms, mcp_principal *p);
mcp_principal *api_authz_current(api_sess *ms);
void api_authz_sess_free(api_sess *ms);
void api_authz_free(mcp_server *srv);
/* For the HTTP transport (see doc/auth.md, "Wiring"): whether
 * authorization is on; the metadata document for a GET of `path` (1 and
 * *json, caller frees; 0 when `path` is not a metadata path; -1 no memory);
 * the check of one request: 0 to go on (*principal taken by the caller,
 * NULL when authorization is off), else the HTTP status to answer with
 * and the WWW-Authenticate value (NULL for 500) and JSON-RPC body to send
 * (caller frees both); the WWW-Authenticate of an answer whose error is
 * MCP_JSONRPC_FORBIDDEN (data borrowed; NULL when none applies). */
int api_authz_enabled(mcp_server *srv);
int api_authz_metadata(mcp_server *srv, const char *path, const char *endpoint, char **json);
int api_authz_http(mcp_server *srv, const char *url, const char *authorization, int64_t now,
		   mcp_principal **principal, char **www_authenticate, char **body);
char *api_authz_forbidden_challenge(mcp_server *srv, json_object *data);
/* The 401 invalid_token refusal of a request whose token was valid but
 * cannot be used (`reason`, static and client-safe): its status (500
 * when authorization is off), WWW-Authenticate and body (caller frees). */
int api_authz_http_invalid(mcp_server *srv, const char *reason, char **www_authenticate,
			   char **body);
int64_t api_authz_now(void);

/* ==== sess.c: connections =================================================== */

/* new: a connection not yet initialized; free: all of it (what tasks.c
 * keeps of it is freed before, by the method table's on_free). */
api_sess *api_sess_new(mcp_server *srv);
void api_sess_free(api_sess *ms);
static inline api_sess *api_sess_of(eng_session *s)
{
	return s->proto_data;
}
/* The capabilities the client declared at initialize (borrowed, read-only,
 * alive as long as the session), parsed at the first call; NULL without
 * memory.  Any thread. */
json_object *api_sess_caps(api_sess *ms);
/* Which connection a URL elicitation went to. */
void api_sess_remember_elicitation(api_sess *ms, const char *id);
int api_sess_forget_elicitation(api_sess *ms, const char *id);
/* A connection's engine session over `tp` (taken, freed on failure),
 * speaking srv->proto, linked in srv->sessions, with one reference for
 * the caller; `preset_rev` as for api_server_serve_connection_as; `push`
 * for a transport that feeds it (HTTP: no reader thread, the per-session
 * worker cap).  NULL when out of memory.  drop unlinks it and drops the
 * caller's reference. */
eng_session *api_server_open_session(mcp_server *srv, tp_conn *tp, int preset_rev, int push);
void api_server_drop_session(mcp_server *srv, eng_session *es);

/* ==== common.c: what every method shares ==================================== */

/* Log level names: the index of `name` (-1: none), the name of `level`. */
int api_log_level_from_name(const char *name);
const char *api_log_level_name(int level);
/* Set the answer (result or data taken; a second call replaces the
 * first, releasing it); send it from the reader (taken). */
void api_answer_result(api_answer *a, json_object *result);
void api_answer_error(api_answer *a, int code, const char *message, json_object *data);
void api_answer_send(eng_session *s, json_object *id, api_answer *a);
json_object *api_notification(const char *method, json_object *params);
/* The 2026-07-28 decorations of a result (resultType, serverInfo, cache
 * hints for `method`). */
void api_modern_decorate(mcp_server *srv, const char *method, json_object *result);
/* Whether capabilities `caps` declare extension `ext`; the data of the
 * -32021 that asks for it (caller owns). */
int api_ext_declared(json_object *caps, const char *ext);
json_object *api_ext_required_data(const char *ext);
/* {key: value} (caller owns), NULL without memory; ends `r` with -32602,
 * `message` and `data` (taken). */
json_object *api_data_str(const char *key, const char *value);
void api_finish_invalid(eng_req *r, const char *message, json_object *data);

/* A handler's run: begin prepares ctx and traces "started"; end traces
 * "cleanup" and gives the request exactly one outcome (result taken; the
 * error triple is the handler's own when code != 0, data taken). */
void api_ctx_begin(mcp_ctx *ctx, eng_req *r, json_object *params);
/* The same for a request that runs no handler (a method otherwise answered
 * on the reader, tasks/result): no trace events, but the hooks, scopes and
 * outcome rules of api_ctx_admit and api_ctx_end. */
void api_ctx_init(mcp_ctx *ctx, eng_req *r, json_object *params);
/* For the requests that reach a worker, right after api_ctx_begin: gives
 * the context its principal and target, checks the scopes of item `key`
 * of `kind` (mcp_item_kind, or -1 for none) and runs the before-hook
 * (api_authz_admit).  0 to run the handler, 1 when the request was
 * refused and has been answered (api_ctx_end done). */
int api_ctx_admit(mcp_ctx *ctx, int kind, const char *key);
void api_ctx_end(mcp_ctx *ctx, int rc, json_object *result, int code, const char *message,
		 json_object *data);
/* api_ctx_end with a method's answer (taken). */
void api_ctx_end_answer(mcp_ctx *ctx, api_answer *a);
/* The capabilities a handler's request was made with: its own _meta's
 * (2026-07-28) or its session's.  Borrowed. */
json_object *api_ctx_caps(const mcp_ctx *ctx);
/* The request's revision, and whether it is a 2026-07-28 one. */
static inline int api_req_rev(eng_req *r)
{
	return r->proto ? ((const api_view *)r->proto)->rev : api_sess_of(r->sess)->rev;
}

static inline int api_req_modern(eng_req *r)
{
	return r->proto && ((const api_view *)r->proto)->modern;
}

/* Trace context: adds the request's traceparent and tracestate to the
 * _meta of `params` (an object) of a request the server sends. */
void api_trace_meta_add(const mcp_ctx *ctx, json_object *params);
/* Takes the checked trace context of a request into its context. */
void api_trace_begin(mcp_ctx *ctx, json_object *params);
/* The W3C formats: a version-00 traceparent, a tracestate list. */
int api_trace_valid_parent(const char *v);
int api_trace_valid_state(const char *v);
/* Over HTTP: the POST's traceparent and tracestate headers (NULL when
 * absent), checked, into the _meta of the request `msg` when its _meta has
 * no traceparent of its own. */
void api_trace_from_headers(json_object *msg, const char *traceparent, const char *tracestate);

/* Cursors of the paged lists: a cursor names its list and an offset under
 * a MAC; parse gives -1 for any cursor the server did not issue for
 * `list`.  derive makes the cursor keys from the state keys. */
char *api_make_cursor(const mcp_server *srv, const char *list, size_t offset);
int api_parse_cursor(const mcp_server *srv, const char *cursor, const char *list,
		     size_t *offset);
void api_cursor_keys_derive(mcp_server *srv);

/* ==== notify.c: what changed, to whom it concerns ========================== */

/* Sends notifications/<kind>/list_changed to every ready connection that
 * was told the list may change, and to the listen streams that asked. */
void api_notify_list_changed(mcp_server *srv, int kind);
/* The same, to this process's streams only (one raised in another). */
void api_notify_list_changed_here(mcp_server *srv, int kind);
/* notifications/resources/updated to the listen streams that named `uri`. */
void api_listen_resource_updated(mcp_server *srv, const char *uri);
/* notifications/tasks (`params` taken) to the listen streams that asked
 * for `task_id`. */
void api_listen_task_status(mcp_server *srv, const char *task_id, json_object *params);
/* A stream's life: reserve takes one of the API_MAX_LISTENS places (0:
 * none left); open starts the stream of `l` (taken) on its request `r` (a
 * counted reference it keeps) with the acknowledgement `agreed` (taken),
 * until r's token fires; drop gives the place back when the request could
 * not be held (`l` and `agreed` taken). */
int api_listen_reserve(mcp_server *srv);
void api_listen_open(api_listen *l, eng_req *r, json_object *agreed);
void api_listen_drop(api_listen *l, json_object *agreed);

/* ==== registry.c: the registries ============================================ */

int api_entry_init(api_entry *e, const char *key, void (*destroy)(api_entry *));
void api_entry_unref(api_entry *e);
/* add takes the entry (freed on error); add and remove send the
 * list_changed notification on success. */
int api_registry_add(mcp_server *srv, api_registry *r, api_entry *e);
int api_registry_remove(mcp_server *srv, api_registry *r, const char *key);
/* A counted reference to the entry, or NULL. */
api_entry *api_registry_find(mcp_server *srv, api_registry *r, const char *key);
api_entry *api_registry_match(mcp_server *srv, api_registry *r,
			      int (*match)(api_entry *e, void *arg), void *arg);
size_t api_registry_count(mcp_server *srv, api_registry *r);
/* Describes items [offset, offset+limit) with `describe`; *total = count. */
json_object *api_registry_page(mcp_server *srv, api_registry *r, size_t offset, size_t limit,
			       json_object *(*describe)(api_entry *e, int rev), int rev,
			       size_t *total);
/* The same, keeping only the items `keep` accepts: up to `limit` of them
 * from item `offset` on; *next gets the index to continue from, or 0 at
 * the end. */
json_object *api_registry_page_if(mcp_server *srv, api_registry *r, size_t offset, size_t limit,
				  json_object *(*describe)(api_entry *e, int rev), int rev,
				  int (*keep)(api_entry *e, void *arg), void *arg, size_t *next);
void api_registry_clear(api_registry *r);

/* ==== modern.c: the checks of a 2026-07-28 request ========================== */

/* The revisions served from a request's own _meta (caller owns). */
json_object *api_modern_versions(void);
/* The ladder of a request's _meta (and the MCP-Protocol-Version header
 * value `header_version` when not NULL), before any method is looked up.
 * 0 when it passes, else the JSON-RPC code of the answer with *message
 * and *data (taken) set. */
int api_modern_check(json_object *params, const char *header_version, const char **message,
		     json_object **data);
/* The view of a request that passed the ladder (NULL without memory), and
 * its free (the engine request's free_proto). */
api_view *api_view_new(json_object *params);
void api_view_free(void *v);

/* ==== mrtr.c: multi round-trip requests and parked handlers ================= */

int api_state_key_init(mcp_server *srv);
/* Binds the context to its request and, for a 2026-07-28 retry, takes its
 * inputResponses and verifies its requestState; -1 with *why (-32602).
 * 1 when the retry was for a parked handler: the request has been answered
 * (api_ctx_end done) and the caller only cleans up. */
int api_mrtr_begin(mcp_ctx *ctx, json_object *params, const char *method, const char *name,
		   json_object *args, const char **why);
/* The input_required result of a 2026-07-28 handler that returned
 * MCP_EINPUT (taken by the caller), or NULL when it asked for nothing. */
json_object *api_mrtr_input_required(mcp_ctx *ctx);
void api_mrtr_end(mcp_ctx *ctx);
/* Parked handlers: the blocking client calls of a 2026-07-28 request.
 * call: `params` taken; the client's answer in *result (caller owns), or
 * MCP_ENOTSUP where nothing can be parked, MCP_EBUSY at the cap,
 * MCP_ETIMEDOUT, MCP_ECANCELED, MCP_EPROTO, MCP_ENOMEM. */
typedef struct api_park api_park;
void api_park_init(mcp_server *srv);
void api_park_destroy(mcp_server *srv);
int api_park_call(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
		  json_object **result);

/* ==== tasks.c: tasks of both eras =========================================== */

struct api_task;
int api_tasks_init(mcp_server *srv);
void api_tasks_destroy(mcp_server *srv);
/* Whether any tool can run as a task (then the capability is advertised). */
int api_tasks_offered(mcp_server *srv);
/* Whether request capabilities `caps` declare the tasks extension; the
 * data of the -32021 that asks for it (caller owns). */
int api_tasks_declared(json_object *caps);
json_object *api_tasks_required_data(void);
/* Makes the tools/call running with ctx a task (2025-11-25: `task_params`
 * are the client's params.task): answers the request with the task now
 * and lets the handler go on as its work, its final answer kept in the
 * task.  MCP_OK, MCP_EINVAL (bad params.task), MCP_EBUSY (the table is
 * full), MCP_ENOMEM, MCP_ECANCELED, MCP_ECLOSED. */
int api_task_start(mcp_ctx *ctx, json_object *task_params);
/* "Task store unavailable: WHY" for an answer (thread-local, valid until
 * the calling thread's next call). */
const char *api_task_store_failure(mcp_server *srv);
/* 2026-07-28, for a task whose handler returned MCP_EINPUT: its requests
 * are the task's input_required, tasks/update answers them, the handler
 * is called again; until it returns something else.  Its last code. */
int api_task_rounds(mcp_ctx *ctx, int rc, int (*invoke)(void *arg), void (*reset)(void *arg),
		    void *arg);
/* A blocking client call inside a 2026-07-28 task (`params` taken). */
int api_task_ask(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
		 json_object **result);
/* The 2025-11-25 related-task _meta of a task's result. */
void api_task_decorate(mcp_ctx *ctx, json_object *result);
void api_task_set_input_required(struct api_task *t, int waiting);
const char *api_task_id(const struct api_task *t);
/* A 2026-07-28 task `id` exists and `who` may reach it. */
int api_task_known(mcp_server *srv, const char *id, const mcp_principal *who);
void api_tasks_free(api_sess *ms);
/* Ends the task host at the end of a run (server.c). */
void api_task_host_end(mcp_server *srv);

/* tasks-store.c: a 2026-07-28 task's shared record, lease and channels
 * when the server has a state store (see the file's head).  Every call
 * but the hooks' may block up to the store's timeout: workers only.
 * MCP_OK, MCP_ENOENT (no such record), MCP_ESTATE (a write lost its
 * race: read again), MCP_ESYS (the store failed: api_tstore_error says
 * why), MCP_ENOMEM. */
typedef struct api_tstore api_tstore;
typedef struct api_tstore_hooks {
	/* On the store's threads; they may only fire tokens and queue lines. */
	void (*cancel)(mcp_server *srv, const char *id);
	void (*input)(mcp_server *srv, const char *id, json_object *responses); /* borrowed */
	void (*lost)(mcp_server *srv, const char *id);   /* the lease lapsed */
	void (*status)(mcp_server *srv, const char *id, json_object *params); /* taken */
	/* Raised in another process: deliver here only. */
	void (*list_changed)(mcp_server *srv, int kind);
	void (*resource_updated)(mcp_server *srv, const char *uri);
} api_tstore_hooks;
int api_tstore_open(mcp_server *srv, const char *url, int64_t timeout_ms, int64_t lease_ms,
		    char *err, size_t errlen);
int api_tstore_start(api_tstore *ts, const api_tstore_hooks *hooks);
const char *api_tstore_name(const api_tstore *ts);
const char *api_tstore_error(api_tstore *ts); /* "" when nothing failed */
const char *api_tstore_owner(const api_tstore *ts);
int api_tstore_create(api_tstore *ts, const char *id, json_object *rec, int64_t ttl_ms);
int api_tstore_read(api_tstore *ts, const char *id, json_object **rec, uint64_t *ver);
int api_tstore_write(api_tstore *ts, const char *id, uint64_t ver, json_object *rec, int64_t ttl_ms);
int api_tstore_lease_alive(api_tstore *ts, const char *id); /* 1, 0, or an error */
void api_tstore_release(api_tstore *ts, const char *id, int delete_key);
int api_tstore_send(api_tstore *ts, const char *owner, const char *kind, const char *id,
		    json_object *payload);
int api_tstore_announce(api_tstore *ts, const char *id, json_object *params);
/* A list_changed (API_KIND_*) or a resources/updated raised here, for the
 * other processes' streams (this one's were told directly). */
int api_tstore_broadcast_list(api_tstore *ts, int kind);
int api_tstore_broadcast_updated(api_tstore *ts, const char *uri);
void api_tstore_close(mcp_server *srv);
/* tasks.c: fills the task hooks of a store's hook table. */
void api_tasks_store_hooks(api_tstore_hooks *h);
/* The methods: 2025-11-25's tasks/get, list, cancel and result, a
 * connection's own tasks; 2026-07-28's tasks/get, update and cancel,
 * reached by id. */
void api_tasks_get(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_tasks_list(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_tasks_cancel(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_tasks_result(eng_req *r);
void api_tasks_modern_get(eng_session *s, json_object *params, const api_view *v,
			  api_answer *out);
void api_tasks_modern_update(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out);
void api_tasks_modern_cancel(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out);

/* ==== ctx.c: what a handler asks of the library ============================= */

/* Sends elicitation/create (`params` taken) after the capability checks of
 * its mode. */
int api_elicit_send(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
		    json_object **result);
/* Sends elicitation/create (`params` taken) as api_elicit_send, and checks
 * an accepted answer's content against `requested` (borrowed; NULL: no
 * check), compiled before anything is sent.  A schema that does not
 * compile is MCP_EINVAL, content that does not match MCP_EPROTO. */
int api_elicit_checked(mcp_ctx *ctx, json_object *params, json_object *requested,
		       int64_t timeout_ms, json_object **result);
/* The legacy bridge of MRTR: calls invoke(arg); for a legacy client,
 * answers the handler's input requests with real server-to-client
 * requests and calls it again (after reset(arg)) up to the server's
 * rounds.  The handler's last code. */
int api_ctx_run_rounds(mcp_ctx *ctx, int (*invoke)(void *arg), void (*reset)(void *arg),
		       void *arg);

/* ==== resources.c, tools.c, prompts.c, complete.c: the items =============== */

json_object *api_resource_describe(api_entry *e, int rev);
/* Finds the template matching `uri`; *vars gets the variables (owned). */
api_resource_entry *api_template_match(mcp_server *srv, const char *uri, json_object **vars);
/* Resources the library owns: registered with `user` freed by
 * `free_user` (also on failure) and `meta` (taken, may be NULL) as the
 * _meta of their listing. */
int api_resource_add_owned(mcp_server *srv, const char *uri, const char *name,
			   const char *title, const char *description, const char *mime_type,
			   int64_t size, mcp_resource_fn read, void *user,
			   void (*free_user)(void *), json_object *meta, int unlisted);
/* One contents item of `len` bytes: as text when `text` (it must be UTF-8),
 * else base64 blob; `meta` (borrowed, copied; may be NULL) as its _meta. */
int api_contents_add_item(mcp_contents *out, const char *uri, const char *mime_type,
			  const void *data, size_t len, int text, json_object *meta);
/* resources/read; resources/subscribe and unsubscribe (legacy). */
void api_resources_read(eng_req *r);
/* mcp_server_resource_updated to this process's subscribers only. */
void api_resource_updated_here(mcp_server *srv, const char *uri);
void api_resources_subscribe(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out);
void api_resources_unsubscribe(eng_session *s, json_object *params, const api_view *v,
			       api_answer *out);

/* MCP Apps (apps.c): whether a UI resource is registered; a tool's _meta.ui
 * (caller owns; NULL when it has none; reg_lock held); the links freed. */
int api_apps_offered(mcp_server *srv);
json_object *api_tool_ui_meta(mcp_server *srv, const char *tool);
void api_apps_free(mcp_server *srv);

json_object *api_tool_describe(api_entry *e, int rev);
/* What a tool handler's return makes of its call, for api_ctx_end:
 * MCP_EINVAL with nothing set becomes a tool error, a result with
 * structuredContent is checked against the output schema (a fault sets
 * res's error and traces "invalid_output").  Returns the code to end
 * with; *result holds the CallToolResult (taken) when there is one. */
int api_tool_outcome(mcp_ctx *ctx, api_tool_entry *t, mcp_result *res, int rc,
		     json_object **result);
/* The tool error answering arguments that do not match input_schema, or
 * NULL when they match (the caller takes it); *oom set when checking or
 * building it ran out of memory. */
json_object *api_tool_check_args(api_tool_entry *t, json_object *args, int rev, int *oom);
/* tools/call. */
void api_tools_call(eng_req *r);
/* A handler run where its request was read (eng_req_here) tried to
 * wait: counted, traced, its item demoted.  MCP_ESTATE. */
int api_ctx_here_refuses(mcp_ctx *ctx);
/* Sends item e's calls to the workers for good, and tells the trace hook
 * (`event`, the request of r, the item's name or URI) the first time. */
void api_entry_demote(mcp_server *srv, api_entry *e, eng_req *r, const char *event);

json_object *api_prompt_describe(api_entry *e, int rev);
/* prompts/get. */
void api_prompts_get(eng_req *r);
/* completion/complete. */
void api_complete(eng_req *r);

/* ==== skills.c, skills-yaml.c: skills ======================================= */

int api_skills_offered(mcp_server *srv);
void api_skills_free(mcp_server *srv);
/* skills/list, skills/get, resources/directory/read. */
void api_skills_list(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_skills_get(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_skills_read_dir(eng_session *s, json_object *params, const api_view *v,
			 api_answer *out);
/* The frontmatter of a SKILL.md as JSON (caller owns), or NULL with a
 * one-line reason in why[whylen]; *body_at (may be NULL) gets the offset
 * of what follows it. */
json_object *api_skill_parse_frontmatter(const char *text, size_t len, size_t *body_at,
					 char *why, size_t whylen);

/* ==== lifecycle.c, lists.c, listen.c: methods of the connection ============= */

/* The capabilities object for revision `rev` (caller owns); *kinds_out
 * (may be NULL) gets the API_KIND_* whose listChanged it promises. */
json_object *api_capabilities(mcp_server *srv, int rev, unsigned *kinds_out);
void api_lifecycle_initialize(eng_session *s, json_object *params, const api_view *v,
			      api_answer *out);
void api_lifecycle_ping(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_lifecycle_set_level(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out);
void api_lifecycle_discover(eng_session *s, json_object *params, const api_view *v,
			    api_answer *out);
/* notifications/initialized. */
void api_lifecycle_initialized(api_sess *ms);

void api_list_tools(eng_session *s, json_object *params, const api_view *v, api_answer *out);
void api_list_resources(eng_session *s, json_object *params, const api_view *v,
			api_answer *out);
void api_list_templates(eng_session *s, json_object *params, const api_view *v,
			api_answer *out);
void api_list_prompts(eng_session *s, json_object *params, const api_view *v, api_answer *out);

/* subscriptions/listen: held on the reader (`msg` and `v` taken), or let
 * through the request hooks on a worker. */
void api_listen_hold(eng_session *s, json_object *msg, json_object *id, json_object *params,
		     api_view *v);
void api_listen_hooked(eng_req *r);

/* ==== dispatch.c: the method table ========================================== */

extern const eng_proto api_protocol;
/* A 2026-07-28 request's ladder (api_modern_check) and then whether its
 * method exists in that era, for the reader and for HTTP: 0, or the
 * JSON-RPC code of the answer with *message and *data (taken). */
int api_request_check(const char *method, json_object *params, const char *header_version,
		      const char **message, json_object **data);

/* ==== server.c, memconn.c: running the server =============================== */

/* Runs one connection over any transport (taken) on the calling thread,
 * starting and stopping the pool around it; the public run functions and
 * the in-process tests use it. */
int api_server_run_tp(mcp_server *srv, tp_conn *tp);
/* The pieces of a run: begin (once per server: marks it running, starts
 * the pool), serve one connection on the calling thread until its shutdown
 * completes (tp taken), end (stops the pool). */
int api_server_begin(mcp_server *srv);
int api_server_serve_connection(mcp_server *srv, tp_conn *tp);
/* The same with the session already initialized at revision index
 * `preset_rev` and no client capabilities (stateless HTTP); -1 as above. */
int api_server_serve_connection_as(mcp_server *srv, tp_conn *tp, int preset_rev);
void api_server_end(mcp_server *srv);
/* The in-memory pair behind an mcp_memconn (its client end is what
 * mcp_client_connect_memory speaks over). */
tp_mem *api_memconn_mem(mcp_memconn *c);

#endif /* MCP_API_INTERNAL_H */
