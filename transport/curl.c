/*
 * curl.c - opens libcurl at the first HTTP connection of a client (see
 * curl.h for why), and runs its global initialisation once.  The library
 * is never closed: a process that spoke HTTP once keeps it.
 */
#define TP_CURL_IMPL 1
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>

#include "transport/curl.h"

struct tp_curl_api tp_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -1;

static void *sym(void *h, const char *name, int *missing)
{
	void *p = dlsym(h, name);
	if (!p)
		*missing = 1;
	return p;
}

static void load(void)
{
	/* The soname configure found, then the development symlink. */
	void *h = dlopen(MCP_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	int missing = 0;
	struct tp_curl_api a;
#define LOAD(field, name) *(void **)&a.field = sym(h, name, &missing)
	LOAD(global_init, "curl_global_init");
	LOAD(easy_init, "curl_easy_init");
	LOAD(easy_cleanup, "curl_easy_cleanup");
	LOAD(easy_setopt, "curl_easy_setopt");
	LOAD(easy_getinfo, "curl_easy_getinfo");
	LOAD(easy_strerror, "curl_easy_strerror");
	LOAD(easy_perform, "curl_easy_perform");
	LOAD(multi_init, "curl_multi_init");
	LOAD(multi_cleanup, "curl_multi_cleanup");
	LOAD(multi_add_handle, "curl_multi_add_handle");
	LOAD(multi_remove_handle, "curl_multi_remove_handle");
	LOAD(multi_perform, "curl_multi_perform");
	LOAD(multi_info_read, "curl_multi_info_read");
	LOAD(multi_poll, "curl_multi_poll");
	LOAD(multi_wakeup, "curl_multi_wakeup");
	LOAD(slist_append, "curl_slist_append");
	LOAD(slist_free_all, "curl_slist_free_all");
	LOAD(url, "curl_url");
	LOAD(url_set, "curl_url_set");
	LOAD(url_get, "curl_url_get");
	LOAD(url_cleanup, "curl_url_cleanup");
	LOAD(curl_free, "curl_free");
#undef LOAD
	/* curl_global_init is not thread-safe: this once is its only call. */
	if (missing || a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		dlclose(h);
		return;
	}
	tp_curl = a;
	load_rc = 0;
}

int tp_curl_load(void)
{
	pthread_once(&once, load);
	return load_rc;
}
