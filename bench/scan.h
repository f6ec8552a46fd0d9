/*
 * scan.h - what the benchmark programs share: a scanner of a JSON-RPC
 * message's top-level members that builds no tree (the load generator
 * reads every answer with it, the event-stream floor every request), and
 * the IPv4 HOST:PORT of the floors' command lines.
 *
 * Header-only: each program is one file plus this, built with no library.
 * The scanner trusts its input to be JSON (it finds members, it does not
 * validate); what it cannot follow ends the scan.
 */
#ifndef MCP_BENCH_SCAN_H
#define MCP_BENCH_SCAN_H

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s[i] is '"'; the index of the closing quote, or n. */
static inline size_t scan_string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i;
	}
	return n;
}

/* The index just past the JSON value that starts at s[i]. */
static inline size_t scan_value_end(const char *s, size_t n, size_t i)
{
	int depth = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (c == '"') {
			i = scan_string_end(s, n, i);
			if (i >= n)
				return n;
			if (depth == 0)
				return i + 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return i;
			if (--depth == 0)
				return i + 1;
		} else if (depth == 0 && (c == ',' || isspace((unsigned char)c))) {
			return i;
		}
	}
	return n;
}

static inline size_t scan_ws(const char *s, size_t n, size_t i)
{
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return i;
}

/* The members of a JSON-RPC message that decide what it is. */
struct msg {
	int has_id, id_is_num, has_method, has_result, has_error;
	long id;                /* when id_is_num */
	const char *id_raw;     /* the id exactly as written */
	size_t id_raw_len;
	const char *method;     /* without quotes */
	size_t method_len;
};

/* Fills `m` from the top-level members of the object in s[0..n); returns 0,
 * or -1 when s is not an object. */
static inline int msg_scan(const char *s, size_t n, struct msg *m)
{
	memset(m, 0, sizeof *m);
	size_t i = scan_ws(s, n, 0);
	if (i >= n || s[i] != '{')
		return -1;
	i++;
	for (;;) {
		i = scan_ws(s, n, i);
		if (i >= n)
			return -1;
		if (s[i] == '}')
			return 0;
		if (s[i] != '"')
			return -1;
		size_t k0 = i + 1, k1 = scan_string_end(s, n, i);
		if (k1 >= n)
			return -1;
		i = scan_ws(s, n, k1 + 1);
		if (i >= n || s[i] != ':')
			return -1;
		i = scan_ws(s, n, i + 1);
		size_t v0 = i, v1 = scan_value_end(s, n, i);
		size_t klen = k1 - k0;
		if (klen == 2 && memcmp(s + k0, "id", 2) == 0) {
			m->has_id = 1;
			m->id_raw = s + v0;
			m->id_raw_len = v1 - v0;
			if (v0 < n && (isdigit((unsigned char)s[v0]) || s[v0] == '-')) {
				m->id_is_num = 1;
				m->id = strtol(s + v0, NULL, 10);
			}
		} else if (klen == 6 && memcmp(s + k0, "method", 6) == 0 && v1 - v0 >= 2 &&
			   s[v0] == '"') {
			m->has_method = 1;
			m->method = s + v0 + 1;
			m->method_len = v1 - v0 - 2;
		} else if (klen == 6 && memcmp(s + k0, "result", 6) == 0) {
			m->has_result = 1;
		} else if (klen == 5 && memcmp(s + k0, "error", 5) == 0) {
			m->has_error = 1;
		}
		i = scan_ws(s, n, v1);
		if (i < n && s[i] == ',')
			i++;
	}
}

static inline int method_is(const struct msg *m, const char *name)
{
	return m->has_method && m->method_len == strlen(name) &&
	       memcmp(m->method, name, m->method_len) == 0;
}

/* "HOST:PORT" (IPv4, or localhost) into `sa`; 0, or -1 with a message on
 * stderr naming `prog`.  Port 0 asks for a free one. */
static inline int scan_ipv4_target(const char *prog, const char *arg, struct sockaddr_in *sa)
{
	const char *colon = strrchr(arg, ':');
	char host[64];
	if (!colon || (size_t)(colon - arg) >= sizeof host) {
		fprintf(stderr, "%s: HOST:PORT, not %s\n", prog, arg);
		return -1;
	}
	snprintf(host, sizeof host, "%.*s", (int)(colon - arg), arg);
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1", &sa->sin_addr) != 1) {
		fprintf(stderr, "%s: IPv4 HOST:PORT only\n", prog);
		return -1;
	}
	return 0;
}

#endif /* MCP_BENCH_SCAN_H */
