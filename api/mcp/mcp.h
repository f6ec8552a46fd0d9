/*
 * mcp.h - the public interface of libmcp, a library for writing Model
 * Context Protocol (MCP) servers in C.
 *
 * A server links libmcp, registers tools, and calls one run function.  The
 * library owns everything between the bytes on the wire and the handler:
 * framing, JSON-RPC 2.0, the MCP lifecycle, a worker pool, cancellation,
 * server-to-client requests and an orderly shutdown that never loses or
 * duplicates an answer.
 *
 * Conventions used throughout this header:
 *
 *  - Errors are negative MCP_E* codes; mcp_strerror() names them.  No
 *    function sets errno as its way of reporting, none calls exit() or
 *    abort(), none prints to stdout.
 *  - Strings handed to the library are copied; the caller keeps ownership.
 *    Text that goes on the wire (names, content, messages) must be valid
 *    UTF-8: MCP messages are UTF-8 JSON and the library does not re-encode.
 *  - json-c objects are either *borrowed* (the library neither keeps nor
 *    frees them past the call, like json_object_object_get_ex) or *taken*
 *    (the library now owns the reference, like json_object_object_add).
 *    Each function says which.  Objects the library returns are owned by the
 *    caller, who releases them with json_object_put(), unless stated
 *    otherwise.  json-c objects are not thread-safe: a tree belongs to one
 *    thread at a time.
 *  - Thread-safety is stated per function.  "Any thread" means the function
 *    may be called concurrently with anything else, including a running
 *    server.
 */
#ifndef MCP_MCP_H
#define MCP_MCP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MCP_BUILDING_LIBRARY) && defined(__GNUC__)
#define MCP_EXTERN __attribute__((visibility("default")))
#else
#define MCP_EXTERN
#endif

#if defined(__GNUC__)
#define MCP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MCP_PRINTF(fmt, args)
#endif

/* ---------------------------------------------------------------------- */
/* Version                                                                 */
/* ---------------------------------------------------------------------- */

/* The version of the header the program was compiled with.  MCP_VERSION_NUM
 * packs it as 0xMMmmpp (major, minor, patch; one byte each), so versions
 * compare as integers: `#if MCP_VERSION_NUM >= 0x000200`.  The major number
 * changes only when the ABI breaks; the shared object's name (libmcp.so.N)
 * follows it. */
#define MCP_VERSION_MAJOR 0
#define MCP_VERSION_MINOR 1
#define MCP_VERSION_PATCH 0
#define MCP_VERSION_NUM \
	((MCP_VERSION_MAJOR << 16) | (MCP_VERSION_MINOR << 8) | MCP_VERSION_PATCH)
#define MCP_VERSION_STRING "0.1.0"

/* The version of the library the program runs with, which may be newer than
 * the header it was compiled with: mcp_version() returns its MCP_VERSION_NUM,
 * mcp_version_string() its MCP_VERSION_STRING (static; never NULL).  A
 * program that needs a function added in a later minor release compares
 * mcp_version() with that release's number before it relies on it.  Any
 * thread. */
MCP_EXTERN unsigned int mcp_version(void);
MCP_EXTERN const char *mcp_version_string(void);

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */
/* ---------------------------------------------------------------------- */

typedef enum mcp_error {
	MCP_OK = 0,
	MCP_ENOMEM = -1,    /* an allocation failed */
	MCP_EINVAL = -2,    /* an argument is invalid */
	MCP_ECANCELED = -3, /* the request's cancellation token fired */
	MCP_ETIMEDOUT = -4, /* a wait reached its timeout */
	MCP_ECLOSED = -5,   /* the connection is closed or closing */
	MCP_ENOTSUP = -6,   /* the client did not declare the capability */
	MCP_EREMOTE = -7,   /* the client answered with a JSON-RPC error */
	MCP_EBUSY = -8,     /* a configured limit was reached */
	MCP_ESTATE = -9,    /* not allowed in the current state */
	MCP_EEXIST = -10,   /* a name is already registered */
	MCP_ENOENT = -11,   /* no such name */
	MCP_ESYS = -12,     /* a system call failed */
	MCP_EPROTO = -13,   /* the client's answer violates the protocol */
	MCP_EINPUT = -14,   /* returned by a handler: input from the client is
			       needed first (mcp_ctx_require_input) */
	MCP_ERESULT = -15   /* returned by a handler: answer with the error
			       set on its result; the error setters
			       (mcp_result_set_error, ...) return it, so
			       `return mcp_result_set_error(...)` sends it */
} mcp_error;

/* Returns a static, human-readable description of an MCP_E* code (or of an
 * unknown one).  Never NULL.  Any thread. */
MCP_EXTERN const char *mcp_strerror(int err);

/* JSON-RPC and MCP error codes the library writes on the wire. */
#define MCP_JSONRPC_PARSE_ERROR (-32700)
#define MCP_JSONRPC_INVALID_REQUEST (-32600)
#define MCP_JSONRPC_METHOD_NOT_FOUND (-32601)
#define MCP_JSONRPC_INVALID_PARAMS (-32602)
#define MCP_JSONRPC_INTERNAL_ERROR (-32603)
/* resources/read or resources/subscribe of an unknown URI (data: {uri}). */
#define MCP_JSONRPC_RESOURCE_NOT_FOUND (-32002)
/* The request needs the user to complete a URL elicitation first. */
#define MCP_JSONRPC_URL_ELICITATION_REQUIRED (-32042)
/* A server-to-client request failed because the connection closed. */
#define MCP_JSONRPC_CONNECTION_CLOSED (-32000)
/* A server-to-client request timed out. */
#define MCP_JSONRPC_REQUEST_TIMEOUT (-32001)
/* The server refused a request because a configured limit was reached (the
 * work queue is full).  Retrying later may succeed. */
#define MCP_JSONRPC_SERVER_BUSY (-32050)

/* ---------------------------------------------------------------------- */
/* Protocol revisions                                                      */
/* ---------------------------------------------------------------------- */

/* The newest revision initialize negotiates (the library also accepts
 * 2024-11-05, 2025-03-26 and 2025-06-18 there).  Requests of the stateless
 * revision 2026-07-28, which carry their version and the client's
 * capabilities in their own _meta, are served beside them on the same
 * connection or endpoint.
 *
 * A connection that negotiated an older revision is written only what
 * that revision has; the rest is left out or turned into text, never an
 * error for the handler (each function below says what it becomes).  For
 * 2024-11-05, the first revision: no "completions" capability (the method
 * is served, as that revision had it without a capability), no tool
 * annotations, no progress message, audio content as a text note, no JSON-RPC
 * batches (refused with -32600, as in every revision but 2025-03-26), and
 * what 2025-03-26 also lacks (titles, output schemas, structuredContent,
 * resource_link content, elicitation). */
#define MCP_PROTOCOL_LATEST "2025-11-25"
#define MCP_PROTOCOL_STATELESS "2026-07-28"

/* Returns 1 when the library can serve revision `version`, else 0. */
MCP_EXTERN int mcp_protocol_supported(const char *version);

/* ---------------------------------------------------------------------- */
/* Cancellation reasons                                                    */
/* ---------------------------------------------------------------------- */

/* Why a request's cancellation token fired.  A token fires at most once and
 * keeps its first reason. */
typedef enum mcp_cancel_reason {
	MCP_CANCEL_NONE = 0,        /* not cancelled */
	MCP_CANCEL_PEER,            /* the client sent notifications/cancelled */
	MCP_CANCEL_TRANSPORT_CLOSED,/* the connection closed (EOF, write error) */
	MCP_CANCEL_SHUTDOWN,        /* mcp_server_shutdown() or a signal */
	MCP_CANCEL_TIMEOUT,         /* a deadline for the request passed */
	MCP_CANCEL_SESSION_DELETED, /* HTTP: the client ended its session (DELETE) */
	MCP_CANCEL_SESSION_EXPIRED  /* HTTP: the session was idle too long */
} mcp_cancel_reason;

/* Returns "none", "peer_cancelled", "transport_closed", "shutdown",
 * "timeout", "session_deleted" or "session_expired".  Static storage; any
 * thread. */
MCP_EXTERN const char *mcp_cancel_reason_name(mcp_cancel_reason reason);

/* ---------------------------------------------------------------------- */
/* Opaque types                                                            */
/* ---------------------------------------------------------------------- */

typedef struct mcp_server mcp_server; /* registries, pool, configuration */
typedef struct mcp_ctx mcp_ctx;       /* one running request, for a handler */
typedef struct mcp_result mcp_result; /* a tool result being built */

/* ---------------------------------------------------------------------- */
/* Descriptors                                                             */
/* ---------------------------------------------------------------------- */

/* The structs a caller fills to describe a tool, resource, resource
 * template, prompt, prompt argument or form field start with
 * `size_t struct_size`, which the caller sets to the size of the struct it
 * was compiled with, always through the struct's initializer macro:
 *
 *     mcp_tool t = { MCP_TOOL_INIT, .name = "greet", .fn = greet };
 *
 * (or `memset(&t, 0, sizeof t); t.struct_size = sizeof t;`).  New members
 * are only ever added at the end, so the library reads a struct by the
 * size it declares: members past that size count as zero (a program built
 * against an older header keeps working with a newer library), and a
 * struct larger than the library knows is accepted when its unknown tail
 * is all zero bytes (a program built against a newer header runs with an
 * older library as long as it leaves the newer members unset), else
 * refused with MCP_ENOTSUP.  A struct_size smaller than the first release
 * of the struct (0: the macro was forgotten) is MCP_EINVAL.  Leave unused
 * members zero: the macros zero every member they do not name. */

/* ---------------------------------------------------------------------- */
/* Server object                                                           */
/* ---------------------------------------------------------------------- */

/* Creates a server that reports `name` and `version` in serverInfo (both
 * copied; neither may be NULL).  Returns NULL when out of memory or when an
 * argument is NULL.  The caller owns the server and releases it with
 * mcp_server_free(). */
MCP_EXTERN mcp_server *mcp_server_new(const char *name, const char *version);

/* A server is configured with the setters of "Server configuration" at the
 * end of this header, fills its registries (tools, resources, prompts,
 * skills) and runs on one transport. */

/* Releases a server that is not running.  Calling it while a run function
 * is still executing on another thread is undefined.  Handlers abandoned at
 * a shutdown deadline keep the memory they can reach alive on purpose (it is
 * not freed while they may still run); everything else is freed.  NULL is
 * ignored. */
MCP_EXTERN void mcp_server_free(mcp_server *srv);

/* Runs the server on standard input and output until the orderly shutdown
 * completes: end of input, a write error on standard output, or
 * mcp_server_shutdown().  Standard output carries only JSON-RPC messages;
 * the library never writes to it otherwise.  A reader that has gone is a
 * write error, never SIGPIPE at the process: the library blocks SIGPIPE in
 * the threads that write for it (its own, and this one while it runs) and
 * takes back what such a write raised; the process's SIGPIPE disposition
 * is never changed.  Returns MCP_OK
 * after an orderly shutdown (whatever triggered it), MCP_ESTATE when the
 * server is already running or has run, or another MCP_E* code when it
 * could not start.  Blocks the calling thread, which becomes the reader. */
MCP_EXTERN int mcp_server_run_stdio(mcp_server *srv);

/* Like mcp_server_run_stdio() on arbitrary descriptors (a pipe pair, a
 * socket twice).  The descriptors stay open and owned by the caller. */
MCP_EXTERN int mcp_server_run_fds(mcp_server *srv, int in_fd, int out_fd);

/* An in-process connection, for embedding a server in an application or
 * driving it from tests without pipes.  The messages are JSON-RPC texts
 * without newlines, exactly as they would travel over stdio. */
typedef struct mcp_memconn mcp_memconn;

/* Starts serving one in-process connection on a background thread (the
 * connection's reader); *out receives the client end, owned by the caller
 * and released with mcp_memconn_free().  Returns MCP_OK, MCP_ESTATE when the
 * server is already running or has run, MCP_ENOMEM or MCP_ESYS. */
MCP_EXTERN int mcp_server_start_memory(mcp_server *srv, mcp_memconn **out);
/* Sends one message (copied) to the server.  MCP_OK, MCP_ECLOSED after
 * mcp_memconn_close(), MCP_ENOMEM.  Thread-safe. */
MCP_EXTERN int mcp_memconn_send(mcp_memconn *c, const char *msg, size_t len);
/* Receives the next message the server wrote, waiting up to timeout_ms
 * (< 0: forever).  Returns 1 with *msg (NUL-terminated, caller frees with
 * free()) and *len, 0 on timeout, or MCP_ECLOSED when the server closed its
 * output and nothing is left.  Thread-safe. */
MCP_EXTERN int mcp_memconn_recv(mcp_memconn *c, int64_t timeout_ms, char **msg, size_t *len);
/* Ends the client's input: the server sees end of input and runs its
 * orderly shutdown, as on stdio: running handlers see MCP_CANCEL_TRANSPORT_
 * CLOSED; answers they still return normally are delivered, those that stop
 * because of it write nothing; then the output closes.  Idempotent. */
MCP_EXTERN void mcp_memconn_close(mcp_memconn *c);
/* Closes the input if still open, waits for the server's run to finish and
 * releases the connection.  Returns the run's result (MCP_OK after an
 * orderly shutdown).  NULL gives MCP_EINVAL. */
MCP_EXTERN int mcp_memconn_free(mcp_memconn *c);

/* Runs the server as an MCP Streamable HTTP endpoint at `/mcp` on
 * `address` ("127.0.0.1:8080"; port 0 picks a free one, reported in
 * *bound_port when bound_port is not NULL).  Each client session (created
 * by initialize, named by the Mcp-Session-Id header, ended by DELETE or
 * after 30 minutes idle) is served like a stdio connection on the shared
 * worker pool, with the same promises (cancellation, server-to-client
 * requests failed at its end, nothing written after it), but with no
 * thread of its own: libmicrohttpd's two threads read every connection,
 * and the calling thread watches waiting ones, so an idle session costs
 * memory only (a few KiB).  A request is answered on an SSE stream when the client
 * accepts text/event-stream (its progress, logs and server-to-client
 * requests travel there first), else as one JSON body; messages not tied to
 * a request go to the session's GET stream.  Every SSE event has an id;
 * a client whose SSE stream ended (it disconnected, or the handler called
 * mcp_ctx_close_stream) resumes it with GET and Last-Event-ID and gets what
 * followed (finished streams are kept for replay, the last 16 per session,
 * with up to 256 KiB of delivered events each).  A client that disconnects
 * mid-request does not cancel it: the handler runs on; its answer waits for
 * the resumption on an SSE stream and is dropped for a JSON response.
 * A POST without Mcp-Session-Id that is not an initialize is a 2026-07-28
 * request (in stateless mode, when its _meta names a version; its
 * MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers must
 * match the body, the last for tool arguments whose schema names them with
 * "x-mcp-header"), served without a session from its own _meta after checks whose
 * errors carry HTTP statuses (400 for -32602, -32020, -32021, -32022; 404
 * for -32601); it is answered as JSON, or as SSE without event ids when it
 * asked for progress or logs, and a client that disconnects cancels it.
 * A 2025-03-26 session may POST a JSON-RPC batch: it is answered with one
 * JSON array (202 when nothing in it is answered).  A client that
 * initializes with 2024-11-05, whose revision had HTTP+SSE and no
 * Streamable HTTP, is served all the same at that revision (what it
 * receives is of its revision; only the transport is newer).  Requests whose Host or
 * Origin is not allowed get 403 (mcp_server_add_http_allowed_host).  The
 * settings are under "Server configuration".  Blocks until
 * mcp_server_shutdown(); returns MCP_OK, MCP_EINVAL (bad address),
 * MCP_ESTATE, MCP_ESYS (cannot bind) or MCP_ENOTSUP (built without
 * libmicrohttpd, or its shared library cannot be loaded: libmcp opens it
 * with dlopen at the first call, so a server that only speaks stdio never
 * maps it and what it pulls in). */
MCP_EXTERN int mcp_server_run_http(mcp_server *srv, const char *address, int *bound_port);

/* Starts the orderly shutdown of a running server: cancels every request
 * with MCP_CANCEL_SHUTDOWN, fails pending server-to-client requests, waits
 * for handlers up to the grace period, flushes and returns from the run
 * function.  Any thread; a no-op when already shutting down.  A shutdown
 * requested before the run function starts makes it return at once (so a
 * SIGTERM that arrives during start-up is not lost).  Does not wait for the
 * shutdown to complete. */
MCP_EXTERN void mcp_server_shutdown(mcp_server *srv);

/* The same, safe to call from a signal handler (it only writes to an
 * eventfd).  Any thread, any context. */
MCP_EXTERN void mcp_server_shutdown_from_signal(mcp_server *srv);

/* Returns a newly allocated JSON object text of the engine counters:
 * started, completed, cancelled_peer, cancelled_transport, responses_written,
 * responses_dropped, dropped_queued, pending_failed, abandoned,
 * inflight_left, pending_left, rejected (requests answered with an error
 * before reaching a handler: a duplicate in-flight id, or a full work
 * queue), idle_polls and idle_poll_hits (the workers' polls for work
 * before sleeping), ran_here (calls of MCP_TOOL_NONBLOCKING tools run
 * on the thread that read them), ran_here_refused and ran_here_overran
 * (those that broke the promise; see MCP_TOOL_NONBLOCKING).  Counters
 * cover every session the server has run.  The caller
 * frees it with free().  NULL when out of memory.  Any thread. */
MCP_EXTERN char *mcp_server_stats_json(mcp_server *srv);

/* ---------------------------------------------------------------------- */
/* Tools                                                                   */
/* ---------------------------------------------------------------------- */

/* A tool handler runs on a worker thread.
 *
 *  ctx   the request context, valid until the handler returns.
 *  args  the call's arguments object (an empty object when the client sent
 *        none); borrowed, valid until the handler returns.  Unless the tool
 *        sets MCP_TOOL_UNCHECKED_ARGS, the library has checked it against
 *        input_schema first: the handler only runs with arguments that
 *        match, and reads them with mcp_args_*() without type checks.  A
 *        call whose arguments do not match is answered, without running
 *        the handler, with a tool error (isError: true) whose text names
 *        the path and the rule, such as "Input validation error: /a:
 *        expected number, got string (type)" (SEP-1303: the model sees it
 *        and can correct itself).
 *  out   the result to fill with mcp_result_* (owned by the library).
 *  user  the pointer given at registration.
 *
 * What the handler returns, and what the client gets:
 *  - MCP_OK: `out`.  Unless the tool sets MCP_TOOL_UNCHECKED_OUTPUT, a
 *    tool with an output_schema must have set structuredContent that
 *    matches it (isError results are exempt): otherwise the client gets
 *    -32603 naming the path and rule, and the trace hook an
 *    "invalid_output" line, since the fault is the server's.
 *  - The result of mcp_result_tool_error(): the tool failed at its task
 *    in a way the model should read (a file not found, a value the schema
 *    could not rule out, a service down).  This is the usual failure.
 *  - The result of mcp_result_set_error() or
 *    mcp_result_set_url_elicitation_required() (MCP_ERESULT): that
 *    JSON-RPC error, for protocol-level answers with a code of their own
 *    (-32042 URL elicitation required).  An error set on `out` is sent
 *    whatever the handler then returns, except after cancellation.
 *  - MCP_EINVAL with nothing set: a tool error too (isError: true) with
 *    the content the handler added, or a generic text; never -32602.
 *  - MCP_ECANCELED when the handler stopped because its token fired:
 *    nothing is written.
 *  - MCP_EINPUT: see mcp_ctx_require_input().
 *  - Any other MCP_E* code: -32603 Internal error.
 *
 * If the client cancelled the request (MCP_CANCEL_PEER), nothing is written
 * whatever the handler returns. */
typedef int (*mcp_tool_fn)(mcp_ctx *ctx, json_object *args, mcp_result *out,
			   void *user);

/* A tool description.  Every string is copied at registration. */
/* Whether a tool may run as a task: the client gets a task id at once and
 * polls for the result.  2025-11-25 clients ask for a task with
 * params.task; for 2026-07-28 requests (the io.modelcontextprotocol/tasks
 * extension) the server decides, for requests that declare the extension:
 * MCP_TASKS_OPTIONAL and MCP_TASKS_REQUIRED tools become tasks there (see
 * MCP_TOOL_TASK_BY_HANDLER), and a request that does not declare it gets
 * a plain call of an optional tool and -32021 for a required one. */
typedef enum mcp_task_support {
	MCP_TASKS_FORBIDDEN = 0, /* plain calls only (the default) */
	MCP_TASKS_OPTIONAL,      /* either way, as the client asks */
	MCP_TASKS_REQUIRED       /* task-augmented calls only */
} mcp_task_support;

/* mcp_tool.flags: each switches off one check or switches one on. */
/* The handler checks its arguments itself: they reach it unchecked. */
#define MCP_TOOL_UNCHECKED_ARGS 0x1u
/* structuredContent is sent without checking it against output_schema. */
#define MCP_TOOL_UNCHECKED_OUTPUT 0x2u
/* "format" in input_schema asserts (date-time, date, time, duration,
 * email, hostname, ipv4, ipv6, uri, uri-reference, uuid, regex,
 * json-pointer, ...) instead of being an annotation, the 2020-12 default. */
#define MCP_TOOL_CHECK_FORMATS 0x4u
/* 2026-07-28 tasks: the handler decides when its call becomes a task
 * (mcp_ctx_become_task), for instance after it gathered input through
 * input_required rounds; without it a tool whose task_support is not
 * MCP_TASKS_FORBIDDEN is made a task before its handler runs, for every
 * request that declares the tasks extension. */
#define MCP_TOOL_TASK_BY_HANDLER 0x8u
/* The handler never waits: it computes its answer from its arguments and
 * memory of its own and returns, in well under a millisecond.  Its calls
 * then run on the thread that read the request (the connection's reader,
 * or an HTTP thread) instead of a worker, which saves the hand-off (a
 * thread wake-up, and over HTTP a suspend and resume of the connection).  The tool must
 * keep task_support at MCP_TASKS_FORBIDDEN (a task is long work by
 * definition; mcp_server_add_tool refuses the pair), and with request
 * hooks installed (mcp_server_set_request_hooks) its calls run on a worker
 * as any other.
 *
 * What the promise excludes, and what breaking it costs:
 *  - every mcp_ctx_* call that would wait for the client or the clock
 *    (mcp_ctx_sleep, mcp_ctx_wait, roots, sampling, elicitation, the input
 *    rounds of a legacy client) returns MCP_ESTATE at once instead;
 *  - a call that takes longer than its budget (10 ms of wall time unless
 *    mcp_server_set_nonblocking_budget_ms says otherwise) has held that
 *    thread, and every connection it serves, for as long.
 * Either one moves the tool to the workers for the rest of the server's
 * life, counts in mcp_server_stats_json ("ran_here_refused" or
 * "ran_here_overran"), and gives the trace hook a line ("nonblocking_
 * refused" or "nonblocking_overran", naming the tool).  A tool that may
 * block on a lock, a file, the network or a child must not set it.
 * mcp_ctx_progress and mcp_ctx_log stay allowed; they queue their line
 * without waiting for room. */
#define MCP_TOOL_NONBLOCKING 0x10u

typedef struct mcp_tool {
	size_t struct_size;        /* MCP_TOOL_INIT */
	const char *name;          /* required: 1 to 128 characters of A-Z,
				      a-z, 0-9, '_', '-' and '.'; unique */
	const char *title;         /* optional display name (2025-06-18+) */
	const char *description;   /* optional */
	const char *input_schema;  /* JSON Schema (2020-12) text of the
				      arguments, an object schema with
				      "type": "object"; NULL means
				      {"type":"object"} */
	const char *output_schema; /* optional JSON Schema text of
				      structuredContent (2025-06-18+), also
				      with "type": "object" */
	mcp_tool_fn fn;            /* required */
	void *user;                /* passed to fn */
	mcp_task_support task_support; /* tasks: see mcp_ctx_become_task */
	const char *annotations;   /* optional JSON object text of ToolAnnotations
				      (readOnlyHint, destructiveHint, ...;
				      2025-03-26+, left out for 2024-11-05) */
	unsigned flags;            /* MCP_TOOL_* above; 0 checks arguments and
				      results, formats as annotations */
} mcp_tool;
#define MCP_TOOL_INIT .struct_size = sizeof(mcp_tool)

/* Registers a tool, compiling its schemas once.  Returns MCP_OK;
 * MCP_EINVAL for a description that would break clients: no fn, a name
 * outside the rule above, an input_schema or output_schema that is not a
 * JSON object with "type": "object", a schema that does not compile as
 * JSON Schema 2020-12 (a $ref to another document included: schemas are
 * never fetched), annotations that are not an object, an unknown
 * task_support, a struct_size smaller than the first mcp_tool;
 * mcp_tool_check() says which.  MCP_ENOTSUP for a struct larger than this
 * library's mcp_tool that sets members it does not know (see
 * "Descriptors").  MCP_EEXIST when the name is taken, MCP_ENOMEM.  Any
 * thread, also while the server runs. */
MCP_EXTERN int mcp_server_add_tool(mcp_server *srv, const mcp_tool *tool);

/* Checks a description as mcp_server_add_tool() does, without a server:
 * MCP_OK, or MCP_EINVAL with one line saying why in `why` (copied,
 * NUL-terminated, cut to `whylen` bytes; `why` may be NULL when `whylen` is
 * 0), such as "input_schema: \"type\" must be \"object\"" or
 * "input_schema: schema /properties/a/pattern: invalid regular expression
 * ...", MCP_ENOTSUP as mcp_server_add_tool, or MCP_ENOMEM.  Any thread. */
MCP_EXTERN int mcp_tool_check(const mcp_tool *tool, char *why, size_t whylen);

/* Reading a handler's arguments.  Each looks up the member `key` of `args`
 * and:
 *  - returns 1 and stores its value in *out when it is there with the
 *    type asked for;
 *  - returns 0 and leaves *out as it was when it is absent or null, so a
 *    handler sets *out to the default first;
 *  - returns MCP_EINVAL and leaves *out as it was when the member has
 *    another type or does not fit, or `args`, `key` or `out` is NULL.
 * When input_schema states the member's type, the library has checked it
 * before the handler ran, and MCP_EINVAL cannot happen (but for
 * mcp_args_string of a string holding U+0000, below): the handler writes
 *
 *     int64_t a = 0, b = 0;
 *     mcp_args_int64(args, "a", &a);
 *
 * and uses the result only to tell an absent member from a present one.
 * Strings, objects and arrays are borrowed from `args`: valid until the
 * handler returns, never freed by the caller.  Call them on the handler's
 * own `args`, from its thread (json-c objects are not thread-safe). */
/* A string as a C string.  A string holding U+0000 ("\u0000") cannot be
 * one without being cut: it gives MCP_EINVAL (even when input_schema says
 * "string"), so that a handler never acts on less than what was sent and
 * checked.  Read such strings with mcp_args_string_len. */
MCP_EXTERN int mcp_args_string(json_object *args, const char *key, const char **out);
/* A string with its length in bytes (*len; `len` must not be NULL): any
 * string, U+0000 included.  *out is NUL-terminated after those bytes. */
MCP_EXTERN int mcp_args_string_len(json_object *args, const char *key, const char **out,
				   size_t *len);
/* An integer: a JSON integer, or a number without a fractional part, in
 * the range of int64_t. */
MCP_EXTERN int mcp_args_int64(json_object *args, const char *key, int64_t *out);
/* Any JSON number, as a double (large integers are rounded). */
MCP_EXTERN int mcp_args_double(json_object *args, const char *key, double *out);
/* true or false, stored as 1 or 0. */
MCP_EXTERN int mcp_args_bool(json_object *args, const char *key, int *out);
/* An object or an array. */
MCP_EXTERN int mcp_args_object(json_object *args, const char *key, json_object **out);
MCP_EXTERN int mcp_args_array(json_object *args, const char *key, json_object **out);

/* Removes a tool by name; calls already running finish normally.  Returns
 * MCP_OK or MCP_ENOENT.  Any thread. */
MCP_EXTERN int mcp_server_remove_tool(mcp_server *srv, const char *name);

/* ---------------------------------------------------------------------- */
/* Resources                                                               */
/* ---------------------------------------------------------------------- */

typedef struct mcp_contents mcp_contents;     /* a resources/read result */
typedef struct mcp_completion mcp_completion; /* a completion/complete result */

/* Reads a resource.  Runs on a worker thread.
 *
 *  uri   the requested URI (borrowed, valid until return).
 *  vars  for a template: an object mapping each template variable to the
 *        string it matched (borrowed); for a static resource an empty object.
 *  out   fill it with mcp_contents_add_text()/mcp_contents_add_blob().
 *
 * Return values follow mcp_tool_fn: MCP_OK answers with `out`, MCP_ECANCELED
 * after the token fired writes nothing, MCP_ENOENT answers the "resource not
 * found" error (-32002) with the URI, others a JSON-RPC error. */
typedef int (*mcp_resource_fn)(mcp_ctx *ctx, const char *uri, json_object *vars,
			       mcp_contents *out, void *user);

/* Completes one argument.  Runs on a worker thread.
 *
 *  argument  the argument (prompt) or variable (template) name.
 *  value     what the user typed so far.
 *  context   the already-resolved arguments as an object of strings
 *            (borrowed; empty when the client sent none).
 *  out       add candidates with mcp_completion_add().
 *
 * Return MCP_OK; other codes answer with a JSON-RPC error. */
typedef int (*mcp_complete_fn)(mcp_ctx *ctx, const char *argument, const char *value,
			       json_object *context, mcp_completion *out, void *user);

/* A static resource.  Strings are copied at registration. */
typedef struct mcp_resource {
	size_t struct_size;       /* MCP_RESOURCE_INIT */
	const char *uri;          /* required; unique among resources */
	const char *name;         /* required */
	const char *title;        /* optional display name (2025-06-18+) */
	const char *description;  /* optional */
	const char *mime_type;    /* optional */
	int64_t size;             /* size in bytes if known; 0: not advertised */
	mcp_resource_fn read;     /* required */
	void *user;               /* passed to read */
	unsigned flags;           /* MCP_RESOURCE_NONBLOCKING, or 0 */
} mcp_resource;
/* mcp_resource.flags and mcp_resource_template.flags: `read` never waits,
 * and runs on the thread that read the request; the promise, what
 * breaking it costs and how it shows are MCP_TOOL_NONBLOCKING's. */
#define MCP_RESOURCE_NONBLOCKING 0x1u
#define MCP_RESOURCE_INIT .struct_size = sizeof(mcp_resource)

/* A resource template (RFC 6570 level 1: `{name}` expressions, each
 * matching one non-empty run of characters other than '/', '?' and '#'). */
typedef struct mcp_resource_template {
	size_t struct_size;       /* MCP_RESOURCE_TEMPLATE_INIT */
	const char *uri_template; /* required; unique among templates */
	const char *name;         /* required */
	const char *title;
	const char *description;
	const char *mime_type;
	mcp_resource_fn read;     /* required */
	mcp_complete_fn complete; /* optional: completes the variables */
	void *user;
	unsigned flags;           /* MCP_RESOURCE_NONBLOCKING, or 0 */
} mcp_resource_template;
#define MCP_RESOURCE_TEMPLATE_INIT .struct_size = sizeof(mcp_resource_template)

/* Registers a resource or a template.  Returns MCP_OK, MCP_EINVAL (a
 * required field missing, a malformed template, or a struct_size smaller
 * than the struct's first release), MCP_ENOTSUP (a larger struct that sets
 * members this library does not know; see "Descriptors"), MCP_EEXIST or
 * MCP_ENOMEM.  Any thread, also while serving: initialized clients that
 * were told resources may change receive
 * notifications/resources/list_changed. */
MCP_EXTERN int mcp_server_add_resource(mcp_server *srv, const mcp_resource *res);
MCP_EXTERN int mcp_server_add_resource_template(mcp_server *srv,
						const mcp_resource_template *tpl);
/* Removes by URI or by template string.  MCP_OK or MCP_ENOENT.  Any thread. */
MCP_EXTERN int mcp_server_remove_resource(mcp_server *srv, const char *uri);
MCP_EXTERN int mcp_server_remove_resource_template(mcp_server *srv,
						   const char *uri_template);

/* Tells every connection that subscribed to `uri` (resources/subscribe),
 * and every 2026-07-28 subscriptions/listen stream whose
 * resourceSubscriptions name it, that it changed
 * (notifications/resources/updated); others hear nothing.  (Tool, prompt
 * and resource list changes reach sessions and listen streams the same
 * way, sent by the registry itself.)  Returns MCP_OK (also when nobody subscribed), MCP_EINVAL or
 * MCP_ENOMEM.  Any thread. */
MCP_EXTERN int mcp_server_resource_updated(mcp_server *srv, const char *uri);

/* Appends text contents (all strings copied; mime_type may be NULL). */
MCP_EXTERN int mcp_contents_add_text(mcp_contents *out, const char *uri,
				     const char *mime_type, const char *text);
/* Appends binary contents; `data` raw, base64-encoded by the library. */
MCP_EXTERN int mcp_contents_add_blob(mcp_contents *out, const char *uri,
				     const char *mime_type, const void *data, size_t len);
/* Makes the answer a JSON-RPC error with this code and message (copied;
 * `data` taken, may be NULL).  Returns MCP_ERESULT, which the handler
 * returns (`return mcp_contents_set_error(...)`); an error set here is
 * sent whatever the handler returns, except after cancellation.
 * MCP_EINVAL or MCP_ENOMEM when it could not be set. */
MCP_EXTERN int mcp_contents_set_error(mcp_contents *out, int code, const char *message,
				      json_object *data);

/* ---------------------------------------------------------------------- */
/* MCP Apps (the io.modelcontextprotocol/ui extension)                     */
/* ---------------------------------------------------------------------- */

/* A UI resource: an HTML5 document a host renders in a sandboxed iframe
 * for the results of the tools linked to it, with the Content Security
 * Policy origins and the browser permissions the host is to grant it.  It
 * is described with an mcp_app, registered with mcp_server_add_app(), and
 * served as a resource: listed by resources/list, read by resources/read
 * with the MIME type MCP_APP_MIME, both with _meta.ui (csp, permissions,
 * domain, prefersBorder).  While one is registered the server declares
 * capabilities.extensions["io.modelcontextprotocol/ui"] (every revision).
 * Tools still answer with text content the model can read: a host without
 * MCP Apps shows that. */
#define MCP_APP_MIME "text/html;profile=mcp-app"

typedef struct mcp_app mcp_app;

/* The CSP directive an origin is allowed for (MCP Apps' csp fields). */
typedef enum mcp_app_csp {
	MCP_APP_CSP_CONNECT = 0, /* connectDomains: fetch, XHR, WebSocket */
	MCP_APP_CSP_RESOURCE,    /* resourceDomains: scripts, styles, images, fonts, media */
	MCP_APP_CSP_FRAME,       /* frameDomains: nested iframes */
	MCP_APP_CSP_BASE_URI     /* baseUriDomains: the document's base URI */
} mcp_app_csp;

/* Browser permissions a UI asks the host for (MCP Apps' permissions). */
#define MCP_APP_CAMERA 0x1u
#define MCP_APP_MICROPHONE 0x2u
#define MCP_APP_GEOLOCATION 0x4u
#define MCP_APP_CLIPBOARD_WRITE 0x8u

/* Describes a UI resource at `uri` (must start with "ui://"), named
 * `name`, whose document is `html` (UTF-8; all three copied).  Nothing is
 * allowed until added: no origin for any directive, no permission.
 * Returns NULL for an invalid argument or without memory.  The caller
 * owns it and releases it with mcp_app_free(); any thread, one at a time. */
MCP_EXTERN mcp_app *mcp_app_new(const char *uri, const char *name, const char *html);
MCP_EXTERN void mcp_app_free(mcp_app *app);
/* Optional listing fields (copied; NULL clears).  MCP_OK, MCP_EINVAL (not
 * UTF-8) or MCP_ENOMEM. */
MCP_EXTERN int mcp_app_set_title(mcp_app *app, const char *title);
MCP_EXTERN int mcp_app_set_description(mcp_app *app, const char *text);
/* Allows `origin` ("https://api.example.com", "wss://rt.example.com:8443",
 * copied) for the directive `kind`.  An origin is a scheme, "://" and a
 * host with an optional port; the host may start with "*." for any
 * subdomain; no path, no spaces, nothing that reads as another source.  MCP_OK (also when already
 * there), MCP_EINVAL, MCP_EBUSY (64 per directive) or MCP_ENOMEM. */
MCP_EXTERN int mcp_app_add_csp(mcp_app *app, mcp_app_csp kind, const char *origin);
/* The MCP_APP_* permissions to ask for (replaces the previous set; 0:
 * none).  MCP_OK or MCP_EINVAL (an unknown bit). */
MCP_EXTERN int mcp_app_request_permissions(mcp_app *app, unsigned permissions);
/* A dedicated sandbox origin for the document, in the format the host
 * documents (copied; NULL clears).  MCP_OK, MCP_EINVAL or MCP_ENOMEM. */
MCP_EXTERN int mcp_app_set_domain(mcp_app *app, const char *domain);
/* 1: ask for a visible border, 0: for none, -1: the host decides (the
 * default).  MCP_OK or MCP_EINVAL. */
MCP_EXTERN int mcp_app_set_prefers_border(mcp_app *app, int border);

/* Registers the UI resource `app` describes (copied: the description can
 * be freed or reused).  MCP_OK, MCP_EINVAL, MCP_EEXIST (a resource has its
 * URI) or MCP_ENOMEM.  Any thread, also while serving; remove it with
 * mcp_server_remove_resource(). */
MCP_EXTERN int mcp_server_add_app(mcp_server *srv, const mcp_app *app);

/* Who may call a tool linked to a UI (MCP Apps' visibility). */
#define MCP_UI_MODEL 0x1u /* the model, as any tool */
#define MCP_UI_APP 0x2u   /* the UI itself, through the host */

/* ---------------------------------------------------------------------- */
/* Skills (the io.modelcontextprotocol/skills extension, SEP-2640)         */
/* ---------------------------------------------------------------------- */

/* A skill is a directory of files, at least a SKILL.md whose YAML
 * frontmatter has a name (1 to 64 of a-z, 0-9 and '-', no leading,
 * trailing or double '-') and a description, as the Agent Skills
 * specification defines it.  Served skills get the URI
 * skill://<prefix>/<name>/SKILL.md (no prefix: skill://<name>/SKILL.md), each
 * file skill://<prefix>/<name>/<path> as a resource (resources/read; only
 * SKILL.md, named and described from its frontmatter, appears in
 * resources/list), and the methods skills/list (paged; each entry whole:
 * uri, the frontmatter as JSON, and every file with its sha256 digest and
 * size), skills/get and resources/directory/read (the direct children of
 * a skill's directory or any directory above it, subdirectories as
 * inode/directory) answer in every revision; 2026-07-28 results carry
 * ttlMs and cacheScope.  While a skill is registered the server declares
 * capabilities.extensions["io.modelcontextprotocol/skills"] with
 * directoryRead.
 *
 * Everything is read and hashed at registration and held in memory: the
 * digests always describe the bytes served.  A skill has at most 512
 * files and 16 MiB (the limits SEP-2640 sets for hosts).  The frontmatter
 * is read with a YAML parser (libyaml) and typed as the YAML 1.2 core
 * schema does; what JSON cannot carry or parsers may read differently
 * (aliases, other tags, duplicate or non-string keys, infinities) is
 * refused. */
typedef struct mcp_skill mcp_skill;

/* A skill from memory: `skill_md` (`len` bytes, UTF-8, copied) is its
 * SKILL.md, `prefix` ("acme/billing", or NULL or "" for none) the
 * segments before its name: each of A-Z a-z 0-9 '-' '.' '_' '~', none
 * "." or "..".  Returns NULL when the text or the prefix breaks the rules
 * above, with one line saying why in why[whylen] ("frontmatter
 * description must be a non-empty string"; `why` may be NULL), or without
 * memory (why empty).  The caller owns it until mcp_server_add_skill. */
MCP_EXTERN mcp_skill *mcp_skill_new(const char *prefix, const char *skill_md, size_t len,
				    char *why, size_t whylen);
/* Adds a supporting file at `path` below the skill's root
 * ("references/FORMS.md": relative, '/'-separated, no empty, hidden, "."
 * or ".." segment), `len` bytes of `data` (copied; text when UTF-8, else
 * served base64), `mime_type` (copied; NULL guesses from the extension).
 * MCP_OK, MCP_EINVAL, MCP_EEXIST (that path is taken, SKILL.md included),
 * MCP_EBUSY (512 files or 16 MiB), MCP_ENOMEM. */
MCP_EXTERN int mcp_skill_add_file(mcp_skill *skill, const char *path, const void *data,
				  size_t len, const char *mime_type);
/* Releases a skill that was not registered (NULL is ignored). */
MCP_EXTERN void mcp_skill_free(mcp_skill *skill);
/* Registers `skill`, taken in every case (freed on failure).  MCP_OK,
 * MCP_EEXIST (a skill or resource has one of its URIs), MCP_EINVAL,
 * MCP_ENOMEM.  Any thread, also while serving. */
MCP_EXTERN int mcp_server_add_skill(mcp_server *srv, mcp_skill *skill);

/* Registers the skill in directory `dir`, its SKILL.md at the root and
 * every file below it, at `prefix` (as above).  The directory's name must
 * be the skill's name.  Read as strictly as mcp-files reads its tree:
 * names starting with '.' are skipped; a symbolic link is followed only
 * when it leads to a place inside the skill; anything but regular files
 * and directories (FIFOs, sockets, devices) refuses the skill, and so do a
 * link that leads out, a name no URI can carry, more than 32 levels, and
 * the limits above.  Files are opened relative to their directory with
 * O_NOFOLLOW and checked to be what was inspected.  MCP_OK, or MCP_EINVAL
 * (with why[whylen] naming the path and the rule), MCP_EEXIST, MCP_ESYS,
 * MCP_ENOMEM.  Any thread. */
MCP_EXTERN int mcp_server_add_skill_dir(mcp_server *srv, const char *dir, const char *prefix,
					char *why, size_t whylen);
/* Registers every skill under `root`: a directory holding a SKILL.md is a
 * skill (what is below it is part of it, nested SKILL.md files included);
 * other directories are searched further and their names join the
 * prefix, so root/acme/billing/refunds/SKILL.md is
 * skill://<prefix>/acme/billing/refunds/SKILL.md.  Symbolic links are not
 * followed while searching.  *count (may be NULL) gets the number
 * registered.  Stops at the first skill that fails (earlier ones stay
 * registered), returning its error as mcp_server_add_skill_dir does. */
MCP_EXTERN int mcp_server_add_skills_tree(mcp_server *srv, const char *root, const char *prefix,
					  int *count, char *why, size_t whylen);
/* Removes the skill whose SKILL.md has URI `uri`, and its resources.
 * MCP_OK, MCP_ENOENT, MCP_EINVAL.  Any thread. */
MCP_EXTERN int mcp_server_remove_skill(mcp_server *srv, const char *uri);

/* ---------------------------------------------------------------------- */
/* Prompts                                                                 */
/* ---------------------------------------------------------------------- */

typedef struct mcp_prompt_result mcp_prompt_result; /* a prompts/get result */

typedef enum mcp_role { MCP_ROLE_USER = 0, MCP_ROLE_ASSISTANT } mcp_role;

typedef struct mcp_prompt_arg {
	size_t struct_size;       /* MCP_PROMPT_ARG_INIT, the same in every
				     element of an array */
	const char *name;         /* required */
	const char *title;
	const char *description;
	int required;             /* non-zero: prompts/get without it is -32602 */
} mcp_prompt_arg;
#define MCP_PROMPT_ARG_INIT .struct_size = sizeof(mcp_prompt_arg)

/* Renders a prompt.  `args` is an object of strings (borrowed; every
 * required argument is present): the library checked the request's
 * arguments first and answered -32602 naming the argument and the rule
 * when a required one was missing or one was not a string ("Invalid
 * params: /topic: expected string, got number (type)").  Return conventions
 * as mcp_tool_fn, except that there is no tool error: MCP_EINVAL is
 * -32602, mcp_prompt_set_error() sets any error. */
typedef int (*mcp_prompt_fn)(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out,
			     void *user);

/* A prompt.  Strings and the argument array are copied at registration. */
typedef struct mcp_prompt {
	size_t struct_size;           /* MCP_PROMPT_INIT */
	const char *name;             /* required; unique */
	const char *title;
	const char *description;
	const mcp_prompt_arg *args;   /* nargs entries */
	size_t nargs;
	mcp_prompt_fn get;            /* required */
	mcp_complete_fn complete;     /* optional: completes the arguments */
	void *user;
	unsigned flags;               /* MCP_PROMPT_NONBLOCKING, or 0 */
} mcp_prompt;
/* mcp_prompt.flags: `get` never waits, and runs on the thread that read
 * the request; the promise, what breaking it costs and how it shows are
 * MCP_TOOL_NONBLOCKING's. */
#define MCP_PROMPT_NONBLOCKING 0x1u
#define MCP_PROMPT_INIT .struct_size = sizeof(mcp_prompt)

/* Registers or removes a prompt; as mcp_server_add_resource().  Every
 * element of `args` carries the same struct_size (MCP_PROMPT_ARG_INIT):
 * the library steps through the array by it.  MCP_EINVAL when they
 * differ. */
MCP_EXTERN int mcp_server_add_prompt(mcp_server *srv, const mcp_prompt *prompt);
MCP_EXTERN int mcp_server_remove_prompt(mcp_server *srv, const char *name);

/* Building a prompts/get result; strings copied, data base64-encoded here,
 * `block` taken (even on error).  Each call appends one message.  Audio
 * (and a raw resource_link block) in a session whose revision lacks it
 * becomes text, as in tool results (mcp_result_add_audio()). */
MCP_EXTERN int mcp_prompt_set_description(mcp_prompt_result *out, const char *text);
MCP_EXTERN int mcp_prompt_add_text(mcp_prompt_result *out, mcp_role role, const char *text);
MCP_EXTERN int mcp_prompt_add_image(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type);
MCP_EXTERN int mcp_prompt_add_audio(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type);
MCP_EXTERN int mcp_prompt_add_resource_text(mcp_prompt_result *out, mcp_role role,
					    const char *uri, const char *mime_type,
					    const char *text);
MCP_EXTERN int mcp_prompt_add_content(mcp_prompt_result *out, mcp_role role,
				      json_object *block);
/* Makes the answer a JSON-RPC error and returns MCP_ERESULT, as
 * mcp_contents_set_error(). */
MCP_EXTERN int mcp_prompt_set_error(mcp_prompt_result *out, int code, const char *message,
				    json_object *data);

/* ---------------------------------------------------------------------- */
/* Completion and pagination                                               */
/* ---------------------------------------------------------------------- */

/* Adds a candidate (copied).  At most 100 are sent; past that they are
 * counted in `total` and hasMore is set.  MCP_OK, MCP_EINVAL or MCP_ENOMEM. */
MCP_EXTERN int mcp_completion_add(mcp_completion *out, const char *value);
/* Sets the total number of matches when more exist than were added. */
MCP_EXTERN void mcp_completion_set_total(mcp_completion *out, int64_t total);
/* Marks that more candidates exist than were sent. */
MCP_EXTERN void mcp_completion_set_has_more(mcp_completion *out, int has_more);

/* ---------------------------------------------------------------------- */
/* Tool results (filled by a handler on its own thread)                    */
/* ---------------------------------------------------------------------- */

/* Appends a text content block (text copied).  MCP_OK, MCP_EINVAL (`out`
 * or `text` NULL) or MCP_ENOMEM. */
MCP_EXTERN int mcp_result_add_text(mcp_result *out, const char *text);
/* Appends text of explicit length (may contain NUL-free UTF-8 only). */
MCP_EXTERN int mcp_result_add_text_len(mcp_result *out, const char *text, size_t len);
/* Appends an image or audio block: `data` is raw bytes, base64-encoded by
 * the library; `mime_type` copied.  Audio exists from 2025-03-26: a
 * 2024-11-05 session receives a text block in its place that names the
 * MIME type and size and says the audio was left out, so the model knows
 * there was something it cannot hear (dropping it silently could make an
 * answer look complete that is not). */
MCP_EXTERN int mcp_result_add_image(mcp_result *out, const void *data, size_t len,
				    const char *mime_type);
MCP_EXTERN int mcp_result_add_audio(mcp_result *out, const void *data, size_t len,
				    const char *mime_type);
/* Appends a resource_link block (2025-06-18+; older sessions receive it as a
 * text block "name <uri>").  name and uri required; others may be NULL. */
MCP_EXTERN int mcp_result_add_resource_link(mcp_result *out, const char *uri,
					    const char *name, const char *description,
					    const char *mime_type);
/* Appends an embedded text resource. */
MCP_EXTERN int mcp_result_add_resource_text(mcp_result *out, const char *uri,
					    const char *mime_type, const char *text);
/* Appends an embedded binary resource (`data` raw, base64-encoded here). */
MCP_EXTERN int mcp_result_add_resource_blob(mcp_result *out, const char *uri,
					    const char *mime_type, const void *data,
					    size_t len);
/* Appends any content block given as a JSON object (taken, even on error).
 * MCP_EINVAL when it holds a non-finite number (NaN, an infinity), which
 * JSON cannot carry.  An "audio" or "resource_link" block the session's
 * revision lacks becomes text as mcp_result_add_audio() and
 * mcp_result_add_resource_link() say. */
MCP_EXTERN int mcp_result_add_content(mcp_result *out, json_object *block);
/* Sets structuredContent (taken, even on error; must be an object).  For
 * sessions older than 2025-06-18 it is not sent.  MCP_EINVAL (and
 * nothing set) when it holds a non-finite number: json-c would write NaN
 * or Infinity, which is not JSON.  Whatever a handler does, the library
 * never writes such a number: an answer holding one is replaced by a
 * -32603 error ("... a number JSON cannot carry ..."), and a notification
 * holding one is not sent. */
MCP_EXTERN int mcp_result_set_structured(mcp_result *out, json_object *value);
/* Marks the result as a tool-level error (isError: true). */
MCP_EXTERN void mcp_result_set_is_error(mcp_result *out, int is_error);
/* Makes the answer a tool error the model reads (SEP-1303): replaces the
 * content and structured content set so far with one text block,
 * formatted printf-style now (it must come out as UTF-8), and sets
 * isError: true.  For a tool that failed at its task; see mcp_tool_fn for
 * which answer to use when.  Returns MCP_OK (the answer is a result: the
 * handler returns it), MCP_EINVAL (`out` or `fmt` NULL) or MCP_ENOMEM. */
MCP_EXTERN int mcp_result_tool_error(mcp_result *out, const char *fmt, ...) MCP_PRINTF(2, 3);
/* Makes the answer a JSON-RPC error instead of a result; `message` copied,
 * `data` taken (may be NULL).  For protocol-level answers with a code of
 * their own; a failed tool is a tool error (mcp_result_tool_error).
 * Returns MCP_ERESULT, which the handler returns: `return
 * mcp_result_set_error(...)` sends the error (so does any later return but
 * MCP_ECANCELED after cancellation).  MCP_EINVAL (`out` or `message` NULL,
 * `code` 0) or MCP_ENOMEM when it could not be set. */
MCP_EXTERN int mcp_result_set_error(mcp_result *out, int code, const char *message,
				    json_object *data);

/* ---------------------------------------------------------------------- */
/* The handler context                                                     */
/* ---------------------------------------------------------------------- */

/* The reason the request's token fired, or MCP_CANCEL_NONE.  Never blocks. */
MCP_EXTERN mcp_cancel_reason mcp_ctx_cancelled(const mcp_ctx *ctx);

/* The request id as compact JSON text (borrowed, valid for the handler). */
MCP_EXTERN const char *mcp_ctx_request_id(const mcp_ctx *ctx);

/* The protocol revision this request is served at (static storage): the
 * one negotiated by the connection's initialize, or "2026-07-28" for a
 * stateless request that carried its version in its _meta. */
MCP_EXTERN const char *mcp_ctx_protocol_version(const mcp_ctx *ctx);

/* The client's declared capabilities object (borrowed, valid for the
 * handler; never NULL, possibly empty): those of initialize, or those in a
 * 2026-07-28 request's own _meta.  Read-only. */
MCP_EXTERN json_object *mcp_ctx_client_capabilities(const mcp_ctx *ctx);

/* Sleeps `ms` milliseconds or until the token fires.  Returns MCP_OK after
 * the full sleep, MCP_ECANCELED when the token fired (at once if it already
 * had). */
MCP_EXTERN int mcp_ctx_sleep(mcp_ctx *ctx, int64_t ms);

/* Waits on `cond` with `mutex` held (like pthread_cond_timedwait) and also
 * wakes when the token fires.  `mutex` must be locked by the caller and is
 * locked again on return; `cond` must use the default (CLOCK_REALTIME)
 * clock.  timeout_ms < 0 waits without a timeout.  Returns
 * MCP_OK when woken (possibly spuriously: re-check your predicate),
 * MCP_ETIMEDOUT, or MCP_ECANCELED.  While the wait lasts the library may lock
 * `mutex` from the thread that fires the token, only to broadcast `cond`. */
MCP_EXTERN int mcp_ctx_wait(mcp_ctx *ctx, pthread_cond_t *cond,
			    pthread_mutex_t *mutex, int64_t timeout_ms);

/* A descriptor that becomes readable (POLLIN) when the token fires, for
 * handlers that block in poll().  Owned by the library: do not read from
 * or close it.  Returns -1 (and MCP_ESYS semantics) when no descriptor
 * could be created. */
MCP_EXTERN int mcp_ctx_cancel_fd(mcp_ctx *ctx);

/* Registers `fn(reason, arg)` to run once when the token fires.  If it has
 * already fired, fn runs at once on the calling thread.  Otherwise it runs on
 * the thread that fires the token (the connection's reader, or the shutdown),
 * so it must be short and must not block.  On success *handle receives a
 * positive registration number for mcp_ctx_off_cancel().  Registrations end
 * automatically when the handler returns.  Returns MCP_OK, MCP_ENOMEM or
 * MCP_EINVAL. */
typedef void (*mcp_cancel_fn)(mcp_cancel_reason reason, void *arg);
MCP_EXTERN int mcp_ctx_on_cancel(mcp_ctx *ctx, mcp_cancel_fn fn, void *arg,
				 int *handle);

/* Removes a registration.  On return the callback is neither running nor
 * will it run.  Returns MCP_OK, or MCP_ENOENT when it already ran or the
 * handle is unknown. */
MCP_EXTERN int mcp_ctx_off_cancel(mcp_ctx *ctx, int handle);

/* Reports progress when the client asked for it (a progressToken in the
 * request's _meta); otherwise a successful no-op.  `progress` must increase
 * from call to call; `total` <= 0 means unknown; `message` may be NULL
 * (copied; 2025-03-26+: a 2024-11-05 client gets the numbers alone).
 * Returns MCP_OK, MCP_EINVAL (progress not increasing, or not a finite number), MCP_ECANCELED (the
 * token fired; nothing is sent) or MCP_ECLOSED.  Progress is written before
 * the request's response. */
MCP_EXTERN int mcp_ctx_progress(mcp_ctx *ctx, double progress, double total,
				const char *message);

/* Log levels of notifications/message (RFC 5424 severities). */
typedef enum mcp_log_level {
	MCP_LOG_DEBUG = 0,
	MCP_LOG_INFO,
	MCP_LOG_NOTICE,
	MCP_LOG_WARNING,
	MCP_LOG_ERROR,
	MCP_LOG_CRITICAL,
	MCP_LOG_ALERT,
	MCP_LOG_EMERGENCY
} mcp_log_level;

/* Sends notifications/message at `level` when it reaches the level the
 * client set with logging/setLevel (all levels before it set one).
 * `logger` may be NULL; `data` is taken (any JSON value; NULL sends null).
 * Returns MCP_OK (also when filtered out), MCP_ECANCELED or MCP_ECLOSED. */
MCP_EXTERN int mcp_ctx_log(mcp_ctx *ctx, mcp_log_level level, const char *logger,
			   json_object *data);
/* Convenience: logs a string message. */
MCP_EXTERN int mcp_ctx_log_text(mcp_ctx *ctx, mcp_log_level level,
				const char *logger, const char *text);

/* Tasks.  A tools/call handler that runs as a task is the same handler:
 * the request was answered with the task, the handler's token is the
 * task's (tasks/cancel fires it with MCP_CANCEL_PEER, a shutdown or close
 * with its own reason, exactly as for a request), and what it returns is
 * the task's result, kept for the task's TTL and fetched by tasks/get
 * (2026-07-28) or tasks/result (2025-11-25), also from a connection other
 * than the one that started it (2026-07-28).  Inside a 2026-07-28 task,
 * input is asked for as in a request (mcp_ctx_require_input and
 * MCP_EINPUT, or the blocking mcp_ctx_elicit and the like): the task shows
 * input_required with the requests, tasks/update answers them, and the
 * handler is called again (or its call returns) on the same worker, which
 * waits for at most the task's TTL.  Progress and logs are not sent for a
 * 2026-07-28 task (SEP-2663); the calls succeed and send nothing.
 *
 * mcp_ctx_become_task: answers this 2026-07-28 tools/call with a task now
 * (CreateTaskResult) and lets the handler go on as the task's work; for a
 * tool with MCP_TOOL_TASK_BY_HANDLER, called when the handler is ready
 * (what it returned before, such as input_required rounds, went to the
 * client as usual).  Returns MCP_OK (the call is a task now, or already
 * was), MCP_ENOTSUP (it cannot be one: not a 2026-07-28 tools/call, the
 * request did not declare the tasks extension, or the tool's task_support
 * is MCP_TASKS_FORBIDDEN; the handler goes on as a plain call),
 * MCP_EBUSY (mcp_server_set_max_tasks reached), MCP_ECANCELED (the
 * request was cancelled first: write nothing, return), MCP_ENOMEM.  Call
 * from the handler's thread.
 * mcp_ctx_task_id: the id of the task this handler runs as (borrowed,
 * valid until the handler returns), or NULL. */
MCP_EXTERN int mcp_ctx_become_task(mcp_ctx *ctx);
MCP_EXTERN const char *mcp_ctx_task_id(const mcp_ctx *ctx);

/* W3C trace context (SEP-414): the request's traceparent and tracestate,
 * from its params._meta (over HTTP, from the POST's traceparent and
 * tracestate headers when _meta has no traceparent), each checked against
 * the W3C Trace Context format (a version-00 traceparent with non-zero
 * ids; a tracestate of at most 32 well-formed members and 512 bytes, kept
 * only with a valid traceparent).  A value that fails is dropped: the
 * handler does not see it, and it is never passed on.  A valid context is
 * added to the _meta of every request the server sends for this request
 * (roots, sampling, elicitation, and the input requests of
 * input_required results and tasks), unless the handler's params set
 * their own traceparent.  Sets *traceparent and *tracestate (either may be
 * NULL) to borrowed strings valid until the handler returns, or to NULL,
 * and returns 1 when the request carries a valid traceparent, else 0.
 * Also usable in the request hooks (mcp_server_set_request_hooks), the
 * after-hook included.  Call from the handler's (or hook's) thread. */
MCP_EXTERN int mcp_ctx_trace_context(const mcp_ctx *ctx, const char **traceparent,
				     const char **tracestate);

/* Streamable HTTP polling (2025-11-25): ends the HTTP response that carries
 * this request's SSE stream now, after telling the client to reconnect in
 * `retry_ms` (0..86400000).  The request is not cancelled: the handler runs
 * on, and what it writes afterwards (progress, logs, server-to-client
 * requests, its answer) waits in the stream's log until the client resumes
 * it with GET and Last-Event-ID.  Long-running handlers use it to free the
 * connection.  Returns MCP_OK, MCP_ENOTSUP (stdio or in-memory transport, a
 * JSON response, or a session older than 2025-11-25), MCP_ENOENT (the
 * request was already answered), MCP_ECLOSED or MCP_EINVAL.  Call from the
 * handler's thread. */
MCP_EXTERN int mcp_ctx_close_stream(mcp_ctx *ctx, int64_t retry_ms);

/* Input from the client, in either era (multi round-trip requests).
 *
 * A tools/call, prompts/get or resources/read handler that needs the
 * client's input names each request with mcp_ctx_require_input() (method
 * "elicitation/create", "sampling/createMessage" or "roots/list"; `params`
 * borrowed and copied), may leave itself a state string with
 * mcp_ctx_set_request_state() (copied; at most 64 KiB), and returns
 * MCP_EINPUT.  It is called again with the answers: mcp_ctx_input_response()
 * gives the client's result object for a name (borrowed, valid for the
 * call; NULL when that name was not answered), mcp_ctx_request_state() the
 * state it left (NULL on the first call).  A handler must check both, as a
 * 2026-07-28 client may send anything back.
 *
 * For a 2026-07-28 request the answer is an input_required result and the
 * client retries; the state travels sealed (authenticated encryption under
 * the server's key, bound to the method, name or URI and arguments, valid
 * 10 minutes unless mcp_server_set_state_ttl says otherwise), and any state
 * that fails verification is answered -32602.
 * For a legacy client the library sends the requests itself over the
 * connection (server-to-client requests) and calls the handler again, up
 * to mcp_server_set_input_rounds() rounds (default 8; 1..64).
 *
 * mcp_ctx_require_input returns MCP_OK, MCP_EINVAL (unknown method, empty
 * key, params not an object), MCP_ENOTSUP (this request's client did not
 * declare the capability the method needs; for a 2026-07-28 request a
 * handler that then fails is answered -32021 naming it), MCP_ESTATE (not a
 * tools/call, prompts/get or resources/read handler, or a task) or
 * MCP_ENOMEM.  Call these from the handler's thread. */
MCP_EXTERN int mcp_ctx_require_input(mcp_ctx *ctx, const char *key, const char *method,
				     json_object *params);
MCP_EXTERN json_object *mcp_ctx_input_response(mcp_ctx *ctx, const char *key);
MCP_EXTERN const char *mcp_ctx_request_state(const mcp_ctx *ctx);
MCP_EXTERN int mcp_ctx_set_request_state(mcp_ctx *ctx, const char *state);

/* Server-to-client requests.  For a legacy client each is a real request
 * over the connection.  A 2026-07-28 request cannot send any; where this
 * process holds the connection (stdio, mcp_server_start_memory), the
 * handler is parked instead: its request is answered input_required naming
 * the one input, the client's retry hands the input over and the call
 * returns it, and the retry is answered with whatever the handler says
 * next (another input, or its result).  Up to mcp_server_set_parking()
 * handlers wait at once (MCP_EBUSY beyond), each at most its TTL per input
 * (MCP_ETIMEDOUT); a shutdown or a cancel of the waiting retry cancels
 * them (MCP_ECANCELED).  On stateless HTTP, where each request is its own
 * connection, nothing can be parked: MCP_ENOTSUP (write the handler with
 * mcp_ctx_require_input, which serves both eras everywhere).  Only
 * tools/call, prompts/get and resources/read handlers can be parked.  When
 * the request did not declare the capability, these return MCP_ENOTSUP and
 * the handler's failure is answered with -32021 naming it.
 * Each blocks the handler until the client
 * answers, `timeout_ms` passes (< 0: no timeout), the token fires, or the
 * connection closes.  Returns:
 *   MCP_OK        *result holds the client's result object (caller owns it);
 *   MCP_EREMOTE   the client answered an error: *result holds the error
 *                 object {code, message, data?} (caller owns it);
 *   MCP_ENOTSUP   the client did not declare the capability, or the request
 *                 is answered over HTTP as one JSON body, which cannot carry
 *                 a request to the client (nothing sent);
 *   MCP_ESTATE    the client has not finished initialization;
 *   MCP_ETIMEDOUT the timeout passed (the request is cancelled on the wire);
 *   MCP_ECANCELED the handler's token fired (the request is cancelled on the
 *                 wire), or the connection is closing or its output failed:
 *                 the token has then fired too, and mcp_ctx_cancelled()
 *                 names the reason (write nothing, return);
 *   MCP_EBUSY     too many outstanding requests on this connection;
 *   MCP_EPROTO    the client's answer had neither an object "result" nor
 *                 an object "error";
 *   MCP_EINVAL    `ctx` or `result` NULL, or an invalid argument;
 *   MCP_ENOMEM.
 * On any code but MCP_OK and MCP_EREMOTE, *result is NULL. */

/* roots/list (requires the client capability "roots"). */
MCP_EXTERN int mcp_ctx_list_roots(mcp_ctx *ctx, int64_t timeout_ms,
				  json_object **result);
/* sampling/createMessage (requires "sampling"; params with "tools" or
 * "toolChoice" also require "sampling.tools" and 2025-11-25; messages with
 * audio content require 2025-03-26, else MCP_ENOTSUP and nothing is sent:
 * the question is the handler's, so it is not rewritten).  `params`
 * borrowed: messages, modelPreferences, systemPrompt, maxTokens, ... */
MCP_EXTERN int mcp_ctx_sample(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
			      json_object **result);
/* A one-message sampling/createMessage: `system_prompt` may be NULL,
 * `user_text` is the user message, `max_tokens` > 0.  Strings copied. */
MCP_EXTERN int mcp_ctx_sample_text(mcp_ctx *ctx, const char *system_prompt,
				   const char *user_text, int max_tokens, int64_t timeout_ms,
				   json_object **result);
/* elicitation/create (requires "elicitation").  `params` borrowed.  When
 * params hold a requestedSchema and the user accepted, the answer's content
 * is checked against it (as JSON Schema 2020-12, formats asserted): content
 * that does not match is MCP_EPROTO, so a handler only sees answers that
 * do.  A requestedSchema that does not compile is MCP_EINVAL, nothing sent. */
MCP_EXTERN int mcp_ctx_elicit(mcp_ctx *ctx, json_object *params, int64_t timeout_ms,
			      json_object **result);

/* ---------------------------------------------------------------------- */
/* Elicitation forms and URL elicitation (2025-06-18+, URL mode 2025-11-25) */
/* ---------------------------------------------------------------------- */

typedef struct mcp_form mcp_form; /* a form's requested schema being built */

typedef enum mcp_field_kind {
	MCP_FIELD_STRING = 0, /* text, optionally with a format and lengths */
	MCP_FIELD_NUMBER,     /* a number, optionally bounded */
	MCP_FIELD_INTEGER,    /* an integer, optionally bounded */
	MCP_FIELD_BOOLEAN,
	MCP_FIELD_ENUM,       /* pick one of `options` */
	MCP_FIELD_MULTI_ENUM  /* pick several of `options` */
} mcp_field_kind;

/* How enum options are written: bare values, values with display titles
 * (oneOf/anyOf of const+title), or the legacy enum+enumNames form (single
 * select only). */
typedef enum mcp_enum_style {
	MCP_ENUM_UNTITLED = 0,
	MCP_ENUM_TITLED,
	MCP_ENUM_LEGACY
} mcp_enum_style;

/* One form field.  Zero-initialise and set what applies; strings and arrays
 * are copied by mcp_form_add(). */
typedef struct mcp_field {
	size_t struct_size;               /* MCP_FIELD_INIT */
	mcp_field_kind kind;
	const char *name;                 /* required: the property name */
	const char *title;
	const char *description;
	int required;
	/* MCP_FIELD_STRING */
	const char *format;               /* NULL, "email", "uri", "date", "date-time" */
	int64_t min_length, max_length;   /* used when has_lengths; < 0 leaves one out */
	int has_lengths;
	/* MCP_FIELD_NUMBER / MCP_FIELD_INTEGER */
	double minimum, maximum;
	int has_minimum, has_maximum;
	/* MCP_FIELD_ENUM / MCP_FIELD_MULTI_ENUM */
	const char *const *options;       /* noptions values */
	const char *const *option_titles; /* noptions titles (titled, legacy) */
	size_t noptions;
	mcp_enum_style style;
	int64_t min_items, max_items;     /* multi-select; used when has_items */
	int has_items;
	/* The default, when has_default is set: by kind, default_string
	 * (string, enum), default_number (number, integer), default_bool, or
	 * default_options/ndefault_options (multi-select). */
	int has_default;
	const char *default_string;
	double default_number;
	int default_bool;
	const char *const *default_options;
	size_t ndefault_options;
} mcp_field;
#define MCP_FIELD_INIT .struct_size = sizeof(mcp_field)

/* Creates an empty form that will show `message` (copied).  NULL when out
 * of memory or message is NULL.  The caller frees it with mcp_form_free(). */
MCP_EXTERN mcp_form *mcp_form_new(const char *message);
MCP_EXTERN void mcp_form_free(mcp_form *form);
/* Adds a field.  MCP_OK, MCP_EINVAL (missing name, unknown format, enum
 * without options, titles missing for a titled style, a legacy multi-select,
 * a default of the wrong shape, a struct_size smaller than the first
 * mcp_field), MCP_ENOTSUP (unknown members set; see "Descriptors"),
 * MCP_EEXIST (name taken) or MCP_ENOMEM. */
MCP_EXTERN int mcp_form_add(mcp_form *form, const mcp_field *field);
/* The requested schema as built so far (borrowed; valid until the next
 * mcp_form_add or mcp_form_free).  For inspection and tests. */
MCP_EXTERN json_object *mcp_form_schema(const mcp_form *form);

/* Asks the user to fill in `form` (borrowed) through elicitation/create in
 * form mode.  Results and errors as the other server-to-client requests;
 * *result holds {action, content?}; accepted content has been checked
 * against the form (MCP_EPROTO when it does not match, as for
 * mcp_ctx_elicit).  MCP_ENOTSUP when the client did not
 * declare form elicitation, negotiated a revision without elicitation, or
 * negotiated one older than a field needs (multi-select: 2025-11-25). */
MCP_EXTERN int mcp_ctx_elicit_form(mcp_ctx *ctx, const mcp_form *form, int64_t timeout_ms,
				   json_object **result);

/* Asks the client to open `url` (URL mode, 2025-11-25; strings copied).
 * `elicitation_id` must be unique within the server; later
 * mcp_server_elicitation_complete() with the same id tells that client the
 * out-of-band interaction finished.  MCP_ENOTSUP when the client did not
 * declare elicitation.url. */
MCP_EXTERN int mcp_ctx_elicit_url(mcp_ctx *ctx, const char *message, const char *url,
				  const char *elicitation_id, int64_t timeout_ms,
				  json_object **result);

/* Sends notifications/elicitation/complete for `elicitation_id` to the
 * connection its URL elicitation went to (and only to it).  MCP_OK,
 * MCP_ENOENT (unknown id or connection gone), MCP_EINVAL.  Any thread. */
MCP_EXTERN int mcp_server_elicitation_complete(mcp_server *srv, const char *elicitation_id);

/* Makes a tool's answer the URL-elicitation-required error (-32042) naming
 * one URL the user must visit.  Strings copied.  Returns MCP_ERESULT, which
 * the handler returns to send it, or MCP_EINVAL / MCP_ENOMEM. */
MCP_EXTERN int mcp_result_set_url_elicitation_required(mcp_result *out, const char *message,
						       const char *url,
						       const char *elicitation_id);

/* ====================================================================== */
/* Authorization: an OAuth 2.1 protected resource, scopes per item, and   */
/* hooks around every request.                                            */
/*                                                                        */
/* Over Streamable HTTP the server is an OAuth 2.1 resource server as the */
/* MCP authorization specification (2025-06-18 onward) describes: it      */
/* serves its Protected Resource Metadata (RFC 9728) at                   */
/* /.well-known/oauth-protected-resource[/path], takes a token from the   */
/* Authorization header only, verifies it (built-in JWT verifier or the   */
/* application's), answers 401/400/403 with WWW-Authenticate challenges   */
/* and JSON-RPC bodies, binds each session to the token's party (another  */
/* party's token on it: 404), and the principal travels with the request */
/* to scope checks, hooks and handlers; see doc/auth.md.  Over stdio and  */
/* in-process connections there is no token (the MCP specification       */
/* leaves local credentials to the environment): requests there carry no */
/* principal and are not restricted by scopes.                            */
/* ====================================================================== */

/* JSON-RPC errors of refusals.  Over HTTP they come with the status in
 * brackets. */
/* No token, or a token that is invalid [401; 400 for a malformed request,
 * data.error "invalid_request"]. */
#define MCP_JSONRPC_UNAUTHORIZED (-32051)
/* The token lacks a scope the request needs [403, data.error
 * "insufficient_scope", data.scope the scopes to ask for], or a
 * before-hook refused the request [403, data.error "forbidden"]. */
#define MCP_JSONRPC_FORBIDDEN (-32052)
/* (MCP_JSONRPC_SERVER_BUSY with data.retryAfterMs: a hook's rate limit
 * [429 with Retry-After].) */

/* Authorization is configured with the mcp_server_set_auth_* setters of
 * "Server configuration" below: the resource, its authorization servers
 * and scopes, and either the built-in JWT verifier's key set or an
 * application verifier.
 *
 * The built-in JWT verifier, used when no verifier function is set,
 * needs the resource and a key set; it checks the signature (RS256,
 * RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512 and EdDSA over
 * Ed25519; "none" and HS* are always refused, and the algorithm must fit
 * the key's type and curve), the key id, exp (required), nbf and iat with
 * the clock skew, aud against the resource, iss when set, and typ (absent,
 * "JWT" or "at+jwt"; only at+jwt in strict mode).  The principal gets sub,
 * client_id (or azp), the scopes of "scope" (space-separated) and "scp"
 * (an array), aud, iss and exp.  doc/auth.md has the whole policy. */

/* An application verifier, for opaque tokens (introspection) or any other
 * scheme.  It replaces the JWT verifier.
 *
 * The principal being built for a token; opaque, owned by the library. */
typedef struct mcp_principal mcp_principal;
/* What a verifier says of a token. */
typedef enum mcp_auth_status {
	MCP_AUTH_OK = 0,             /* valid: `out` describes its holder */
	MCP_AUTH_INVALID_TOKEN,      /* unknown, expired, revoked, malformed: 401 */
	MCP_AUTH_INSUFFICIENT_SCOPE  /* valid but not enough for this server: 403 */
} mcp_auth_status;
/* Called on a transport thread for each request that carries a token,
 * with the token (borrowed for the call), the resource URI (set with
 * mcp_server_set_auth_resource), the
 * principal to fill with mcp_principal_set_* (owned by the library) and
 * `user`.  Return an mcp_auth_status, or a negative MCP_E* code when the
 * verifier itself failed (the request then gets 500).  Must be
 * thread-safe; it should not block long (cache introspection answers).
 * After MCP_AUTH_OK the library still refuses the token when the principal
 * says it expired, or names audiences none of which is the resource. */
typedef int (*mcp_auth_verify_fn)(const char *token, const char *resource, mcp_principal *out,
				  void *user);
/* Filling a principal, from the verifier only (after it returns the
 * principal is frozen and these return MCP_ESTATE).  Strings copied;
 * MCP_OK, MCP_EINVAL, MCP_ENOMEM, MCP_ESTATE.  add_scope adds one scope
 * token (no spaces); `expires_at` is Unix time in seconds (0: unknown). */
MCP_EXTERN int mcp_principal_set_subject(mcp_principal *p, const char *subject);
MCP_EXTERN int mcp_principal_set_client_id(mcp_principal *p, const char *client_id);
MCP_EXTERN int mcp_principal_set_issuer(mcp_principal *p, const char *issuer);
MCP_EXTERN int mcp_principal_add_scope(mcp_principal *p, const char *scope);
MCP_EXTERN int mcp_principal_add_audience(mcp_principal *p, const char *audience);
MCP_EXTERN int mcp_principal_set_expiry(mcp_principal *p, int64_t expires_at);

/* The principal in the handler (and in hooks).  All return values are
 * borrowed and valid until the handler returns.  Call from the handler's
 * thread. */
/* 1 when the request carried a verified token, 0 when it carried none
 * (stdio, in-process, HTTP without authorization). */
MCP_EXTERN int mcp_ctx_authenticated(const mcp_ctx *ctx);
/* The token's subject ("sub") or client id, or NULL when the request has
 * no principal or the token named none. */
MCP_EXTERN const char *mcp_ctx_auth_subject(const mcp_ctx *ctx);
MCP_EXTERN const char *mcp_ctx_auth_client_id(const mcp_ctx *ctx);
/* The token's scopes (*n of them; *n may be NULL), or NULL with *n = 0. */
MCP_EXTERN const char *const *mcp_ctx_auth_scopes(const mcp_ctx *ctx, size_t *n);
/* 1 when the request's principal holds `scope`, else 0, also when there is
 * no principal: a handler that gates on it denies requests without a
 * token (check mcp_ctx_authenticated first to allow local clients). */
MCP_EXTERN int mcp_ctx_auth_has_scope(const mcp_ctx *ctx, const char *scope);

/* Scopes per tool, resource, template and prompt.  Declared apart from the
 * registration structs and kept by key, so they may be set before the item
 * is registered (then it is never reachable without them) and stay when it
 * is removed and added again.  For a request with a principal: lists show only the items whose
 * scopes it holds, and a call, read or get (and completion of a prompt or
 * template) without them is refused with MCP_JSONRPC_FORBIDDEN (data:
 * error "insufficient_scope", scope naming what to ask for; over HTTP
 * 403 with the matching WWW-Authenticate).  Requests without a principal
 * are not restricted. */
typedef enum mcp_item_kind {
	MCP_ITEM_TOOL = 0,
	MCP_ITEM_RESOURCE,     /* key: the URI */
	MCP_ITEM_TEMPLATE,     /* key: the URI template */
	MCP_ITEM_PROMPT
} mcp_item_kind;
/* Hooks around every request, in both protocol eras and on every
 * transport: initialize, ping, logging/setLevel, the lists, resources/read,
 * subscribe and unsubscribe, tools/call, prompts/get, completion/complete,
 * tasks/get, list, cancel and result, and in 2026-07-28 server/discover
 * and subscriptions/listen.
 * Installing hooks moves the methods a connection otherwise answers on its
 * reader (all but the calls, reads, gets and completions) to the worker
 * pool, so that hooks always run on a worker; without hooks nothing
 * changes.  Not hooked: what is refused before any method runs (a
 * malformed message, an unknown method, a request before initialize, a
 * duplicate id, a full queue, the 2026-07-28 _meta and header checks),
 * notifications, and answers to the server's own requests.
 *
 * `before` runs on the worker before the handler, after the scope check;
 * it sees the method, the name, the principal and the request's _meta
 * (trace context) through the mcp_ctx_* accessors.  It returns MCP_OK to
 * let the request run, or refuses it: return mcp_ctx_refuse(...).  Any
 * other non-zero return refuses it with MCP_JSONRPC_FORBIDDEN.
 * `after` runs on the worker once the request has its answer (refused
 * ones included): `outcome` is "completed", "error", "refused",
 * "peer_cancelled", "transport_closed", "shutdown" or "timeout" ("streaming"
 * for a subscriptions/listen let through: its stream goes on without a
 * worker, and its end is not reported); `code` the
 * JSON-RPC error code answered (0 for a result or nothing written);
 * `duration_us` the time since `before` was called.
 * Hooks hold no lock of the library; they may block, and a blocking
 * before-hook can use mcp_ctx_sleep and mcp_ctx_cancelled like a handler
 * (it is cancelled like one).  Must be thread-safe.  Either may be NULL.
 * Before running: MCP_OK, MCP_EINVAL, MCP_ESTATE. */
typedef int (*mcp_before_fn)(mcp_ctx *ctx, void *user);
typedef void (*mcp_after_fn)(mcp_ctx *ctx, const char *outcome, int code, int64_t duration_us,
			     void *user);
/* What the request is, for hooks and handlers (borrowed, valid until the
 * handler returns): the method ("tools/call"), the name of the tool or
 * prompt, or the URI of the resource (completion: the prompt name or
 * template URI it completes; NULL when none), and the request's params
 * _meta object (NULL when it has none; traceparent and the like live
 * there). */
MCP_EXTERN const char *mcp_ctx_method(const mcp_ctx *ctx);
MCP_EXTERN const char *mcp_ctx_target(const mcp_ctx *ctx);
MCP_EXTERN json_object *mcp_ctx_meta(const mcp_ctx *ctx);

/* Why a before-hook refuses. */
typedef enum mcp_refusal {
	MCP_REFUSE_FORBIDDEN = 0, /* MCP_JSONRPC_FORBIDDEN; HTTP 403 */
	MCP_REFUSE_RATE_LIMITED   /* MCP_JSONRPC_SERVER_BUSY with
				     data.retryAfterMs; HTTP 429, Retry-After */
} mcp_refusal;
/* Records the refusal of this request (`message` copied; NULL gives a
 * default; `retry_after_ms` >= 0, for MCP_REFUSE_RATE_LIMITED) and returns
 * MCP_EBUSY, never MCP_OK, so `return mcp_ctx_refuse(...)` from a
 * before-hook always refuses.  Call from a before-hook only. */
MCP_EXTERN int mcp_ctx_refuse(mcp_ctx *ctx, mcp_refusal kind, const char *message,
			      int64_t retry_after_ms);

/* ====================================================================== */
/* Server configuration: every mcp_server_set_* (and the mcp_server_add_*  */
/* calls that configure rather than register).                            */
/* ====================================================================== */

/* Unless its comment says otherwise, a setter is called from the thread
 * that owns the server before a run function; it copies what it is given
 * (the caller keeps its strings) and returns MCP_OK, MCP_EINVAL for a NULL
 * server or a value out of its range (the range is given as "(LO..HI;
 * default D)"), MCP_ENOMEM, or MCP_ESTATE when the server is running or
 * has run.  The few that may also be called while serving say "Any
 * thread". */

/* ---- the engine, on every transport ---------------------------------- */

/* Instructions sent in the initialize result (copied; NULL clears). */
MCP_EXTERN int mcp_server_set_instructions(mcp_server *srv, const char *text);
/* Worker threads in the pool (1..1024; default 4). */
MCP_EXTERN int mcp_server_set_workers(mcp_server *srv, int n);
/* Shutdown grace period in milliseconds (0..600000; default 1500): how long
 * the shutdown waits for running handlers before abandoning them. */
MCP_EXTERN int mcp_server_set_grace_ms(mcp_server *srv, int64_t ms);
/* How long, in milliseconds of wall time, a call of a tool, prompt or
 * resource declared non-blocking (MCP_TOOL_NONBLOCKING) may run on the
 * thread that read it before it counts as having broken its promise
 * (1..60000; default 10).  Raise it where every call is slow for reasons
 * of the place, not the handler: under valgrind, say. */
MCP_EXTERN int mcp_server_set_nonblocking_budget_ms(mcp_server *srv, int64_t ms);
/* Maximum size of one inbound message in bytes (1024..1 GiB; default
 * 16 MiB).  A longer line gets -32600 and the reader resumes after it; over
 * HTTP, a longer POST body gets 413. */
MCP_EXTERN int mcp_server_set_max_message(mcp_server *srv, size_t bytes);
/* Maximum JSON nesting depth of an inbound message (2..10000; default 128). */
MCP_EXTERN int mcp_server_set_max_depth(mcp_server *srv, int depth);
/* Maximum number of JSON values in one inbound message (16..100000000;
 * default 1048576), weighted by what each costs once parsed: a number, a
 * string, true, false and null count 1, an array 2, an object 8; member
 * names do not count.  It bounds what a message costs in memory, which
 * its size alone does not: json-c spends about 784 bytes on an empty
 * object, so a 3 MiB line of "{}" would cost 700 MiB.  The count is taken
 * on the raw text before any of it is parsed; a message past it gets
 * -32600 ("... more than N JSON values ...") under a null id, over every
 * transport (HTTP: status 400).  Worst case per message at the defaults:
 * 131072 empty objects, about 100 MiB of json-c objects (a million
 * numbers: about 80 MiB), plus the message's text (up to 16 MiB) and its
 * strings' copies (at most as many bytes again): about 130 MiB. */
MCP_EXTERN int mcp_server_set_max_values(mcp_server *srv, size_t n);
/* Maximum number of requests queued for a worker, over all connections
 * (1..10000000; default 100000).  A request beyond it is answered at once
 * with MCP_JSONRPC_SERVER_BUSY. */
MCP_EXTERN int mcp_server_set_max_queue(mcp_server *srv, int n);
/* Maximum number of outstanding server-to-client requests per connection
 * (1..1000000; default 1024).  Beyond it mcp_ctx_* requests fail with
 * MCP_EBUSY. */
MCP_EXTERN int mcp_server_set_max_pending(mcp_server *srv, int n);
/* How long, in microseconds, a worker polls for the next request before it
 * sleeps, once it has answered requests that came one at a time (0..10000;
 * default 50; 0 never polls).  A client that waits for each answer before
 * it sends the next then finds a worker awake instead of paying a thread
 * wake-up per request; the price is up to this much CPU time after each
 * such request.  Under load, or while other handlers run, no worker
 * polls. */
MCP_EXTERN int mcp_server_set_idle_poll_us(mcp_server *srv, int us);
/* Items per page of tools/list, resources/list, resources/templates/list,
 * tasks/list and prompts/list (1..100000; default 100).  Cursors are
 * opaque and checked: each is bound to the list it pages and carries a
 * MAC under a key derived from the state key (mcp_server_set_state_key),
 * so a cursor the server did not issue, or one of another list, is
 * -32602, and processes that share the key accept each other's. */
MCP_EXTERN int mcp_server_set_page_size(mcp_server *srv, int n);
/* Names this process among several behind one load balancer: every task
 * id it makes starts with `tag` and a '.' ("b2.3f0c..."), so that a proxy
 * can send tasks/get, tasks/update and tasks/cancel, whose Mcp-Name header
 * is the task id, to the process that holds the task (README, "Running
 * more than one process behind nginx").  1 to 32 of A-Z a-z 0-9 '-' '_';
 * NULL or "" for none (the default).  Copied. */
MCP_EXTERN int mcp_server_set_instance_id(mcp_server *srv, const char *tag);

/* Observation hook: called on the worker thread when a tool handler starts
 * (`event` "started", reason NULL) and once when it has ended (`event`
 * "cleanup", reason one of "completed", "peer_cancelled",
 * "transport_closed", "shutdown", "timeout").  Between the two, `event`
 * "invalid_output" reports a server fault: the tool's structuredContent
 * broke its output_schema (reason: the one-line error, e.g.
 * "/sum: expected number, got string (type)"; the client gets -32603),
 * and "nonblocking_refused" and "nonblocking_overran" a tool declared
 * MCP_TOOL_NONBLOCKING that tried to wait or ran too long (reason: the
 * tool's name; see there).
 * Events may be added: a hook ignores those it does not know.  `id_json`
 * is the request id as compact JSON.  All strings are borrowed for the
 * call only.  The hook must be thread-safe and must not block. */
typedef void (*mcp_trace_fn)(const char *event, const char *id_json,
			     const char *reason, void *user);
MCP_EXTERN int mcp_server_set_trace(mcp_server *srv, mcp_trace_fn fn, void *user);

/* ---- Streamable HTTP (mcp_server_run_http) --------------------------- */

/* Every limit is refused with a status and a JSON-RPC body, never by
 * blocking or dropping others: 413 for a body over
 * mcp_server_set_max_message(), 400 for JSON nested past
 * mcp_server_set_max_depth() (the same limit on every transport), 503 with
 * Retry-After for connections, sessions and streams, 429 with Retry-After
 * for one session's queue, 408 past the header and body time limits.  A
 * body whose Content-Length is over the message limit is refused on its
 * header, before any of it is read; a chunked one as it crosses the
 * limit.  A request with several Authorization headers gets 400
 * invalid_request (RFC 6750 section 3.1).  A request whose length is ambiguous (two
 * Content-Length headers, or Content-Length with Transfer-Encoding) gets
 * 400 and its connection is closed; a POST whose Accept names neither
 * application/json nor text/event-stream gets 406; an
 * MCP-Protocol-Version the server does not speak gets 400 on every
 * method. */

/* The endpoint path (copied; must start with '/'; default "/mcp"). */
MCP_EXTERN int mcp_server_set_http_path(mcp_server *srv, const char *path);
/* Non-zero: answer every request as one JSON body even when the client
 * accepts SSE (progress and other messages tied to the request are then
 * not delivered).  Default 0: SSE when accepted. */
MCP_EXTERN int mcp_server_set_http_json(mcp_server *srv, int json_only);
/* Non-zero: stateless mode, for several processes behind a load balancer.
 * No sessions: no Mcp-Session-Id is issued or required, each POSTed request
 * is served on its own (as if initialized, with the revision of its
 * MCP-Protocol-Version header, default 2025-03-26, and no client
 * capabilities), GET and DELETE answer 405.  So handlers cannot call the
 * client (MCP_ENOTSUP), notifications and cancellation from the client
 * are accepted and ignored, there are no subscriptions, GET stream or
 * tasks.  Default 0. */
MCP_EXTERN int mcp_server_set_http_stateless(mcp_server *srv, int stateless);
/* Non-zero: also serve the legacy "HTTP with SSE" transport of MCP
 * revision 2024-11-05 (replaced by Streamable HTTP in 2025-03-26), for
 * clients that still speak only it, beside Streamable HTTP on its own
 * path.  Default 0: the legacy paths are unknown (404) like any other.
 *
 * A GET on the SSE path (default "/sse") opens a session and its one
 * text/event-stream response; its first event is "endpoint", whose data
 * is the URL to POST to: the messages path with "?sessionId=ID".  Every
 * message of the session (answers, the server's requests, notifications)
 * then goes out on that stream as an event "message" without an id.  A
 * POST to that URL carries one JSON-RPC message (or a batch, where the
 * negotiated revision has them) and is answered 202 Accepted at once; its
 * answer comes on the stream.  Refusals have a JSON-RPC error body: 404
 * for an unknown or ended sessionId, 400 for a missing one or a message
 * that is not JSON-RPC, 415 for a Content-Type other than
 * application/json, and the limits of Streamable HTTP (413, 503 with
 * Retry-After at mcp_server_set_max_sessions() or
 * mcp_server_set_max_streams(): each legacy stream is a session and a GET
 * stream).  The session negotiates with initialize, as on stdio; its
 * POSTs need no MCP-Protocol-Version header.  Host and Origin checks, the
 * mcp_server_set_http_auth() hook (given the sessionId as `session_id`)
 * and OAuth authorization apply to the GET and to every POST, and a
 * POST's token must be of the party that opened the session (else 404).
 * When the stream's client goes away the session ends: its handlers'
 * tokens fire with MCP_CANCEL_TRANSPORT_CLOSED and nothing more is
 * written.  There is no resumption (no Last-Event-ID): a client that
 * reconnects gets a new session.  A session idle past
 * mcp_server_set_session_idle_ms() with no stream attached expires.
 * Independent of mcp_server_set_http_stateless() and
 * mcp_server_set_http_json(), which concern Streamable HTTP only.
 *
 * Before mcp_server_run_http() only: MCP_ESTATE while the server runs,
 * MCP_EINVAL for a NULL server.  Any thread, not concurrently with other
 * settings of the same server. */
MCP_EXTERN int mcp_server_set_http_legacy_sse(mcp_server *srv, int on);
/* The two paths of the legacy HTTP+SSE transport: `sse_path` for its GET
 * (NULL: "/sse") and `messages_path` for its POSTs (NULL: "/messages").
 * Each must start with '/' and hold no '?', '#', space or line break, and
 * they must differ; copied.  A path equal to mcp_server_set_http_path()'s
 * is served as Streamable HTTP.  MCP_EINVAL for a bad path, MCP_ENOMEM,
 * MCP_ESTATE while the server runs.  Does not turn the transport on. */
MCP_EXTERN int mcp_server_set_http_legacy_sse_paths(mcp_server *srv, const char *sse_path,
						     const char *messages_path);
/* DNS rebinding protection.  A request whose Host header names a host not
 * allowed gets 403, and so does one whose Origin header (when present) is
 * not allowed.  Always allowed: localhost, 127.0.0.1 and [::1], any port,
 * for Host; the same names over http and https, any port, for Origin.
 * Add the names clients use to reach a server on another address with
 * mcp_server_add_http_allowed_host() ("example.com" or "example.com:8080";
 * without a port any port matches; "*" turns the Host check off), and the
 * web origins allowed to call it with mcp_server_add_http_allowed_origin()
 * ("https://app.example.com", exact match; "*" turns the Origin check off).
 * Strings copied. */
MCP_EXTERN int mcp_server_add_http_allowed_host(mcp_server *srv, const char *host);
MCP_EXTERN int mcp_server_add_http_allowed_origin(mcp_server *srv, const char *origin);
/* An authorization hook for deployments that check bearer tokens
 * themselves (for OAuth, see mcp_server_set_auth_resource below).  Called
 * on an HTTP thread for every request to the endpoint, after the Host and
 * Origin checks and before anything else, with the Authorization header's
 * value (NULL when absent), the Mcp-Session-Id header's (NULL when absent;
 * bind tokens to sessions with it) and `user`; all borrowed for the call.
 * Return 0 to let the request through, 403 to refuse it with 403
 * Forbidden, anything else to refuse it with 401 Unauthorized and a
 * "WWW-Authenticate: Bearer" header.  Must be thread-safe and must not
 * block long.  NULL `fn` removes the hook. */
typedef int (*mcp_http_auth_fn)(const char *authorization, const char *session_id,
				void *user);
MCP_EXTERN int mcp_server_set_http_auth(mcp_server *srv, mcp_http_auth_fn fn, void *user);
/* Sessions open at once (1..1000000; default 1000); initialize beyond it
 * gets HTTP 503 with Retry-After.  Requests served without a session
 * (2026-07-28, stateless mode) are limited to as many at once, apart. */
MCP_EXTERN int mcp_server_set_max_sessions(mcp_server *srv, int n);
/* Idle time after which a session with no open stream and no request in
 * flight ends, in ms (1000..2^31; default 30 minutes).  Its handlers (none
 * run, by definition, but subscriptions may be held) see
 * MCP_CANCEL_SESSION_EXPIRED; later requests for it get 404. */
MCP_EXTERN int mcp_server_set_session_idle_ms(mcp_server *srv, int64_t ms);
/* HTTP connections open at once (1..1000000; default 4096).  A request
 * on a connection past the limit gets 503 with Retry-After and the
 * connection is closed; past the limit and 64 more, connections are
 * refused at accept.  A connection past the limit makes room: the one
 * whose request header has been coming in longest (a slow client, or one
 * kept alive and idle) gets 503 and is closed.  Each connection is a file descriptor: the process's
 * RLIMIT_NOFILE must leave room for them. */
MCP_EXTERN int mcp_server_set_max_connections(mcp_server *srv, int n);
/* Standalone SSE streams (GET) open at once, over all sessions
 * (1..1000000; default 10000).  A GET beyond it gets 503 with
 * Retry-After.  An idle stream holds no thread and no worker. */
MCP_EXTERN int mcp_server_set_max_streams(mcp_server *srv, int n);
/* The most SSE bytes a stream keeps for a client that reads slowly or is
 * away (4096..1 GiB; default 1 MiB).  A connected client that owes more
 * than this is disconnected (it resumes with Last-Event-ID); for one that
 * stays away, the oldest events beyond it are dropped.  The newest event
 * does not count, so one message larger than the backlog is delivered
 * whole; a stream that cannot be resumed (2026-07-28, stateless) is never
 * cut, and drops its oldest unsent notifications instead, never its
 * answer. */
MCP_EXTERN int mcp_server_set_stream_backlog(mcp_server *srv, size_t bytes);
/* Time limits on what a client sends, in ms (100..2^31), so that clients
 * that trickle their requests cannot hold connections.  A request's header
 * must be in within `ms` of its connection's start; default 5000.  Its
 * body must be in within the body limit of its header; default 30000.
 * Past either the client gets 408 with a JSON-RPC body and the connection
 * is closed.  A connection kept alive after a request is closed (without
 * a 408, which could be read as the answer to its next request) when the
 * next request's header is not in within the longer of the header limit
 * and 60 s.
 * Neither limit applies while a request waits for its answer or a client
 * reads an SSE stream.  Before mcp_server_run_http, from the thread that
 * owns the server. */
MCP_EXTERN int mcp_server_set_http_header_timeout_ms(mcp_server *srv, int64_t ms);
MCP_EXTERN int mcp_server_set_http_body_timeout_ms(mcp_server *srv, int64_t ms);
/* Fairness between HTTP sessions on the shared worker pool: at most `n`
 * requests of one session are queued for or running on a worker at once
 * (0..1024; default 0, which means workers - 1, at least 1, so that one
 * session's burst always leaves a worker to the others); its other
 * requests wait in the session, in order.  Requests served without a
 * session are each their own. */
MCP_EXTERN int mcp_server_set_session_workers(mcp_server *srv, int n);
/* How many requests of one HTTP session may wait for its worker cap
 * (0..10000000; default 1000).  One beyond it is answered at once with
 * MCP_JSONRPC_SERVER_BUSY, HTTP 429 with Retry-After. */
MCP_EXTERN int mcp_server_set_session_queue(mcp_server *srv, int n);

/* ---- tasks ----------------------------------------------------------- */

/* How long a finished task's result is kept when the client asked for no
 * ttl, and the longest ttl granted, in milliseconds (1000..2^31; defaults
 * one hour and one day). */
MCP_EXTERN int mcp_server_set_task_ttl(mcp_server *srv, int64_t default_ms, int64_t max_ms);
/* At most this many tasks are kept at once, running or finished within
 * their TTL, over all connections and both eras (1..10000000; default
 * 10000).  A call that would start one more is answered
 * MCP_JSONRPC_SERVER_BUSY ("too many tasks") and nothing runs. */
MCP_EXTERN int mcp_server_set_max_tasks(mcp_server *srv, int n);
/* At most this many of those tasks belong to one party, so that one user
 * cannot take every slot (1..10000000; default 1000): with authorization,
 * one principal (mcp_ctx_auth_subject: the same issuer and subject); without
 * it, one session (a stdio connection, an HTTP session).  A stateless HTTP
 * request without authorization has no lasting identity, so only the cap
 * of mcp_server_set_max_tasks applies to it.  A call past it is answered
 * MCP_JSONRPC_SERVER_BUSY naming the cap hit, e.g. "Server busy: too many
 * tasks of this principal (at most 1000 each)".  Before running. */
MCP_EXTERN int mcp_server_set_max_tasks_per_principal(mcp_server *srv, int n);

/* The shared state store (a task that outlives its process): with one set,
 * every 2026-07-28 task (the io.modelcontextprotocol/tasks extension) is
 * kept in the store, so that any process sharing it answers tasks/get,
 * tasks/update and tasks/cancel for a task another process runs: a cancel
 * reaches the handler's token (MCP_CANCEL_PEER) and an input its waiting
 * call wherever they run, and notifications/tasks reach the listen streams
 * of every process; so do tools/resources/prompts list_changed and
 * mcp_server_resource_updated raised in any of them.  The record is written before the CreateTaskResult is
 * sent; the process running a task renews a lease on it (see
 * mcp_server_set_task_lease_ms), and a task whose lease lapses (its
 * process was killed) is failed by the next reader.  2025-11-25 tasks stay
 * with their session, which stays with its process.
 *   url: "memory:" (this process only: the same code path, for tests),
 *        "redis://[:PASSWORD@]HOST[:PORT][/DB]" (Redis or Valkey; port
 *        6379, percent-escape a password's '@' and '/'), or
 *        "unix:/PATH[?db=N&password=PW]" (Redis over a Unix socket); NULL
 *        for none (the default: each process keeps its own tasks).
 * Copied.  The URL is checked now (a Redis URL opens hiredis now, so a
 * server without a store never loads it) and the store is reached when
 * the server starts (a store that is down then delays the start by at
 * most twice the store timeout, and is retried).  Returns MCP_EINVAL for a URL that cannot be used
 * (mcp_server_store_error says why), MCP_ESTATE once the server runs.
 * While the store cannot be reached, creating a task and the task methods
 * fail with -32603 "Task store unavailable: ..." (naming the store, never
 * its password) and everything else is served; the store is retried with
 * a back-off.  Call before mcp_server_run*, from the configuring thread. */
MCP_EXTERN int mcp_server_set_store(mcp_server *srv, const char *url);
/* Why the last mcp_server_set_store failed, or the store's last failure
 * while the server runs (a password is never included); "" when nothing
 * failed.  Borrowed, valid until the next call on srv from any thread;
 * for logs. */
MCP_EXTERN const char *mcp_server_store_error(mcp_server *srv);
/* How long one store call may take, connecting included, in ms (10..60000;
 * default 1000). */
MCP_EXTERN int mcp_server_set_store_timeout_ms(mcp_server *srv, int64_t ms);
/* The lease a process holds on each task it runs, in ms (300..600000;
 * default 10000): renewed every third of it; once a killed process's lease
 * lapses, its task reads as failed ("the process running the task
 * stopped").  A process stalled past it loses its tasks: their handlers'
 * tokens fire (MCP_CANCEL_TIMEOUT). */
MCP_EXTERN int mcp_server_set_task_lease_ms(mcp_server *srv, int64_t ms);

/* ---- input from the client (mcp_ctx_require_input, parking) ---------- */

/* The 32-byte key that seals request states (copied; a random one is made
 * by mcp_server_new).  Processes behind one load balancer need the same
 * key.  To rotate it, pass the key being replaced as `previous` (or NULL):
 * states sealed under either are accepted, new ones use `key`. */
MCP_EXTERN int mcp_server_set_state_key(mcp_server *srv, const unsigned char key[32],
					const unsigned char *previous);
/* How many times a legacy client is asked for input in one request before
 * the request fails (1..64; default 8). */
MCP_EXTERN int mcp_server_set_input_rounds(mcp_server *srv, int rounds);
/* How long a sealed request state stays valid, in ms (1000..86400000;
 * default 10 minutes): a client that answers later must start over. */
MCP_EXTERN int mcp_server_set_state_ttl(mcp_server *srv, int64_t ms);
/* Parked handlers: how many 2026-07-28 handlers may wait in the blocking
 * client calls (mcp_ctx_elicit and its siblings) at once (0..65536,
 * default 64; 0 turns parking off) and how long each waits for its input,
 * in ms (1..86400000, default 60 s). */
MCP_EXTERN int mcp_server_set_parking(mcp_server *srv, int max_parked, int64_t ttl_ms);

/* ---- MCP Apps -------------------------------------------------------- */

/* Links tool `tool` to the UI resource `uri` (must start with "ui://"):
 * tools/list then gives the tool _meta.ui {resourceUri, visibility}, and a
 * host that supports MCP Apps renders the tool's results with that UI.
 * `visibility`: MCP_UI_MODEL | MCP_UI_APP, or 0 to leave it out (hosts
 * then take both); a tool visible to the UI alone is still listed and
 * callable (visibility is for the host, not access control: use scopes).
 * Kept by tool name, apart from the registration, so it may come before
 * the tool and stays when the tool is removed and added again; NULL `uri`
 * removes the link.  Register the resource too (mcp_server_add_app).  Any
 * thread, also while serving (clients told the tool list may change get
 * notifications/tools/list_changed).  Strings copied.  MCP_OK, MCP_EINVAL
 * or MCP_ENOMEM. */
MCP_EXTERN int mcp_server_set_tool_ui(mcp_server *srv, const char *tool, const char *uri,
				      unsigned visibility);

/* ---- authorization (doc/auth.md) ------------------------------------- */

/* The canonical URI of this MCP server as clients name it (RFC 8707), e.g.
 * "https://mcp.example.com/mcp": http or https, a host, no query or
 * fragment.  It is the metadata's "resource", and every token's "aud" must
 * name it (compared after lowercasing scheme and host, dropping a default
 * port and a trailing '/').  Setting it turns authorization on for HTTP. */
MCP_EXTERN int mcp_server_set_auth_resource(mcp_server *srv, const char *uri);
/* Adds an authorization server (its issuer URL) to the metadata's
 * authorization_servers.  At least one is needed for clients to find where
 * to get a token. */
MCP_EXTERN int mcp_server_add_auth_server(mcp_server *srv, const char *issuer_url);
/* The metadata's scopes_supported: a space-separated list of scope tokens
 * (RFC 6749 section 3.3; MCP_EINVAL otherwise).  NULL clears. */
MCP_EXTERN int mcp_server_set_auth_scopes_supported(mcp_server *srv, const char *scopes);
/* Scopes every token must hold to reach the server at all (checked before
 * anything else; a token without them gets 403 insufficient_scope), and
 * named in the scope parameter of the 401 challenge so that a client asks
 * for them first.  Space-separated; NULL clears. */
MCP_EXTERN int mcp_server_set_auth_required_scopes(mcp_server *srv, const char *scopes);
/* The metadata's optional resource_name and resource_documentation (a
 * URL); either may be NULL. */
MCP_EXTERN int mcp_server_set_auth_resource_info(mcp_server *srv, const char *name,
						 const char *documentation_url);
/* The built-in JWT verifier's issuer: every token's "iss" must equal it
 * exactly; NULL: not checked (then trust the key set alone). */
MCP_EXTERN int mcp_server_set_auth_issuer(mcp_server *srv, const char *issuer);
/* The allowed difference between the server's clock and the issuer's, in
 * ms (0..600000; default 60000). */
MCP_EXTERN int mcp_server_set_auth_clock_skew_ms(mcp_server *srv, int64_t ms);
/* Non-zero: accept only tokens whose typ header is "at+jwt" (RFC 9068).
 * Default 0, since many authorization servers still write "JWT". */
MCP_EXTERN int mcp_server_set_auth_strict_typ(mcp_server *srv, int strict);
/* The key set, as JWKS text (RFC 7517; copied) or as the path of a JWKS
 * file (read now; the path is remembered for mcp_server_reload_auth_keys).
 * Keys the verifier cannot use (encryption keys, symmetric keys, RSA below
 * 2048 bits, other curves) are skipped.  Any thread, also while running:
 * the new set replaces the old at once, verifications in progress finish
 * with the set they started with, and on any error the old set stays.
 * MCP_OK, MCP_EINVAL (not a JWKS, or no usable key), MCP_ESYS (the file
 * cannot be read), MCP_ENOMEM, MCP_ESTATE (the first key set of a running
 * server: configure authorization before running). */
MCP_EXTERN int mcp_server_set_auth_jwks_text(mcp_server *srv, const char *jwks);
MCP_EXTERN int mcp_server_set_auth_jwks_file(mcp_server *srv, const char *path);
/* Reads the JWKS file again (key rotation).  Any thread.  MCP_OK,
 * MCP_ENOENT (no file was set), or an error of mcp_server_set_auth_jwks_
 * file, when the old set stays. */
MCP_EXTERN int mcp_server_reload_auth_keys(mcp_server *srv);
/* Why the last of the three above failed, in words an operator can act
 * on, copied into buf[bufsz] ("" after a success or before any): the rule
 * or the limit broken, with its value, e.g. "the key set holds 300 keys;
 * the limit is 256 keys" or "the key set file is larger than the limit of
 * 1048576 bytes (1 MiB)".  A key set is at most 1 MiB and 256 keys.  Any
 * thread.  MCP_OK, or MCP_EINVAL for a NULL argument. */
MCP_EXTERN int mcp_server_auth_keys_error(mcp_server *srv, char *buf, size_t bufsz);
/* The key set fetched from the authorization server (RFC 7517), so that a
 * key rotation there needs no reload here.  `url` is the JWKS document's
 * URL; NULL discovers it from the issuer (mcp_server_set_auth_issuer,
 * needed then): the jwks_uri of its RFC 8414 metadata at
 * /.well-known/oauth-authorization-server (inserted before the issuer's
 * path), else of /.well-known/openid-configuration (appended), whose
 * "issuer" must equal the configured one.  https is required, except to a
 * loopback host (127.0.0.0/8, [::1], localhost); redirects are not
 * followed; a document is at most 1 MiB and 256 keys, an exchange at most
 * 10 s.
 *
 * Fetches the set now, on the calling thread, then starts a thread owned
 * by the server (joined by mcp_server_free) that fetches it again:
 *  - when the last set expires by its HTTP caching headers (RFC 9111:
 *    Cache-Control max-age, else Expires; no-store and no-cache mean as
 *    soon as allowed), clamped by mcp_server_set_auth_jwks_lifetime;
 *  - when a token names a kid the set lacks, at most once per
 *    mcp_server_set_auth_jwks_refresh interval, so that tokens with forged
 *    kids cannot make a storm of fetches.  The request waits for that
 *    fetch (bounded, see there) on its HTTP thread and is checked again
 *    with the new set; a miss within the interval is refused at once (401
 *    invalid_token whose error_description says the key id is unknown).
 * A fetch that fails, or brings a document that is not a usable key set,
 * keeps the old set, is reported to mcp_server_set_auth_keys_notify and
 * mcp_server_auth_keys_error, and is tried again after the refresh
 * interval.
 *
 * Call before running, after mcp_server_set_auth_jwks_refresh and _lifetime
 * (their values are taken now); once per server.  `url` copied.  MCP_OK;
 * MCP_EINVAL (a URL that is not https or loopback http; a document that
 * is not metadata or not a key set), MCP_ESTATE (running, a second call,
 * or NULL without an issuer), MCP_ESYS or MCP_ETIMEDOUT (the fetch
 * failed), MCP_ENOTSUP (built without libcurl, or it cannot be loaded),
 * MCP_ENOMEM.  After MCP_EINVAL for a document, MCP_ESYS or MCP_ETIMEDOUT
 * the thread still runs and keeps trying: the server may serve (tokens
 * get 500 until a set came) or be freed. */
MCP_EXTERN int mcp_server_set_auth_jwks_url(mcp_server *srv, const char *url);
/* The least time between two fetches caused by unknown kids, in ms
 * (1000..86400000; default 60000), and how long a request with an unknown
 * kid waits for the fetch it caused, in ms (0..10000; default 3000; 0:
 * refused at once, the next request gets the new set).  The wait holds
 * that request's HTTP thread, so keep it short; only requests that come
 * while a fetch is under way wait, at most one fetch per interval.
 * Before mcp_server_set_auth_jwks_url.  MCP_OK, MCP_EINVAL, MCP_ESTATE. */
MCP_EXTERN int mcp_server_set_auth_jwks_refresh(mcp_server *srv, int64_t min_interval_ms,
						int64_t wait_ms);
/* How long a fetched key set is used before it is fetched again, in ms:
 * the caching headers' lifetime clamped to [min_ms, max_ms], and
 * default_ms when the response has none (1000 <= min_ms <= default_ms <=
 * max_ms <= 604800000; defaults 300000, 3600000, 86400000).  Before
 * mcp_server_set_auth_jwks_url.  MCP_OK, MCP_EINVAL, MCP_ESTATE. */
MCP_EXTERN int mcp_server_set_auth_jwks_lifetime(mcp_server *srv, int64_t min_ms,
						 int64_t default_ms, int64_t max_ms);
/* Told of every fetch of the key set: `rc` MCP_OK with the number of
 * usable keys in `nkeys`, or the error with `why` (the URL and the rule or
 * failure, never a token or secret).  Called on the fetcher thread (the
 * first time on the thread of mcp_server_set_auth_jwks_url); must not call
 * back into the server's auth setters. */
typedef void (*mcp_auth_keys_fn)(int rc, size_t nkeys, const char *why, void *user);
/* Before mcp_server_set_auth_jwks_url; NULL removes.  MCP_OK, MCP_EINVAL,
 * MCP_ESTATE. */
MCP_EXTERN int mcp_server_set_auth_keys_notify(mcp_server *srv, mcp_auth_keys_fn fn, void *user);
/* RFC 7662 token introspection for tokens that are not JWTs (opaque), or
 * for every token when no key set is configured: the token is POSTed to
 * `url` (https, or http to loopback) with HTTP Basic authentication by
 * client_id and client_secret (both form-urlencoded first, RFC 6749
 * section 2.3.1; NULL client_id: none).  "active": true is required; the
 * principal gets sub, client_id, iss, scope, aud and exp; iss must equal
 * mcp_server_set_auth_issuer's when both are there, aud (when present)
 * must name the resource, exp (when present) must be in the future.
 * Answers are cached (see mcp_server_set_auth_introspection_cache) by the
 * token's SHA-256, never the token; the secret and tokens are never
 * logged nor put in an error.  The exchange runs on the request's HTTP
 * thread, at most 10 s; a failure is a 500 and is not cached.  Strings
 * copied.  Before running.  MCP_OK, MCP_EINVAL, MCP_ESTATE, MCP_ENOMEM. */
MCP_EXTERN int mcp_server_set_auth_introspection(mcp_server *srv, const char *url,
						 const char *client_id,
						 const char *client_secret);
/* The introspection cache: at most max_entries answers (1..1000000;
 * default 10000; the one nearest its end is dropped for a new one), each
 * kept until the token's exp plus the clock skew, or max_ttl_ms after it
 * was asked (0..86400000; default 60000; 0: no cache), whichever comes
 * first; an
 * inactive answer is kept max_ttl_ms.  A revoked token may thus be taken
 * for max_ttl_ms.  After mcp_server_set_auth_introspection.  MCP_OK,
 * MCP_EINVAL, MCP_ESTATE. */
MCP_EXTERN int mcp_server_set_auth_introspection_cache(mcp_server *srv, size_t max_entries,
						       int64_t max_ttl_ms);
/* An application verifier (mcp_auth_verify_fn) in place of the JWT
 * verifier; NULL `fn` returns to the JWT verifier. */
MCP_EXTERN int mcp_server_set_auth_verifier(mcp_server *srv, mcp_auth_verify_fn fn, void *user);
/* The scopes a tool, resource, template or prompt needs (mcp_item_kind);
 * `scopes`: space-separated scope tokens, all required; NULL or ""
 * removes the requirement.  Any thread, also while running.  MCP_OK,
 * MCP_EINVAL, MCP_ENOMEM. */
MCP_EXTERN int mcp_server_set_scopes(mcp_server *srv, mcp_item_kind kind, const char *key,
				     const char *scopes);
/* The hooks around every request (mcp_before_fn, mcp_after_fn); either may
 * be NULL. */
MCP_EXTERN int mcp_server_set_request_hooks(mcp_server *srv, mcp_before_fn before,
					    mcp_after_fn after, void *user);

#ifdef __cplusplus
}
#endif

#endif /* MCP_MCP_H */
