/*
 * lifetime.pml - the requests' reference counts and the reap stack
 * (engine/session.c eng_req_ref, eng_req_unref, req_free, reap), with
 * -DREFS; without it, the REF/UNREF hooks are no-ops and the model does
 * not track request memory.
 */

/* ---- request lifetime (-DREFS) --------------------------------------------
 *
 * eng_req_ref / eng_req_unref / req_free / reap: a request is freed when
 * its last reference goes, on the reader thread (or once the reader has
 * stopped reaping); another thread pushes it onto the reap stack, which
 * the reader frees after each line it dispatched and at the end.  A
 * reference is never taken from zero, and nothing is freed twice.
 * References: the queue's (then the worker's), one per queued line tied
 * to the request (answer, progress, roots/list), the pending entry's
 * owner reference, and the reader's lookups (cancel, the broadcast). */
#ifdef REFS
#define TIED(y) (LKIND(y) == L_RESP || LKIND(y) == L_PROG || LKIND(y) == L_CALL)

inline req_free_now(q)
{
	if
	:: in_table[q] -> LOCK(sess_mu); in_table[q] = 0; UNLOCK(sess_mu)
	:: else -> skip
	fi;
	CHK_LIFE(!rfreed[q]);
	rfreed[q] = 1;
	printf("@ %d: r%d freed\n", _pid, q)
}

inline req_ref(q)
{
	/* from zero would be a request already on its way to be freed */
	CHK_LIFE(!rfreed[q] && rrefs[q] > 0);
	rrefs[q]++
}

inline req_unref(q)
{
	CHK_LIFE(!rfreed[q] && rrefs[q] > 0);
	rrefs[q]--;
	if
	:: rrefs[q] == 0 && (_pid == reader_pid || !reaping) -> req_free_now(q)
	:: rrefs[q] == 0 && !(_pid == reader_pid || !reaping) ->
		reap_pend[q] = 1; printf("@ %d: r%d's last reference gone: onto the reap stack\n", _pid, q)
	:: else -> skip
	fi
}

/* reap: the reader frees what the other threads left */
inline reap_all()
{
	sj = 0;
	do
	:: sj < NREQ && reap_pend[sj] -> reap_pend[sj] = 0; req_free_now(sj); sj++
	:: sj < NREQ && !reap_pend[sj] -> sj++
	:: else -> break
	od;
	sj = 0
}

/* The reference an in-flight lookup takes (under sess_mu, after it found
 * the node live): inflight_find for a cancel, fire_all's snapshot.  The
 * code takes it only from a non-zero count (session.c live_ref), and so
 * does the model.  M_PLAIN_REF (a mutation): both take it whatever the
 * count, as the code did until the model found the double free
 * (trails/plain_ref.txt); M_PLAIN_REF_CANCEL: the cancel's lookup only. */
#define TRYREF(q, gone) \
	if :: rrefs[q] > 0 -> printf("@ reader: takes a reference on r%d (refs %d)\n", q, rrefs[q]); req_ref(q) \
	   :: else -> gone; printf("@ reader: r%d is being freed: not found\n", q) fi
#define PLAINREF(q, gone) printf("@ reader: takes a reference on r%d (refs %d)\n", q, rrefs[q]); req_ref(q)
#if defined(M_PLAIN_REF) || defined(M_PLAIN_REF_CANCEL)
#define CANCEL_REF(q, gone) PLAINREF(q, gone)
#else
#define CANCEL_REF(q, gone) TRYREF(q, gone)
#endif
#ifdef M_PLAIN_REF
#define FIRE_REF(q, gone) PLAINREF(q, gone)
#else
#define FIRE_REF(q, gone) TRYREF(q, gone)
#endif

#define REF_LINE(y) if :: TIED(y) -> req_ref(LREQ(y)) :: else -> skip fi
#define UNREF_LINE(y) if :: TIED(y) -> req_unref(LREQ(y)) :: else -> skip fi
#else
#define REF_LINE(y) skip
#define UNREF_LINE(y) skip
#endif

