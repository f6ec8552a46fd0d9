/*
 * req.c - an inbound request as an object: its creation, its reference
 * count, its link in its session's in-flight table, and where it is freed.
 *
 * How a request is admitted, run and finished is the session's business
 * (session.c); this file is what the writer and the pending table, which
 * hold requests alive, need of it.  A request holds a counted reference
 * to its session and drops it when freed (the session's teardown is its
 * own: eng_session_unref).
 */
#include <stdlib.h>

#include "engine/eng.h"

/* The reader of the session whose loop runs on this thread, if any. */
static __thread eng_session *tl_reader;

eng_session *eng_req_reader_swap(eng_session *s)
{
	eng_session *outer = tl_reader;
	tl_reader = s;
	return outer;
}

int eng_req_on_reader(const eng_session *s)
{
	return tl_reader == s;
}

eng_req *eng_req_new_keyed(eng_session *s, json_object *msg, json_object *id, char *key)
{
	eng_req *r = calloc(1, sizeof *r);
	if (!r) {
		free(key);
		return NULL;
	}
	if (eng_token_init(&r->token)) {
		free(key);
		free(r);
		return NULL;
	}
	r->id_key = key ? key : eng_json_dup(id, NULL);
	if (!r->id_key) {
		eng_token_destroy(&r->token);
		free(r);
		return NULL;
	}
	atomic_init(&r->refs, 1);
	atomic_init(&r->outcome, ENG_OUT_NONE);
	r->node.key = r->id_key;
	r->msg = msg;
	r->id = id;
	r->sess = s;
	eng_session_ref(s);
	return r;
}

eng_req *eng_req_new(eng_session *s, json_object *msg, json_object *id)
{
	return eng_req_new_keyed(s, msg, id, NULL);
}

void eng_req_ref(eng_req *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

eng_req *eng_req_live(eng_idnode *n)
{
	eng_req *r = (eng_req *)n;
	return r && !atomic_load(&r->forgotten) ? r : NULL;
}

/* Being live is not enough: a finishing worker forgets the id and drops
 * its references without the lock, so the last one may be gone already,
 * and the request is then being freed (its free waits for this lock to
 * unlink it).  A reference is taken only from a count that is not zero.
 * (The SPIN model found the double free this prevents:
 * tests/model/trails/plain_ref.txt.) */
eng_req *eng_req_live_ref(eng_idnode *n)
{
	eng_req *r = eng_req_live(n);
	if (!r)
		return NULL;
	int refs = atomic_load_explicit(&r->refs, memory_order_relaxed);
	while (refs > 0)
		if (atomic_compare_exchange_weak_explicit(&r->refs, &refs, refs + 1,
							  memory_order_acquire,
							  memory_order_relaxed))
			return r;
	return NULL;
}

void eng_req_unlink_locked(eng_session *s, eng_req *r)
{
	if (r->in_table) {
		eng_idtable_del(&s->inflight, &r->node);
		r->in_table = 0;
	}
}

static void req_free(eng_req *r)
{
	if (r->in_table) {
		/* Still linked (its id was forgotten, not unlinked): the
		 * table must not keep a freed node. */
		pthread_mutex_lock(&r->sess->mu);
		eng_req_unlink_locked(r->sess, r);
		pthread_mutex_unlock(&r->sess->mu);
	}
	if (r->free_proto && r->proto)
		r->free_proto(r->proto);
	eng_token_destroy(&r->token);
	if (r->msg)
		json_object_put(r->msg);
	if (r->own_id)
		json_object_put(r->own_id);
	free(r->raw);
	free(r->id_key);
	free(r->client_key);
	eng_session *s = r->sess;
	free(r);
	eng_session_unref(s);
}

void eng_req_reap(eng_session *s)
{
	eng_req *r = atomic_exchange(&s->reap_stack, NULL);
	/* Unlink the whole stack from the in-flight table under one lock. */
	int linked = 0;
	for (eng_req *q = r; q && !linked; q = q->qnext)
		linked = q->in_table;
	if (linked) {
		pthread_mutex_lock(&s->mu);
		for (eng_req *q = r; q; q = q->qnext)
			eng_req_unlink_locked(s, q);
		pthread_mutex_unlock(&s->mu);
	}
	while (r) {
		eng_req *next = r->qnext;
		req_free(r);
		r = next;
	}
}

void eng_req_unref(eng_req *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	eng_session *s = r->sess;
	if (tl_reader == s || !atomic_load_explicit(&s->reaping, memory_order_relaxed)) {
		req_free(r);
		return;
	}
	/* A request and its tree come from the reader's heap: on a worker or
	 * the writer, freeing them here means the reader's arena lock for
	 * every one of a few dozen blocks, against the reader's own
	 * allocations.  Hand them back instead.  The extra session reference
	 * covers the window between the push and the check below. */
	eng_session_ref(s);
	eng_req *head = atomic_load_explicit(&s->reap_stack, memory_order_relaxed);
	do
		r->qnext = head;
	while (!atomic_compare_exchange_weak(&s->reap_stack, &head, r));
	/* The reader stores reaping = 0 before its last reap: whichever of
	 * us comes second sees the other's write, so nothing is left behind. */
	if (!atomic_load(&s->reaping))
		eng_req_reap(s);
	eng_session_unref(s);
}

const char *eng_req_client_key(const eng_req *r)
{
	return r->client_key ? r->client_key : r->id_key;
}
