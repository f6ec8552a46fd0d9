/*
 * baseline.c - the floor of `make bench`: a single-threaded MCP echo server
 * with no engine.  It reads stdin in large chunks, parses each line with one
 * reused json-c tokener, answers initialize, ping, tools/list and
 * tools/call echo with the result shape mcp-everything produces, and writes
 * all the answers of one read with one write.
 *
 * No worker pool, no cancellation, no queue: whatever libmcp costs above
 * this program is the price of its engine.  It is a benchmark tool, not a
 * server to copy (it answers requests in order and blocks on its output).
 *
 * `baseline --pipeline` is the same server on two threads, the best a
 * json-c server can make of a second CPU: the main thread reads and
 * parses, a second thread answers and writes, and parsed lines cross
 * between them in groups of GROUP (one lock and at most one wake-up per
 * group, not per request; a whole read as one group would leave nothing
 * for the two threads to overlap).  It bounds what any threaded json-c engine can
 * reach on the machine; it is not a floor for libmcp to meet.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#define READ_CHUNK 65536
#define GROUP 16

struct buf {
	char *p;
	size_t len, cap;
};

static void oom(void)
{
	fputs("baseline: out of memory\n", stderr);
	exit(1);
}

static void buf_reserve(struct buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : READ_CHUNK;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			oom();
		b->p = p;
		b->cap = cap;
	}
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

/* ---- method handlers: a result, or NULL with *code and *msg set ---------- */

typedef json_object *(*method_fn)(json_object *params, int *code, const char **msg);

static json_object *m_initialize(json_object *params, int *code, const char **msg)
{
	json_object *want = NULL;
	const char *version = versions[0];
	json_object_object_get_ex(params, "protocolVersion", &want);
	for (size_t i = 0; want && i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(json_object_get_string(want), versions[i]) == 0)
			version = versions[i];
	json_object *r = json_object_new_object();
	json_object *caps = json_object_new_object();
	json_object *tools = json_object_new_object();
	json_object *info = json_object_new_object();
	json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(info, "name", json_object_new_string("baseline"));
	json_object_object_add(info, "version", json_object_new_string("0.1.0"));
	json_object_object_add(r, "protocolVersion", json_object_new_string(version));
	json_object_object_add(r, "capabilities", caps);
	json_object_object_add(r, "serverInfo", info);
	(void)code;
	(void)msg;
	return r;
}

static json_object *m_ping(json_object *params, int *code, const char **msg)
{
	(void)params;
	(void)code;
	(void)msg;
	return json_object_new_object();
}

static json_object *m_tools_list(json_object *params, int *code, const char **msg)
{
	(void)params;
	(void)code;
	(void)msg;
	json_object *r = json_object_new_object();
	json_object *list = json_object_new_array();
	json_object *echo = json_object_new_object();
	json_object_object_add(echo, "name", json_object_new_string("echo"));
	json_object_object_add(echo, "description", json_object_new_string("Returns its text."));
	json_object_object_add(echo, "inputSchema",
			       json_tokener_parse("{\"type\":\"object\",\"properties\":{\"text\":"
						  "{\"type\":\"string\"},\"pad_bytes\":{\"type\":"
						  "\"integer\",\"minimum\":0}},\"required\":[\"text\"]}"));
	json_object_array_add(list, echo);
	json_object_object_add(r, "tools", list);
	return r;
}

/* {"content":[{"type":"text","text":TEXT}]}, TEXT padded with pad_bytes 'x'. */
static json_object *m_tools_call(json_object *params, int *code, const char **msg)
{
	json_object *name = NULL, *args = NULL, *text = NULL, *pad = NULL;
	json_object_object_get_ex(params, "name", &name);
	json_object_object_get_ex(params, "arguments", &args);
	if (!name || strcmp(json_object_get_string(name), "echo") != 0) {
		*code = -32602;
		*msg = "Unknown tool";
		return NULL;
	}
	json_object_object_get_ex(args, "text", &text);
	json_object_object_get_ex(args, "pad_bytes", &pad);
	if (!json_object_is_type(text, json_type_string) ||
	    (pad && (!json_object_is_type(pad, json_type_int) || json_object_get_int64(pad) < 0 ||
		     json_object_get_int64(pad) > (64 << 20)))) {
		*code = -32602;
		*msg = "Invalid params";
		return NULL;
	}
	json_object *t;
	size_t n = (size_t)json_object_get_string_len(text);
	size_t extra = pad ? (size_t)json_object_get_int64(pad) : 0;
	if (extra) {
		char *s = malloc(n + extra);
		if (!s) {
			*code = -32603;
			*msg = "Out of memory";
			return NULL;
		}
		memcpy(s, json_object_get_string(text), n);
		memset(s + n, 'x', extra);
		t = json_object_new_string_len(s, (int)(n + extra));
		free(s);
	} else {
		t = json_object_new_string_len(json_object_get_string(text), (int)n);
	}
	json_object *item = json_object_new_object();
	json_object_object_add(item, "type", json_object_new_string("text"));
	json_object_object_add(item, "text", t);
	json_object *content = json_object_new_array();
	json_object_array_add(content, item);
	json_object *r = json_object_new_object();
	json_object_object_add(r, "content", content);
	return r;
}

static const struct {
	const char *name;
	method_fn fn;
} methods[] = {
	{ "initialize", m_initialize },
	{ "ping", m_ping },
	{ "tools/list", m_tools_list },
	{ "tools/call", m_tools_call },
};

/* ---- one line in, at most one line out -------------------------------------- */

static void add_message(struct buf *out, json_object *msg)
{
	size_t len;
	const char *s = json_object_to_json_string_length(
		msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	buf_add(out, s, len);
	buf_add(out, "\n", 1);
}

static void add_error(struct buf *out, json_object *id, int code, const char *text)
{
	json_object *m = json_object_new_object();
	json_object *e = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", id ? json_object_get(id) : NULL);
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(text));
	json_object_object_add(m, "error", e);
	add_message(out, m);
	json_object_put(m);
}

/* Parses one line: the message, or NULL after a parse error. */
static json_object *parse_line(json_tokener *tok, const char *line, size_t len, int *bad)
{
	json_tokener_reset(tok);
	json_object *v = json_tokener_parse_ex(tok, line, (int)len);
	*bad = json_tokener_get_error(tok) != json_tokener_success ||
	       json_tokener_get_parse_end(tok) != len;
	if (*bad) {
		json_object_put(v);
		v = NULL;
	}
	return v;
}

/* Answers one parsed line (bad: it did not parse) into `out`; releases v. */
static void answer(json_object *v, int bad, struct buf *out)
{
	if (bad) {
		add_error(out, NULL, -32700, "Parse error");
		return;
	}
	json_object *method = NULL, *id = NULL, *params = NULL;
	json_object_object_get_ex(v, "method", &method);
	int has_id = json_object_object_get_ex(v, "id", &id);
	json_object_object_get_ex(v, "params", &params);
	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_is_type(method, json_type_string)) {
		if (!json_object_object_get_ex(v, "result", NULL) &&
		    !json_object_object_get_ex(v, "error", NULL))
			add_error(out, NULL, -32600, "Invalid Request");
		json_object_put(v);
		return;
	}
	if (!has_id) { /* a notification: nothing to answer */
		json_object_put(v);
		return;
	}
	const char *name = json_object_get_string(method);
	method_fn fn = NULL;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(name, methods[i].name) == 0)
			fn = methods[i].fn;
	int code = -32601;
	const char *msg = "Method not found";
	json_object *result = fn ? fn(params, &code, &msg) : NULL;
	if (!result) {
		add_error(out, id, code, msg);
	} else {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
		json_object_object_add(m, "id", json_object_get(id));
		json_object_object_add(m, "result", result);
		add_message(out, m);
		json_object_put(m);
	}
	json_object_put(v);
}

static void handle_line(json_tokener *tok, const char *line, size_t len, struct buf *out)
{
	int bad;
	json_object *v = parse_line(tok, line, len, &bad);
	answer(v, bad, out);
}

static int write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(1, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- --pipeline: parse on this thread, answer on another ------------------- */

/* Up to GROUP lines, parsed: v[i] NULL with bad[i] set is a parse
 * error. */
struct batch {
	struct batch *next;
	size_t n, cap;
	json_object **v;
	unsigned char *bad;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *head, *tail;
	int waiting; /* the answerer sleeps on cv */
	int eof;     /* no batch comes after the queued ones */
	int failed;  /* the output is gone: stop reading */
} q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0 };

static void batch_add(struct batch *b, json_object *v, int bad)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		json_object **nv = realloc(b->v, cap * sizeof *nv);
		unsigned char *nb = nv ? realloc(b->bad, cap) : NULL;
		if (!nv || !nb)
			oom();
		b->v = nv;
		b->bad = nb;
		b->cap = cap;
	}
	b->v[b->n] = v;
	b->bad[b->n++] = (unsigned char)bad;
}

/* Queues `b` for the answerer; wakes it only if it sleeps.  Returns
 * whether the output is still there. */
static int batch_send(struct batch *b)
{
	pthread_mutex_lock(&q.mu);
	int ok = !q.failed;
	if (b) {
		if (q.tail)
			q.tail->next = b;
		else
			q.head = b;
		q.tail = b;
	}
	int wake = b && q.waiting;
	pthread_mutex_unlock(&q.mu);
	if (wake)
		pthread_cond_signal(&q.cv);
	return ok;
}

/* One complete line: answered into `out` here or, with `pipeline`, parsed
 * into *b, which goes to the answerer once it holds GROUP lines.  Returns
 * whether the output is still there. */
static int take_line(int pipeline, json_tokener *tok, const char *line, size_t len,
		     struct batch **b, struct buf *out)
{
	if (!pipeline) {
		handle_line(tok, line, len, out);
		return 1;
	}
	if (!*b && !(*b = calloc(1, sizeof **b)))
		oom();
	int bad;
	json_object *v = parse_line(tok, line, len, &bad);
	batch_add(*b, v, bad);
	if ((*b)->n < GROUP)
		return 1;
	struct batch *full = *b;
	*b = NULL;
	return batch_send(full);
}

/* The second thread: answers every queued batch, then writes what they
 * produced with one write. */
static void *answerer(void *arg)
{
	(void)arg;
	struct buf out = { 0 };
	int failed = 0;
	pthread_mutex_lock(&q.mu);
	for (;;) {
		while (!q.head && !q.eof) {
			q.waiting = 1;
			pthread_cond_wait(&q.cv, &q.mu);
			q.waiting = 0;
		}
		struct batch *b = q.head;
		q.head = q.tail = NULL;
		if (!b)
			break; /* eof and drained */
		pthread_mutex_unlock(&q.mu);
		while (b) {
			for (size_t i = 0; i < b->n; i++) {
				if (failed)
					json_object_put(b->v[i]);
				else
					answer(b->v[i], b->bad[i], &out);
			}
			struct batch *next = b->next;
			free(b->v);
			free(b->bad);
			free(b);
			b = next;
		}
		if (out.len && !failed && write_all(out.p, out.len))
			failed = 1;
		out.len = 0;
		pthread_mutex_lock(&q.mu);
		q.failed = failed;
	}
	pthread_mutex_unlock(&q.mu);
	free(out.p);
	return NULL;
}

/* ---- the read loop -------------------------------------------------------- */

int main(int argc, char **argv)
{
	int pipeline = 0;
	if (argc == 2 && strcmp(argv[1], "--pipeline") == 0) {
		pipeline = 1;
	} else if (argc != 1) {
		fputs("usage: baseline [--pipeline]\n", stderr);
		return 2;
	}
	json_tokener *tok = json_tokener_new_ex(128);
	struct buf in = { 0 }, out = { 0 };
	if (!tok)
		return 1;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	pthread_t second;
	if (pipeline && pthread_create(&second, NULL, answerer, NULL)) {
		fputs("baseline: cannot start the second thread\n", stderr);
		return 1;
	}
	size_t start = 0; /* first byte of the line being read */
	int ok = 1;        /* the output is still there */
	for (;;) {
		if (in.cap - in.len < READ_CHUNK) {
			/* Move the partial line to the front, then grow. */
			if (start)
				memmove(in.p, in.p + start, in.len - start);
			in.len -= start;
			start = 0;
			buf_reserve(&in, READ_CHUNK);
		}
		ssize_t r = read(0, in.p + in.len, in.cap - in.len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t scan = in.len;
		in.len += (size_t)r;
		struct batch *b = NULL;
		char *nl;
		while (ok && (nl = memchr(in.p + scan, '\n', in.len - scan)) != NULL) {
			size_t end = (size_t)(nl - in.p);
			if (end > start)
				ok = take_line(pipeline, tok, in.p + start, end - start, &b, &out);
			start = scan = end + 1;
		}
		/* What this read produced goes out (or to the answerer) now. */
		if (pipeline) {
			ok = batch_send(b) && ok;
		} else if (out.len) {
			ok = write_all(out.p, out.len) == 0;
			out.len = 0;
		}
		if (!ok)
			break;
	}
	if (ok && in.len > start) { /* a last line without its newline */
		struct batch *b = NULL;
		take_line(pipeline, tok, in.p + start, in.len - start, &b, &out);
		if (pipeline)
			batch_send(b);
		else
			write_all(out.p, out.len);
	}
	if (pipeline) {
		pthread_mutex_lock(&q.mu);
		q.eof = 1;
		pthread_mutex_unlock(&q.mu);
		pthread_cond_signal(&q.cv);
		pthread_join(second, NULL);
	}
	json_tokener_free(tok);
	free(in.p);
	free(out.p);
	return 0;
}
