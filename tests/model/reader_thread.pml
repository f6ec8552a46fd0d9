/*
 * reader_thread.pml - the session's reader thread as it is today
 * (engine/session.c eng_session_run): it reads the peer's messages in
 * order and routes each one, until end of input or a wake-up (a write
 * error, a signal), then runs the shutdown sequence and, as
 * api_server_end does, stops the pool.
 *
 * A push-mode session (the transport feeds messages, no reader thread)
 * would call admit / cancel_peer / pending_answer from the transport's
 * threads and split session_shutdown into its begin (steps 1-3) and
 * finish (steps 4-5); this file is the one to replace.
 */
proctype reader()
{
	byte m, a, b, r, rc, t, snap, won, wake, inl, fnow, wf, found;


	do
	:: atomic {
		inq ? m, a, b ->
#ifdef REFS
		reap_all();   /* what was left after the previous line */
#endif
		if
		:: m == M_REQ ->
			r = nread; nread++; rid[r] = a; kind[r] = b;
			admit_locked(a)
		:: m == M_CANCEL -> cancel_find(a)
		:: m == M_ANSWER -> answer_unlink(a)
		:: m == M_EOF -> skip
		fi
	   };
		if
		:: m == M_REQ -> admit_after()
#ifdef REFS
		:: m == M_CANCEL -> cancel_ref(); cancel_apply()
#else
		:: m == M_CANCEL -> cancel_apply()
#endif
		:: m == M_ANSWER -> answer_settle(b)
		:: m == M_EOF -> break
		fi;
		m = 0; a = 0; b = 0; r = 0
	:: atomic { woken -> MARK(12) }; break    /* recv returned TP_WOKEN */
	od;
	m = 0; a = 0; b = 0; r = 0;
	session_shutdown();
#ifdef REFS
	atomic { reaping = 0; reap_all() }
#endif
	atomic { stopping = 1; reader_gone = 1 }   /* api_server_end: eng_pool_stop */
}
