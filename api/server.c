/*
 * server.c - the server object: configuration, the worker pool it owns,
 * running a connection over descriptors, the shutdown entry points and the
 * engine counters.
 *
 * The server starts its pool when a run begins and joins it (bounded by the
 * grace period) when the run ends.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sodium.h>

#include "api/internal.h"
#include "transport/store.h"

MCP_EXTERN mcp_server *mcp_server_new(const char *name, const char *version)
{
	if (!name || !version)
		return NULL;
	mcp_server *srv = calloc(1, sizeof *srv);
	if (!srv)
		return NULL;
	srv->name = strdup(name);
	srv->version = strdup(version);
	srv->proto = &api_protocol;
	srv->workers = 4;
	srv->grace_ms = 1500;
	srv->nonblocking_budget_ms = 10;
	srv->max_message = 16u << 20;
	srv->max_depth = 128;
	srv->max_values = ENG_DEFAULT_MAX_VALUES;
	srv->max_queue = 100000;
	srv->max_pending = 1024;
	srv->idle_poll_us = 50;
	srv->page_size = 100;
	srv->max_sessions = 1000;
	srv->session_idle_ms = 30 * 60 * 1000;
	srv->max_connections = 4096;
	srv->max_streams = 10000;
	srv->stream_backlog = 1u << 20;
	srv->http_header_timeout_ms = 5000;
	srv->http_body_timeout_ms = 30000;
	srv->session_workers = 0;
	srv->session_queue = 1000;
	srv->tools.kind = API_KIND_TOOLS;
	srv->resources.kind = API_KIND_RESOURCES;
	srv->templates.kind = API_KIND_RESOURCES;
	srv->prompts.kind = API_KIND_PROMPTS;
	srv->task_ttl_default = 3600 * 1000;
	srv->store_timeout_ms = 1000;
	srv->task_lease_ms = 10000;
	srv->task_ttl_max = 24 * 3600 * 1000;
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!srv->name || !srv->version || srv->wake_fd < 0 || api_state_key_init(srv) != MCP_OK ||
	    pthread_rwlock_init(&srv->reg_lock, NULL) != 0 || api_tasks_init(srv) != MCP_OK) {
		if (srv->wake_fd >= 0)
			close(srv->wake_fd);
		free(srv->name);
		free(srv->version);
		free(srv);
		return NULL;
	}
	pthread_mutex_init(&srv->sess_mu, NULL);
	api_park_init(srv);
	return srv;
}

MCP_EXTERN void mcp_server_free(mcp_server *srv)
{
	if (!srv)
		return;
	if (atomic_load(&srv->stats.abandoned) > 0 || srv->pool.detached > 0) {
		/* Handlers abandoned at a shutdown deadline may still be running
		 * and reach the registries, the pool and the counters: keep all
		 * of it alive rather than free memory under them. */
		return;
	}
	api_registry_clear(&srv->tools);
	api_registry_clear(&srv->resources);
	api_registry_clear(&srv->templates);
	api_registry_clear(&srv->prompts);
	pthread_rwlock_destroy(&srv->reg_lock);
	pthread_mutex_destroy(&srv->sess_mu);
	api_tstore_close(srv);
	free(srv->store_url);
	api_tasks_destroy(srv);
	api_apps_free(srv);
	api_skills_free(srv);
	api_park_destroy(srv);
	api_authz_free(srv);
	close(srv->wake_fd);
	free(srv->name);
	free(srv->version);
	free(srv->instructions);
	free(srv->http_path);
	free(srv->http_sse_path);
	free(srv->http_messages_path);
	for (size_t i = 0; i < srv->n_http_hosts; i++)
		free(srv->http_hosts[i]);
	free(srv->http_hosts);
	for (size_t i = 0; i < srv->n_http_origins; i++)
		free(srv->http_origins[i]);
	free(srv->http_origins);
	sodium_memzero(srv->state_key, sizeof srv->state_key);
	sodium_memzero(srv->state_key_old, sizeof srv->state_key_old);
	free(srv);
}

static int settable(mcp_server *srv)
{
	if (!srv)
		return MCP_EINVAL;
	return atomic_load(&srv->running) ? MCP_ESTATE : MCP_OK;
}

MCP_EXTERN int mcp_server_set_instructions(mcp_server *srv, const char *text)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	char *t = NULL;
	if (text && !(t = strdup(text)))
		return MCP_ENOMEM;
	free(srv->instructions);
	srv->instructions = t;
	return MCP_OK;
}

#define RANGE_SETTER(fn, field, type, lo, hi)                        \
	MCP_EXTERN int fn(mcp_server *srv, type v)                   \
	{                                                            \
		int rc = settable(srv);                              \
		if (rc)                                              \
			return rc;                                   \
		if (v < (lo) || v > (hi))                            \
			return MCP_EINVAL;                           \
		srv->field = v;                                      \
		return MCP_OK;                                       \
	}

RANGE_SETTER(mcp_server_set_workers, workers, int, 1, 1024)
RANGE_SETTER(mcp_server_set_grace_ms, grace_ms, int64_t, 0, 600000)
RANGE_SETTER(mcp_server_set_nonblocking_budget_ms, nonblocking_budget_ms, int64_t, 1, 60000)
RANGE_SETTER(mcp_server_set_max_message, max_message, size_t, 1024, (size_t)1 << 30)
RANGE_SETTER(mcp_server_set_max_depth, max_depth, int, 2, 10000)
RANGE_SETTER(mcp_server_set_max_values, max_values, size_t, 16, 100000000)
RANGE_SETTER(mcp_server_set_max_queue, max_queue, int, 1, 10000000)
RANGE_SETTER(mcp_server_set_max_pending, max_pending, int, 1, 1000000)
RANGE_SETTER(mcp_server_set_idle_poll_us, idle_poll_us, int, 0, 10000)
RANGE_SETTER(mcp_server_set_page_size, page_size, int, 1, 100000)
RANGE_SETTER(mcp_server_set_max_sessions, max_sessions, int, 1, 1000000)
RANGE_SETTER(mcp_server_set_session_idle_ms, session_idle_ms, int64_t, 1000, INT64_C(1) << 31)
RANGE_SETTER(mcp_server_set_max_connections, max_connections, int, 1, 1000000)
RANGE_SETTER(mcp_server_set_max_streams, max_streams, int, 1, 1000000)
RANGE_SETTER(mcp_server_set_stream_backlog, stream_backlog, size_t, 4096, (size_t)1 << 30)
RANGE_SETTER(mcp_server_set_http_header_timeout_ms, http_header_timeout_ms, int64_t, 100,
	     INT64_C(1) << 31)
RANGE_SETTER(mcp_server_set_http_body_timeout_ms, http_body_timeout_ms, int64_t, 100,
	     INT64_C(1) << 31)
RANGE_SETTER(mcp_server_set_session_workers, session_workers, int, 0, 1024)
RANGE_SETTER(mcp_server_set_session_queue, session_queue, int, 0, 10000000)

MCP_EXTERN int mcp_server_set_http_json(mcp_server *srv, int json_only)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->http_json_only = json_only != 0;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_http_stateless(mcp_server *srv, int stateless)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->http_stateless = stateless != 0;
	return MCP_OK;
}

/* Appends a copy of `s` to a string list. */
static int list_add(char ***list, size_t *n, const char *s)
{
	char *copy = strdup(s);
	char **grown = copy ? realloc(*list, (*n + 1) * sizeof **list) : NULL;
	if (!grown) {
		free(copy);
		return MCP_ENOMEM;
	}
	grown[(*n)++] = copy;
	*list = grown;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_add_http_allowed_host(mcp_server *srv, const char *host)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (!host || !*host || strpbrk(host, " \t\r\n/"))
		return MCP_EINVAL;
	return list_add(&srv->http_hosts, &srv->n_http_hosts, host);
}

MCP_EXTERN int mcp_server_add_http_allowed_origin(mcp_server *srv, const char *origin)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (!origin || !*origin || strpbrk(origin, " \t\r\n") ||
	    (strcmp(origin, "*") != 0 && !strstr(origin, "://")))
		return MCP_EINVAL;
	return list_add(&srv->http_origins, &srv->n_http_origins, origin);
}

MCP_EXTERN int mcp_server_set_http_auth(mcp_server *srv, mcp_http_auth_fn fn, void *user)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->http_auth = fn;
	srv->http_auth_user = user;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_http_path(mcp_server *srv, const char *path)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (!path || path[0] != '/')
		return MCP_EINVAL;
	char *p = strdup(path);
	if (!p)
		return MCP_ENOMEM;
	free(srv->http_path);
	srv->http_path = p;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_http_legacy_sse(mcp_server *srv, int on)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->http_legacy_sse = on != 0;
	return MCP_OK;
}

/* A path of the legacy transport: absolute, and nothing a query or the
 * endpoint event's data line could be confused by. */
static int legacy_path_ok(const char *path)
{
	return path && path[0] == '/' && !strpbrk(path, "?#\r\n \t");
}

MCP_EXTERN int mcp_server_set_http_legacy_sse_paths(mcp_server *srv, const char *sse_path,
						     const char *messages_path)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if ((sse_path && !legacy_path_ok(sse_path)) ||
	    (messages_path && !legacy_path_ok(messages_path)))
		return MCP_EINVAL;
	const char *sse = sse_path ? sse_path : "/sse";
	const char *msg = messages_path ? messages_path : "/messages";
	if (strcmp(sse, msg) == 0)
		return MCP_EINVAL;
	char *s = strdup(sse), *m = strdup(msg);
	if (!s || !m) {
		free(s);
		free(m);
		return MCP_ENOMEM;
	}
	free(srv->http_sse_path);
	free(srv->http_messages_path);
	srv->http_sse_path = s;
	srv->http_messages_path = m;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_task_ttl(mcp_server *srv, int64_t default_ms, int64_t max_ms)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (default_ms < 1000 || max_ms < default_ms || max_ms > INT64_C(1) << 31)
		return MCP_EINVAL;
	srv->task_ttl_default = default_ms;
	srv->task_ttl_max = max_ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_store(mcp_server *srv, const char *url)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->store_err[0] = '\0';
	if (!url) {
		free(srv->store_url);
		srv->store_url = NULL;
		return MCP_OK;
	}
	/* Checked now, with a clear reason; opened for good when the
	 * server starts, with the timeouts then set. */
	tp_store *probe = NULL;
	if (tp_store_open(url, NULL, &probe, srv->store_err, sizeof srv->store_err) != TP_STORE_OK)
		return MCP_EINVAL;
	tp_store_close(probe);
	char *copy = strdup(url);
	if (!copy)
		return MCP_ENOMEM;
	free(srv->store_url);
	srv->store_url = copy;
	return MCP_OK;
}

MCP_EXTERN const char *mcp_server_store_error(mcp_server *srv)
{
	if (!srv)
		return "";
	if (srv->tstore)
		return api_tstore_error(srv->tstore);
	return srv->store_err;
}

MCP_EXTERN int mcp_server_set_store_timeout_ms(mcp_server *srv, int64_t ms)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (ms < 10 || ms > 60000)
		return MCP_EINVAL;
	srv->store_timeout_ms = ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_task_lease_ms(mcp_server *srv, int64_t ms)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	if (ms < 300 || ms > 600000)
		return MCP_EINVAL;
	srv->task_lease_ms = ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_trace(mcp_server *srv, mcp_trace_fn fn, void *user)
{
	int rc = settable(srv);
	if (rc)
		return rc;
	srv->trace = fn;
	srv->trace_user = user;
	return MCP_OK;
}

int api_server_serve_connection(mcp_server *srv, tp_conn *tp)
{
	return api_server_serve_connection_as(srv, tp, -1);
}

int api_server_serve_connection_as(mcp_server *srv, tp_conn *tp, int preset_rev)
{
	eng_session *s = api_server_open_session(srv, tp, preset_rev, 0);
	if (!s)
		return MCP_ENOMEM;
	int rc = eng_session_run(s);
	api_server_drop_session(srv, s);
	return rc;
}

int api_server_begin(mcp_server *srv)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&srv->has_run, &expect, 1))
		return MCP_ESTATE;
	atomic_store(&srv->running, 1);

	int rc = MCP_OK;
	if (srv->store_url) {
		rc = api_tstore_open(srv, srv->store_url, srv->store_timeout_ms, srv->task_lease_ms,
				     srv->store_err, sizeof srv->store_err);
		if (rc == MCP_OK) {
			api_tstore_hooks h = { .list_changed = api_notify_list_changed_here,
					       .resource_updated = api_resource_updated_here };
			api_tasks_store_hooks(&h);
			rc = api_tstore_start(srv->tstore, &h);
		}
	}
	if (rc == MCP_OK)
		rc = eng_pool_start(&srv->pool, srv->workers, (size_t)srv->max_queue,
				    (int64_t)srv->idle_poll_us * 1000);
	if (rc != MCP_OK) {
		api_tstore_close(srv);
		atomic_store(&srv->running, 0);
	}
	return rc;
}

void api_server_end(mcp_server *srv)
{
	/* The tasks that outlived their HTTP sessions end with the run. */
	api_task_host_end(srv);
	/* The sessions already waited for their handlers up to the grace
	 * period; what still runs now is abandoned. */
	eng_pool_stop(&srv->pool, eng_now_ns() + 50 * ENG_NS_PER_MS);
	/* No handler writes a record any more: the lease and subscriber
	 * threads go (a handler abandoned at the grace lets its lease
	 * lapse, and its task reads as failed).  Kept when a handler was
	 * abandoned: it may still finish and write, as mcp_server_free keeps
	 * what such a handler reaches. */
	if (atomic_load(&srv->stats.abandoned) == 0 && srv->pool.detached == 0)
		api_tstore_close(srv);
	atomic_store(&srv->running, 0);
}

int api_server_run_tp(mcp_server *srv, tp_conn *tp)
{
	int rc = api_server_begin(srv);
	if (rc != MCP_OK) {
		tp->ops->free(tp);
		return rc;
	}
	/* This thread reads and, on a quiet server, writes inline: a vanished
	 * reader shows up as EPIPE, never as SIGPIPE at the process, whose
	 * disposition stays the host's (transport/sigpipe.h). */
	tp_sigpipe quiet;
	tp_sigpipe_block(&quiet);
	rc = api_server_serve_connection(srv, tp);
	api_server_end(srv);
	tp_sigpipe_restore(&quiet);
	return rc;
}

MCP_EXTERN int mcp_server_run_fds(mcp_server *srv, int in_fd, int out_fd)
{
	if (!srv || in_fd < 0 || out_fd < 0)
		return MCP_EINVAL;
	if (atomic_load(&srv->has_run))
		return MCP_ESTATE;
	tp_conn *tp = tp_fd_new(in_fd, out_fd, srv->wake_fd, srv->max_message);
	if (!tp)
		return MCP_ENOMEM;
	return api_server_run_tp(srv, tp);
}

MCP_EXTERN int mcp_server_run_stdio(mcp_server *srv)
{
	return mcp_server_run_fds(srv, STDIN_FILENO, STDOUT_FILENO);
}

MCP_EXTERN void mcp_server_shutdown_from_signal(mcp_server *srv)
{
	if (!srv)
		return;
	int saved = errno;
	uint64_t one = 1;
	ssize_t r = write(srv->wake_fd, &one, sizeof one);
	(void)r;
	errno = saved;
}

MCP_EXTERN void mcp_server_shutdown(mcp_server *srv)
{
	if (!srv)
		return;
	/* Sessions with a reader are woken here; those an HTTP transport
	 * feeds are closed by its run loop once it sees the wake-up (their
	 * shutdown runs callbacks that take sess_mu, so not under it). */
	pthread_mutex_lock(&srv->sess_mu);
	for (api_sess *ms = srv->sessions; ms; ms = ms->next)
		if (!ms->es->limits.push)
			eng_session_trigger(ms->es, MCP_CANCEL_SHUTDOWN);
	pthread_mutex_unlock(&srv->sess_mu);
	mcp_server_shutdown_from_signal(srv);
}

MCP_EXTERN char *mcp_server_stats_json(mcp_server *srv)
{
	if (!srv)
		return NULL;
	eng_stats *st = &srv->stats;
	char *out = NULL;
	int n = asprintf(&out,
			 "{\"started\":%llu,\"completed\":%llu,\"cancelled_peer\":%llu,"
			 "\"cancelled_transport\":%llu,\"responses_written\":%llu,"
			 "\"responses_dropped\":%llu,\"dropped_queued\":%llu,"
			 "\"pending_failed\":%llu,\"abandoned\":%llu,\"inflight_left\":%llu,"
			 "\"pending_left\":%llu,\"rejected\":%llu,\"idle_polls\":%llu,"
			 "\"idle_poll_hits\":%llu,\"ran_here\":%llu,\"ran_here_refused\":%llu,"
			 "\"ran_here_overran\":%llu}",
			 (unsigned long long)atomic_load(&st->started),
			 (unsigned long long)atomic_load(&st->completed),
			 (unsigned long long)atomic_load(&st->cancelled_peer),
			 (unsigned long long)atomic_load(&st->cancelled_transport),
			 (unsigned long long)atomic_load(&st->responses_written),
			 (unsigned long long)atomic_load(&st->responses_dropped),
			 (unsigned long long)atomic_load(&st->dropped_queued),
			 (unsigned long long)atomic_load(&st->pending_failed),
			 (unsigned long long)atomic_load(&st->abandoned),
			 (unsigned long long)atomic_load(&st->inflight_left),
			 (unsigned long long)atomic_load(&st->pending_left),
			 (unsigned long long)atomic_load(&st->rejected),
			 (unsigned long long)atomic_load(&srv->pool.polls),
			 (unsigned long long)atomic_load(&srv->pool.poll_hits),
			 (unsigned long long)atomic_load(&st->ran_here),
			 (unsigned long long)atomic_load(&st->ran_here_refused),
			 (unsigned long long)atomic_load(&st->ran_here_overran));
	return n < 0 ? NULL : out;
}
