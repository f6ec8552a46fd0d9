/*
 * pending.c - the table of outbound (server-to-client) requests waiting for
 * the client's answer, keyed by our own integer ids.
 *
 * The waiter sleeps on its request's token; an answer, a timeout, a cancel
 * or the shutdown wakes it.  The shutdown never iterates the live table: it
 * swaps it out under the lock and fails the entries outside it, so a waiter
 * that wakes and removes itself finds its entry already gone (the race the
 * official SDKs shipped).
 */
#include <stdlib.h>

#include "engine/eng.h"

int eng_pending_init(eng_pending_table *pt, size_t max)
{
	if (pthread_mutex_init(&pt->mu, NULL))
		return MCP_ESYS;
	/* The slots come with the first entry: most connections (every
	 * idle HTTP session) never send the client a request. */
	pt->nslots = 64;
	pt->slots = NULL;
	pt->count = 0;
	pt->next_id = 1;
	pt->closed = 0;
	pt->max = max;
	return MCP_OK;
}

void eng_pending_destroy(eng_pending_table *pt)
{
	eng_pending_fail_all(pt);
	free(pt->slots);
	pthread_mutex_destroy(&pt->mu);
}

static size_t slot_of(const eng_pending_table *pt, int64_t id)
{
	return (size_t)((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15) >> 32) & (pt->nslots - 1);
}

void eng_pending_unref(eng_pending *p)
{
	if (atomic_fetch_sub(&p->refs, 1) == 1) {
		if (p->answer)
			json_object_put(p->answer);
		eng_req_unref(p->owner);
		free(p);
	}
}

int eng_pending_add(eng_pending_table *pt, eng_req *owner, eng_pending **out)
{
	eng_pending *p = calloc(1, sizeof *p);
	if (!p)
		return MCP_ENOMEM;
	pthread_mutex_lock(&pt->mu);
	if (pt->closed) {
		pthread_mutex_unlock(&pt->mu);
		free(p);
		return MCP_ECLOSED;
	}
	if (pt->count >= pt->max) {
		pthread_mutex_unlock(&pt->mu);
		free(p);
		return MCP_EBUSY;
	}
	if (!pt->slots && !(pt->slots = calloc(pt->nslots, sizeof *pt->slots))) {
		pthread_mutex_unlock(&pt->mu);
		free(p);
		return MCP_ENOMEM;
	}
	p->id = pt->next_id++;
	atomic_init(&p->refs, 2);
	p->state = ENG_PEND_WAITING;
	p->owner = owner;
	eng_req_ref(owner);
	size_t s = slot_of(pt, p->id);
	p->next = pt->slots[s];
	pt->slots[s] = p;
	pt->count++;
	pthread_mutex_unlock(&pt->mu);
	*out = p;
	return MCP_OK;
}

/* Unlinks the entry with `id` under pt->mu; returns it (table ref). */
static eng_pending *unlink_id(eng_pending_table *pt, int64_t id)
{
	if (!pt->slots)
		return NULL;
	for (eng_pending **pp = &pt->slots[slot_of(pt, id)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			eng_pending *p = *pp;
			*pp = p->next;
			p->next = NULL;
			pt->count--;
			return p;
		}
	}
	return NULL;
}

/* Wakes the waiter with a final state; `answer` taken (may be NULL). */
static void settle(eng_pending *p, int state, json_object *answer)
{
	eng_token *t = &p->owner->token;
	pthread_mutex_lock(&t->mu);
	if (p->state == ENG_PEND_WAITING) {
		p->state = state;
		p->answer = answer;
		answer = NULL;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	if (answer)
		json_object_put(answer);
}

int eng_pending_answer(eng_pending_table *pt, int64_t id, json_object *msg)
{
	pthread_mutex_lock(&pt->mu);
	eng_pending *p = unlink_id(pt, id);
	pthread_mutex_unlock(&pt->mu);
	if (!p) {
		json_object_put(msg); /* unknown, late or duplicate: ignored */
		return 0;
	}
	settle(p, ENG_PEND_ANSWERED, msg);
	eng_pending_unref(p);
	return 1;
}

void eng_pending_remove(eng_pending_table *pt, eng_pending *p)
{
	pthread_mutex_lock(&pt->mu);
	eng_pending *q = unlink_id(pt, p->id);
	pthread_mutex_unlock(&pt->mu);
	if (q)
		eng_pending_unref(q);
}

size_t eng_pending_fail_all(eng_pending_table *pt)
{
	pthread_mutex_lock(&pt->mu);
	eng_pending **old = pt->slots;
	size_t n = pt->nslots;
	pt->closed = 1;
	if (!old) {
		pthread_mutex_unlock(&pt->mu);
		return 0; /* never used */
	}
	pt->slots = calloc(pt->nslots, sizeof *pt->slots);
	if (!pt->slots) {
		/* Cannot swap: fail in place while holding the lock; settle()
		 * takes only token locks, which come after ours in the order. */
		pt->slots = old;
		size_t failed = 0;
		for (size_t i = 0; i < n; i++) {
			while (old[i]) {
				eng_pending *p = old[i];
				old[i] = p->next;
				settle(p, ENG_PEND_FAILED, NULL);
				eng_pending_unref(p);
				failed++;
			}
		}
		pt->count = 0;
		pthread_mutex_unlock(&pt->mu);
		return failed;
	}
	pt->count = 0;
	pthread_mutex_unlock(&pt->mu);

	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		eng_pending *p = old[i];
		while (p) {
			eng_pending *next = p->next;
			settle(p, ENG_PEND_FAILED, NULL);
			eng_pending_unref(p);
			failed++;
			p = next;
		}
	}
	free(old);
	return failed;
}

size_t eng_pending_count(eng_pending_table *pt)
{
	pthread_mutex_lock(&pt->mu);
	size_t n = pt->count;
	pthread_mutex_unlock(&pt->mu);
	return n;
}
