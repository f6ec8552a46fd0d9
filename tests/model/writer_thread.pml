/*
 * writer_thread.pml - the outbound side as it is today (engine/writer.c):
 * one writer thread drains the queue, and a producer writes inline on the
 * calling thread when nothing else is queued or being written
 * (w_writing: one writer of the stream at a time).
 *
 * The API the rest of the model uses: push_quiet, kick, push_routed,
 * push_wait, writer_unqueue, writer_close.  A push-mode session (output
 * delivered inline by the transport, no writer thread) would replace this
 * file with the same inlines and no writer process.
 *
 * Two abstractions (README.md, "Atomicity and abstractions"):
 *  - The lock-free inbox of eng_writer_push_quiet is the queue's tail:
 *    every holder of w_mu moves the inbox to the tail before it looks at
 *    the queue, and every locked section is one step here, so a line
 *    pushed onto the inbox is indistinguishable from one appended to the
 *    queue.  (A line that lands on the inbox after the writer's last look
 *    is never written; one dropped by the closed check is not either.)
 *  - The writer thread is always awake: it may take the queue whenever it
 *    has work and nobody writes inline.  The real thread runs only when
 *    woken, so its writes happen at a subset of these moments; the
 *    sleeping flag and the wake-ups (a liveness matter: no line is left
 *    waiting while the writer sleeps) are not modelled, and
 *    eng_writer_kick's "writer awake, do nothing" answer is a free choice.
 */

/* out_suppressed: a line tied to a request, not its answer and not a
 * server-to-client request, is discarded once the request was cancelled
 * by the peer.  Checked when the line is committed to the wire. */
#ifdef M_NO_SUPPRESS
#define SUPPRESSED(y) 0
#else
#define SUPPRESSED(y) (LKIND(y) == L_PROG && outcome[LREQ(y)] == O_SUPP)
#endif

/* The writer thread exits once closing and drained, and not while
 * another thread writes inline (it owns the stream until it is done). */
#ifdef M_WRITER_IGNORES_INLINE
#define W_MAY_EXIT (w_closing && len(wq) == 0)
#else
#define W_MAY_EXIT (w_closing && len(wq) == 0 && !w_writing)
#endif

#ifdef NO_INLINE
#define INLINE_OK 0
#else
#define INLINE_OK 1
#endif

/* A write error latches and starts the shutdown (on_write_error ->
 * eng_session_trigger: the reason, then tp wake). */
inline on_error()
{
	if
	:: close_reason == R_NONE -> close_reason = R_CLOSED
	:: else -> skip
	fi;
	woken = 1
}

/* One line reaches the wire (or fails to, once the peer stopped
 * reading).  Every property about what is written is checked here. */
inline write_line(y)
{
	if
	:: LKIND(y) == L_RESP -> printf("@ wire: the answer to r%d\n", LREQ(y))
	:: LKIND(y) == L_PROG -> printf("@ wire: progress of r%d\n", LREQ(y))
	:: LKIND(y) == L_CALL -> printf("@ wire: roots/list %d (for r%d)\n", p_id[LREQ(y)], LREQ(y))
	:: LKIND(y) == L_CNOTE -> printf("@ wire: notifications/cancelled for roots/list %d\n", p_id[LREQ(y)])
	:: LKIND(y) == L_ERR -> printf("@ wire: -32600 (id in flight) for r%d\n", LREQ(y))
	fi;
	CHK_CLOSED(!out_closed);
	if
	:: peer_reading ->
		if
		:: LKIND(y) == L_RESP ->
			CHK_OUTCOME(outcome[LREQ(y)] == O_RESP && !resp_w[LREQ(y)]);
			CHK_CANCEL(outcome[LREQ(y)] != O_SUPP);
			if
			:: grace_expired -> MARK(18)
			:: else -> skip
			fi;
			resp_w[LREQ(y)] = 1
		:: LKIND(y) == L_PROG ->
			CHK_CANCEL(outcome[LREQ(y)] != O_SUPP)
		:: LKIND(y) == L_CALL ->
			call_w[LREQ(y)] = 1
		:: LKIND(y) == L_CNOTE ->
			MARK(5);
			/* the server cancels only what it sent */
			CHK_ROUTE(call_w[LREQ(y)])
		:: LKIND(y) == L_ERR ->
			err_w[LREQ(y)] = 1
		fi
	:: else -> wf = 1; out_failed = 1; printf("@ wire: the write fails (EPIPE)\n")
	fi
}

/* write_inline: the calling thread owns the stream (w_writing, set when
 * it took the line).  The write and the locked epilogue (w_writing = 0,
 * the failure latched and reported) are one step; the window that
 * matters is the one between taking the line and writing it. */
inline write_inline(y)
{
	atomic {
		if
		:: SUPPRESSED(y) -> skip
		:: else ->
			if
			:: LKIND(y) == L_RESP && peer_reading -> MARK(1)
			:: else -> skip
			fi;
			write_line(y)
		fi;
		LOCK(w_mu);
		if
		:: wf -> fnow = !w_failed; w_failed = 1
		:: else -> skip
		fi;
		w_writing = 0;
		UNLOCK(w_mu);
		if
		:: fnow -> on_error()
		:: else -> skip
		fi;
		UNREF_LINE(y);   /* out_free */
		fnow = 0; wf = 0
	}
}

/* eng_writer_push_quiet: dropped once closing or failed. */
inline push_quiet(y)
{
	atomic {
		if
		:: !w_closing && !w_failed -> wq ! y; REF_LINE(y);
			printf("@ line %d of r%d queued\n", LKIND(y), LREQ(y))
		:: else -> printf("@ line %d of r%d dropped: the writer is closing\n", LKIND(y), LREQ(y))
		fi
	}
}

/* eng_writer_kick's locked part, from a worker right after its answer
 * was queued: with only that line queued, nobody writing, not closing,
 * not failed and the pool alone (a free choice), the worker takes the
 * line to write it inline.  Sets inl; write_inline(x) follows. */
inline kick_take()
{
	if
	:: INLINE_OK && len(wq) == 1 && !w_writing && !w_closing && !w_failed ->
		LOCK(w_mu); wq ? x; w_writing = 1; inl = 1; UNLOCK(w_mu);
		printf("@ worker: takes the answer to write it inline (writing)\n")
	:: true -> skip   /* the writer thread's (awake, or not alone) */
	fi
}

inline kick()
{
	atomic { kick_take() };
	if
	:: inl -> write_inline(x)
	:: else -> skip
	fi;
	x = 0; inl = 0
}

/* eng_writer_push_routed (no route on stdio).  `offpool`: the caller is
 * not a worker (the reader), so eng_pool_alone() is true. */
inline push_routed(y, offpool)
{
	atomic {
		LOCK(w_mu);
		if
		:: INLINE_OK && (len(wq) == 0) && !w_writing && !w_closing && !w_failed ->
			w_writing = 1; inl = 1
		:: !INLINE_OK || !offpool || !((len(wq) == 0) && !w_writing && !w_closing && !w_failed) ->
			if
			:: w_closing || w_failed -> skip   /* dropped */
			:: else -> wq ! y
			fi
		fi;
		UNLOCK(w_mu)
	};
	if
	:: inl -> write_inline(y)
	:: else -> skip
	fi;
	inl = 0
}

/* eng_writer_push_wait (no high-water mark here). */
inline push_wait(y, res)
{
	LOCK(w_mu);
	if
	:: w_closing || w_failed -> res = RC_CLOSED
	:: else -> wq ! y; REF_LINE(y); res = RC_OK
	fi;
	UNLOCK(w_mu)
}

/* eng_writer_unqueue: withdrawn if still queued, else the writer took it. */
inline writer_unqueue(y, got)
{
	atomic {
		LOCK(w_mu);
		if
		:: wq ?? [eval(y)] -> wq ?? eval(y); got = 1; UNREF_LINE(y)
		:: else -> got = 0
		fi;
		UNLOCK(w_mu)
	}
}

/* eng_writer_close: closing (and the wake-up), then join the thread and
 * close the output. */
inline writer_close()
{
	atomic { LOCK(w_mu); w_closing = 1; UNLOCK(w_mu); printf("@ shutdown 5: writer closing\n") };
#ifdef M_NO_JOIN
	/* close the output without waiting for the writer thread */
	atomic { out_closed = 1; shutdown_done = 1; printf("@ shutdown 5: output closed (writer not joined)\n") }
#else
	atomic { w_done -> out_closed = 1; shutdown_done = 1; printf("@ shutdown 5: writer joined, output closed\n") }
#endif
}

/* writer_main: take the whole queue under the lock; then, outside it,
 * check each line (out_suppressed, the failed flag read at the take) and
 * send the rest with one writev; then, under the lock, writing = 0 and a
 * failure latched and reported.  The check-and-send is one step here. */
proctype writer()
{
	byte x, f, wf;

end_writer:
	do
	:: atomic {
		w_mu == 0 && len(wq) > 0 && !w_writing ->
		do
		:: wq ? x -> batch ! x
		:: empty(wq) -> break
		od;
		x = 0; w_writing = 1; f = w_failed;
		printf("@ writer: takes %d line(s)\n", len(batch))
	   };
		atomic {
			do
			:: batch ? x ->
				if
				:: f || SUPPRESSED(x) ->
					printf("@ writer: discards line %d of r%d (suppressed or failed)\n", LKIND(x), LREQ(x));
					if
					:: !f -> MARK(3)
					:: else -> skip
					fi
				:: else ->
					if
					:: LKIND(x) == L_RESP && peer_reading -> MARK(2)
					:: else -> skip
					fi;
					write_line(x)
				fi;
				UNREF_LINE(x)   /* out_free */
			:: empty(batch) -> break
			od;
			x = 0;
			LOCK(w_mu);
			w_writing = 0;
			if
			:: wf && !w_failed -> w_failed = 1; on_error()
			:: else -> skip
			fi;
			wf = 0; f = 0;
			UNLOCK(w_mu)
		}
	:: atomic { w_mu == 0 && W_MAY_EXIT -> w_done = 1; printf("@ writer: drained and closing: exits\n") };
		break
	od
}
