/*
 * client.h - the client side of libmcp: a C or C++ host calls MCP servers
 * over stdio (a spawned command), a pair of descriptors, an in-process
 * server (mcp_server_start_memory), Streamable HTTP, or the HTTP+SSE
 * transport of 2024-11-05 that older servers still speak.
 *
 * The client runs on the same engine as the server: the requests the
 * server sends it (roots, sampling, elicitation, ping) are run by handlers
 * on the client's own worker pool, each with a cancellation token; the
 * client's calls wait in the engine's table of outbound requests, which
 * the shutdown fails from a snapshot, so a server that exits, crashes or
 * closes mid-call fails every waiting call at once with the reason, and
 * nothing hangs.  A cancelled call's late answer is dropped, never given
 * to another call.
 *
 * The conventions of <mcp/mcp.h> hold: errors are negative MCP_E* codes,
 * strings are copied, every json-c object is either borrowed or taken as
 * each function says, and each function names the threads that may call
 * it.  Calls that block do so on the calling thread only, and wake on
 * their timeout, on their cancellation token and on the connection's end.
 *
 * Both protocol eras are spoken: the legacy revisions (2024-11-05 to
 * 2025-11-25: initialize, version negotiation, a session) and 2026-07-28
 * (server/discover, the version and the client's capabilities in every
 * request's _meta, input_required results answered by the client's own
 * handlers and retried with the server's state).
 */
#ifndef MCP_CLIENT_H
#define MCP_CLIENT_H

#include <mcp/mcp.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcp_client mcp_client; /* one connection to one server */
typedef struct mcp_call mcp_call;     /* one request to the server, in flight */
typedef struct mcp_token mcp_token;   /* a cancellation token */

/* ---------------------------------------------------------------------- */
/* Cancellation tokens                                                     */
/* ---------------------------------------------------------------------- */

/* A token the application fires to cancel the blocking calls (and call
 * handles) it was given to; the library also hands one to each handler of
 * a server-to-client request, fired when the server cancels that request
 * or the client closes.  A token fires once and keeps its first reason. */

/* A new, unfired token (NULL when out of memory).  The caller owns it and
 * releases it with mcp_token_free() once no call uses it.  Any thread. */
MCP_EXTERN mcp_token *mcp_token_new(void);
/* Releases a token made by mcp_token_new().  NULL is ignored.  Not while
 * a call that was given the token is in flight. */
MCP_EXTERN void mcp_token_free(mcp_token *tok);
/* Fires the token with MCP_CANCEL_PEER: every call given it is cancelled
 * (notifications/cancelled is sent), every wait on it wakes.  Returns 1
 * when this call fired it, 0 when it had fired already.  Any thread; not
 * from a signal handler (use a pipe to a thread, as mcp-call does). */
MCP_EXTERN int mcp_token_cancel(mcp_token *tok);
/* The reason it fired, or MCP_CANCEL_NONE.  Never blocks.  Any thread. */
MCP_EXTERN mcp_cancel_reason mcp_token_reason(mcp_token *tok);
/* A descriptor that becomes readable when the token fires (owned by the
 * token; never read or close it), or -1 when one cannot be made.  Any
 * thread. */
MCP_EXTERN int mcp_token_fd(mcp_token *tok);
/* Sleeps `ms` milliseconds or until the token fires: MCP_OK after the
 * full sleep, MCP_ECANCELED when it fired.  Any thread. */
MCP_EXTERN int mcp_token_sleep(mcp_token *tok, int64_t ms);

/* ---------------------------------------------------------------------- */
/* The client object                                                       */
/* ---------------------------------------------------------------------- */

/* Which protocol era a connection speaks. */
typedef enum mcp_client_era {
	/* server/discover first: 2026-07-28 when the server offers it, else
	 * initialize with the newest legacy revision the server accepts. */
	MCP_ERA_AUTO = 0,
	/* initialize only (2024-11-05 .. 2025-11-25). */
	MCP_ERA_LEGACY,
	/* 2026-07-28 only: server/discover, then per-request _meta. */
	MCP_ERA_MODERN
} mcp_client_era;

/* Creates a client that introduces itself as `name` `version` (both
 * copied; neither NULL).  NULL when out of memory or an argument is NULL.
 * The caller owns it and releases it with mcp_client_free(). */
MCP_EXTERN mcp_client *mcp_client_new(const char *name, const char *version);

/* Closes the connection if it is open (mcp_client_close) and releases the
 * client.  A handler abandoned at the close deadline keeps what it can
 * reach alive on purpose (nothing is freed under it).  NULL is ignored.
 * Not while another thread uses the client or one of its calls. */
MCP_EXTERN void mcp_client_free(mcp_client *c);

/* Configuration.  Each setter copies its argument and returns MCP_OK,
 * MCP_EINVAL for a value out of range, or MCP_ESTATE once a connect
 * function was called.  Call them from the thread that owns the client,
 * before connecting. */

/* The era to speak (default MCP_ERA_AUTO). */
MCP_EXTERN int mcp_client_set_era(mcp_client *c, mcp_client_era era);
/* The exact revision to offer (one of those mcp_protocol_supported()
 * accepts, "2024-11-05" included; copied).  A legacy revision implies
 * MCP_ERA_LEGACY, "2026-07-28" MCP_ERA_MODERN.  NULL: the newest of the
 * era.  Whatever was offered, a server may answer initialize with any
 * legacy revision the library speaks (a server of 2024-11-05 answers
 * that), and the connection goes on at it; one it does not speak fails
 * the connect with MCP_EPROTO. */
MCP_EXTERN int mcp_client_set_protocol_version(mcp_client *c, const char *version);
/* Worker threads that run the handlers of server-to-client requests and
 * the input rounds of 2026-07-28 calls (1..256; default 2). */
MCP_EXTERN int mcp_client_set_workers(mcp_client *c, int n);
/* How long mcp_client_close() waits for running handlers before it
 * abandons them, and (2000 ms at most) for the server to answer the
 * DELETE of an HTTP session (0..600000 ms; default 1500). */
MCP_EXTERN int mcp_client_set_grace_ms(mcp_client *c, int64_t ms);
/* How long a connect function waits for the handshake (1..3600000 ms;
 * default 30000): one deadline for all of it, however many requests it
 * takes (server/discover, then initialize).  At the deadline the connect
 * fails with MCP_ETIMEDOUT and mcp_client_error() says so, and what the
 * server sent instead when it sent something the client dropped. */
MCP_EXTERN int mcp_client_set_connect_timeout_ms(mcp_client *c, int64_t ms);
/* Largest inbound message (1024..1 GiB; default 16 MiB); a longer one is
 * refused and skipped. */
MCP_EXTERN int mcp_client_set_max_message(mcp_client *c, size_t bytes);
/* Calls waiting for an answer at once (1..1000000; default 4096); a call
 * started beyond it fails with MCP_EBUSY. */
MCP_EXTERN int mcp_client_set_max_calls(mcp_client *c, int n);
/* input_required rounds one 2026-07-28 call may take before it fails with
 * MCP_EPROTO (1..64; default 8). */
MCP_EXTERN int mcp_client_set_input_rounds(mcp_client *c, int rounds);
/* For a spawned server (mcp_client_connect_stdio): after its standard
 * input was closed, how long it may take to exit before SIGTERM, and after
 * SIGTERM before SIGKILL, both sent to its process group (0..600000 ms;
 * defaults 2000 and 2000).  The child is always reaped. */
MCP_EXTERN int mcp_client_set_kill_grace_ms(mcp_client *c, int64_t eof_to_term_ms,
					    int64_t term_to_kill_ms);
/* HTTP: the bearer token sent as "Authorization: Bearer TOKEN" on every
 * request (copied; NULL: none): over HTTP+SSE on the GET of the event
 * stream and on every POST.  Never written to a log or an error text. */
MCP_EXTERN int mcp_client_set_bearer(mcp_client *c, const char *token);

/* Which HTTP transport mcp_client_connect_http() speaks. */
typedef enum mcp_http_transport {
	/* Streamable HTTP, and HTTP+SSE when the server turns it away, as
	 * the 2025-03-26 transports page asks ("Backwards Compatibility"):
	 * when the last POST of the handshake (initialize; server/discover
	 * under MCP_ERA_MODERN) is answered HTTP 400, 404 or 405 without a
	 * JSON-RPC answer, the client GETs the same URL as an event stream
	 * and goes on in HTTP+SSE.  Nothing else falls back: a server that
	 * cannot be reached, times out, answers 401 or 403 (authorization:
	 * the GET would be refused alike), or answers with a JSON-RPC error,
	 * fails the connect as it is.  When the GET fails too, the error
	 * names both failures. */
	MCP_HTTP_AUTO = 0,
	/* Streamable HTTP only (2025-03-26 and later). */
	MCP_HTTP_STREAMABLE,
	/* HTTP+SSE only (2024-11-05): GET the URL as an event stream, whose
	 * first event (`endpoint`) names the URL the client's messages are
	 * POSTed to, resolved against the URL and refused unless it has the
	 * same origin (scheme, host and port); every message of the server
	 * comes on that stream, and its end is the connection's end: every
	 * waiting call fails with MCP_ECLOSED and the reason. */
	MCP_HTTP_SSE
} mcp_http_transport;
/* The HTTP transport to speak (default MCP_HTTP_AUTO). */
MCP_EXTERN int mcp_client_set_http_transport(mcp_client *c, mcp_http_transport transport);

/* ---------------------------------------------------------------------- */
/* OAuth 2.1: the client gets its own tokens                               */
/* ---------------------------------------------------------------------- */

/* With mcp_client_set_oauth() the HTTP transports answer a server's 401
 * themselves, as the MCP authorization spec (2025-11-25, 2026-07-28) asks:
 * protected-resource metadata (RFC 9728) from the challenge's
 * resource_metadata or the well-known URLs (path-aware first), its
 * `resource` checked against the server's URL; authorization-server
 * metadata (RFC 8414, then OpenID Connect discovery, in the spec's order),
 * its `issuer` compared as a plain string with the one asked for; the
 * 2025-03-26 defaults (/authorize, /token, /register) only when there is
 * no document at all.  The client's identity, in the spec's order: a
 * client registered earlier with the same issuer, the pre-registered one
 * (mcp_client_set_oauth_client), a client ID metadata document (a client
 * id that is an https URL, when the server advertises
 * client_id_metadata_document_supported), dynamic registration (RFC 7591).
 * Then the authorization code grant with PKCE (S256), the resource
 * indicator (RFC 8707) on both requests, `state` and the RFC 9207 `iss`
 * checked; or the client credentials grant.  The request is then sent
 * again, once, with the new token.
 *
 * A 403 with error="insufficient_scope" asks again with the union of the
 * scopes asked so far and the challenge's; a request is authorized at
 * most 3 times, then fails with the reason.  A token is refreshed shortly
 * before it expires and once on a 401 (with the refresh_token grant, when
 * the server gave one: offline_access is asked only when the server lists
 * it).  Every flow of a client runs on one thread of its own, one at a
 * time: requests that need a token meanwhile wait, and are then sent
 * once, with the new token.  No lock is held while any MCP request is in
 * flight.
 *
 * Rules that hold whatever the settings: https for every OAuth endpoint
 * except on a loopback host; redirects are never followed; a token is
 * sent only to the resource it was issued for (the server's URL, checked
 * against the metadata's `resource`); no token or secret appears in any
 * error text; every refusal says why (mcp_call_error, mcp_client_error).
 * The handshake's deadline (mcp_client_set_connect_timeout_ms, 30 s by
 * default) includes the authorization: a host that waits for a person
 * sets it longer.  Only Streamable HTTP: over HTTP+SSE only the token of
 * mcp_client_set_bearer is sent.  Without libcurl the settings are kept
 * and never used. */

/* Which grant gets the tokens. */
typedef enum mcp_oauth_grant {
	MCP_OAUTH_AUTHORIZATION_CODE = 0, /* a person authorizes (the authorize callback) */
	MCP_OAUTH_CLIENT_CREDENTIALS      /* a machine: its secret or its key */
} mcp_oauth_grant;

/* How the client authenticates at the token endpoint. */
typedef enum mcp_oauth_auth_method {
	MCP_OAUTH_AUTH_AUTO = 0,        /* what the registration or the server's
					 * metadata says: basic, post or none */
	MCP_OAUTH_AUTH_NONE,            /* a public client: client_id only */
	MCP_OAUTH_AUTH_SECRET_BASIC,    /* HTTP Basic with the secret */
	MCP_OAUTH_AUTH_SECRET_POST,     /* the secret in the form */
	MCP_OAUTH_AUTH_PRIVATE_KEY_JWT  /* an RFC 7523 assertion signed with the key
					 * (mcp_client_set_oauth_private_key) or by
					 * the signer (mcp_client_set_oauth_signer) */
} mcp_oauth_auth_method;

/* Opens `url` (the authorization request) for a person and waits for the
 * redirect to `redirect_uri`; stores the full URL it was redirected to
 * (with its query: code, state, iss; or error) in *redirect_out, a
 * malloc'd string the library frees.  Returns MCP_OK, or an MCP_E* code
 * (MCP_ECANCELED when the person gave up).  It must return soon after
 * `tok` fires (the client closes): poll mcp_token_fd() or call
 * mcp_token_sleep().  Both strings are borrowed for the call.  Runs on the
 * client's OAuth thread, never two at a time for one client. */
typedef int (*mcp_oauth_authorize_fn)(mcp_client *c, const char *url, const char *redirect_uri,
				      mcp_token *tok, char **redirect_out, void *user);
/* The stored record of `resource` (the server's canonical URL), or NULL:
 * an object the library takes, as save was given it.  Called on the
 * thread of mcp_client_connect_http(), once. */
typedef json_object *(*mcp_oauth_load_fn)(mcp_client *c, const char *resource, void *user);
/* Keep `record` (borrowed; take a reference to keep it) for `resource`.
 * It holds the tokens and the client's registration: access_token,
 * refresh_token, expires_at (seconds since the epoch), scope, issuer,
 * client_id, client_secret, token_endpoint_auth_method; store it as
 * secretly as a password.  Called on the client's OAuth thread after
 * each new token. */
typedef void (*mcp_oauth_save_fn)(mcp_client *c, const char *resource, json_object *record,
				  void *user);
/* Signs an RFC 7523 client assertion for `audience` (the authorization
 * server's issuer) and `client_id`: stores a malloc'd compact JWT in
 * *jwt, which the library frees.  For keys the library must not hold (an
 * HSM, an agent).  MCP_OK or an MCP_E* code.  The client's OAuth
 * thread. */
typedef int (*mcp_oauth_sign_fn)(mcp_client *c, const char *audience, const char *client_id,
				 char **jwt, void *user);

/* Turns OAuth on for mcp_client_connect_http(): the grant, and for
 * MCP_OAUTH_AUTHORIZATION_CODE the callback that lets a person authorize
 * (required; NULL for MCP_OAUTH_CLIENT_CREDENTIALS).  `user` is passed to
 * it.  Before connecting.  MCP_EINVAL for a bad combination. */
MCP_EXTERN int mcp_client_set_oauth(mcp_client *c, mcp_oauth_grant grant,
				    mcp_oauth_authorize_fn authorize, void *user);
/* The client's identity (all copied; each may be NULL).  `client_id`: a
 * pre-registered id, or an https URL of a client ID metadata document,
 * used when the server advertises support for it (else the client
 * registers).  `secret`: the pre-registered client's secret.  `method`:
 * the token endpoint authentication.  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_client(mcp_client *c, const char *client_id,
					   const char *secret, mcp_oauth_auth_method method);
/* The PEM private key (PKCS#8 or traditional; EC P-256 signs ES256, RSA
 * signs RS256) that signs client assertions for
 * MCP_OAUTH_AUTH_PRIVATE_KEY_JWT (copied; never in an error text).
 * MCP_EINVAL when it does not parse.  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_private_key(mcp_client *c, const char *pem);
/* A signer instead of a key (see mcp_oauth_sign_fn).  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_signer(mcp_client *c, mcp_oauth_sign_fn sign, void *user);
/* Space-separated scopes to ask for when neither the challenge nor the
 * resource's metadata names any (copied; NULL: none).  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_scopes(mcp_client *c, const char *scopes);
/* The redirect URI of the authorization request (copied; default
 * "http://127.0.0.1:8976/callback"; a loopback listener is the host's,
 * RFC 8252).  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_redirect_uri(mcp_client *c, const char *uri);
/* Where tokens live between runs: both callbacks or neither (NULL: in
 * memory only).  libmcp never picks a place on disk.  Before connecting. */
MCP_EXTERN int mcp_client_set_oauth_store(mcp_client *c, mcp_oauth_load_fn load,
					  mcp_oauth_save_fn save, void *user);

/* ---------------------------------------------------------------------- */
/* Server-to-client requests and notifications                             */
/* ---------------------------------------------------------------------- */

/* Answers one request the server sent (legacy era) or named in an
 * input_required result (2026-07-28).  Runs on a worker of the client's
 * pool, never on a connect, call or close thread.
 *
 *  method  "roots/list", "sampling/createMessage" or "elicitation/create"
 *          (borrowed, valid until return).
 *  params  the request's params (borrowed; may be NULL).
 *  tok     fired when the server cancels the request, the call it serves
 *          is cancelled, or the client closes: stop and return
 *          MCP_ECANCELED.  Borrowed, valid until return.
 *  result  on MCP_OK, set it to the result object (taken by the library).
 *
 * Return MCP_OK with *result set; MCP_ECANCELED after the token fired
 * (nothing is sent); MCP_EREMOTE with *result set to a JSON-RPC error
 * object ({"code": ..., "message": ...}, taken) to refuse with that error;
 * any other code refuses with a generic error.  Over 2026-07-28 a refusal
 * fails the call that needed the input (MCP_EREMOTE with that error). */
typedef int (*mcp_client_handler_fn)(mcp_client *c, const char *method, json_object *params,
				     mcp_token *tok, json_object **result, void *user);

/* Installs the handler of sampling/createMessage (declares the
 * "sampling" capability).  NULL removes it.  Before connecting. */
MCP_EXTERN int mcp_client_set_sampling_handler(mcp_client *c, mcp_client_handler_fn fn,
					       void *user);
/* Installs the handler of elicitation/create and declares the
 * "elicitation" capability with the modes named: MCP_ELICIT_FORM,
 * MCP_ELICIT_URL or both.  NULL removes it.  Before connecting. */
enum { MCP_ELICIT_FORM = 1, MCP_ELICIT_URL = 2 };
MCP_EXTERN int mcp_client_set_elicitation_handler(mcp_client *c, mcp_client_handler_fn fn,
						  void *user, int modes);
/* Installs a handler of roots/list, overriding the roots added with
 * mcp_client_add_root().  NULL removes it.  Before connecting. */
MCP_EXTERN int mcp_client_set_roots_handler(mcp_client *c, mcp_client_handler_fn fn,
					    void *user);
/* Adds a root (`uri` and `name` copied; name may be NULL) answered to
 * roots/list without a handler, and declares the "roots" capability with
 * listChanged.  While connected it also sends
 * notifications/roots/list_changed (legacy era).  MCP_OK, MCP_EINVAL or
 * MCP_ENOMEM.  Any thread. */
MCP_EXTERN int mcp_client_add_root(mcp_client *c, const char *uri, const char *name);

/* Receives the notifications no call claims: tools, prompts and
 * resources list_changed, resources/updated, elicitation/complete,
 * notifications/message not tied to a call, and any other (one whose
 * method is the empty string is dropped: `method` is never "").  Runs on the
 * client's reader thread (the HTTP transport's thread over HTTP), in the
 * order the server sent them; it must return quickly and must not call
 * blocking client functions.  `method` and `params` are borrowed for the
 * call.  Never called after mcp_client_close() returned.  Before
 * connecting. */
typedef void (*mcp_client_notify_fn)(mcp_client *c, const char *method, json_object *params,
				     void *user);
MCP_EXTERN int mcp_client_set_notification_handler(mcp_client *c, mcp_client_notify_fn fn,
						   void *user);

/* ---------------------------------------------------------------------- */
/* Connecting and closing                                                  */
/* ---------------------------------------------------------------------- */

/* Each connect function opens the transport, does the handshake of the
 * era (initialize and notifications/initialized, or server/discover) and
 * returns when the client is ready for calls.  A client connects once.
 * Call it from the thread that owns the client.  Returns MCP_OK;
 * MCP_EINVAL; MCP_ESTATE (already connected); MCP_ESYS (the transport
 * could not be opened); MCP_ETIMEDOUT (no handshake answer in time);
 * MCP_EREMOTE (the server refused it); MCP_EPROTO (no revision in common,
 * or a malformed answer); MCP_ECLOSED (the server went away).  After a
 * failure, mcp_client_error() says why and mcp_client_free() cleans up. */

/* Spawns `argv[0]` (searched in PATH) with posix_spawn, in a process group
 * of its own, its standard input and output on pipes to the client and
 * its standard error the client's.  `envp` (NULL: the client's
 * environment) and `cwd` (NULL: the client's) are the child's.  Every
 * string is copied before the call returns.  On close the server gets end
 * of input, then SIGTERM, then SIGKILL (mcp_client_set_kill_grace_ms), and
 * is always reaped. */
MCP_EXTERN int mcp_client_connect_stdio(mcp_client *c, char *const argv[], char *const envp[],
					const char *cwd);
/* Speaks over two descriptors (reads `in_fd`, writes `out_fd`; a socket
 * may be both).  They stay the caller's: the client never closes them. */
MCP_EXTERN int mcp_client_connect_fds(mcp_client *c, int in_fd, int out_fd);
/* Speaks to a server embedded in this process (mcp_server_start_memory):
 * the connection is the client's from here on, and mcp_client_close()
 * ends it; release it with mcp_memconn_free() after mcp_client_free(). */
MCP_EXTERN int mcp_client_connect_memory(mcp_client *c, mcp_memconn *conn);
/* HTTP at `url` (http:// or https://; copied) through libcurl, with the
 * transport mcp_client_set_http_transport() chose (by default Streamable
 * HTTP, falling back to HTTP+SSE; mcp_client_transport() says which one
 * it became).  Streamable HTTP: POSTs answered as JSON or as SSE streams,
 * resumed with Last-Event-ID after the server's `retry` when a stream is
 * cut mid-call, the Mcp-Session-Id and MCP-Protocol-Version headers, a
 * GET stream for the server's own messages (legacy era), and DELETE of
 * the session on close.  HTTP+SSE: one GET event stream, a POST of each
 * message to its endpoint (answered 202 or 200; any other status fails
 * that request with MCP_EREMOTE, the status in the error's
 * data.httpStatus), and the connection closed when the stream ends.  One
 * deadline (mcp_client_set_connect_timeout_ms) bounds all of it,
 * fallback included.  MCP_ENOTSUP when libmcp was built without
 * libcurl. */
MCP_EXTERN int mcp_client_connect_http(mcp_client *c, const char *url);

/* Closes the connection: every call in flight is cancelled (the server is
 * sent notifications/cancelled) and fails with MCP_ECLOSED, the handlers
 * still running see their tokens fire and are waited for within the grace
 * period, a spawned server is stopped and reaped, an HTTP session is
 * deleted.  When it returns no handler or notification callback of this
 * client runs any more (except one abandoned at the deadline, counted in
 * mcp_client_stats_json()).  Idempotent.  Any thread but a handler's or a
 * callback's. */
MCP_EXTERN void mcp_client_close(mcp_client *c);

/* 1 while the connection is usable for calls, else 0.  Any thread. */
MCP_EXTERN int mcp_client_connected(mcp_client *c);
/* Why the last connect failed or the connection ended ("" when it did
 * not), e.g. "the server exited with status 3".  Borrowed; valid until the
 * next connect or close or mcp_client_free().  Any thread. */
MCP_EXTERN const char *mcp_client_error(mcp_client *c);
/* Messages of the server the client dropped so far, and in buf[bufsz]
 * (when not NULL) the reason of the last one, e.g. "the server answered
 * under id 1001, which this client never sent" or "the server sent a
 * message larger than the limit of 16777216 bytes ...; it was dropped"
 * (copied; "" when none).  Counted: answers under an id never sent,
 * invalid JSON, invalid messages, messages over mcp_client_set_max_message;
 * not counted: a late answer to a call that timed out or was cancelled.
 * A call that then ends without its answer (MCP_ETIMEDOUT, MCP_ECLOSED,
 * MCP_EPROTO) carries the last reason in mcp_call_error() too.  Any
 * thread. */
MCP_EXTERN uint64_t mcp_client_last_dropped(mcp_client *c, char *buf, size_t bufsz);
/* The negotiated revision (static storage; NULL before a connection).
 * Any thread, once a connect function has returned. */
MCP_EXTERN const char *mcp_client_protocol_version(mcp_client *c);

/* The transport a connection speaks. */
typedef enum mcp_transport_kind {
	MCP_TRANSPORT_NONE = 0,        /* no connect function has succeeded */
	MCP_TRANSPORT_STDIO,           /* mcp_client_connect_stdio */
	MCP_TRANSPORT_FDS,             /* mcp_client_connect_fds */
	MCP_TRANSPORT_MEMORY,          /* mcp_client_connect_memory */
	MCP_TRANSPORT_STREAMABLE_HTTP, /* mcp_client_connect_http: Streamable HTTP */
	MCP_TRANSPORT_HTTP_SSE         /* mcp_client_connect_http: HTTP+SSE (2024-11-05) */
} mcp_transport_kind;
/* The transport the last successful connect ended up on (over HTTP,
 * after the fallback of MCP_HTTP_AUTO), also after the connection ended;
 * MCP_TRANSPORT_NONE before, or when the connect failed.  Any thread,
 * once a connect function has returned. */
MCP_EXTERN mcp_transport_kind mcp_client_transport(mcp_client *c);
/* The server's capabilities, serverInfo and instructions from the
 * handshake (borrowed, read-only; valid until mcp_client_free(); NULL when
 * absent).  Any thread, once a connect function has returned; json-c
 * objects are not thread-safe, so read them from one thread at a time. */
MCP_EXTERN json_object *mcp_client_server_capabilities(mcp_client *c);
MCP_EXTERN json_object *mcp_client_server_info(mcp_client *c);
MCP_EXTERN const char *mcp_client_server_instructions(mcp_client *c);
/* For a spawned server that has ended and was reaped: its wait status
 * (see waitpid(2)) in *status and MCP_OK; MCP_ESTATE while it runs or
 * before it was reaped; MCP_EINVAL for other transports.  Any thread. */
MCP_EXTERN int mcp_client_server_status(mcp_client *c, int *status);
/* A newly allocated JSON object text of counters (calls started,
 * completed, failed, cancelled; answers dropped because they matched no
 * waiting call; handlers run and abandoned), or NULL.  Free it with
 * free().  Any thread. */
MCP_EXTERN char *mcp_client_stats_json(mcp_client *c);

/* ---------------------------------------------------------------------- */
/* Call handles                                                            */
/* ---------------------------------------------------------------------- */

/* A call is made, optionally configured, started, then waited for (or
 * polled) and freed.  Any thread may make and start calls, concurrently.
 * One thread at a time uses a given call handle (mcp_call_cancel excepted:
 * it is safe from any thread at any time before mcp_call_free).
 *
 * Over 2026-07-28 one call may take several round trips: an
 * input_required result is answered by the client's handlers on its pool
 * and the request sent again with the responses and the server's state,
 * up to mcp_client_set_input_rounds(); the call ends with the final
 * result. */

/* A call of `method` with `params` (an object, borrowed: copied here; NULL
 * for none).  NULL when out of memory or an argument is invalid.  Not yet
 * sent: see mcp_call_start(). */
MCP_EXTERN mcp_call *mcp_call_new(mcp_client *c, const char *method, json_object *params);
/* Shorthands for the calls that take arguments (`args` borrowed, may be
 * NULL; strings copied). */
MCP_EXTERN mcp_call *mcp_call_new_tool(mcp_client *c, const char *name, json_object *args);
MCP_EXTERN mcp_call *mcp_call_new_read(mcp_client *c, const char *uri);
MCP_EXTERN mcp_call *mcp_call_new_prompt(mcp_client *c, const char *name, json_object *args);

/* Progress of this call (notifications/progress with its token): called
 * on the reader thread (the HTTP transport's thread over HTTP) in the
 * order sent; `total` is negative when the
 * server gave none; `message` borrowed, may be NULL.  Must return quickly.
 * Before mcp_call_start(). */
typedef void (*mcp_call_progress_fn)(mcp_call *call, double progress, double total,
				     const char *message, void *user);
MCP_EXTERN int mcp_call_set_progress(mcp_call *call, mcp_call_progress_fn fn, void *user);
/* Log messages of this call (notifications/message), and the level it
 * asks for (2026-07-28 sends it in the request; legacy servers use the
 * session's level, mcp_client_set_log_level).  A message reaches the call
 * when the transport ties it to the call (the call's HTTP response
 * stream), or when this is the only call in flight that has a log
 * callback; otherwise the client's notification handler gets it.  `data`
 * borrowed.  Reader thread; must return quickly.  Before start. */
typedef void (*mcp_call_log_fn)(mcp_call *call, mcp_log_level level, const char *logger,
				json_object *data, void *user);
MCP_EXTERN int mcp_call_set_log(mcp_call *call, mcp_log_level min_level, mcp_call_log_fn fn,
				void *user);
/* Cancels the call when `tok` fires (borrowed: it must outlive the call).
 * Before start.  These three setters: the thread that made the call,
 * before mcp_call_start(); MCP_OK, MCP_EINVAL or MCP_ESTATE. */
MCP_EXTERN int mcp_call_set_token(mcp_call *call, mcp_token *tok);

/* Sends the call.  MCP_OK; MCP_ESTATE (started already, or the client is
 * not connected); MCP_ECLOSED; MCP_EBUSY (mcp_client_set_max_calls);
 * MCP_ENOMEM.  When it fails the call has ended with that code. */
MCP_EXTERN int mcp_call_start(mcp_call *call);
/* Waits up to `timeout_ms` (< 0: no limit) for the call to end.  Returns
 * the call's outcome: MCP_OK (*result: the result object, taken by the
 * caller), MCP_EREMOTE (*result: the JSON-RPC error object {code, message,
 * data?}, the caller's), MCP_ECANCELED, MCP_ECLOSED (the connection ended;
 * see mcp_call_error()), MCP_EPROTO, MCP_ENOTSUP or MCP_ENOMEM (*result
 * NULL); or MCP_ETIMEDOUT when the wait timed out and the call goes on.
 * The result is handed over once: the first wait with a non-NULL `result`
 * after the end takes it, later waits return the same outcome with
 * *result NULL.  `result` may be NULL. */
MCP_EXTERN int mcp_call_wait(mcp_call *call, int64_t timeout_ms, json_object **result);
/* 1 when the call has ended (mcp_call_wait would not block), else 0.
 * Any thread. */
MCP_EXTERN int mcp_call_done(mcp_call *call);
/* A descriptor that becomes readable when the call ends (owned by the
 * call; never read or close it), or -1 when one cannot be made.  Any
 * thread. */
MCP_EXTERN int mcp_call_fd(mcp_call *call);
/* Cancels the call: notifications/cancelled is sent for the request in
 * flight, a handler answering its input round sees its token fire, the
 * call ends with MCP_ECANCELED, and an answer that arrives later is
 * dropped (counted).  Returns 1 when this cancelled it, 0 when it had
 * ended.  Any thread, also concurrently with a wait. */
MCP_EXTERN int mcp_call_cancel(mcp_call *call);
/* Why the call failed, in words (borrowed, valid until mcp_call_free;
 * "" while in flight or when it did not fail).  Any thread. */
MCP_EXTERN const char *mcp_call_error(mcp_call *call);
/* The JSON-RPC id of the request now (or last) in flight for the call,
 * or -1 before start.  Any thread. */
MCP_EXTERN int64_t mcp_call_request_id(mcp_call *call);
/* Cancels the call if it is still in flight, and releases the handle.
 * NULL is ignored.  The thread using the handle; never from the call's
 * own progress or log callback. */
MCP_EXTERN void mcp_call_free(mcp_call *call);

/* ---------------------------------------------------------------------- */
/* Blocking calls                                                          */
/* ---------------------------------------------------------------------- */

/* Each sends one request (the list helpers: one per page, following
 * nextCursor until the last page) and waits for its end.  `timeout_ms`
 * bounds the whole call (< 0: no limit); at the timeout the call is
 * cancelled (notifications/cancelled is sent) and MCP_ETIMEDOUT returned.
 * `tok` (may be NULL, borrowed) cancels it from another thread:
 * MCP_ECANCELED.  Other returns are those of mcp_call_wait(); on MCP_OK
 * and MCP_EREMOTE *out (when not NULL) is the caller's.  Any thread,
 * concurrently. */

/* Any request: `params` borrowed (NULL: none); *out the result object. */
MCP_EXTERN int mcp_client_request(mcp_client *c, const char *method, json_object *params,
				  int64_t timeout_ms, mcp_token *tok, json_object **out);
/* The lists, every page joined: *out is the array of tools, resources,
 * resource templates or prompts.  More than 10,000 pages, or a cursor
 * that repeats, fails with MCP_EPROTO. */
MCP_EXTERN int mcp_client_list_tools(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				     json_object **out);
/* Custom headers from tool parameters (SEP-2243; 2026-07-28 over
 * Streamable HTTP only, nothing changes on other transports or in the
 * legacy era).  A tool's inputSchema may mark properties with
 * "x-mcp-header": NAME; a tools/call of that tool then sends each such
 * argument's value as the header Mcp-Param-NAME too, so that proxies
 * route without reading the body.
 *
 * mcp_client_list_tools() leaves out, as the specification requires, every
 * tool with an invalid declaration: a NAME that is empty, not an HTTP
 * token (a space, ':', a control or non-ASCII character), or equal to
 * another without regard to case; or one on a property whose "type" is
 * not "string", "integer" or "boolean" (not "number", not a list of
 * types).  Declarations count at any depth reached through "properties".
 * The tools kept are otherwise handed over exactly as the server sent
 * them (every JSON Schema keyword, "$schema", "$defs" and "$ref"
 * included, nothing resolved or rewritten), and their declarations are
 * remembered, replacing those of the previous listing.
 *
 * Every later call of a remembered tool (mcp_client_call_tool,
 * mcp_call_new_tool, or "tools/call" through mcp_client_request) sends one
 * header per declared argument present: a string as it is, an integer in
 * decimal, a boolean as "true" or "false"; a value that is not printable
 * ASCII, starts or ends with a space, or itself looks like
 * "=?base64?...?=" is sent as "=?base64?" + the Base64 (standard
 * alphabet, padded) of its UTF-8 bytes + "?=".  A null or absent
 * argument, an object or an array sends none.  A tool never listed gets
 * no Mcp-Param headers; a server that needs them refuses the call
 * (MCP_EREMOTE).
 *
 * mcp_client_tools_rejected() returns how many tools the listings of this
 * client left out so far, and in buf[bufsz] (when not NULL; copied; ""
 * when none) the last reason, e.g. 'tool "t" left out: the x-mcp-header
 * of property "v" has a space'.  This is the warning the specification
 * asks a client to give: the library never prints.  Any thread. */
MCP_EXTERN uint64_t mcp_client_tools_rejected(mcp_client *c, char *buf, size_t bufsz);
MCP_EXTERN int mcp_client_list_resources(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
					 json_object **out);
MCP_EXTERN int mcp_client_list_resource_templates(mcp_client *c, int64_t timeout_ms,
						  mcp_token *tok, json_object **out);
MCP_EXTERN int mcp_client_list_prompts(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				       json_object **out);
/* tools/call: `args` borrowed (NULL: {}); *out the CallToolResult (a
 * tool's own failure is MCP_OK with "isError": true in it). */
MCP_EXTERN int mcp_client_call_tool(mcp_client *c, const char *name, json_object *args,
				    int64_t timeout_ms, mcp_token *tok, json_object **out);
/* resources/read: *out the ReadResourceResult. */
MCP_EXTERN int mcp_client_read_resource(mcp_client *c, const char *uri, int64_t timeout_ms,
					mcp_token *tok, json_object **out);
/* resources/subscribe and resources/unsubscribe (legacy era; over
 * 2026-07-28 MCP_ENOTSUP: updates come on a subscriptions/listen call). */
MCP_EXTERN int mcp_client_subscribe(mcp_client *c, const char *uri, int64_t timeout_ms,
				    mcp_token *tok);
MCP_EXTERN int mcp_client_unsubscribe(mcp_client *c, const char *uri, int64_t timeout_ms,
				      mcp_token *tok);
/* prompts/get: `args` an object of strings (borrowed; NULL: none). */
MCP_EXTERN int mcp_client_get_prompt(mcp_client *c, const char *name, json_object *args,
				     int64_t timeout_ms, mcp_token *tok, json_object **out);
/* completion/complete: `ref` the reference object ({"type": "ref/prompt",
 * "name": ...} or {"type": "ref/resource", "uri": ...}, borrowed), the
 * argument's name and value so far, `context` the resolved arguments
 * (borrowed; NULL: none).  *out the CompleteResult. */
MCP_EXTERN int mcp_client_complete(mcp_client *c, json_object *ref, const char *argument,
				   const char *value, json_object *context, int64_t timeout_ms,
				   mcp_token *tok, json_object **out);
/* logging/setLevel (legacy era).  Over 2026-07-28 it sets the level sent
 * in every request's _meta and returns MCP_OK without a round trip. */
MCP_EXTERN int mcp_client_set_log_level(mcp_client *c, mcp_log_level level, int64_t timeout_ms,
					mcp_token *tok);
/* ping (legacy era; over 2026-07-28, server/discover stands in). */
MCP_EXTERN int mcp_client_ping(mcp_client *c, int64_t timeout_ms, mcp_token *tok);

/* Skills (the extension io.modelcontextprotocol/skills, SEP-2640), as a
 * host uses them.
 *
 * mcp_client_list_skills: skills/list, every page joined; *out the array
 * of skill entries (each {"uri", "frontmatter", "resources": [{"uri",
 * "digest", "size"}]}), the caller's.  Listing reads no file: the
 * extension forbids fetching a skill's files before the host needs them,
 * and nothing here does so on its own.
 *
 * mcp_client_read_skill_file: reads one file of a listed skill with
 * resources/read and verifies it against the entry before handing it
 * over.  `entry` is one element of that array (borrowed); `uri` one of its
 * "resources" (NULL: the entry's own "uri", its SKILL.md).  The file's
 * bytes (a text content's UTF-8, or a blob decoded) must have the entry's
 * "size" (when it gives one) and its "digest" ("sha256:" and 64 hex
 * digits); for the SKILL.md the YAML frontmatter parsed from the bytes
 * must also equal the entry's "frontmatter", field by field.  On MCP_OK
 * *data (malloc'd, NUL-terminated, the caller frees it) holds the bytes
 * and *len (may be NULL) their count.  Otherwise *data is NULL, nothing
 * unverified is handed over, and why[whylen] (may be NULL; copied) names
 * the reason, e.g. "skill://s/SKILL.md: digest mismatch (the content is
 * sha256:...)":
 *   MCP_EPROTO   size, digest or frontmatter mismatch, no digest in the
 *                entry, or a read with no text or blob;
 *   MCP_ENOENT   `uri` is not among the entry's files (nothing to verify
 *                it against);
 *   MCP_EINVAL   no client, no `data`, or `entry` not an object;
 *   otherwise the code of the read, as for mcp_client_read_resource().
 * Any thread, concurrently. */
MCP_EXTERN int mcp_client_list_skills(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				      json_object **out);
MCP_EXTERN int mcp_client_read_skill_file(mcp_client *c, json_object *entry, const char *uri,
					  int64_t timeout_ms, mcp_token *tok, char **data,
					  size_t *len, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif /* MCP_CLIENT_H */
