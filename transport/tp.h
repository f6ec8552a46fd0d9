/*
 * tp.h - the byte/message transport interface under the engine: a transport
 * delivers inbound messages as whole lines and writes whole outbound lines.
 *
 * It frames and checks bytes (newlines, size limit, UTF-8) but never looks
 * at JSON-RPC.  Implementations: fd (stdio, pipes, sockets) and mem (an
 * in-process pair for tests and embedding), both read by a reader thread
 * (recv); and Streamable HTTP (http.c, tp_http.h), which has no thread per
 * connection: it pushes each message into its session (eng_session_feed)
 * and takes output through send_routed, which never blocks.
 */
#ifndef MCP_TRANSPORT_TP_H
#define MCP_TRANSPORT_TP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/sigpipe.h" /* tp_write, tp_thread_create: every layer above */

typedef struct tp_conn tp_conn;

/* Results of recv. */
enum {
	TP_LINE = 1,     /* *line and *len hold one message (no newline) */
	TP_EOF = 0,      /* the peer closed its sending side */
	TP_TOOLONG = -1, /* a line exceeded max_message; it is being skipped */
	TP_BADUTF8 = -2, /* *line holds a line that is not valid UTF-8 */
	TP_WOKEN = -3,   /* tp wake was called (latched) */
	TP_ERROR = -4    /* a read error; treat as EOF */
};

/* One outbound line for a transport that routes messages to different
 * streams (streamable HTTP).  `route` is an opaque key naming the inbound
 * request the line belongs to (NULL: not tied to one); `is_response` marks
 * the last line of that request.  A line with `data` NULL (and
 * is_response set) carries nothing: the request of `route` ended without
 * an answer (a peer cancel, a close), so its stream ends here. */
typedef struct tp_out {
	const char *data;   /* a whole line, '\n' included; or NULL */
	size_t len;
	const char *route;
	int is_response;
} tp_out;

/* What the protocol layer tells a transport about the connection it
 * negotiated (tp_ops.set_features). */
enum {
	/* The client resumes streams the server ends (2025-11-25 and later):
	 * new SSE streams start with a priming event, and a handler may end
	 * its request's stream early. */
	TP_FEATURE_RESUMABLE = 1,
};

struct tp_ops {
	/* Blocks for the next message.  *line stays valid until the next call. */
	int (*recv)(tp_conn *c, const char **line, size_t *len);
	/* Writes every byte of iov[0..n) or fails.  Gives up at *deadline_ns
	 * (re-read while blocked, so a later close can shorten it).  Returns 0,
	 * -EPIPE (peer gone), -ETIMEDOUT or another -errno. */
	int (*send)(tp_conn *c, const struct iovec *iov, int n,
		    const _Atomic int64_t *deadline_ns);
	/* Optional: writes what it can of one line without blocking.  Returns
	 * the bytes written (0: it would block), -EOPNOTSUPP when the stream
	 * cannot be written without blocking, or another -errno (a failed
	 * stream, as from send). */
	ssize_t (*try_send)(tp_conn *c, const char *data, size_t len);
	/* Optional: when set, the writer calls this instead of send, with each
	 * line's route.  Same results as send. */
	int (*send_routed)(tp_conn *c, const tp_out *out, int n,
			   const _Atomic int64_t *deadline_ns);
	/* Makes recv return TP_WOKEN from now on.  Async-signal-safe. */
	void (*wake)(tp_conn *c);
	/* Closes the output side (after the writer drained). */
	void (*close_output)(tp_conn *c);
	/* Optional: ends the stream that carries the messages routed as
	 * `route` for now, telling the client to reconnect after retry_ms;
	 * later messages wait for it to resume.  0, -ENOENT (no such live
	 * route) or -ENOTSUP. */
	int (*close_route)(tp_conn *c, const char *route, int retry_ms);
	/* Optional: the request of `route` was let through by the layers
	 * above (eng_req_admitted): a stream whose response was held back
	 * until then (so that a refusal could still choose its status) may
	 * begin it now. */
	void (*open_route)(tp_conn *c, const char *route);
	/* Optional: whether a request to the client can travel on the stream
	 * of `route` (an HTTP POST answered as one JSON body cannot carry
	 * one).  1 when absent. */
	int (*can_request)(tp_conn *c, const char *route);
	/* Optional: TP_FEATURE_* flags of the connection, from the protocol
	 * layer once it knows them (the initialize answer). */
	void (*set_features)(tp_conn *c, unsigned flags);
	void (*free)(tp_conn *c);
};

struct tp_conn {
	const struct tp_ops *ops;
	size_t max_message;
	/* Set by the transport when its recv calls before_wait (below) on
	 * the reading thread each time before it blocks for input. */
	int announces_wait;
	/* Set by the engine (or NULL): the reader's chance to hand over the
	 * work it held back while more input was at hand. */
	void (*before_wait)(void *arg);
	void *before_wait_arg;
};

/* Returns 1 if s[0..len) is well-formed UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF). */
int tp_utf8_valid(const unsigned char *s, size_t len);

/* fd transport: reads in_fd, writes out_fd (neither closed by the
 * transport).  `extra_wake_fd` (or -1) is polled too: when it becomes
 * readable recv returns TP_WOKEN.  NULL on failure. */
tp_conn *tp_fd_new(int in_fd, int out_fd, int extra_wake_fd, size_t max_message);

/* mem transport: an in-process connection.  The server side is a tp_conn;
 * the client side is driven with the tp_mem_client_* calls, which are
 * thread-safe. */
typedef struct tp_mem tp_mem;
tp_mem *tp_mem_new(size_t max_message);
tp_conn *tp_mem_server(tp_mem *m);
/* Queues one inbound line (copied).  0, or -EPIPE after client close. */
int tp_mem_client_send(tp_mem *m, const char *line, size_t len);
/* Takes the next outbound line (caller frees) waiting up to timeout_ms
 * (< 0 forever).  Returns 1 with a line, 0 on timeout, -1 when the server
 * closed its output and nothing is left. */
int tp_mem_client_recv(tp_mem *m, int timeout_ms, char **line, size_t *len);
/* End of input for the server (like closing its stdin). */
void tp_mem_client_close(tp_mem *m);
/* The client end as a connection (for the library's own client): recv
 * returns the server's output, send queues the server's input, wake makes
 * recv return TP_WOKEN, close_output and free end the server's input.
 * The pair is still freed by tp_mem_free. */
tp_conn *tp_mem_client_conn(tp_mem *m);
/* Frees the pair; call after the server side has been freed. */
void tp_mem_free(tp_mem *m);

#endif /* MCP_TRANSPORT_TP_H */
