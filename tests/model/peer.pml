/*
 * peer.pml - the client on the other end of the pipes: it sends NREQ
 * requests (each with a client id and the tool to call), up to NCANCEL
 * notifications/cancelled, an answer to any roots/list it has read, may
 * stop reading its input (the server's next write fails: EPIPE), and
 * ends with end of input.  Ids are picked up to symmetry: the first
 * request uses id 0, a later one an id already used or the next one.
 */
proctype peer()
{
	byte sent, ncan, maxid, id, k, ans;

end_peer:
	do
	:: atomic {
		sent < NREQ && nfull(inq) ->
		if
		:: id = 0
		:: sent > 0 && maxid + 1 < NID -> id = maxid + 1
#if NID > 2
		:: sent > 0 && maxid >= 1 -> id = 1
#endif
		:: sent > 0 && maxid >= 1 && maxid + 1 >= NID -> id = maxid
		fi;
		if
		:: (KINDS & 1) -> k = H_SLEEP
		:: (KINDS & 2) -> k = H_CALL
		:: (KINDS & 4) -> k = H_BLIND
		fi;
		inq ! M_REQ, id, k;
		if
		:: k == H_SLEEP -> printf("@ peer: r%d = tools/call sleep, id %d\n", sent, id)
		:: k == H_CALL -> printf("@ peer: r%d = tools/call roots, id %d\n", sent, id)
		:: k == H_BLIND -> printf("@ peer: r%d = tools/call blind (progress, ignores its token), id %d\n", sent, id)
		fi;
		if
		:: id > maxid -> maxid = id
		:: else -> skip
		fi;
		sent++; id = 0; k = 0
	   }
	:: atomic {
		ncan < NCANCEL && sent > 0 && nfull(inq) ->
		if
		:: id = 0
		:: maxid >= 1 -> id = 1
#if NID > 2
		:: maxid >= 2 -> id = 2
#endif
		fi;
		inq ! M_CANCEL, id, 0;
		printf("@ peer: notifications/cancelled for id %d\n", id);
		ncan++; id = 0
	   }
	:: atomic { call_w[0] && !(ans & 1) && nfull(inq) -> inq ! M_ANSWER, p_id[0], 0; ans = ans | 1;
		printf("@ peer: answers roots/list %d (sent for r0)\n", p_id[0]) }
#if NREQ > 1
	:: atomic { call_w[1] && !(ans & 2) && nfull(inq) -> inq ! M_ANSWER, p_id[1], 1; ans = ans | 2;
		printf("@ peer: answers roots/list %d (sent for r1)\n", p_id[1]) }
#endif
#if NREQ > 2
	:: atomic { call_w[2] && !(ans & 4) && nfull(inq) -> inq ! M_ANSWER, p_id[2], 2; ans = ans | 4;
		printf("@ peer: answers roots/list %d (sent for r2)\n", p_id[2]) }
#endif
#ifndef NO_EPIPE
	:: atomic { peer_reading -> peer_reading = 0; printf("@ peer: stops reading (the server's next write fails)\n") }
#endif
	:: atomic { sent == NREQ && nfull(inq) -> inq ! M_EOF, 0, 0; printf("@ peer: closes its output (EOF)\n") }; break
	:: reader_gone -> break
	od
}
