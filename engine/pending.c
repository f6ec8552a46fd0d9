/*
 * pending.c - the table of outbound (server-to-client) requests waiting for
 * the client's answer, keyed by our own integer ids.
 *
 * The waiter sleeps on its request's token; an answer, a timeout, a cancel
 * or the shutdown wakes it.  The shutdown never iterates the live table: it
 * swaps it out under the lock and fails the entries outside it, so a waiter
 * that wakes and removes itself finds its entry already gone (the race the
 * official SDKs shipped).
 *
 * An entry belongs either to an inbound request (a server's handler
 * waiting for its client) or to an eng_call (a client's own request, with
 * a token of its own): the table treats both alike and only the wait
 * point and the hand-over of the answer differ.
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
		if (p->owner)
			eng_req_unref(p->owner);
		if (p->call)
			eng_call_unref(p->call);
		free(p);
	}
}

int eng_call_init(eng_call *c, void (*on_settle)(eng_call *, eng_pending *, int, json_object *),
		  void (*release)(eng_call *))
{
	if (eng_token_init(&c->token))
		return MCP_ESYS;
	atomic_init(&c->refs, 1);
	c->on_settle = on_settle;
	c->release = release;
	return MCP_OK;
}

void eng_call_ref(eng_call *c)
{
	atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void eng_call_unref(eng_call *c)
{
	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	eng_token_destroy(&c->token);
	if (c->release)
		c->release(c);
}

/* Links a new entry for `owner` or `call` (exactly one of them). */
static int pending_add(eng_pending_table *pt, eng_req *owner, eng_call *call, eng_pending **out)
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
	p->call = call;
	if (owner) {
		eng_req_ref(owner);
		p->tok = &owner->token;
	} else {
		eng_call_ref(call);
		p->tok = &call->token;
	}
	size_t s = slot_of(pt, p->id);
	p->next = pt->slots[s];
	pt->slots[s] = p;
	pt->count++;
	pthread_mutex_unlock(&pt->mu);
	*out = p;
	return MCP_OK;
}

int eng_pending_add(eng_pending_table *pt, eng_req *owner, eng_pending **out)
{
	return pending_add(pt, owner, NULL, out);
}

int eng_pending_add_call(eng_pending_table *pt, eng_call *call, eng_pending **out)
{
	return pending_add(pt, NULL, call, out);
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

/* Wakes the waiter with a final state; `answer` taken (may be NULL).  A
 * call's entry hands the answer to the call's hook instead of keeping it,
 * after the broadcast and outside every lock: the hook may send, or add
 * the call's next entry to this table.  Never called under pt->mu. */
static void settle(eng_pending *p, int state, json_object *answer)
{
	eng_token *t = p->tok;
	int settled = 0;
	pthread_mutex_lock(&t->mu);
	if (p->state == ENG_PEND_WAITING) {
		p->state = state;
		if (!p->call) {
			p->answer = answer;
			answer = NULL;
		}
		settled = 1;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	if (settled && p->call && p->call->on_settle) {
		p->call->on_settle(p->call, p, state, answer);
		answer = NULL;
	}
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

int eng_pending_remove(eng_pending_table *pt, eng_pending *p)
{
	pthread_mutex_lock(&pt->mu);
	eng_pending *q = unlink_id(pt, p->id);
	pthread_mutex_unlock(&pt->mu);
	if (q)
		eng_pending_unref(q);
	return q != NULL;
}

size_t eng_pending_fail_all(eng_pending_table *pt)
{
	/* The snapshot needs no memory: under the lock every entry is
	 * chained into one list through its own link and the slots are
	 * emptied; outside it the list is failed.  A woken waiter that
	 * removes itself then finds nothing to unlink, and a call's settle
	 * hook runs with no table lock held. */
	eng_pending *list = NULL;
	pthread_mutex_lock(&pt->mu);
	pt->closed = 1;
	for (size_t i = 0; pt->slots && i < pt->nslots; i++) {
		while (pt->slots[i]) {
			eng_pending *p = pt->slots[i];
			pt->slots[i] = p->next;
			p->next = list;
			list = p;
		}
	}
	pt->count = 0;
	pthread_mutex_unlock(&pt->mu);

	size_t failed = 0;
	while (list) {
		eng_pending *next = list->next;
		list->next = NULL;
		settle(list, ENG_PEND_FAILED, NULL);
		eng_pending_unref(list);
		failed++;
		list = next;
	}
	return failed;
}

int eng_pending_waiting(eng_pending_table *pt, int64_t id)
{
	int found = 0;
	pthread_mutex_lock(&pt->mu);
	if (pt->slots)
		for (eng_pending *p = pt->slots[slot_of(pt, id)]; p && !found; p = p->next)
			found = p->id == id;
	pthread_mutex_unlock(&pt->mu);
	return found;
}

size_t eng_pending_count(eng_pending_table *pt)
{
	pthread_mutex_lock(&pt->mu);
	size_t n = pt->count;
	pthread_mutex_unlock(&pt->mu);
	return n;
}
