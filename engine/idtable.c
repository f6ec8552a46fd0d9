/*
 * idtable.c - an intrusive, string-keyed hash table with chaining, used for
 * the in-flight table (keys are request ids as compact JSON text, so "5"
 * and 5 are different keys, policy P7).
 *
 * Not locked: its owner holds the lock.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

uint64_t eng_idhash(const char *key)
{
	/* FNV-1a, 64 bit. */
	uint64_t h = UINT64_C(1469598103934665603);
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

int eng_idtable_init(eng_idtable *t)
{
	/* Small to start with (an idle HTTP session holds one); it doubles
	 * as requests come. */
	t->nslots = 8;
	t->count = 0;
	t->slots = calloc(t->nslots, sizeof *t->slots);
	return t->slots ? MCP_OK : MCP_ENOMEM;
}

void eng_idtable_destroy(eng_idtable *t)
{
	free(t->slots);
	t->slots = NULL;
	t->nslots = t->count = 0;
}

eng_idnode *eng_idtable_get(eng_idtable *t, const char *key)
{
	uint64_t h = eng_idhash(key);
	for (eng_idnode *n = t->slots[h & (t->nslots - 1)]; n; n = n->next)
		if (n->hash == h && strcmp(n->key, key) == 0)
			return n;
	return NULL;
}

static void grow(eng_idtable *t)
{
	size_t ns = t->nslots * 2;
	eng_idnode **slots = calloc(ns, sizeof *slots);
	if (!slots)
		return; /* stay at the current size; chains just get longer */
	for (size_t i = 0; i < t->nslots; i++) {
		eng_idnode *n = t->slots[i];
		while (n) {
			eng_idnode *next = n->next;
			n->next = slots[n->hash & (ns - 1)];
			slots[n->hash & (ns - 1)] = n;
			n = next;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
}

int eng_idtable_put(eng_idtable *t, eng_idnode *n)
{
	n->hash = eng_idhash(n->key);
	if (eng_idtable_get(t, n->key))
		return MCP_EEXIST;
	if (t->count >= t->nslots)
		grow(t);
	eng_idnode **slot = &t->slots[n->hash & (t->nslots - 1)];
	n->next = *slot;
	*slot = n;
	t->count++;
	return MCP_OK;
}

int eng_idtable_del(eng_idtable *t, eng_idnode *n)
{
	for (eng_idnode **pp = &t->slots[n->hash & (t->nslots - 1)]; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			n->next = NULL;
			t->count--;
			return MCP_OK;
		}
	}
	return MCP_ENOENT;
}
