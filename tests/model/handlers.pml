/*
 * handlers.pml - the worker threads (engine/pool.c worker_main,
 * session.c req_work), the three kinds of handler the fixture offers, and
 * how a handler's run ends (api/common.c api_ctx_end,
 * engine/session.c finish_with / eng_req_finish_silent).
 *
 * Steps of one thread that no other thread can tell apart from one step
 * are folded into one (README.md, "Atomicity"); every fold keeps the
 * code's order inside the step, and every mutation that reorders or
 * removes a step is built with the fine-grained steps it needs.
 */

#if defined(M_WRITE_FIRST) || defined(M_FORGET_LATE) || defined(M_DONE_BEFORE_QUEUE) || defined(M_NO_CAS)
#define FINE_FINISH 1
#endif

/* The end of a handler's run, as one step: api_ctx_end picks the ending
 * (a result is answered; ECANCELED while closing - the token fired or the
 * session closed - writes nothing; anything else answers an error), then
 *   finish_with: decide RESPONDED (CAS), forget the id, queue the answer
 *     (lock-free push onto the writer's inbox, dropped once the writer is
 *     closing or failed) while still counted in flight, req_done;
 *   eng_req_finish_silent: decide DROPPED, req_done.
 * A reader lookup between the decide and the forget finds a request it
 * can no longer decide, the same as not finding it; the line cannot be
 * written before it is queued; the shutdown cannot close the output
 * while the request counts in flight.  The kick and the idle wake-up
 * follow as steps of their own. */
inline end_body(q)
{
	if
	:: rc == RC_OK || !(reason[q] != R_NONE || closed) ->
		if
		:: outcome[q] == O_NONE ->
			outcome[q] = O_RESP; ndecided[q]++; won = 1;
			forgotten[q] = 1; id_live[rid[q]]--;
			if
			:: !w_closing && !w_failed -> wq ! LINE(L_RESP, q); REF_LINE(LINE(L_RESP, q));
				printf("@ worker: r%d answered: decided, id forgotten, answer queued\n", q)
			:: else -> printf("@ worker: r%d answered, but the writer is closed: dropped\n", q); MARK(17)
			fi
		:: else -> won = 0; printf("@ worker: r%d returns a result; its outcome was decided (%d): nothing written\n", q, outcome[q])
		fi
	:: else ->
		/* a handler that stopped because of cancellation saw a reason */
		CHK_OUTCOME(reason[q] != R_NONE);
		printf("@ worker: r%d stops on its token: nothing written\n", q);
		if
		:: outcome[q] == O_NONE -> outcome[q] = O_DROP; ndecided[q]++
		:: else -> skip
		fi
	fi;
	done_body(q)
}

/* The same ending with the code's steps apart, for the mutations that
 * change their order. */
inline end_fine(q)
{
	if
	:: rc == RC_OK || !(reason[q] != R_NONE || closed) ->
#if defined(M_WRITE_FIRST)
		push_quiet(LINE(L_RESP, q));
		decide(q, O_RESP, won);
		if
		:: won -> forget_id(q)
		:: else -> skip
		fi;
		req_done(q)
#else
		decide(q, O_RESP, won);
		if
		:: won ->
#ifndef M_FORGET_LATE
			forget_id(q);
#endif
#ifdef M_DONE_BEFORE_QUEUE
			req_done(q);
			push_quiet(LINE(L_RESP, q))
#else
			push_quiet(LINE(L_RESP, q));
			req_done(q)
#endif
		:: else -> req_done(q)
		fi
#endif
	:: else ->
		CHK_OUTCOME(reason[q] != R_NONE);
		decide(q, O_DROP, won);
		won = 0;
		req_done(q)
	fi
}

/* ctx_end: the ending step, the idle wake-up (req_done's locked
 * broadcast when the count reached zero) and, for an answer, the locked
 * part of eng_writer_kick are one step; an inline write follows. */
inline end_rest(q)
{
	if
	:: last ->
#ifdef M_IDLE_NOLOCK
		idle_wait = 0; printf("@ %d: in flight reached 0: broadcasts idle_cv without the lock\n", _pid)
#else
		LOCK(sess_mu); idle_wait = 0; UNLOCK(sess_mu)
#endif
	:: else -> skip
	fi;
	last = 0;
	if
	:: won -> kick_take()
	:: else -> skip
	fi
}

inline ctx_end(q)
{
#ifdef FINE_FINISH
	end_fine(q);
	if
	:: won -> kick()
	:: else -> skip
	fi;
#else
	atomic { end_body(q); end_rest(q) };
	if
	:: inl -> write_inline(x)
	:: else -> skip
	fi;
#endif
	won = 0; rc = 0; x = 0; inl = 0
}

/* sleep {ms: forever}: eng_token_sleep until the token fires.  A wait on
 * the token's cv: check (and start waiting) under the lock; be woken,
 * re-take the lock, re-check.  Its handler is the one thread that waits
 * on a token, and every broadcast makes the condition true, so one
 * wake-up ends the wait.  The check starts with the dispatch (below); the
 * wake-up also ends the run (ECANCELED). */
inline handler_sleep(q)
{
	atomic {
		tok_wait[q] == 0 && tok_mu[q] == 0 ->
		assert(reason[q] != R_NONE);
		rc = RC_CANCELED;
#ifndef FINE_FINISH
		end_body(q); end_rest(q)
#else
		skip
#endif
	};
#ifndef FINE_FINISH
	won = 0; rc = 0
#else
	ctx_end(q)
#endif
}

/* spin, or progress {cancellable: false}: never looks at its token; may
 * emit one progress line first (eng_req_emit: nothing once the outcome
 * is decided); runs for a while, maybe past the grace. */
inline handler_blind(q)
{
	if
	:: atomic {
		outcome[q] == O_NONE ->
		push_wait(LINE(L_PROG, q), rc);
		printf("@ worker: r%d emits progress (queued)\n", q)
	   }
	:: true -> skip
	fi;
#ifdef BLIND_FOREVER
	/* for the liveness check: once the session is closed it may spin
	 * for ever (before that, running long is running late) */
	do
	:: closed -> spun = 1 - spun
	:: break
	od;
	spun = 0;
#elif defined(GRACE_QUIET)
	/* the grace expires only when nothing else can move: a handler
	 * that outlasts it waits for it */
	if
	:: skip              /* done within the grace */
	:: grace_expired     /* or not */
	fi;
#endif
	/* (otherwise the grace may expire at any moment, before or after the
	 * next step: no branch is needed) */
	rc = RC_OK;
	ctx_end(q)
}

/* roots: mcp_ctx_list_roots -> eng_req_call with no timeout; answers what
 * came back, or stops (ECANCELED) on its token or the close.
 * Steps: the reason check at the top of eng_req_call is in the dispatch
 * step; the entry's registration, the queueing of roots/list and the
 * start of the wait are one step (nothing can answer a line not yet
 * written, and the shutdown's swap sees the entry before or after); the
 * wake-up and everything up to the end of the run are one step (the
 * entry's removal, the reference drops, eng_writer_unqueue and the cancel
 * notification, the ending): no other thread can tell those apart, the
 * writer takes roots/list before the wake-up or after the withdrawal. */
inline handler_call(q)
{
	if
	:: rc == RC_CANCELED -> ctx_end(q)   /* its token had fired */
	:: else ->
		atomic {
			pending_add(q);
			if
			:: rc == RC_CLOSED -> MARK(16); req_closed(q); rc = RC_CANCELED
			:: else ->
				push_wait(LINE(L_CALL, q), rc);
				if
				:: rc != RC_OK ->
					/* the output failed: drop the entry, hear why */
					LOCK(pt_mu);
					if
					:: p_in[q] -> p_in[q] = 0; p_refs[q]--
					:: else -> skip
					fi;
					UNLOCK(pt_mu);
					pending_unref(q);
					req_closed(q); rc = RC_CANCELED
				:: else ->
					LOCK(tok_mu[q]);
					if
					:: p_state[q] == P_WAIT && reason[q] == R_NONE -> tok_wait[q] = 1
					:: else -> skip
					fi;
					UNLOCK(tok_mu[q]);
					printf("@ worker: r%d registered roots/list %d, queued it, waits\n", q, p_id[q]);
					rc = RC_OK
				fi
			fi
		};
		if
		:: rc != RC_OK -> ctx_end(q)
		:: else ->
			/* woken by an answer, the token, or the failed table */
			atomic {
				tok_wait[q] == 0 && tok_mu[q] == 0 ->
				assert(p_state[q] != P_WAIT || reason[q] != R_NONE);
				st = p_state[q]; rs = reason[q];
				printf("@ worker: r%d's waiter wakes: entry state %d (1 answered, 2 failed), token %d\n", q, st, rs);
				if
				:: st == P_ANS ->
					/* the answer is to this handler's own request */
					CHK_ROUTE(p_ans[q] == q);
					if
					:: rs == R_PEER -> MARK(15)
					:: else -> skip
					fi;
					pending_unref(q);
					rc = RC_OK
				:: else ->
					/* eng_pending_remove: the entry may be gone already
					 * (the shutdown's swap) */
					LOCK(pt_mu);
					if
					:: p_in[q] -> p_in[q] = 0; found = 1
					:: else -> skip
					fi;
					UNLOCK(pt_mu);
					if
					:: !found -> MARK(6)
					:: else -> skip
					fi;
					if
					:: st == P_FAIL -> MARK(7)
					:: else -> skip
					fi;
					if
					:: found -> CHK_PENDING(p_refs[q] > 0); p_refs[q]--
					:: else -> skip
					fi;
					pending_unref(q);
					printf("@ worker: r%d removes its entry (%d: 1 unlinked here, 0 already gone) and drops its reference: refs %d\n", q, found, p_refs[q]);
					found = 0;
					if
					:: st == P_FAIL && rs == R_NONE -> req_closed(q)
					:: rs == R_PEER ->
						/* withdrawn unsent, or it went out and gets
						 * its notifications/cancelled */
						LOCK(w_mu);
						if
						:: wq ?? [eval(LINE(L_CALL, q))] ->
							wq ?? eval(LINE(L_CALL, q)); UNREF_LINE(LINE(L_CALL, q));
							printf("@ worker: r%d withdraws roots/list %d unsent\n", q, p_id[q]);
							MARK(4)
						:: else ->
							if
							:: INLINE_OK && (len(wq) == 0) && !w_writing && !w_closing && !w_failed ->
								w_writing = 1; inl = 1
							:: true ->
								if
								:: w_closing || w_failed -> skip
								:: else -> wq ! LINE(L_CNOTE, q);
									printf("@ worker: roots/list %d went out: its cancel queued\n", p_id[q])
								fi
							fi
						fi;
						UNLOCK(w_mu)
					:: else -> skip
					fi;
					rc = RC_CANCELED
				fi;
				st = 0; rs = 0;
#ifndef FINE_FINISH
				/* and the run ends in the same step, unless a cancel
				 * notification is being written inline first */
				if
				:: !inl -> end_body(q); end_rest(q); rc = RC_ENDED
				:: else -> skip
				fi
#else
				skip
#endif
			};
			if
			:: rc == RC_ENDED ->
				if
				:: inl -> write_inline(x)   /* the answer, inline */
				:: else -> skip
				fi;
				won = 0; rc = 0; x = 0; inl = 0
			:: else ->
				if
				:: inl -> write_inline(LINE(L_CNOTE, q)); inl = 0
				:: else -> skip
				fi;
				ctx_end(q)
			fi
		fi
	fi
}

/* worker_main + req_work (session.c).  The pool's wake policy (idle stack,
 * runnable limit, monitor) is abstracted: an idle worker takes queued
 * work.  Taking a request and looking at its outcome are one step; so is
 * the first thing its handler does with its token (sleep's check, roots'
 * reason check). */
proctype worker()
{
	byte r, rc, st, rs, won, last, found, inl, fnow, wf, x;
	bit spun;

end_idle:
	do
	:: atomic {
		workq ? r ->
		if
		:: outcome[r] != O_NONE ->
			/* decided while queued: dropped without running */
			printf("@ worker: r%d decided while queued: dropped unrun\n", r);
			MARK(10);
			done_body(r);
#ifdef REFS
			req_unref(r);
#endif
			if
			:: last ->
#ifdef M_IDLE_NOLOCK
				idle_wait = 0; printf("@ %d: in flight reached 0: broadcasts idle_cv without the lock\n", _pid)
#else
				LOCK(sess_mu); idle_wait = 0; UNLOCK(sess_mu)
#endif
			:: else -> skip
			fi;
			last = 0; rc = RC_EXIST
		:: else ->
			started[r] = 1; rc = RC_OK;
			printf("@ worker: started r%d\n", r);
			if
			:: kind[r] == H_SLEEP ->
				LOCK(tok_mu[r]);
				if
				:: reason[r] == R_NONE -> tok_wait[r] = 1
				:: else -> skip
				fi;
				UNLOCK(tok_mu[r])
			:: kind[r] == H_CALL && reason[r] != R_NONE -> rc = RC_CANCELED
			:: else -> skip
			fi
		fi
	   };
		if
		:: rc == RC_EXIST -> skip
		:: rc != RC_EXIST && kind[r] == H_SLEEP -> handler_sleep(r)
		:: rc != RC_EXIST && kind[r] == H_CALL -> handler_call(r)
		:: rc != RC_EXIST && kind[r] == H_BLIND -> handler_blind(r)
		fi;
#ifdef REFS
		/* worker_main: the queue's reference, once the dispatch is over */
		if
		:: rc != RC_EXIST -> atomic { req_unref(r) }
		:: else -> skip
		fi;
#endif
		r = 0; rc = 0
	:: stopping && empty(workq) -> break
	od
}
