/*
 * registry.c - the server's registries of tools, resources, templates and
 * prompts: reference-counted entries keyed by name (or URI), safe to change
 * while serving, with paged listing.
 *
 * A call holds a reference to its entry, so removing an entry while it runs
 * is safe; the list a client sees is a snapshot taken under the read lock.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

void api_entry_unref(api_entry *e)
{
	if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
		free(e->key);
		e->destroy(e);
	}
}

int api_entry_init(api_entry *e, const char *key, void (*destroy)(api_entry *))
{
	atomic_init(&e->refs, 1);
	e->destroy = destroy;
	e->key = strdup(key);
	return e->key ? MCP_OK : MCP_ENOMEM;
}

int api_registry_add(mcp_server *srv, api_registry *r, api_entry *e)
{
	pthread_rwlock_wrlock(&srv->reg_lock);
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->items[i]->key, e->key) == 0) {
			pthread_rwlock_unlock(&srv->reg_lock);
			api_entry_unref(e);
			return MCP_EEXIST;
		}
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		api_entry **items = realloc(r->items, cap * sizeof *items);
		if (!items) {
			pthread_rwlock_unlock(&srv->reg_lock);
			api_entry_unref(e);
			return MCP_ENOMEM;
		}
		r->items = items;
		r->cap = cap;
	}
	r->items[r->n++] = e;
	pthread_rwlock_unlock(&srv->reg_lock);
	api_notify_list_changed(srv, r->kind);
	return MCP_OK;
}

int api_registry_remove(mcp_server *srv, api_registry *r, const char *key)
{
	pthread_rwlock_wrlock(&srv->reg_lock);
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->items[i]->key, key) == 0) {
			api_entry *e = r->items[i];
			memmove(&r->items[i], &r->items[i + 1], (r->n - i - 1) * sizeof *r->items);
			r->n--;
			pthread_rwlock_unlock(&srv->reg_lock);
			api_entry_unref(e);
			api_notify_list_changed(srv, r->kind);
			return MCP_OK;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return MCP_ENOENT;
}

api_entry *api_registry_find(mcp_server *srv, api_registry *r, const char *key)
{
	api_entry *found = NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->items[i]->key, key) == 0) {
			found = r->items[i];
			atomic_fetch_add(&found->refs, 1);
			break;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return found;
}

api_entry *api_registry_match(mcp_server *srv, api_registry *r,
			      int (*match)(api_entry *e, void *arg), void *arg)
{
	api_entry *found = NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < r->n; i++) {
		if (match(r->items[i], arg)) {
			found = r->items[i];
			atomic_fetch_add(&found->refs, 1);
			break;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return found;
}

size_t api_registry_count(mcp_server *srv, api_registry *r)
{
	pthread_rwlock_rdlock(&srv->reg_lock);
	size_t n = r->n;
	pthread_rwlock_unlock(&srv->reg_lock);
	return n;
}

json_object *api_registry_page(mcp_server *srv, api_registry *r, size_t offset, size_t limit,
			       json_object *(*describe)(api_entry *e, int rev), int rev,
			       size_t *total)
{
	json_object *arr = json_object_new_array();
	if (!arr)
		return NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	*total = r->n;
	for (size_t i = offset; i < r->n && i - offset < limit; i++) {
		json_object *o = describe(r->items[i], rev);
		if (!o || eng_arr_add(arr, o)) {
			json_object_put(arr);
			arr = NULL;
			break;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return arr;
}

json_object *api_registry_page_if(mcp_server *srv, api_registry *r, size_t offset, size_t limit,
				  json_object *(*describe)(api_entry *e, int rev), int rev,
				  int (*keep)(api_entry *e, void *arg), void *arg, size_t *next)
{
	json_object *arr = json_object_new_array();
	*next = 0;
	if (!arr)
		return NULL;
	size_t taken = 0;
	pthread_rwlock_rdlock(&srv->reg_lock);
	size_t i = offset;
	for (; i < r->n && taken < limit; i++) {
		if (!keep(r->items[i], arg))
			continue;
		json_object *o = describe(r->items[i], rev);
		if (!o || eng_arr_add(arr, o)) {
			json_object_put(arr);
			arr = NULL;
			break;
		}
		taken++;
	}
	/* A next page only when something visible is left. */
	while (arr && i < r->n && !keep(r->items[i], arg))
		i++;
	if (arr && i < r->n)
		*next = i;
	pthread_rwlock_unlock(&srv->reg_lock);
	return arr;
}

void api_registry_clear(api_registry *r)
{
	for (size_t i = 0; i < r->n; i++)
		api_entry_unref(r->items[i]);
	free(r->items);
	r->items = NULL;
	r->n = r->cap = 0;
}
