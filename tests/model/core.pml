/*
 * core.pml - the engine's shared machinery, independent of how messages
 * arrive and leave: the outcome CAS, the in-flight table and its counter,
 * tokens, the pending table, and the shutdown sequence
 * (engine/session.c, engine/token.c, engine/pending.c).
 *
 * A reader thread (reader_thread.pml) or, later, a transport that pushes
 * messages in calls admit/cancel_peer/pending_answer; handlers
 * (handlers.pml) call finish_with/finish_silent; output goes through the
 * writer API (writer_thread.pml).
 *
 * Callers declare the locals these inlines use: r rc t snap won last
 * found wake inl fnow wf x.
 */

/* eng_req_decide: the one compare-and-swap that gives a request its
 * terminal outcome (P8).  M_NO_CAS splits it into a load and a store. */
inline decide(q, o, ok)
{
#ifdef M_NO_CAS
	if
	:: outcome[q] == O_NONE -> ok = 1;
		printf("@ %d: r%d has no outcome yet (load)\n", _pid, q)
	:: else -> ok = 0
	fi;
	if
	:: ok -> d_step {
		outcome[q] = o; ndecided[q]++;
		printf("@ %d: r%d's outcome stored: %d (1 answered, 2 suppressed, 3 dropped, 4 rejected)\n", _pid, q, o);
		CHK_OUTCOME(ndecided[q] == 1)
	   }
	:: else -> skip
	fi
#else
	d_step {
		if
		:: outcome[q] == O_NONE -> outcome[q] = o; ndecided[q]++; ok = 1;
			printf("@ %d: r%d's outcome decided: %d (1 answered, 2 suppressed, 3 dropped, 4 rejected)\n", _pid, q, o)
		:: else -> ok = 0
		fi;
		CHK_OUTCOME(ndecided[q] <= 1)
	}
#endif
}

/* req_forget_id: the id may be reused from here on (P5). */
inline forget_id(q)
{
	d_step { forgotten[q] = 1; id_live[rid[q]]-- }
}

/* eng_token_fire: the first reason stays; the broadcast wakes every wait
 * of the request (its handler is the one waiter). */
inline token_fire(q, why)
{
	atomic {
		LOCK(tok_mu[q]);
		if
		:: reason[q] == R_NONE -> reason[q] = why; tok_wait[q] = 0;
			printf("@ r%d's token fires (%d: 1 peer, 2 closed)\n", q, why)
		:: else -> skip
		fi;
		UNLOCK(tok_mu[q])
	}
}

/* eng_req_closed: a handler that found the session closed first. */
inline req_closed(q)
{
	token_fire(q, R_CLOSED)
}

/* req_done: no longer in flight (its id forgotten if it was not yet).
 * Only the thread that brings the count to zero takes the lock, to wake a
 * shutdown waiting for idleness: done_body is the lock-free part,
 * idle_wake the rest. */
inline done_body(q)
{
	if
	:: !forgotten[q] -> forgotten[q] = 1; id_live[rid[q]]--
	:: else -> skip
	fi;
	finished[q] = 1; inflight_n--; last = (inflight_n == 0)
}

inline idle_wake()
{
	if
	:: last ->
#ifdef M_IDLE_NOLOCK
		atomic { idle_wait = 0; printf("@ %d: in flight reached 0: broadcasts idle_cv without the lock\n", _pid) }
#else
		atomic { LOCK(sess_mu); idle_wait = 0; UNLOCK(sess_mu) }
#endif
	:: else -> skip
	fi;
	last = 0
}

inline req_done(q)
{
	d_step { done_body(q); printf("@ r%d no longer in flight (%d left)\n", q, inflight_n) };
	idle_wake()
}

/* ---- the in-flight table (reader side) ------------------------------------ */

/* admit_req for request slot r with client id `id`: registered under
 * sess_mu with the closed check (the P5 duplicate check is in
 * table_put_locked), then queued (eng_pool_submit; the queue is never full
 * here).  The reader runs this in the same step as the read. */
inline admit_locked(id)
{
	LOCK(sess_mu);
	if
	:: closed -> rc = RC_CLOSED
	:: else ->
		rc = RC_OK;
		sj = 0;
		do
		:: sj < r && in_table[sj] && rid[sj] == id ->
			if
			:: !forgotten[sj] ->
#ifndef M_DUP
				/* the id is live: refused; the client has not seen
				 * that request's answer (its id is forgotten before
				 * the answer is queued) */
				printf("@ reader: r%d refused, its id is in flight (r%d)\n", r, sj);
				MARK(8);
				CHK_OUTCOME(id_live[id] > 0 && !resp_w[sj]);
				rc = RC_EXIST
#else
				skip
#endif
			:: else -> in_table[sj] = 0; MARK(9) /* a finished node gives way */
			fi;
			sj++
		:: sj < r && !(in_table[sj] && rid[sj] == id) -> sj++
		:: sj >= r -> break
		od;
		sj = 0;
		if
		:: rc == RC_OK ->
			/* P5: admitted only when no request with its id is in
			 * flight */
			CHK_OUTCOME(id_live[id] == 0);
			in_table[r] = 1; adm[r] = 1; id_live[id]++; inflight_n++;
#ifdef REFS
			rrefs[r] = 1;   /* the queue's (the creation reference is dropped) */
#endif
			printf("@ reader: r%d admitted (in flight: %d) and queued\n", r, inflight_n)
		:: else -> skip
		fi
	fi;
	UNLOCK(sess_mu);
	if
	:: rc == RC_OK -> workq ! r
	:: else -> skip
	fi
}

/* A duplicate gets -32600 under its id (the one in flight), then its
 * outcome. */
inline admit_after()
{
	if
	:: rc == RC_EXIST ->
		/* -32600 queued or taken to write inline, and the outcome, in
		 * one step (nobody else can reach a request never admitted) */
		atomic {
			LOCK(w_mu);
			if
			:: INLINE_OK && (len(wq) == 0) && !w_writing && !w_closing && !w_failed ->
				w_writing = 1; inl = 1
			:: else ->
				if
				:: w_closing || w_failed -> skip   /* dropped */
				:: else -> wq ! LINE(L_ERR, r)
				fi
			fi;
			UNLOCK(w_mu);
			decide(r, O_REJ, won)
		};
		if
		:: inl -> write_inline(LINE(L_ERR, r)); inl = 0
		:: else -> skip
		fi
	:: rc == RC_CLOSED ->
		decide(r, O_DROP, won)
	:: else -> skip
	fi;
#ifdef REFS
	if
	:: rc != RC_OK -> rfreed[r] = 1   /* never admitted: freed on the reader */
	:: else -> skip
	fi;
#endif
	rc = 0; won = 0
}

/* eng_session_cancel_peer: found under sess_mu (in the step that reads
 * the message), then decided, then fired. */
inline cancel_find(id)
{
	LOCK(sess_mu);
	t = NREQ;
	sj = 0;
	do
	:: sj < nread && in_table[sj] && !forgotten[sj] && rid[sj] == id -> t = sj; sj++
	:: sj < nread && !(in_table[sj] && !forgotten[sj] && rid[sj] == id) -> sj++
	:: sj >= nread -> break
	od;
	sj = 0;
	if
	:: t < NREQ -> printf("@ reader: the cancel names r%d\n", t)
	:: else -> printf("@ reader: the cancel names no request in flight: ignored\n")
	fi;
#ifndef REFS
	UNLOCK(sess_mu)
#endif
}

/* inflight_find's reference, still under sess_mu: a step of its own
 * (the finishing thread forgets the id and drops its references without
 * the lock).  Only with -DREFS. */
inline cancel_ref()
{
	atomic {
		if
		:: t < NREQ -> CANCEL_REF(t, t = NREQ)
		:: else -> skip
		fi;
		UNLOCK(sess_mu)
	}
}

inline cancel_apply()
{
	if
	:: t < NREQ ->
		decide(t, O_SUPP, won);
		if
		:: won -> printf("@ reader: r%d suppressed (peer cancel); fires its token\n", t); token_fire(t, R_PEER)
		:: else -> skip
		fi
#ifdef REFS
		; atomic { req_unref(t) }
#endif
	:: else -> skip  /* unknown or finished: ignored */
	fi;
	t = 0; won = 0
}

/* ---- the pending table ----------------------------------------------------- */

inline pending_unref(e)
{
#ifdef REFS
	atomic {
		CHK_PENDING(p_refs[e] > 0); p_refs[e]--;
		if
		:: p_refs[e] == 0 -> req_unref(e)   /* the entry's owner reference */
		:: else -> skip
		fi
	}
#else
	d_step { CHK_PENDING(p_refs[e] > 0); p_refs[e]-- }
#endif
}

/* settle: wakes the waiter with a final state, under its token's lock.
 * The entry must still exist, and is failed at most once. */
inline settle(e, st, truth)
{
	atomic {
		LOCK(tok_mu[e]);
		CHK_PENDING(p_refs[e] > 0);
		if
		:: st == P_FAIL -> printf("@ shutdown: fails r%d's pending entry (refs %d)\n", e, p_refs[e]);
			p_fails[e]++; CHK_PENDING(p_fails[e] == 1)
		:: else -> skip
		fi;
		if
		:: p_state[e] == P_WAIT -> p_state[e] = st; p_ans[e] = truth; tok_wait[e] = 0
		:: else -> skip
		fi;
		UNLOCK(tok_mu[e])
	}
}

/* eng_pending_add for request r's roots/list. */
inline pending_add(q)
{
	atomic {
		LOCK(pt_mu);
		if
		:: pt_closed -> rc = RC_CLOSED
		:: else ->
#ifdef M_REUSE_PID
			/* the lowest id no live entry uses */
			xfer = 1; sj = 0;
			do
			:: sj < NREQ && p_in[sj] && p_id[sj] == xfer -> xfer++; sj = 0
			:: sj < NREQ && !(p_in[sj] && p_id[sj] == xfer) -> sj++
			:: sj >= NREQ -> break
			od;
			p_id[q] = xfer; xfer = 0; sj = 0;
#else
			next_pid++; p_id[q] = next_pid;
#endif
			p_state[q] = P_WAIT; p_refs[q] = 2; p_in[q] = 1; rc = RC_OK
#ifdef REFS
			; req_ref(q)   /* the entry's owner reference */
#endif
		fi;
		UNLOCK(pt_mu)
	}
}

/* eng_pending_remove: unlinks the caller's entry if still there. */
inline pending_remove(e)
{
	atomic {
		LOCK(pt_mu);
		if
		:: p_in[e] -> p_in[e] = 0; found = 1
		:: else -> found = 0
		fi;
		UNLOCK(pt_mu)
	};
	if
	:: found -> pending_unref(e)
	:: else -> skip
	fi;
	found = 0
}

/* eng_pending_answer (reader): unlinked under pt_mu (in the step that
 * reads the message), settled outside it. */
inline answer_unlink(oid)
{
	LOCK(pt_mu);
	t = NREQ;
	sj = 0;
	do
	:: sj < NREQ && p_in[sj] && p_id[sj] == oid -> t = sj; break
	:: sj < NREQ && !(p_in[sj] && p_id[sj] == oid) -> sj++
	:: sj >= NREQ -> break
	od;
	sj = 0;
	if
	:: t < NREQ -> p_in[t] = 0;   /* its table reference is ours now */
		printf("@ reader: answer %d unlinked from the pending table (r%d's entry)\n", oid, t)
	:: else -> printf("@ reader: answer %d matches no pending entry: dropped\n", oid); MARK(14)
	fi;
	UNLOCK(pt_mu)
}

inline answer_settle(truth)
{
	if
	:: t < NREQ -> atomic { settle(t, P_ANS, truth); pending_unref(t); printf("@ reader: r%d's waiter settled with the answer\n", t) }
	:: else -> skip   /* unknown, late or duplicate: dropped */
	fi;
	t = 0
}

/* eng_pending_fail_all: shutdown step 3. */
inline pending_fail_all()
{
#ifdef M_LIVE_ITER
	/* The python-sdk shape: walk the live table and fail each entry
	 * while the woken waiters remove themselves; empty it afterwards. */
	atomic { LOCK(pt_mu); pt_closed = 1; UNLOCK(pt_mu) };
	t = 0;
	do
	:: t < NREQ ->
		if
		:: p_in[t] -> printf("@ shutdown: the live table holds r%d's entry\n", t); settle(t, P_FAIL, NREQ)
		:: else -> skip
		fi;
		t++
	:: else -> break
	od;
	atomic {
		LOCK(pt_mu);
		t = 0;
		do
		:: t < NREQ && p_in[t] -> p_in[t] = 0; CHK_PENDING(p_refs[t] > 0); p_refs[t]--; t++
		:: t < NREQ && !p_in[t] -> t++
		:: else -> break
		od;
		UNLOCK(pt_mu)
	};
	t = 0
#else
	atomic {
		/* take every entry out under the lock (the code chains them
		 * into one list through their own links: no memory needed);
		 * no waiter can reach the snapshot, and no entry can be added
		 * (closed) */
		LOCK(pt_mu);
		pt_closed = 1;
		snap = 0; t = 0;
		do
		:: t < NREQ && p_in[t] -> snap = snap | (1 << t); p_in[t] = 0;
			printf("@ shutdown: r%d's pending entry swapped out\n", t); t++
		:: t < NREQ && !p_in[t] -> t++
		:: else -> break
		od;
		t = 0;
		UNLOCK(pt_mu)
	};
	/* fail each entry taken out, outside the lock */
	do
	:: t < NREQ ->
		if
		:: (snap >> t) & 1 -> settle(t, P_FAIL, NREQ); pending_unref(t)
		:: else -> skip
		fi;
		t++
	:: else -> break
	od;
	t = 0; snap = 0
#endif
}

/* ---- the shutdown sequence (session_shutdown) ---------------------------- */

/* fire_all: snapshot the live requests under sess_mu, fire outside it. */
inline fire_snapshot()
{
	snap = 0; t = 0;
	do
	:: t < NREQ && in_table[t] && !forgotten[t] -> snap = snap | (1 << t);
		printf("@ shutdown 2: r%d is live (snapshot)\n", t); t++
	:: t < NREQ && !(in_table[t] && !forgotten[t]) -> t++
	:: else -> break
	od;
	t = 0
}

inline fire_snapped()
{
	do
	:: t < NREQ ->
		if
		:: (snap >> t) & 1 -> token_fire(t, R_CLOSED)
#ifdef REFS
			; atomic { req_unref(t) }
#endif
		:: else -> skip
		fi;
		t++
	:: else -> break
	od;
	t = 0; snap = 0
}

#ifdef GRACE_QUIET
#define GRACE_CAN_EXPIRE timeout
#else
#define GRACE_CAN_EXPIRE true
#endif

/* The grace deadline passes while the shutdown waits (pthread_cond_
 * timedwait returns ETIMEDOUT with the lock re-taken): what is still in
 * flight is abandoned. */
inline grace_expires()
{
	atomic {
		GRACE_CAN_EXPIRE && sess_mu == 0 ->
		sess_mu = _pid + 1; idle_wait = 0; grace_expired = 1;
		printf("@ shutdown 4: the grace expires, %d still in flight\n", inflight_n);
		t = 0;
		do
		:: t < nread ->
			abandoned[t] = adm[t] && !finished[t];
#ifdef GRACE_QUIET
			/* A long grace abandons only handlers blind to their
			 * token (and what is queued behind them). */
			CHK_ABANDON(!abandoned[t] || !started[t] || kind[t] == H_BLIND);
#endif
			t++
		:: else -> break
		od;
		t = 0;
#ifdef GRACE_QUIET
		/* ... and it expires only while something is in flight: the
		 * last req_done's wake-up is never lost. */
		CHK_ABANDON(inflight_n > 0)
#else
		skip
#endif
	}
}

inline session_shutdown()
{
	/* 1. closed (the reason first); 2. the snapshot of live requests for
	 * the broadcast, under the same lock (nobody can be admitted between:
	 * the reader is here) */
	atomic {
		LOCK(sess_mu);
		if
		:: close_reason == R_NONE -> close_reason = R_CLOSED
		:: else -> skip
		fi;
		closed = 1;
		printf("@ shutdown 1: closed\n");
#ifndef M_NO_BROADCAST
		fire_snapshot();
#endif
#ifndef REFS
		UNLOCK(sess_mu)
#endif
	};
#ifdef REFS
	/* the snapshot's references, still under the lock, a step of their
	 * own (as in cancel_ref) */
	atomic {
		t = 0;
		do
		:: t < NREQ && ((snap >> t) & 1) -> FIRE_REF(t, snap = snap & ~(1 << t)); t++
		:: t < NREQ && !((snap >> t) & 1) -> t++
		:: else -> break
		od;
		t = 0;
		UNLOCK(sess_mu)
	};
#endif
	/* 2. broadcast to every request, queued or running */
	fire_snapped();
	/* 3. fail the pending table from a swapped-out snapshot */
	pending_fail_all();
	/* 4. wait for idleness, bounded by the grace */
#ifdef M_IDLE_NOLOCK
	/* the check and the wait apart, as in the code, so that a broadcast
	 * that does not take the lock can fall between them */
	atomic { LOCK(sess_mu) };
	do
	:: atomic { inflight_n > 0 -> printf("@ shutdown 4: %d in flight: will wait\n", inflight_n) };
		atomic { idle_wait = 1; sess_mu = 0; printf("@ shutdown 4: waits on idle_cv\n") };
		if
		:: atomic { idle_wait == 0 && sess_mu == 0 -> sess_mu = _pid + 1 }
		:: grace_expires(); break
		fi
	:: else -> break
	od;
#else
	atomic {
		LOCK(sess_mu);
		if
		:: inflight_n > 0 -> idle_wait = 1; sess_mu = 0
		:: else -> skip
		fi
	};
	do
	:: sess_mu == _pid + 1 -> break
	:: atomic {
		idle_wait == 0 && sess_mu == 0 ->
		sess_mu = _pid + 1;
		if
		:: inflight_n > 0 -> idle_wait = 1; sess_mu = 0
		:: else -> skip
		fi
	   }
#ifndef M_NO_GRACE
	:: grace_expires(); break
#endif
	od;
#endif
	atomic { t = (inflight_n > 0); UNLOCK(sess_mu) };
	if
	:: t ->
		/* drop_stragglers */
		atomic {
			LOCK(sess_mu);
			t = 0;
			do
			:: t < NREQ ->
				if
				:: in_table[t] && !forgotten[t] && outcome[t] == O_NONE ->
					outcome[t] = O_DROP; ndecided[t]++;
					printf("@ shutdown 4: straggler r%d dropped\n", t);
					MARK(11);
					CHK_OUTCOME(ndecided[t] == 1)
				:: else -> skip
				fi;
				t++
			:: else -> break
			od;
			t = 0;
			UNLOCK(sess_mu)
		}
	:: else -> skip
	fi;
	/* 5. flush and close the output */
	writer_close()
}
