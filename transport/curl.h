/*
 * curl.h - libcurl, loaded when the client first speaks HTTP.
 *
 * As with libmicrohttpd (mhd.h): a process that links libmcp to serve or
 * call over stdio should not map libcurl and what it pulls in (OpenSSL's
 * libssl, nghttp2, libssh2, LDAP, Kerberos...).  libmcp is not linked
 * against it; the first mcp_client_connect_http() opens it with dlopen(3)
 * and looks up the functions transport/httpc.c uses.  Include this header
 * instead of <curl/curl.h>; the curl_* calls then go through the table.
 */
#ifndef LIBMCP_TRANSPORT_CURL_H
#define LIBMCP_TRANSPORT_CURL_H

/* The type-checking macros of curl_easy_setopt and curl_easy_getinfo
 * would name the real functions. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct tp_curl_api {
	__typeof__(&curl_global_init) global_init;
	__typeof__(&curl_easy_init) easy_init;
	__typeof__(&curl_easy_cleanup) easy_cleanup;
	__typeof__(&curl_easy_setopt) easy_setopt;
	__typeof__(&curl_easy_getinfo) easy_getinfo;
	__typeof__(&curl_easy_strerror) easy_strerror;
	__typeof__(&curl_easy_perform) easy_perform; /* api/client-oauth.c */
	__typeof__(&curl_multi_init) multi_init;
	__typeof__(&curl_multi_cleanup) multi_cleanup;
	__typeof__(&curl_multi_add_handle) multi_add_handle;
	__typeof__(&curl_multi_remove_handle) multi_remove_handle;
	__typeof__(&curl_multi_perform) multi_perform;
	__typeof__(&curl_multi_info_read) multi_info_read;
	__typeof__(&curl_multi_poll) multi_poll;
	__typeof__(&curl_multi_wakeup) multi_wakeup;
	__typeof__(&curl_slist_append) slist_append;
	__typeof__(&curl_slist_free_all) slist_free_all;
	__typeof__(&curl_url) url;
	__typeof__(&curl_url_set) url_set;
	__typeof__(&curl_url_get) url_get;
	__typeof__(&curl_url_cleanup) url_cleanup;
	__typeof__(&curl_free) curl_free;
};

/* Filled by tp_curl_load(); read-only afterwards. */
extern struct tp_curl_api tp_curl;

/* Loads libcurl once per process (thread-safe) and initialises it.  0, or
 * -1 when the library or one of its functions is missing or it would not
 * initialise. */
int tp_curl_load(void);

#ifndef TP_CURL_IMPL
/* curl.h defines these two as type-checking macros of its own (gcc); the
 * table's pointers take their place. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init (tp_curl.global_init)
#define curl_easy_init (tp_curl.easy_init)
#define curl_easy_cleanup (tp_curl.easy_cleanup)
#define curl_easy_setopt (tp_curl.easy_setopt)
#define curl_easy_getinfo (tp_curl.easy_getinfo)
#define curl_easy_strerror (tp_curl.easy_strerror)
#define curl_easy_perform (tp_curl.easy_perform)
#define curl_multi_init (tp_curl.multi_init)
#define curl_multi_cleanup (tp_curl.multi_cleanup)
#define curl_multi_add_handle (tp_curl.multi_add_handle)
#define curl_multi_remove_handle (tp_curl.multi_remove_handle)
#define curl_multi_perform (tp_curl.multi_perform)
#define curl_multi_info_read (tp_curl.multi_info_read)
#define curl_multi_poll (tp_curl.multi_poll)
#define curl_multi_wakeup (tp_curl.multi_wakeup)
#define curl_slist_append (tp_curl.slist_append)
#define curl_slist_free_all (tp_curl.slist_free_all)
#define curl_url (tp_curl.url)
#define curl_url_set (tp_curl.url_set)
#define curl_url_get (tp_curl.url_get)
#define curl_url_cleanup (tp_curl.url_cleanup)
#define curl_free (tp_curl.curl_free)
#endif

#endif
