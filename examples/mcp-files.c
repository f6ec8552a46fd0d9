/*
 * mcp-files.c - a read-only MCP server for one directory tree, over stdio.
 *
 *   mcp-files [--workers N] [--max-file-bytes N] [--hidden] [--skills DIR] ROOT
 *
 * What a client gets:
 *
 *  - resources: every regular file under ROOT found at start-up (at most
 *    MAX_FILES, at most MAX_DEPTH levels deep) as file:///abs/path, named by
 *    its relative path, with a MIME type guessed from the extension;
 *  - the template files://{name}, where name is any relative path with '/'
 *    written as %2F (files://src%2Fmain.c), also for files created later;
 *  - tools: search (a grep with progress and cancellation), stat and list;
 *  - the prompt summarize_file, which embeds a file in a user message;
 *  - completion of relative paths for the template and the prompt;
 *  - with --skills DIR, every Agent Skill under DIR (a directory holding a
 *    SKILL.md) through the skills extension (skills/list, skills/get, its
 *    files as skill:// resources, directory reads), read by the library as
 *    strictly as the rules below.
 *
 * Safety rules, applied to every access: paths are relative to ROOT, may not
 * contain "..", are resolved with realpath() and must stay under ROOT (a
 * symbolic link that leads out is refused), hidden names (a component
 * starting with '.') are not served unless --hidden, only regular files are
 * opened (with O_NONBLOCK | O_NOFOLLOW after an lstat, so a FIFO or a device
 * is never read), and a file larger than --max-file-bytes is refused.
 *
 * Handlers share only what main() set up before the server started (the
 * configuration and the start-up index), so they need no locks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mcp/mcp.h>

#define MAX_FILES 10000      /* files indexed at start-up or walked by search */
#define MAX_DEPTH 32         /* directory levels below ROOT */
#define MAX_LIST 1000        /* entries returned by list */
#define MAX_QUERY 1024       /* bytes of a search query */
#define SHOW_BYTES 240       /* bytes of a matching line shown */
#define PROGRESS_EVERY 20    /* files between progress notifications */
#define LOGGER "mcp-files"

static mcp_server *the_server;

/* ---- configuration and the start-up index -------------------------------- */

typedef struct fentry {
	char *rel;    /* relative path, '/'-separated, no leading '/' */
	int64_t size;
} fentry;

typedef struct flist {
	fentry *v;
	size_t n, cap;
	int truncated; /* MAX_FILES was reached */
} flist;

static struct {
	char *root;          /* realpath of ROOT */
	size_t root_len;
	int64_t max_bytes;   /* --max-file-bytes */
	int hidden;          /* --hidden: serve names starting with '.' */
	flist index;         /* the files found at start-up, sorted */
} cfg;

static void flist_free(flist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].rel);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int flist_add(flist *l, const char *rel, int64_t size)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		fentry *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(rel);
	if (!copy)
		return -1;
	l->v[l->n].rel = copy;
	l->v[l->n].size = size;
	l->n++;
	return 0;
}

static int fentry_cmp(const void *a, const void *b)
{
	return strcmp(((const fentry *)a)->rel, ((const fentry *)b)->rel);
}

/* ---- a growable string --------------------------------------------------- */

typedef struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n < sizeof small) {
		sb_add(b, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb_add(b, big, (size_t)n);
	free(big);
}

/* Logs a formatted message to the client (notifications/message). */
__attribute__((format(printf, 3, 4))) static void say(mcp_ctx *ctx, mcp_log_level level,
						       const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	mcp_ctx_log_text(ctx, level, LOGGER, msg);
}

/* ---- UTF-8 --------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t k;
	unsigned cp, min;
	if ((c & 0xE0) == 0xC0) {
		k = 1, cp = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		k = 2, cp = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		k = 3, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n <= k)
		return 0;
	for (size_t j = 1; j <= k; j++) {
		if ((s[j] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[j] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return k + 1;
}

/* Whether the bytes are UTF-8 text: valid sequences and no NUL. */
static int is_utf8_text(const char *buf, size_t n)
{
	const unsigned char *s = (const unsigned char *)buf;
	for (size_t i = 0; i < n;) {
		size_t k = s[i] ? utf8_seq(s + i, n - i) : 0;
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* Whether a name from the file system can travel in JSON as it is. */
static int utf8_name(const char *s)
{
	return is_utf8_text(s, strlen(s));
}

/* Appends at most `max` bytes of a line, replacing invalid UTF-8 with '?'
 * and marking a cut with an ellipsis. */
static void sb_add_line(sbuf *b, const char *line, size_t n, size_t max)
{
	const unsigned char *s = (const unsigned char *)line;
	size_t i = 0, shown = 0;
	while (i < n) {
		size_t k = s[i] ? utf8_seq(s + i, n - i) : 0;
		size_t w = k ? k : 1;
		if (shown + w > max) {
			sb_puts(b, "\xE2\x80\xA6"); /* U+2026 */
			return;
		}
		if (k)
			sb_add(b, line + i, k);
		else
			sb_add(b, "?", 1);
		shown += w;
		i += w;
	}
}

/* ---- percent-encoding ---------------------------------------------------- */

static int is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encodes every byte except the unreserved ones and those in `keep`.
 * Returns a malloc'd string or NULL. */
static char *pct_encode(const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	sbuf b = { 0 };
	sb_add(&b, "", 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (is_unreserved(*p) || strchr(keep, *p)) {
			sb_add(&b, (const char *)p, 1);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			sb_add(&b, e, 3);
		}
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes %XX escapes.  Strict: a malformed escape or %00 gives NULL with
 * *bad set.  Lenient: such escapes stay as they are. */
static char *pct_decode(const char *s, int strict, int *bad)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1), *o = out;
	*bad = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = hexval(s[i + 1]); /* s[i + 1] may be the NUL */
			int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
			if (hi >= 0 && lo >= 0 && (hi | lo)) {
				*o++ = (char)(hi * 16 + lo);
				i += 2;
				continue;
			}
			if (strict) {
				free(out);
				*bad = 1;
				return NULL;
			}
		}
		*o++ = s[i];
	}
	*o = 0;
	return out;
}

/* ---- paths --------------------------------------------------------------- */

typedef enum ferr {
	FE_OK = 0,
	FE_ABSOLUTE, /* an absolute path outside ROOT */
	FE_DOTDOT,   /* a ".." component */
	FE_HIDDEN,   /* a hidden component without --hidden */
	FE_NOTFOUND,
	FE_ESCAPE,   /* resolves outside ROOT */
	FE_DENIED,
	FE_NOTREG,   /* not a regular file */
	FE_NOTDIR,
	FE_TOOBIG,
	FE_LOOP,
	FE_SYS,
	FE_NOMEM
} ferr;

static const char *ferr_text(ferr e)
{
	switch (e) {
	case FE_OK: return "ok";
	case FE_ABSOLUTE:
		return "absolute paths are not accepted (give a path relative to the root)";
	case FE_DOTDOT: return "paths may not contain '..'";
	case FE_HIDDEN: return "hidden files are not served (start mcp-files with --hidden)";
	case FE_NOTFOUND: return "no such file or directory";
	case FE_ESCAPE: return "it resolves to a place outside the root";
	case FE_DENIED: return "permission denied";
	case FE_NOTREG: return "not a regular file";
	case FE_NOTDIR: return "not a directory";
	case FE_TOOBIG: return "the file is larger than --max-file-bytes";
	case FE_LOOP: return "too many levels of symbolic links";
	case FE_SYS: return "the file could not be read";
	case FE_NOMEM: return "out of memory";
	}
	return "error";
}

/* The MCP error a resource read or prompt answers for a path problem. */
static int ferr_to_mcp(ferr e, int missing_is_enoent)
{
	switch (e) {
	case FE_OK: return MCP_OK;
	case FE_HIDDEN:
	case FE_NOTFOUND: return missing_is_enoent ? MCP_ENOENT : MCP_EINVAL;
	case FE_ABSOLUTE:
	case FE_DOTDOT:
	case FE_ESCAPE:
	case FE_NOTREG:
	case FE_NOTDIR:
	case FE_LOOP: return MCP_EINVAL;
	case FE_TOOBIG: return MCP_EBUSY;
	case FE_NOMEM: return MCP_ENOMEM;
	case FE_DENIED:
	case FE_SYS: return MCP_ESYS;
	}
	return MCP_ESYS;
}

static ferr errno_ferr(int e)
{
	switch (e) {
	case ENOENT: return FE_NOTFOUND;
	case ENOTDIR: return FE_NOTDIR;
	case EACCES:
	case EPERM: return FE_DENIED;
	case ELOOP: return FE_LOOP;
	case ENOMEM: return FE_NOMEM;
	default: return FE_SYS;
	}
}

/* The part of an absolute real path below ROOT ("" for ROOT itself), or NULL
 * when it is not under ROOT. */
static const char *rel_of(const char *real)
{
	if (cfg.root_len == 1)
		return real[0] == '/' ? real + 1 : NULL;
	if (strncmp(real, cfg.root, cfg.root_len) != 0)
		return NULL;
	if (real[cfg.root_len] == 0)
		return real + cfg.root_len;
	if (real[cfg.root_len] == '/')
		return real + cfg.root_len + 1;
	return NULL;
}

static int rel_is_hidden(const char *rel)
{
	for (const char *p = rel; *p;) {
		if (*p == '.')
			return 1;
		const char *slash = strchr(p, '/');
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

/* ROOT joined with a relative path (malloc'd). */
static char *join_root(const char *rel)
{
	sbuf b = { 0 };
	sb_puts(&b, cfg.root);
	if (*rel) {
		if (cfg.root_len > 1)
			sb_add(&b, "/", 1);
		sb_puts(&b, rel);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* file:// URI of a relative path (malloc'd). */
static char *file_uri(const char *rel)
{
	char *abs = join_root(rel);
	char *enc = abs ? pct_encode(abs, "/!$&'()*+,;=:@") : NULL;
	free(abs);
	if (!enc)
		return NULL;
	char *uri = malloc(strlen(enc) + 8);
	if (uri)
		sprintf(uri, "file://%s", enc);
	free(enc);
	return uri;
}

/* Checks a path a client gave and rewrites it to canonical relative form
 * (no empty or "." components; "" is ROOT).  An absolute path is accepted
 * only with allow_abs and when it names a place under ROOT. */
static ferr normalize_rel(const char *in, int allow_abs, char **out)
{
	*out = NULL;
	if (in[0] == '/') {
		const char *r = allow_abs ? rel_of(in) : NULL;
		if (!r)
			return FE_ABSOLUTE;
		in = r;
	}
	sbuf b = { 0 };
	sb_add(&b, "", 0);
	ferr e = FE_OK;
	const char *p = in;
	while (*p && e == FE_OK) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			e = FE_DOTDOT;
		} else if (n == 0 || (n == 1 && p[0] == '.')) {
			/* skip */
		} else if (p[0] == '.' && !cfg.hidden) {
			e = FE_HIDDEN;
		} else {
			if (b.n)
				sb_add(&b, "/", 1);
			sb_add(&b, p, n);
		}
		p += n;
		if (*p == '/')
			p++;
	}
	if (e == FE_OK && b.oom)
		e = FE_NOMEM;
	if (e != FE_OK) {
		free(b.p);
		return e;
	}
	*out = b.p;
	return FE_OK;
}

/* Resolves a normalized relative path with realpath() and checks that the
 * result is under ROOT and not hidden.  *real (malloc'd) on FE_OK. */
static ferr resolve(const char *rel, char **real)
{
	*real = NULL;
	char *abs = join_root(rel);
	if (!abs)
		return FE_NOMEM;
	char *r = realpath(abs, NULL);
	int e = errno;
	free(abs);
	if (!r)
		return errno_ferr(e);
	const char *below = rel_of(r);
	if (!below) {
		free(r);
		return FE_ESCAPE;
	}
	if (!cfg.hidden && rel_is_hidden(below)) {
		free(r);
		return FE_HIDDEN;
	}
	*real = r;
	return FE_OK;
}

/* Reads a regular file (resolved path) into a NUL-terminated buffer.  Never
 * opens anything but a regular file: lstat first, then open without
 * following links and without blocking, and check the descriptor is the
 * same file.  *size receives the file's size also for FE_TOOBIG. */
static ferr read_regular(const char *real, char **buf, size_t *len, int64_t *size)
{
	struct stat st, fst;
	*buf = NULL;
	*len = 0;
	*size = 0;
	if (lstat(real, &st) != 0)
		return errno_ferr(errno);
	if (!S_ISREG(st.st_mode))
		return FE_NOTREG;
	*size = (int64_t)st.st_size;
	if ((int64_t)st.st_size > cfg.max_bytes)
		return FE_TOOBIG;
	int fd = open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno_ferr(errno);
	if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev ||
	    fst.st_ino != st.st_ino) {
		close(fd);
		return FE_NOTREG; /* replaced between lstat and open */
	}
	/* Read at most max_bytes + 1: the file may have grown since. */
	size_t cap = (size_t)fst.st_size + 1, n = 0;
	if ((int64_t)cap > cfg.max_bytes + 1)
		cap = (size_t)cfg.max_bytes + 1;
	char *p = malloc(cap + 1);
	if (!p) {
		close(fd);
		return FE_NOMEM;
	}
	ferr e = FE_OK;
	for (;;) {
		if (n == cap) {
			if ((int64_t)n > cfg.max_bytes) {
				*size = (int64_t)n;
				e = FE_TOOBIG;
				break;
			}
			size_t ncap = cap * 2;
			if (ncap > (size_t)cfg.max_bytes + 1)
				ncap = (size_t)cfg.max_bytes + 1;
			char *q = realloc(p, ncap + 1);
			if (!q) {
				e = FE_NOMEM;
				break;
			}
			p = q;
			cap = ncap;
		}
		ssize_t r = read(fd, p + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno_ferr(errno);
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (e == FE_OK && (int64_t)n > cfg.max_bytes) {
		*size = (int64_t)n;
		e = FE_TOOBIG;
	}
	if (e != FE_OK) {
		free(p);
		return e;
	}
	p[n] = 0;
	*buf = p;
	*len = n;
	*size = (int64_t)n;
	return FE_OK;
}

/* ---- MIME types ---------------------------------------------------------- */

typedef struct mime_map {
	const char *ext;
	const char *type;
	int binary; /* always sent as a blob */
} mime_map;

static const mime_map mimes[] = {
	{ "txt", "text/plain", 0 },       { "text", "text/plain", 0 },
	{ "log", "text/plain", 0 },       { "md", "text/markdown", 0 },
	{ "markdown", "text/markdown", 0 }, { "rst", "text/x-rst", 0 },
	{ "json", "application/json", 0 }, { "jsonl", "application/jsonl", 0 },
	{ "c", "text/x-c", 0 },           { "h", "text/x-c", 0 },
	{ "cc", "text/x-c++", 0 },        { "cpp", "text/x-c++", 0 },
	{ "cxx", "text/x-c++", 0 },       { "hpp", "text/x-c++", 0 },
	{ "hh", "text/x-c++", 0 },        { "py", "text/x-python", 0 },
	{ "rs", "text/x-rust", 0 },       { "go", "text/x-go", 0 },
	{ "java", "text/x-java", 0 },     { "rb", "text/x-ruby", 0 },
	{ "pl", "text/x-perl", 0 },       { "sh", "text/x-shellscript", 0 },
	{ "js", "text/javascript", 0 },   { "mjs", "text/javascript", 0 },
	{ "ts", "text/x-typescript", 0 }, { "html", "text/html", 0 },
	{ "htm", "text/html", 0 },        { "css", "text/css", 0 },
	{ "xml", "application/xml", 0 },  { "yaml", "application/yaml", 0 },
	{ "yml", "application/yaml", 0 }, { "toml", "application/toml", 0 },
	{ "csv", "text/csv", 0 },         { "tsv", "text/tab-separated-values", 0 },
	{ "ini", "text/plain", 0 },       { "cfg", "text/plain", 0 },
	{ "conf", "text/plain", 0 },      { "diff", "text/x-diff", 0 },
	{ "patch", "text/x-diff", 0 },    { "am", "text/plain", 0 },
	{ "ac", "text/plain", 0 },        { "m4", "text/plain", 0 },
	{ "mk", "text/x-makefile", 0 },   { "sql", "application/sql", 0 },
	{ "svg", "image/svg+xml", 0 },    { "tex", "text/x-tex", 0 },
	{ "png", "image/png", 1 },        { "jpg", "image/jpeg", 1 },
	{ "jpeg", "image/jpeg", 1 },      { "gif", "image/gif", 1 },
	{ "webp", "image/webp", 1 },      { "bmp", "image/bmp", 1 },
	{ "ico", "image/vnd.microsoft.icon", 1 },
	{ "pdf", "application/pdf", 1 },  { "zip", "application/zip", 1 },
	{ "gz", "application/gzip", 1 },  { "tgz", "application/gzip", 1 },
	{ "xz", "application/x-xz", 1 },  { "bz2", "application/x-bzip2", 1 },
	{ "zst", "application/zstd", 1 }, { "tar", "application/x-tar", 1 },
	{ "wasm", "application/wasm", 1 }, { "wav", "audio/wav", 1 },
	{ "mp3", "audio/mpeg", 1 },       { "ogg", "audio/ogg", 1 },
	{ "flac", "audio/flac", 1 },      { "mp4", "video/mp4", 1 },
	{ "webm", "video/webm", 1 },      { "o", "application/octet-stream", 1 },
	{ "so", "application/octet-stream", 1 }, { "a", "application/octet-stream", 1 },
	{ "bin", "application/octet-stream", 1 },
};

/* Extensionless names that are plain text by convention. */
static const char *const text_names[] = {
	"Makefile", "GNUmakefile", "README", "LICENSE", "COPYING", "AUTHORS", "NEWS",
	"ChangeLog", "INSTALL", "TODO", "THANKS", "Dockerfile", "Containerfile",
};

/* The MIME type guessed from a path's name, or NULL when unknown. */
static const mime_map *guess_mime(const char *rel)
{
	static const mime_map plain = { "", "text/plain", 0 };
	const char *base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	const char *dot = strrchr(base, '.');
	if (dot && dot != base) {
		for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++)
			if (strcasecmp(dot + 1, mimes[i].ext) == 0)
				return &mimes[i];
		return NULL;
	}
	for (size_t i = 0; i < sizeof text_names / sizeof text_names[0]; i++)
		if (strcmp(base, text_names[i]) == 0)
			return &plain;
	return NULL;
}

/* ---- walking the tree ---------------------------------------------------- */

typedef struct walker {
	flist *out;
	mcp_ctx *ctx;       /* checked for cancellation; NULL at start-up */
	unsigned ticks;
	int stop;           /* cancelled or out of memory */
	int oom;
} walker;

static void walk_add(walker *w, const char *rel, int64_t size)
{
	if (w->out->n >= MAX_FILES) {
		w->out->truncated = 1;
		w->stop = 1;
		return;
	}
	if (flist_add(w->out, rel, size)) {
		w->oom = w->stop = 1;
	}
}

/* Walks the directory open at `fd` (taken), whose path below ROOT is `rel`. */
static void walk_dir(walker *w, int fd, const char *rel, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while (!w->stop && (de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if ((name[0] == '.' && !cfg.hidden) || !utf8_name(name))
			continue; /* hidden, or a name JSON cannot carry */
		if (w->ctx && (++w->ticks & 255) == 0 && mcp_ctx_cancelled(w->ctx)) {
			w->stop = 1;
			break;
		}
		sbuf path = { 0 };
		if (*rel) {
			sb_puts(&path, rel);
			sb_add(&path, "/", 1);
		}
		sb_puts(&path, name);
		if (path.oom) {
			w->oom = w->stop = 1;
			free(path.p);
			break;
		}
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			free(path.p);
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			walk_add(w, path.p, (int64_t)st.st_size);
		} else if (S_ISDIR(st.st_mode)) {
			if (depth < MAX_DEPTH) {
				int sub = openat(dirfd(d), name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					walk_dir(w, sub, path.p, depth + 1);
			}
		} else if (S_ISLNK(st.st_mode)) {
			/* A link is listed when it leads to a regular file under
			 * ROOT; links to directories are not followed (no cycles). */
			char *real = NULL;
			struct stat tst;
			if (resolve(path.p, &real) == FE_OK && stat(real, &tst) == 0 &&
			    S_ISREG(tst.st_mode))
				walk_add(w, path.p, (int64_t)tst.st_size);
			free(real);
		}
		/* FIFOs, sockets and devices are skipped. */
		free(path.p);
	}
	closedir(d);
}

/* Collects the regular files under the resolved directory `real`, sorted.
 * Returns MCP_OK, MCP_ECANCELED or MCP_ENOMEM. */
static int walk_tree(mcp_ctx *ctx, const char *real, flist *out)
{
	walker w = { .out = out, .ctx = ctx };
	const char *rel = rel_of(real);
	int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && rel)
		walk_dir(&w, fd, rel, 0);
	else if (fd >= 0)
		close(fd);
	if (w.oom)
		return MCP_ENOMEM;
	if (ctx && mcp_ctx_cancelled(ctx))
		return MCP_ECANCELED;
	qsort(out->v, out->n, sizeof *out->v, fentry_cmp);
	return MCP_OK;
}

/* ---- resources ----------------------------------------------------------- */

/* Reads the file at a normalized relative path into `out` under `uri`. */
static int serve_file(mcp_ctx *ctx, const char *rel, const char *uri, mcp_contents *out)
{
	char *real = NULL, *buf = NULL;
	size_t len;
	int64_t size;
	ferr e = resolve(rel, &real);
	if (e == FE_OK)
		e = read_regular(real, &buf, &len, &size);
	free(real);
	if (e == FE_TOOBIG) {
		say(ctx, MCP_LOG_ERROR,
		    "%s: refused: %lld bytes is over the --max-file-bytes limit of %lld", rel,
		    (long long)size, (long long)cfg.max_bytes);
		return MCP_EBUSY;
	}
	if (e != FE_OK) {
		if (e != FE_NOTFOUND && e != FE_HIDDEN)
			say(ctx, MCP_LOG_ERROR, "%s: %s", *rel ? rel : ".", ferr_text(e));
		return ferr_to_mcp(e, 1);
	}
	const mime_map *m = guess_mime(rel);
	int rc;
	if ((!m || !m->binary) && is_utf8_text(buf, len))
		rc = mcp_contents_add_text(out, uri, m ? m->type : "text/plain", buf);
	else
		rc = mcp_contents_add_blob(out, uri, m ? m->type : "application/octet-stream", buf,
					   len);
	free(buf);
	return rc;
}

static int read_static(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
		       void *user)
{
	(void)vars;
	const fentry *f = user;
	return serve_file(ctx, f->rel, uri, out);
}

static int read_template(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)user;
	json_object *v = NULL;
	json_object_object_get_ex(vars, "name", &v);
	const char *name = json_object_get_string(v);
	if (!name)
		return MCP_EINVAL;
	int bad;
	char *decoded = pct_decode(name, 1, &bad);
	if (!decoded) {
		if (bad)
			say(ctx, MCP_LOG_ERROR, "%s: malformed percent-encoding in the name", uri);
		return bad ? MCP_EINVAL : MCP_ENOMEM;
	}
	if (!utf8_name(decoded)) {
		say(ctx, MCP_LOG_ERROR, "%s: the name is not UTF-8", uri);
		free(decoded);
		return MCP_EINVAL;
	}
	char *rel = NULL;
	ferr e = normalize_rel(decoded, 0, &rel);
	free(decoded);
	if (e == FE_OK && !*rel)
		e = FE_NOTREG; /* the root directory itself */
	if (e != FE_OK) {
		if (e != FE_HIDDEN)
			say(ctx, MCP_LOG_ERROR, "%s: %s", uri, ferr_text(e));
		free(rel);
		return ferr_to_mcp(e, 1);
	}
	int rc = serve_file(ctx, rel, uri, out);
	free(rel);
	return rc;
}

/* Offers the indexed paths that start with `prefix`; `encode` writes them
 * in the template's form ('/' as %2F). */
static int complete_paths(const char *prefix, int encode, mcp_completion *out)
{
	size_t plen = strlen(prefix);
	int64_t total = 0;
	for (size_t i = 0; i < cfg.index.n; i++) {
		const char *rel = cfg.index.v[i].rel;
		if (strncmp(rel, prefix, plen) != 0)
			continue;
		if (total++ >= 100)
			continue; /* only counted: the library sends at most 100 */
		char *enc = encode ? pct_encode(rel, "!$&'()*+,;=:@") : NULL;
		if (encode && !enc)
			return MCP_ENOMEM;
		int rc = mcp_completion_add(out, encode ? enc : rel);
		free(enc);
		if (rc != MCP_OK)
			return rc;
	}
	mcp_completion_set_total(out, total);
	return MCP_OK;
}

static int complete_template(mcp_ctx *ctx, const char *argument, const char *value,
			     json_object *context, mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	if (strcmp(argument, "name") != 0)
		return MCP_OK;
	int bad;
	char *prefix = pct_decode(value, 0, &bad);
	if (!prefix)
		return MCP_ENOMEM;
	int rc = complete_paths(prefix, 1, out);
	free(prefix);
	return rc;
}

/* ---- tool helpers -------------------------------------------------------- */

/* The library checks each tool's arguments against its input_schema before
 * the handler runs (types, required members, ranges), and answers a
 * mismatch itself with a tool error the model reads.  So the handlers read
 * their arguments with mcp_args_* and check only what a schema cannot say:
 * where a path leads. */

/* Normalizes and resolves a tool's path argument.  On failure the result
 * already carries a readable isError message and *real is NULL. */
static int tool_resolve(const char *tool, const char *path, char **rel, char **real,
			mcp_result *out)
{
	*rel = *real = NULL;
	ferr e = normalize_rel(path, 1, rel);
	if (e == FE_OK)
		e = resolve(*rel, real);
	if (e == FE_NOMEM)
		return MCP_ENOMEM;
	if (e != FE_OK) {
		free(*rel);
		*rel = NULL;
		return mcp_result_tool_error(out, "%s: cannot use '%s': %s", tool, path, ferr_text(e));
	}
	return MCP_OK;
}

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "directory";
	if (S_ISLNK(m))
		return "symlink";
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	return "other";
}

static void iso8601(time_t t, char *buf, size_t n)
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, n, "%lld", (long long)t);
}

static json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

/* Finds `needle` (nn > 0 bytes, already lower-case when icase) in a line. */
static int line_has(const char *hay, size_t hn, const char *needle, size_t nn, int icase)
{
	if (!icase)
		return memmem(hay, hn, needle, nn) != NULL;
	for (size_t i = 0; i + nn <= hn; i++) {
		size_t j = 0;
		while (j < nn) {
			char c = hay[i + j];
			if (c >= 'A' && c <= 'Z')
				c = (char)(c - 'A' + 'a');
			if (c != needle[j])
				break;
			j++;
		}
		if (j == nn)
			return 1;
	}
	return 0;
}

/* ---- tools --------------------------------------------------------------- */

/* The state of one search. */
typedef struct grep {
	char needle[MAX_QUERY + 1]; /* lower-cased when icase */
	size_t qn;
	int icase;
	int64_t max_results, nmatch, searched, skipped;
	int truncated;          /* max_results reached */
	sbuf text;              /* "path:line: text" lines */
	json_object *matches;   /* [{path, line, text}] */
} grep;

/* Records one matching line. */
static int grep_hit(grep *g, const char *frel, int64_t lineno, const char *p, size_t n)
{
	sbuf line = { 0 };
	sb_add(&line, "", 0);
	sb_add_line(&line, p, n, SHOW_BYTES);
	json_object *m = json_object_new_object();
	if (line.oom || !m) {
		json_object_put(m);
		free(line.p);
		return MCP_ENOMEM;
	}
	sb_printf(&g->text, "%s:%lld: %s\n", frel, (long long)lineno, line.p);
	json_object_object_add(m, "path", jstr(frel));
	json_object_object_add(m, "line", json_object_new_int64(lineno));
	json_object_object_add(m, "text", jstr(line.p));
	json_object_array_add(g->matches, m);
	free(line.p);
	g->nmatch++;
	return MCP_OK;
}

/* Greps one file.  MCP_OK (also when the file was skipped), MCP_ECANCELED or
 * MCP_ENOMEM. */
static int grep_file(grep *g, mcp_ctx *ctx, const char *frel)
{
	char *freal = NULL, *buf = NULL;
	size_t len = 0;
	int64_t size;
	ferr e = resolve(frel, &freal);
	if (e == FE_OK)
		e = read_regular(freal, &buf, &len, &size);
	free(freal);
	if (e == FE_NOMEM)
		return MCP_ENOMEM;
	if (e != FE_OK || memchr(buf, 0, len)) {
		g->skipped++; /* unreadable, too large, gone, or binary */
		free(buf);
		return MCP_OK;
	}
	g->searched++;
	int rc = MCP_OK;
	const char *p = buf, *end = buf + len;
	for (int64_t lineno = 1; p < end && rc == MCP_OK; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t shown = ln && p[ln - 1] == '\r' ? ln - 1 : ln;
		if (line_has(p, shown, g->needle, g->qn, g->icase)) {
			if (g->nmatch >= g->max_results) {
				g->truncated = 1;
				break;
			}
			rc = grep_hit(g, frel, lineno, p, shown);
		}
		p += ln + 1;
		if ((lineno & 4095) == 0 && mcp_ctx_cancelled(ctx))
			rc = MCP_ECANCELED;
	}
	free(buf);
	return rc;
}

/* Reads search's checked arguments into `g`: 0, or 1 when `out` already
 * holds the answer (a tool error: the query is longer in bytes than the
 * needle, while the schema counts characters), or MCP_ENOMEM. */
static int search_args(json_object *args, grep *g, const char **query, const char **path,
		       mcp_result *out)
{
	int case_sensitive = 0;
	*query = "";
	*path = "";
	g->max_results = 100;
	mcp_args_string(args, "query", query);
	mcp_args_string(args, "path", path);
	mcp_args_int64(args, "max_results", &g->max_results);
	mcp_args_bool(args, "case_sensitive", &case_sensitive);
	g->icase = !case_sensitive;
	g->qn = strlen(*query);
	if (g->qn == 0 || g->qn > MAX_QUERY) {
		int rc = mcp_result_tool_error(out, "search: the query must be 1 to %d bytes of "
						    "UTF-8",
					       MAX_QUERY);
		return rc == MCP_OK ? 1 : rc;
	}
	memcpy(g->needle, *query, g->qn + 1);
	for (size_t i = 0; g->icase && i < g->qn; i++)
		if (g->needle[i] >= 'A' && g->needle[i] <= 'Z')
			g->needle[i] = (char)(g->needle[i] - 'A' + 'a');
	return 0;
}

static int tool_search(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	grep *g = calloc(1, sizeof *g);
	if (!g)
		return MCP_ENOMEM;
	const char *query, *path;
	char *rel = NULL, *real = NULL;
	flist files = { 0 };
	int rc;
	rc = search_args(args, g, &query, &path, out);
	if (rc != 0) {
		rc = rc > 0 ? MCP_OK : rc;
		goto done;
	}
	rc = tool_resolve("search", path, &rel, &real, out);
	if (rc != MCP_OK || !real)
		goto done;

	/* The files to search: the one named, or those under the directory. */
	struct stat st;
	if (stat(real, &st) != 0) {
		rc = mcp_result_tool_error(out, "search: cannot use '%s': %s", path,
				ferr_text(errno_ferr(errno)));
		goto done;
	}
	if (S_ISREG(st.st_mode))
		rc = flist_add(&files, rel, (int64_t)st.st_size) ? MCP_ENOMEM : MCP_OK;
	else if (S_ISDIR(st.st_mode))
		rc = walk_tree(ctx, real, &files);
	else
		rc = mcp_result_tool_error(out, "search: cannot use '%s': %s", path, ferr_text(FE_NOTREG));
	if (rc != MCP_OK || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		goto done;

	g->matches = json_object_new_array();
	rc = g->matches ? MCP_OK : MCP_ENOMEM;
	for (size_t i = 0; rc == MCP_OK && i < files.n && !g->truncated; i++) {
		if (mcp_ctx_cancelled(ctx)) {
			rc = MCP_ECANCELED;
			break;
		}
		rc = grep_file(g, ctx, files.v[i].rel);
		size_t done = i + 1;
		if (rc == MCP_OK && (done % PROGRESS_EVERY == 0 || done == files.n)) {
			char msg[64];
			snprintf(msg, sizeof msg, "searched %zu of %zu files", done, files.n);
			if (mcp_ctx_progress(ctx, (double)done, (double)files.n, msg) ==
			    MCP_ECANCELED)
				rc = MCP_ECANCELED;
		}
	}
	if (rc != MCP_OK)
		goto done;

	if (g->nmatch == 0)
		sb_printf(&g->text, "No matches for \"%s\" in %lld files.\n", query,
			  (long long)g->searched);
	if (g->truncated)
		sb_printf(&g->text, "(stopped after %lld matches; raise max_results or narrow "
				    "the path for more)\n", (long long)g->max_results);
	if (files.truncated)
		sb_printf(&g->text, "(only the first %d files of the tree were searched)\n",
			  MAX_FILES);
	json_object *sc = json_object_new_object();
	if (g->text.oom || !sc) {
		json_object_put(sc);
		rc = MCP_ENOMEM;
		goto done;
	}
	json_object_object_add(sc, "matches", g->matches);
	g->matches = NULL;
	json_object_object_add(sc, "files_searched", json_object_new_int64(g->searched));
	json_object_object_add(sc, "files_skipped", json_object_new_int64(g->skipped));
	json_object_object_add(sc, "truncated",
			       json_object_new_boolean(g->truncated || files.truncated));
	rc = mcp_result_add_text(out, g->text.p);
	if (rc == MCP_OK)
		rc = mcp_result_set_structured(out, sc);
	else
		json_object_put(sc);
done:
	json_object_put(g->matches);
	free(g->text.p);
	free(g);
	flist_free(&files);
	free(rel);
	free(real);
	return rc;
}

static int tool_stat(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *path = "";
	mcp_args_string(args, "path", &path); /* required by the schema */
	char *rel = NULL, *real = NULL;
	int rc = tool_resolve("stat", path, &rel, &real, out);
	if (rc != MCP_OK || !real)
		return rc;
	struct stat st, lst;
	char *named = join_root(rel);
	int is_link = named && lstat(named, &lst) == 0 && S_ISLNK(lst.st_mode);
	free(named);
	if (stat(real, &st) != 0) {
		rc = mcp_result_tool_error(out, "stat: cannot use '%s': %s", path,
				ferr_text(errno_ferr(errno)));
		goto done;
	}
	char mtime[64];
	iso8601(st.st_mtim.tv_sec, mtime, sizeof mtime);
	const char *target = utf8_name(real) ? rel_of(real) : "(a name that is not UTF-8)";
	const char *shown = *rel ? rel : ".";
	sbuf t = { 0 };
	sb_printf(&t, "path: %s\ntype: %s\nsize: %lld bytes\nmtime: %s\nmode: %04o\n", shown,
		  type_name(st.st_mode), (long long)st.st_size, mtime,
		  (unsigned)(st.st_mode & 07777));
	if (is_link)
		sb_printf(&t, "symlink to: %s\n", *target ? target : ".");
	const mime_map *m = S_ISREG(st.st_mode) ? guess_mime(rel) : NULL;
	if (m)
		sb_printf(&t, "mime type: %s\n", m->type);
	json_object *sc = json_object_new_object();
	if (t.oom || !sc) {
		json_object_put(sc);
		rc = MCP_ENOMEM;
	} else {
		char mode[8];
		snprintf(mode, sizeof mode, "%04o", (unsigned)(st.st_mode & 07777));
		json_object_object_add(sc, "path", jstr(shown));
		json_object_object_add(sc, "type", jstr(type_name(st.st_mode)));
		json_object_object_add(sc, "size", json_object_new_int64((int64_t)st.st_size));
		json_object_object_add(sc, "mtime", jstr(mtime));
		json_object_object_add(sc, "mode", jstr(mode));
		if (is_link)
			json_object_object_add(sc, "symlink_target", jstr(*target ? target : "."));
		if (m)
			json_object_object_add(sc, "mime_type", jstr(m->type));
		rc = mcp_result_add_text(out, t.p);
		if (rc == MCP_OK)
			rc = mcp_result_set_structured(out, sc);
		else
			json_object_put(sc);
	}
	free(t.p);
done:
	free(rel);
	free(real);
	return rc;
}

typedef struct dent {
	char *name;
	const char *type;
	int64_t size;
	char *target; /* symlinks: relative target, or NULL when outside ROOT */
} dent;

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

static int tool_list(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	const char *path = "";
	mcp_args_string(args, "path", &path);
	char *rel = NULL, *real = NULL;
	int rc = tool_resolve("list", path, &rel, &real, out);
	if (rc != MCP_OK || !real)
		return rc;
	dent *v = NULL;
	size_t n = 0, cap = 0;
	int truncated = 0;
	int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rc = mcp_result_tool_error(out, "list: cannot use '%s': %s", path,
				ferr_text(errno_ferr(e)));
		goto done;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		    (name[0] == '.' && !cfg.hidden) || !utf8_name(name))
			continue;
		if (n == MAX_LIST) {
			truncated = 1;
			break;
		}
		if ((n & 255) == 0 && mcp_ctx_cancelled(ctx)) {
			rc = MCP_ECANCELED;
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			dent *nv = realloc(v, ncap * sizeof *nv);
			if (!nv) {
				rc = MCP_ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		dent *e = &v[n];
		memset(e, 0, sizeof *e);
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!(e->name = strdup(name))) {
			rc = MCP_ENOMEM;
			break;
		}
		n++;
		e->type = type_name(st.st_mode);
		e->size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
		if (S_ISLNK(st.st_mode)) {
			sbuf lp = { 0 };
			if (*rel) {
				sb_puts(&lp, rel);
				sb_add(&lp, "/", 1);
			}
			sb_puts(&lp, name);
			char *treal = NULL;
			if (!lp.oom && resolve(lp.p, &treal) == FE_OK && utf8_name(treal))
				e->target = strdup(*rel_of(treal) ? rel_of(treal) : ".");
			free(treal);
			free(lp.p);
		}
	}
	closedir(d);
	if (rc != MCP_OK)
		goto done;
	qsort(v, n, sizeof *v, dent_cmp);

	sbuf t = { 0 };
	json_object *entries = json_object_new_array();
	sb_printf(&t, "%s (%zu entries%s)\n", *rel ? rel : ".", n, truncated ? ", truncated" : "");
	for (size_t i = 0; i < n && entries; i++) {
		json_object *o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "name", jstr(v[i].name));
		json_object_object_add(o, "type", jstr(v[i].type));
		if (v[i].size >= 0)
			json_object_object_add(o, "size", json_object_new_int64(v[i].size));
		if (strcmp(v[i].type, "directory") == 0)
			sb_printf(&t, "%s/\n", v[i].name);
		else if (v[i].size >= 0)
			sb_printf(&t, "%s  (%lld bytes)\n", v[i].name, (long long)v[i].size);
		else if (strcmp(v[i].type, "symlink") == 0)
			sb_printf(&t, "%s -> %s\n", v[i].name,
				  v[i].target ? v[i].target
					      : "(target outside the root, missing, or not UTF-8)");
		else
			sb_printf(&t, "%s  (%s)\n", v[i].name, v[i].type);
		if (v[i].target)
			json_object_object_add(o, "target", jstr(v[i].target));
		json_object_array_add(entries, o);
	}
	json_object *sc = json_object_new_object();
	if (t.oom || !entries || !sc) {
		json_object_put(entries);
		json_object_put(sc);
		rc = MCP_ENOMEM;
	} else {
		json_object_object_add(sc, "path", jstr(*rel ? rel : "."));
		json_object_object_add(sc, "entries", entries);
		json_object_object_add(sc, "truncated", json_object_new_boolean(truncated));
		rc = mcp_result_add_text(out, t.p);
		if (rc == MCP_OK)
			rc = mcp_result_set_structured(out, sc);
		else
			json_object_put(sc);
	}
	free(t.p);
done:
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].target);
	}
	free(v);
	free(rel);
	free(real);
	return rc;
}

#define RO_ANNOTATIONS \
	"{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true," \
	"\"openWorldHint\":false}"

static const mcp_tool tools[] = {
	{ MCP_TOOL_INIT, .name = "search", .title = "Search files",
	  .description = "Searches the text files under the root (or under path) for a "
			 "literal string, line by line, like grep -F.  Returns "
			 "'path:line: text' lines.  Case-insensitive (ASCII) unless "
			 "case_sensitive is true.  Binary files and files over the size "
			 "limit are skipped.",
	  .input_schema =
		  "{\"type\":\"object\",\"properties\":{"
		  "\"query\":{\"type\":\"string\",\"minLength\":1,"
		  "\"description\":\"the text to find\"},"
		  "\"path\":{\"type\":\"string\",\"description\":\"a directory or file relative "
		  "to the root (default: the whole tree)\"},"
		  "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"
		  "\"default\":100},"
		  "\"case_sensitive\":{\"type\":\"boolean\",\"default\":false}},"
		  "\"required\":[\"query\"]}",
	  .output_schema =
		  "{\"type\":\"object\",\"properties\":{"
		  "\"matches\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"},"
		  "\"text\":{\"type\":\"string\"}},\"required\":[\"path\",\"line\",\"text\"]}},"
		  "\"files_searched\":{\"type\":\"integer\"},"
		  "\"files_skipped\":{\"type\":\"integer\"},"
		  "\"truncated\":{\"type\":\"boolean\"}},"
		  "\"required\":[\"matches\",\"files_searched\",\"truncated\"]}",
	  .fn = tool_search, .annotations = RO_ANNOTATIONS },
	{ MCP_TOOL_INIT, .name = "stat", .title = "File information",
	  .description = "Size, modification time (ISO 8601, UTC), type and permissions of "
			 "a file or directory relative to the root.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
			  "\"description\":\"relative to the root; '.' is the root\"}},"
			  "\"required\":[\"path\"]}",
	  .output_schema =
		  "{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
		  "\"size\":{\"type\":\"integer\"},\"mtime\":{\"type\":\"string\"},"
		  "\"mode\":{\"type\":\"string\"},\"symlink_target\":{\"type\":\"string\"},"
		  "\"mime_type\":{\"type\":\"string\"}},"
		  "\"required\":[\"path\",\"type\",\"size\",\"mtime\",\"mode\"]}",
	  .fn = tool_stat, .annotations = RO_ANNOTATIONS },
	{ MCP_TOOL_INIT, .name = "list", .title = "List a directory",
	  .description = "The entries of a directory relative to the root (default: the "
			 "root), sorted by name, with type and size.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
			  "\"description\":\"relative to the root (default: the root)\"}}}",
	  .output_schema =
		  "{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\"},"
		  "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		  "\"name\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
		  "\"size\":{\"type\":\"integer\"},\"target\":{\"type\":\"string\"}},"
		  "\"required\":[\"name\",\"type\"]}},"
		  "\"truncated\":{\"type\":\"boolean\"}},"
		  "\"required\":[\"path\",\"entries\",\"truncated\"]}",
	  .fn = tool_list, .annotations = RO_ANNOTATIONS },
};

/* ---- the prompt ---------------------------------------------------------- */

static int prompt_summarize(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)user;
	const char *path = NULL;
	mcp_args_string(args, "path", &path); /* a required argument: checked */
	char *rel = NULL, *real = NULL, *buf = NULL, *uri = NULL;
	size_t len = 0;
	int64_t size = 0;
	ferr e = normalize_rel(path ? path : "", 1, &rel);
	if (e == FE_OK && !*rel)
		e = FE_NOTREG;
	if (e == FE_OK)
		e = resolve(rel, &real);
	if (e == FE_OK)
		e = read_regular(real, &buf, &len, &size);
	if (e == FE_OK && !(uri = file_uri(rel)))
		e = FE_NOMEM;
	int rc = MCP_OK;
	if (e == FE_TOOBIG) {
		say(ctx, MCP_LOG_ERROR, "summarize_file: %s is %lld bytes, over the "
			"--max-file-bytes limit of %lld", rel, (long long)size,
			(long long)cfg.max_bytes);
		rc = MCP_EINVAL;
	} else if (e != FE_OK) {
		say(ctx, MCP_LOG_ERROR, "summarize_file: cannot use '%s': %s", path ? path : "",
		    ferr_text(e));
		rc = e == FE_NOMEM ? MCP_ENOMEM : e == FE_DENIED || e == FE_SYS ? MCP_ESYS
										 : MCP_EINVAL;
	}
	const mime_map *m = rc == MCP_OK ? guess_mime(rel) : NULL;
	int text = rc == MCP_OK && (!m || !m->binary) && is_utf8_text(buf, len);
	int image = rc == MCP_OK && !text && m && strncmp(m->type, "image/", 6) == 0;
	if (rc == MCP_OK && !text && !image) {
		say(ctx, MCP_LOG_ERROR, "summarize_file: %s is a binary file", rel);
		rc = MCP_EINVAL;
	}
	if (rc == MCP_OK) {
		sbuf d = { 0 }, t = { 0 };
		sb_printf(&d, "Summarize %s", rel);
		sb_printf(&t, "Please summarize the file %s (%lld bytes%s%s). Describe its "
			      "purpose, its structure and anything notable, in a few short "
			      "paragraphs.",
			  rel, (long long)len, m ? ", " : "", m ? m->type : "");
		if (d.oom || t.oom)
			rc = MCP_ENOMEM;
		if (rc == MCP_OK)
			rc = mcp_prompt_set_description(out, d.p);
		if (rc == MCP_OK)
			rc = mcp_prompt_add_text(out, MCP_ROLE_USER, t.p);
		if (rc == MCP_OK && text)
			rc = mcp_prompt_add_resource_text(out, MCP_ROLE_USER, uri,
							  m ? m->type : "text/plain", buf);
		else if (rc == MCP_OK)
			rc = mcp_prompt_add_image(out, MCP_ROLE_USER, buf, len, m->type);
		free(d.p);
		free(t.p);
	}
	free(rel);
	free(real);
	free(buf);
	free(uri);
	return rc;
}

static int complete_prompt(mcp_ctx *ctx, const char *argument, const char *value,
			   json_object *context, mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	if (strcmp(argument, "path") != 0)
		return MCP_OK;
	return complete_paths(value, 0, out);
}

static const mcp_prompt_arg summarize_args[] = {
	{ MCP_PROMPT_ARG_INIT, .name = "path", .title = "File",
	  .description = "the file to summarize, relative to the root", .required = 1 },
};

/* ---- main ---------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	mcp_server_shutdown_from_signal(the_server);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mcp-files [--workers N] [--max-file-bytes N[K|M|G]] [--hidden]\n"
		"                 [--skills DIR] ROOT\n"
		"\n"
		"Serves the files under ROOT read-only over MCP on stdin/stdout.\n"
		"  --workers N          worker threads (1..1024, default 4)\n"
		"  --max-file-bytes N   largest file read or searched (default 4M)\n"
		"  --hidden             also serve names starting with '.'\n"
		"  --skills DIR         also serve the Agent Skills under DIR\n");
}

static int parse_long(const char *s, long long lo, long long hi, int suffixes, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	if (suffixes && *end) {
		int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
				: *end == 'g' || *end == 'G' ? 30 : -1;
		if (shift < 0 || end[1] || v > (hi >> shift))
			return -1;
		v <<= shift;
		end++;
	}
	if (*end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	long long workers = 4, max_bytes = 4LL << 20;
	const char *root_arg = NULL, *skills_dir = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--workers") == 0 && i + 1 < argc) {
			if (parse_long(argv[++i], 1, 1024, 0, &workers))
				goto bad;
		} else if (strcmp(a, "--max-file-bytes") == 0 && i + 1 < argc) {
			if (parse_long(argv[++i], 1, 1LL << 30, 1, &max_bytes))
				goto bad;
		} else if (strcmp(a, "--hidden") == 0) {
			cfg.hidden = 1;
		} else if (strcmp(a, "--skills") == 0 && i + 1 < argc) {
			skills_dir = argv[++i];
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			goto bad;
		} else if (!root_arg) {
			root_arg = a;
		} else {
			goto bad;
		}
	}
	if (!root_arg)
		goto bad;

	cfg.max_bytes = max_bytes;
	cfg.root = realpath(root_arg, NULL);
	struct stat st;
	if (!cfg.root || stat(cfg.root, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mcp-files: %s: %s\n", root_arg,
			cfg.root ? "not a directory" : strerror(errno));
		free(cfg.root);
		return 1;
	}
	cfg.root_len = strlen(cfg.root);

	if (walk_tree(NULL, cfg.root, &cfg.index) != MCP_OK) {
		fprintf(stderr, "mcp-files: out of memory while indexing %s\n", cfg.root);
		return 1;
	}
	if (cfg.index.truncated)
		fprintf(stderr, "mcp-files: more than %d files under %s; only the first %d "
				"are listed as resources (the files:// template reaches all)\n",
			MAX_FILES, cfg.root, MAX_FILES);

	mcp_server *srv = mcp_server_new("mcp-files", "0.1.0");
	if (!srv) {
		fprintf(stderr, "mcp-files: out of memory\n");
		return 1;
	}
	the_server = srv;
	mcp_server_set_workers(srv, (int)workers);

	sbuf instr = { 0 };
	sb_printf(&instr,
		  "Read-only access to the files under %s. Paths are relative to that root. "
		  "Each file is a resource file:///<absolute path>; any file can also be read "
		  "as files://<relative path with '/' written as %%2F>. Tools: search (grep "
		  "for a string), stat, list. Prompt: summarize_file.",
		  utf8_name(cfg.root) ? cfg.root : "the root directory");
	if (!instr.oom)
		mcp_server_set_instructions(srv, instr.p);
	free(instr.p);

	int rc = MCP_OK;
	for (size_t i = 0; i < sizeof tools / sizeof tools[0] && rc == MCP_OK; i++)
		rc = mcp_server_add_tool(srv, &tools[i]);
	for (size_t i = 0; i < cfg.index.n && rc == MCP_OK; i++) {
		fentry *f = &cfg.index.v[i];
		char *uri = file_uri(f->rel);
		const mime_map *m = guess_mime(f->rel);
		mcp_resource r = { MCP_RESOURCE_INIT, .uri = uri, .name = f->rel, .mime_type = m ? m->type : NULL,
				   .size = f->size, .read = read_static, .user = f };
		rc = uri ? mcp_server_add_resource(srv, &r) : MCP_ENOMEM;
		free(uri);
	}
	if (rc == MCP_OK) {
		mcp_resource_template t = { MCP_RESOURCE_TEMPLATE_INIT,
			.uri_template = "files://{name}", .name = "file", .title = "File by path",
			.description = "Any file under the root by its relative path, with '/' "
				       "written as %2F (files://src%2Fmain.c).",
			.read = read_template, .complete = complete_template
		};
		rc = mcp_server_add_resource_template(srv, &t);
	}
	if (rc == MCP_OK) {
		mcp_prompt p = { MCP_PROMPT_INIT, .name = "summarize_file", .title = "Summarize a file",
				 .description = "Asks the model to summarize one file, which is "
						"embedded in the message.",
				 .args = summarize_args, .nargs = 1, .get = prompt_summarize,
				 .complete = complete_prompt };
		rc = mcp_server_add_prompt(srv, &p);
	}
	if (rc == MCP_OK && skills_dir) {
		/* Every skill, or none: a half-served tree would be a surprise. */
		char why[512];
		int nskills = 0;
		rc = mcp_server_add_skills_tree(srv, skills_dir, NULL, &nskills, why, sizeof why);
		if (rc != MCP_OK) {
			fprintf(stderr, "mcp-files: --skills %s: %s\n", skills_dir,
				why[0] ? why : mcp_strerror(rc));
			mcp_server_free(srv);
			flist_free(&cfg.index);
			free(cfg.root);
			return 1;
		}
		fprintf(stderr, "mcp-files: serving %d skills under %s\n", nskills, skills_dir);
	}
	if (rc != MCP_OK) {
		fprintf(stderr, "mcp-files: registration failed: %s\n", mcp_strerror(rc));
		mcp_server_free(srv);
		flist_free(&cfg.index);
		free(cfg.root);
		return 1;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	fprintf(stderr, "mcp-files: serving %zu files under %s\n", cfg.index.n, cfg.root);
	rc = mcp_server_run_stdio(srv);
	if (rc != MCP_OK)
		fprintf(stderr, "mcp-files: %s\n", mcp_strerror(rc));
	mcp_server_free(srv);
	flist_free(&cfg.index);
	free(cfg.root);
	return rc == MCP_OK ? 0 : 1;

bad:
	usage(stderr);
	return 2;
}
