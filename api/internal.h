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
	MCP_REV_LEGACY_COUNT,           /* the revisions initialize negotiates */
	MCP_REV_2026_07_28 = MCP_REV_LEGACY_COUNT, /* stateless: _meta per request */
	MCP_REV_COUNT
};
extern const char *const mcp_revision_names[MCP_REV_COUNT];
/* Index of a supported revision, or -1. */
int mcp_revision_index(const char *version);

/* The _meta keys of a 2026-07-28 request. */
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_INFO "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER "io.modelcontextprotocol/serverInfo"

/* The 2026-07-28 error codes. */
#define MCP_JSONRPC_HEADER_MISMATCH (-32020)
#define MCP_JSONRPC_MISSING_CAPABILITY (-32021)
#define MCP_JSONRPC_UNSUPPORTED_VERSION (-32022)

/* How one request is served: its revision, the client's capabilities and
 * log level.  A legacy request takes them from its connection; a modern
 * (2026-07-28) one from its own _meta. */
typedef struct mcp_view {
	int modern;
	int rev;
	json_object *caps;          /* counted */
	int log_level;              /* modern: -1 when the request asked for none */
} mcp_view;

/* The modern ladder, for the reader and for HTTP: checks a request's _meta
 * (and the MCP-Protocol-Version header value `header_version` when not
 * NULL) and the method.  Returns 0 when the request can be served, else
 * the JSON-RPC code of the answer with *message and *data (taken) set. */
int mcp_modern_check(const char *method, json_object *params, const char *header_version,
		     const char **message, json_object **data);
/* Whether a method exists in the 2026-07-28 era. */
int mcp_modern_method(const char *method);

/* A registry entry: embedded first in every registered object. */
typedef struct mcp_entry {
	_Atomic int refs;
	char *key;                       /* name, URI or URI template */
	void (*destroy)(struct mcp_entry *e);
} mcp_entry;

/* Entries in registration order, under the server's reg_lock.  Adding or
 * removing an entry tells ready connections about it (list_changed of
 * `kind`). */
typedef struct mcp_registry {
	mcp_entry **items;
	size_t n, cap;
	int kind;                        /* MCP_KIND_* */
} mcp_registry;

int mcp_entry_init(mcp_entry *e, const char *key, void (*destroy)(mcp_entry *));
void mcp_entry_unref(mcp_entry *e);

/* A registered tool.  Counted: a call holds a reference, so removing the
 * tool while it runs is safe. */
typedef struct mcp_tool_entry {
	mcp_entry base;                  /* key: the name */
	char *title, *description;
	json_object *input_schema;       /* owned; read-only after registration */
	json_object *output_schema;      /* owned or NULL */
	json_object *annotations;        /* owned or NULL */
	mcp_tool_fn fn;
	void *user;
	mcp_task_support task_support;
} mcp_tool_entry;

typedef struct mcp_resource_entry {
	mcp_entry base;                  /* key: the URI or the template */
	int is_template;
	char *name, *title, *description, *mime_type;
	int64_t size;
	mcp_resource_fn read;
	mcp_complete_fn complete;
	void *user;
} mcp_resource_entry;

typedef struct mcp_prompt_entry {
	mcp_entry base;                  /* key: the name */
	char *title, *description;
	mcp_prompt_arg *args;            /* owned copies */
	size_t nargs;
	mcp_prompt_fn get;
	mcp_complete_fn complete;
	void *user;
} mcp_prompt_entry;

struct mcp_server {
	char *name, *version, *instructions;
	int workers;
	int grace_ms;
	size_t max_message;
	int max_depth;
	int max_queue;
	int max_pending;
	int idle_poll_us;
	mcp_trace_fn trace;
	void *trace_user;

	int page_size;
	char *http_path;             /* NULL: "/mcp" */
	int http_json_only;
	int http_stateless;
	char **http_hosts;           /* extra allowed Host names */
	size_t n_http_hosts;
	char **http_origins;         /* extra allowed Origins */
	size_t n_http_origins;
	mcp_http_auth_fn http_auth;
	void *http_auth_user;
	unsigned char state_key[32];     /* seals requestState (api/mrtr.c) */
	unsigned char state_key_old[32];
	int have_state_key_old;
	int input_rounds;                /* legacy bridge: rounds per request */
	int64_t state_ttl_ms;            /* how long a sealed state is valid */
	int max_sessions;
	int64_t session_idle_ms;
	int max_connections;             /* HTTP connections open at once */
	int max_streams;                 /* HTTP GET streams open at once */
	size_t stream_backlog;           /* SSE bytes a slow reader may owe */
	int session_workers;             /* per-session cap; 0: workers - 1 */
	int session_queue;               /* requests waiting for that cap */
	int64_t task_ttl_default, task_ttl_max;
	/* Parked handlers (api/park.c). */
	pthread_mutex_t park_mu;
	struct mcp_park *parks;          /* under park_mu */
	int nparks;
	int park_max;                    /* 0: parking off */
	int64_t park_ttl_ms;             /* wait for each input at most this */
	pthread_rwlock_t reg_lock;   /* the registries below */
	mcp_registry tools, resources, templates, prompts;

	eng_pool pool;
	eng_stats stats;
	int wake_fd;                 /* eventfd: shutdown (signal-safe) */
	_Atomic int running;
	_Atomic int has_run;
	pthread_mutex_t sess_mu;     /* the list of live connections, and: */
	struct mcp_sess *sessions;
	struct mcp_listen *listens;  /* open subscriptions/listen streams */
	size_t nlistens;
	/* Authorization (api/authz.c): made by the first auth setter, never
	 * moved until mcp_server_free; NULL while nothing is configured. */
	struct auth_conf *_Atomic auth;
};

/* At most this many subscriptions/listen streams are open at once. */
#define MCP_MAX_LISTENS 1024

/* Connection state of the lifecycle. */
enum { MCP_SESS_NEW = 0, MCP_SESS_INITIALIZING, MCP_SESS_READY };

/* Per-connection protocol state (the engine session's proto_data). */
typedef struct mcp_sess {
	mcp_server *srv;
	eng_session *es;             /* not counted: unlinked before it dies */
	struct mcp_sess *next, *prev; /* srv->sessions, under srv->sess_mu */
	pthread_mutex_t mu;          /* subscriptions */
	char **subs;
	size_t nsubs, subs_cap;
	unsigned caps_sent;          /* MCP_KIND_* bits whose listChanged was advertised */
	char **elicitations;         /* URL elicitation ids sent here (under mu) */
	size_t nelicitations;
	struct mcp_task *tasks;      /* this connection's tasks (under mu) */
	pthread_cond_t task_cv;      /* a task reached a final state */
	_Atomic int state;
	int rev;                     /* negotiated revision index */
	/* The client's capabilities: the compact JSON text initialize sent,
	 * set once, and the object parsed from it at first use (an idle HTTP
	 * session keeps only the text: a json-c object costs about 800
	 * bytes).  Read-only once set.  See mcp_sess_caps. */
	char *client_caps_text;
	_Atomic(json_object *) client_caps;
	_Atomic int log_level;       /* notifications below it are not sent */
	int stateless_only;          /* HTTP without a session: 2026-07-28 only */
	struct auth_binding *auth;   /* principals bound to it (api/authz.c; under mu) */
} mcp_sess;

extern const eng_proto mcp_protocol;
mcp_sess *mcp_sess_new(mcp_server *srv);
/* The capabilities the client declared at initialize (borrowed, read-only,
 * alive as long as the session), parsed at the first call; NULL without
 * memory.  Any thread. */
json_object *mcp_sess_caps(mcp_sess *ms);
/* The capabilities a handler's request was made with: its own _meta's
 * (2026-07-28) or its session's.  Borrowed. */
json_object *mcp_ctx_caps(const mcp_ctx *ctx);

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
	mcp_view view;               /* borrowed from the request or the session */
	const char *missing_cap;     /* modern: a client call lacked this capability */
	/* Multi round-trip requests (api/mrtr.c). */
	json_object *input_responses; /* this round's answers (counted) or NULL */
	char *state_in;              /* the state of the previous round, verified */
	json_object *input_requests; /* asked for this round (owned) or NULL */
	char *state_out;             /* the state for the next round */
	const char *mrtr_method;     /* tools/call, prompts/get, resources/read */
	const char *mrtr_name;       /* tool or prompt name, or URI */
	json_object *mrtr_args;      /* borrowed: bound into the sealed state */
	struct mcp_task *task;       /* the task this handler runs for, or NULL */
	struct mcp_park *park;       /* 2026-07-28: this handler is parked */
	json_object *progress_token; /* borrowed from the request, or NULL */
	double last_progress;
	int sent_progress;
	/* Authorization and hooks (api/authz.c). */
	mcp_principal *principal;    /* borrowed from the session, or NULL */
	const char *target;          /* tool or prompt name, or URI; borrowed */
	int64_t hook_start_ns;
	int hooked;                  /* the after-hook is due at mcp_ctx_end */
	int refused;                 /* answered by mcp_ctx_admit */
	int refusal;                 /* 1 + mcp_refusal from mcp_ctx_refuse, or 0 */
	char *refusal_message;
	int64_t retry_after_ms;
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
/* The pieces of a run: begin (once per server: marks it running, starts
 * the pool), serve one connection on the calling thread until its shutdown
 * completes (tp taken), end (stops the pool). */
int mcp_server_begin(mcp_server *srv);
int mcp_server_serve_connection(mcp_server *srv, tp_conn *tp);
/* The same with the session already initialized at revision index
 * `preset_rev` and no client capabilities (stateless HTTP); -1 as above. */
int mcp_server_serve_connection_as(mcp_server *srv, tp_conn *tp, int preset_rev);
void mcp_server_end(mcp_server *srv);
/* A connection's engine session over `tp` (taken, freed on failure),
 * linked in srv->sessions, with one reference for the caller; `preset_rev`
 * as above; `push` for a transport that feeds it (HTTP: no reader
 * thread, the per-session worker cap).  NULL when out of memory. */
eng_session *mcp_server_open_session(mcp_server *srv, tp_conn *tp, int preset_rev, int push);
/* The in-memory pair behind an mcp_memconn (its client end is what
 * mcp_client_connect_memory speaks over). */
tp_mem *mcp_memconn_mem(mcp_memconn *c);
/* Unlinks a session from srv->sessions and drops the caller's reference. */
void mcp_server_drop_session(mcp_server *srv, eng_session *es);

/* Registries (registry.c): add takes the entry (freed on error); add and
 * remove send the list_changed notification on success. */
int mcp_registry_add(mcp_server *srv, mcp_registry *r, mcp_entry *e);
int mcp_registry_remove(mcp_server *srv, mcp_registry *r, const char *key);
mcp_entry *mcp_registry_find(mcp_server *srv, mcp_registry *r, const char *key);
mcp_entry *mcp_registry_match(mcp_server *srv, mcp_registry *r,
			      int (*match)(mcp_entry *e, void *arg), void *arg);
size_t mcp_registry_count(mcp_server *srv, mcp_registry *r);
/* Describes items [offset, offset+limit) with `describe`; *total = count. */
json_object *mcp_registry_page(mcp_server *srv, mcp_registry *r, size_t offset, size_t limit,
			       json_object *(*describe)(mcp_entry *e, int rev), int rev,
			       size_t *total);
/* The same, keeping only the items `keep` accepts: up to `limit` of them
 * from item `offset` on; *next gets the index to continue from, or 0 at
 * the end. */
json_object *mcp_registry_page_if(mcp_server *srv, mcp_registry *r, size_t offset, size_t limit,
				  json_object *(*describe)(mcp_entry *e, int rev), int rev,
				  int (*keep)(mcp_entry *e, void *arg), void *arg, size_t *next);
void mcp_registry_clear(mcp_registry *r);

char *mcp_strdup_opt(const char *s, int *failed);
json_object *mcp_json_copy(json_object *o);
/* The member `key` of `o` (borrowed), or NULL when `o` is not an object
 * (NULL included) or has no such member. */
json_object *mcp_get(json_object *o, const char *key);
void mcp_json_add_str(json_object *o, const char *key, const char *value);
/* 32 lowercase hex digits from the kernel's CSPRNG (session and task ids). */
void mcp_random_hex(char out[33]);

/* What a list_changed notification is about. */
enum { MCP_KIND_TOOLS = 1, MCP_KIND_RESOURCES = 2, MCP_KIND_PROMPTS = 4 };
/* Sends notifications/<kind>/list_changed to every ready connection that
 * was told the list may change (protocol.c). */
void mcp_notify_list_changed(mcp_server *srv, int kind);

json_object *mcp_tool_describe(mcp_entry *e, int rev);
json_object *mcp_resource_describe(mcp_entry *e, int rev);
json_object *mcp_prompt_describe(mcp_entry *e, int rev);
/* Finds the template matching `uri`; *vars gets the variables (owned). */
mcp_resource_entry *mcp_template_match(mcp_server *srv, const char *uri, json_object **vars);

/* Content blocks shared by tool results and prompt messages (result.c). */
json_object *mcp_block_text(const char *text, size_t len);
json_object *mcp_block_media(const char *type, const void *data, size_t len,
			     const char *mime_type);
json_object *mcp_block_resource(const char *uri, const char *mime_type, const char *key,
				json_object *value);

/* Sends elicitation/create (`params` taken) after the capability checks of
 * its mode (ctx.c). */
int mcp_elicit_send(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
		    json_object **result);
/* Which connection a URL elicitation went to (protocol.c). */
void mcp_sess_remember_elicitation(mcp_sess *ms, const char *id);
int mcp_sess_forget_elicitation(mcp_sess *ms, const char *id);

/* A handler's run (protocol.c): begin prepares ctx and traces "started";
 * end traces "cleanup" and gives the request exactly one outcome (result
 * taken; the error triple is the handler's own when code != 0, data taken). */
void mcp_ctx_begin(mcp_ctx *ctx, eng_req *r, json_object *params);

/* Multi round-trip requests (api/mrtr.c). */
int mcp_state_key_init(mcp_server *srv);
/* Binds the context to its request and, for a 2026-07-28 retry, takes its
 * inputResponses and verifies its requestState; -1 with *why (-32602).
 * 1 when the retry was for a parked handler: the request has been answered
 * (mcp_ctx_end done) and the caller only cleans up. */
int mcp_mrtr_begin(mcp_ctx *ctx, json_object *params, const char *method, const char *name,
		   json_object *args, const char **why);
/* Calls invoke(arg); for a legacy client, answers the handler's input
 * requests with real server-to-client requests and calls it again (after
 * reset(arg)) up to the server's rounds.  The handler's last code. */
int mcp_mrtr_run(mcp_ctx *ctx, int (*invoke)(void *arg), void (*reset)(void *arg), void *arg);
/* The input_required result of a 2026-07-28 handler that returned
 * MCP_EINPUT (taken by the caller), or NULL when it asked for nothing. */
json_object *mcp_mrtr_input_required(mcp_ctx *ctx);
void mcp_mrtr_end(mcp_ctx *ctx);
/* The sealed requestState naming a parked handler (caller frees), bound to
 * this request like any state; NULL without memory. */
char *mcp_mrtr_seal_park(const mcp_ctx *ctx, const char *state);

/* Parked handlers (api/park.c): the blocking client calls of a 2026-07-28
 * request.  call: `params` taken; the client's answer in *result (caller
 * owns), or MCP_ENOTSUP where nothing can be parked, MCP_EBUSY at the cap,
 * MCP_ETIMEDOUT, MCP_ECANCELED, MCP_EPROTO, MCP_ENOMEM.  resume: for a retry
 * whose verified state names a parked handler; 1 when the request has been
 * answered, -1 when the state names no handler waiting for this round. */
typedef struct mcp_park mcp_park;
void mcp_park_init(mcp_server *srv);
void mcp_park_destroy(mcp_server *srv);
int mcp_park_call(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
		  json_object **result);
int mcp_park_resume(mcp_ctx *ctx, const char *state, json_object *responses);
/* The 2026-07-28 decorations of a result (resultType, serverInfo). */
void mcp_modern_decorate(mcp_server *srv, const char *method, json_object *result);
void mcp_ctx_end(mcp_ctx *ctx, int rc, json_object *result, int code, const char *message,
		 json_object *data);

/* Tasks (tasks.c). */
struct mcp_task;
/* Whether any tool can run as a task (then the capability is advertised). */
int mcp_tasks_offered(mcp_server *srv);
/* Starts `tool` as a task for the tools/call request `r` running on this
 * worker: answers r with CreateTaskResult and runs the handler (with ctx)
 * to its end.  Returns 0 when it took over the request. */
int mcp_task_run_tool(eng_req *r, mcp_ctx *ctx, mcp_tool_entry *tool, json_object *args,
		      json_object *task_params);
void mcp_task_set_input_required(struct mcp_task *t, int waiting);
const char *mcp_task_id(const struct mcp_task *t);
void mcp_tasks_free(mcp_sess *ms);
void mcp_tasks_get(eng_session *s, json_object *id, json_object *params);
void mcp_tasks_list(eng_session *s, json_object *id, json_object *params);
void mcp_tasks_cancel(eng_session *s, json_object *id, json_object *params);
void mcp_tasks_result(eng_req *r);
/* Shared by the paged lists (protocol.c). */
char *mcp_make_cursor(const char *list, size_t offset);
int mcp_parse_cursor(const char *cursor, const char *list, size_t *offset);
json_object *mcp_notification(const char *method, json_object *params);

/* A handler's own JSON-RPC error for its answer (code 0: none). */
typedef struct mcp_rpc_error {
	int code;
	char *message;
	json_object *data;
} mcp_rpc_error;

int mcp_rpc_error_set(mcp_rpc_error *e, int code, const char *message, json_object *data);
void mcp_rpc_error_clear(mcp_rpc_error *e);

struct mcp_contents {
	json_object *items;          /* array */
	mcp_rpc_error err;
};

struct mcp_prompt_result {
	json_object *messages;       /* array */
	char *description;
	int rev;
	mcp_rpc_error err;
};

struct mcp_completion {
	json_object *values;         /* array, at most 100 */
	int64_t total;               /* -1: not set */
	int has_more;
	size_t added;
};

/* Authorization (api/authz.c; the token machinery is in api/auth.h).
 *
 * admit runs right after mcp_ctx_begin for the requests that reach a
 * worker: it gives the context its principal and target, checks the scopes
 * of item `key` of `kind` (mcp_item_kind, or -1 for none), and runs the
 * before-hook.  It returns 0 to run the handler, 1 when it answered the
 * request itself (mcp_ctx_end done).  after runs the after-hook, once. */
int mcp_ctx_admit(mcp_ctx *ctx, int kind, const char *key);
void mcp_authz_after(mcp_ctx *ctx, const char *why, int code);
/* Lists: whether `p` (NULL: no principal) may see an item, with reg_lock
 * held; whether filtering is needed at all. */
int mcp_authz_visible(mcp_server *srv, int kind, const char *key, const mcp_principal *p);
int mcp_authz_filters(mcp_server *srv, const mcp_principal *p);
/* A session's principal: bind the one of a new request (counted; another
 * party's gives MCP_ENOENT, to be answered as an unknown session), read
 * the current one (borrowed for the session's life). */
int mcp_authz_bind(mcp_sess *ms, mcp_principal *p);
mcp_principal *mcp_authz_current(mcp_sess *ms);
void mcp_authz_sess_free(mcp_sess *ms);
void mcp_authz_free(mcp_server *srv);
/* For the HTTP transport (see doc/auth.md, "Wiring"): whether
 * authorization is on; the metadata document for a GET of `path` (1 and
 * *json, caller frees; 0 when `path` is not a metadata path; -1 no memory);
 * the check of one request: 0 to go on (*principal taken by the caller,
 * NULL when authorization is off), else the HTTP status to answer with
 * and the WWW-Authenticate value (NULL for 500) and JSON-RPC body to send
 * (caller frees both); the WWW-Authenticate of an answer whose error is
 * MCP_JSONRPC_FORBIDDEN (data borrowed; NULL when none applies). */
int mcp_authz_enabled(mcp_server *srv);
int mcp_authz_metadata(mcp_server *srv, const char *path, const char *endpoint, char **json);
int mcp_authz_http(mcp_server *srv, const char *url, const char *authorization, int64_t now,
		   mcp_principal **principal, char **www_authenticate, char **body);
char *mcp_authz_forbidden_challenge(mcp_server *srv, json_object *data);
int64_t mcp_authz_now(void);

#endif /* MCP_API_INTERNAL_H */
