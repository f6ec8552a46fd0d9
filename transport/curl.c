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
#include "transport/dlib.h"

struct tp_curl_api tp_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -1;

static void load(void)
{
	struct tp_curl_api a;
#define SYM(field, name) { (void **)&a.field, name }
	const tp_dlib_sym syms[] = {
		SYM(global_init, "curl_global_init"),
		SYM(easy_init, "curl_easy_init"),
		SYM(easy_cleanup, "curl_easy_cleanup"),
		SYM(easy_setopt, "curl_easy_setopt"),
		SYM(easy_getinfo, "curl_easy_getinfo"),
		SYM(easy_strerror, "curl_easy_strerror"),
		SYM(easy_perform, "curl_easy_perform"),
		SYM(multi_init, "curl_multi_init"),
		SYM(multi_cleanup, "curl_multi_cleanup"),
		SYM(multi_add_handle, "curl_multi_add_handle"),
		SYM(multi_remove_handle, "curl_multi_remove_handle"),
		SYM(multi_perform, "curl_multi_perform"),
		SYM(multi_info_read, "curl_multi_info_read"),
		SYM(multi_poll, "curl_multi_poll"),
		SYM(multi_wakeup, "curl_multi_wakeup"),
		SYM(slist_append, "curl_slist_append"),
		SYM(slist_free_all, "curl_slist_free_all"),
		SYM(url, "curl_url"),
		SYM(url_set, "curl_url_set"),
		SYM(url_get, "curl_url_get"),
		SYM(url_cleanup, "curl_url_cleanup"),
		SYM(curl_free, "curl_free"),
	};
#undef SYM
	void *h = tp_dlib_open(MCP_CURL_SONAME, "libcurl.so", syms, sizeof syms / sizeof *syms);
	if (!h)
		return;
	/* curl_global_init is not thread-safe: this once is its only call. */
	if (a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
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
