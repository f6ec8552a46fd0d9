/*
 * engine.pml - a Promela model of libmcp's engine (engine/*.c) for one
 * stdio session: the peer, the reader thread, NW workers, the writer
 * thread, the in-flight table, the pending table of server-to-client
 * requests and the shutdown sequence.  MAPPING.md maps every step to the
 * C code; README.md says what is checked, at which sizes, and what the
 * abstraction leaves out.
 *
 * The data is abstracted away (a request is a slot number, a line is a
 * kind and a slot); every lock, flag, compare-and-swap and ordering the
 * code relies on is kept.  The file is run through cpp by spin:
 *
 *   NREQ     requests the peer sends (2 or 3)
 *   NW       worker threads (2)
 *   NID      distinct client ids the peer picks from (2: duplicates occur)
 *   NCANCEL  notifications/cancelled the peer may send (1)
 *   PROPS    which assertions are armed (a mask of the P_* below; all)
 *   GRACE_QUIET  the grace expires only when nothing else can move
 *            (the "grace is long" reading; see README.md); otherwise the
 *            grace may expire at any moment after step 3
 *   NO_EPIPE the peer never stops reading (no write errors)
 *   REFS     also model the requests' reference counts and the reap
 *            stack (request lifetime, P_LIFE); the in-flight lookups
 *            take a reference only from a non-zero count, as the code
 *            does (M_PLAIN_REF: as it did before, the double free)
 *   M_*      one mutation of the code (README.md lists them)
 *
 * Locks: no process holds two of sess_mu, tok_mu[r], pt_mu and w_mu at
 * once, as in the code (engine/eng.h gives the order it allows).
 */

#ifndef NREQ
#define NREQ 2
#endif
#ifndef NW
#define NW 2
#endif
#ifndef NID
#define NID 2
#endif
#ifndef KINDS
#define KINDS 7
#endif
#ifndef NCANCEL
#define NCANCEL 1
#endif

/* ---- properties: each assertion belongs to one ----------------------- */
#define P_OUTCOME 1   /* exactly one terminal outcome per request */
#define P_CLOSED  2   /* nothing written after the output is closed */
#define P_CANCEL  4   /* nothing tied to a request after its peer cancel */
#define P_ROUTE   8   /* a client's answer reaches only its waiter */
#define P_PENDING 16  /* the pending table is failed from a snapshot */
#define P_ABANDON 32  /* at the grace, only token-blind handlers remain */
#define P_LIFE    64  /* a request is freed once, never while referenced
			 (with -DREFS: the request reference counts) */
#ifndef PROPS
#define PROPS 63
#endif

#if (PROPS & P_OUTCOME)
#define CHK_OUTCOME(c) assert(c)
#else
#define CHK_OUTCOME(c) skip
#endif
#if (PROPS & P_CLOSED)
#define CHK_CLOSED(c) assert(c)
#else
#define CHK_CLOSED(c) skip
#endif
#if (PROPS & P_CANCEL)
#define CHK_CANCEL(c) assert(c)
#else
#define CHK_CANCEL(c) skip
#endif
#if (PROPS & P_ROUTE)
#define CHK_ROUTE(c) assert(c)
#else
#define CHK_ROUTE(c) skip
#endif
#if (PROPS & P_PENDING)
#define CHK_PENDING(c) assert(c)
#else
#define CHK_PENDING(c) skip
#endif
#if (PROPS & P_ABANDON)
#define CHK_ABANDON(c) assert(c)
#else
#define CHK_ABANDON(c) skip
#endif
#if (PROPS & P_LIFE)
#define CHK_LIFE(c) assert(c)
#else
#define CHK_LIFE(c) skip
#endif

/* ---- constants ------------------------------------------------------------ */

/* terminal outcomes (eng.h ENG_OUT_*) */
#define O_NONE 0
#define O_RESP 1
#define O_SUPP 2
#define O_DROP 3
#define O_REJ  4

/* token reasons (MCP_CANCEL_*): every close reason is one value here */
#define R_NONE   0
#define R_PEER   1
#define R_CLOSED 2

/* handlers (examples/mcp-everything.c) */
#define H_SLEEP 0   /* sleep {ms: forever}: waits on its token */
#define H_CALL  1   /* roots: one roots/list, then answers */
#define H_BLIND 2   /* spin / progress {cancellable:false}: never looks at
		       its token, may emit one progress line */

/* pending entry states (ENG_PEND_*) */
#define P_WAIT 0
#define P_ANS  1
#define P_FAIL 2

/* return codes */
#define RC_OK       0
#define RC_CANCELED 1
#define RC_CLOSED   2
#define RC_EXIST    3
#define RC_ENDED    4   /* the run ended in the step that woke it */

/* outbound lines: kind * 8 + request slot */
#define L_RESP  1   /* the request's answer (is_response, tied) */
#define L_PROG  2   /* progress tied to the request (eng_req_emit) */
#define L_CALL  3   /* roots/list on its behalf (seq != 0) */
#define L_CNOTE 4   /* notifications/cancelled for that roots/list */
#define L_ERR   5   /* -32600 "id is already in flight", under that id */
#define LINE(k, r) ((k) * 8 + (r))
#define LKIND(x) ((x) / 8)
#define LREQ(x) ((x) % 8)

/* inbound messages */
#define M_REQ    1
#define M_CANCEL 2
#define M_ANSWER 3
#define M_EOF    4

#define WQ (4 * NREQ)

/* ---- shared state ---------------------------------------------------------- */

/* the peer -> reader pipe */
chan inq = [1] of { byte, byte, byte };

/* requests, by arrival slot */
byte nread;                 /* slots used (reader only) */
byte rid[NREQ];             /* client id */
byte kind[NREQ];            /* handler */
byte outcome[NREQ];         /* eng_req.outcome: set once by CAS */
byte reason[NREQ];          /* eng_token.reason, under tok_mu */
byte tok_mu[NREQ];
bit tok_wait[NREQ];         /* the handler waits on its token's cv */
bit in_table[NREQ];         /* eng_req.in_table (under sess_mu) */
bit forgotten[NREQ];        /* eng_req.forgotten (atomic, no lock) */
bit adm[NREQ];              /* admitted in flight (ghost) */
bit started[NREQ];
bit finished[NREQ];         /* req_done ran: no longer counted in flight */

/* the session */
byte sess_mu;
bit closed;                 /* shutdown step 1 */
byte close_reason;
byte inflight_n;            /* atomic; raised under sess_mu */
bit idle_wait;              /* the shutdown waits on idle_cv */
bit woken;                  /* tp wake (latched): a write error or signal */
bit grace_expired;
bit shutdown_done;

/* the pending table: the entry of request r's one roots/list is slot r */
byte pt_mu;
bit pt_closed;
byte next_pid;
bit p_in[NREQ];             /* linked in the live table */
byte p_id[NREQ];            /* our outbound id */
byte p_state[NREQ];         /* under tok_mu[r] */
byte p_refs[NREQ];          /* eng_pending.refs */
byte p_ans[NREQ];           /* whose roots/list the answer it got was for */
byte p_fails[NREQ];         /* settle(FAILED) calls on the entry */

/* the writer */
byte w_mu;
chan wq = [WQ] of { byte };     /* head..tail (and the inbox), under w_mu */
chan batch = [WQ] of { byte };  /* the writer thread's batch */
bit w_closing;
bit w_failed;
bit w_writing;
bit w_done;
bit out_closed;             /* tp close_output ran */

/* the pool */
chan workq = [NREQ] of { byte };
bit stopping;

/* the peer's side of the pipe */
bit peer_reading = 1;       /* 0: it closed its read end (EPIPE) */
bit reader_gone;

/* what reached the wire, and ghost state for the properties */
bit resp_w[NREQ];           /* the answer was written */
bit call_w[NREQ];           /* the roots/list was written */
bit err_w[NREQ];            /* the duplicate-id error was written */
bit out_failed;             /* a write failed */
bit abandoned[NREQ];        /* still in flight when the grace expired */
byte ndecided[NREQ];        /* successful outcome changes */
byte id_live[NID];          /* requests admitted under the id, not forgotten */

#ifdef REFS
/* request lifetime (session.c eng_req_ref / eng_req_unref / reap) */
byte rrefs[NREQ];           /* eng_req.refs */
bit rfreed[NREQ];           /* req_free ran */
bit reap_pend[NREQ];        /* on the reap stack */
bit reaping = 1;            /* the reader frees the reap stack */
#endif
byte reader_pid;            /* the reader thread (tl_reader) */

/* scratch for d_steps (always 0 between steps) */
byte xfer;
byte sj;

/* Non-vacuity markers: built with -DREACH=n, marker n fails, so the
 * check shows that the path it marks is explored (reach.txt lists them). */
#ifdef REACH
#define MARK(n) assert(REACH != (n))
#else
#define MARK(n) skip
#endif

#define LOCK(m)   (m == 0) -> m = _pid + 1
#define UNLOCK(m) m = 0

/* A condition-variable wait: release, sleep until signalled, reacquire.
 * Signals go to the one thread that can wait on each cv. */
#define CVWAIT(m, flag) \
	atomic { flag = 1; m = 0 }; \
	atomic { flag == 0 && m == 0 -> m = _pid + 1 }

#include "lifetime.pml"
#include "writer_thread.pml"
#include "core.pml"
#include "handlers.pml"
#include "reader_thread.pml"
#include "peer.pml"

init {
	atomic {
		run peer();
		reader_pid = run reader();
		run writer();
		run worker();
#if NW > 1
		run worker();
#endif
#if NW > 2
		run worker();
#endif
	}
	/* Everything ended: the end-of-run checks. */
	_nr_pr == 1;
	atomic {
		sj = 0;
		do
		:: sj < nread ->
			/* P8: every request read ended in a terminal outcome ... */
			CHK_OUTCOME(outcome[sj] != O_NONE);
			/* ... and an answer decided was written, unless the
			 * output failed or the request was abandoned at the
			 * grace (then it may be lost with the process). */
			CHK_OUTCOME(outcome[sj] != O_RESP || resp_w[sj] || out_failed ||
				    abandoned[sj]);
			/* A rejected request never ran and got its error. */
			CHK_OUTCOME(outcome[sj] != O_REJ || (!started[sj] &&
							     (err_w[sj] || out_failed)));
			/* No pending entry leaked or was released twice. */
			CHK_PENDING(p_refs[sj] == 0 && !p_in[sj]);
#ifdef REFS
			/* Every request was freed, once, with no reference left. */
			CHK_LIFE(rfreed[sj] && rrefs[sj] == 0);
#endif
			sj++
		:: else -> break
		od;
		CHK_OUTCOME(inflight_n == 0);
		sj = 0
	}
}

#include "props.pml"
