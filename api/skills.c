/*
 * skills.c - the Skills extension (io.modelcontextprotocol/skills,
 * SEP-2640): skills built in memory or read from a directory, their files
 * served as skill:// resources, and the methods skills/list, skills/get
 * and resources/directory/read, in both protocol eras.
 *
 * A skill is a SKILL.md (YAML frontmatter with at least name and
 * description) and its supporting files.  Everything is held in memory
 * from registration on: the entry's digests are computed once and always
 * describe the bytes served, and a directory that changes afterwards
 * changes nothing until it is registered again.  Limits are those the
 * extension fixes for hosts (512 files, 16 MiB per skill), refused with a
 * reason rather than served to hosts that may decline them.
 *
 * Each file is a resource of the registry (resources/read serves it); only
 * SKILL.md is listed by resources/list, the rest are reached through the
 * skill's entry or a directory read.  The skills themselves are kept, in
 * registration order, under the registry lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "api/internal.h"
#include "transport/tp.h"

#define SKILL_MAX_FILES 512
#define SKILL_MAX_BYTES (16u << 20)
#define SKILL_MAX_DEPTH 32
#define SKILL_FILE "SKILL.md"
#define DIR_MIME "inode/directory"

typedef struct skill_file {
	char *path;              /* relative to the skill root, '/'-separated */
	char *uri;               /* skill://<skill-path>/<path, percent-encoded> */
	unsigned char *data;
	size_t len;
	char *mime_type;
	char digest[8 + 64 + 1]; /* "sha256:" and 64 lowercase hex digits */
	int text;                /* served as text (UTF-8 without NUL) */
} skill_file;

struct mcp_skill {
	_Atomic int refs;
	char *path;              /* <skill-path>: prefix segments and the name */
	char *uri;               /* of its SKILL.md */
	char *name, *description;
	json_object *frontmatter; /* read-only once registered */
	skill_file *files;       /* files[0] is SKILL.md */
	size_t nfiles, cap;
	size_t total;
	int registered;
};

static int refuse(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return MCP_EINVAL;
}

/* ---- names and paths ------------------------------------------------------------ */

/* The Agent Skills naming rule: 1 to 64 of a-z, 0-9 and '-', no hyphen
 * first, last or twice in a row. */
static int name_valid(const char *n, size_t len)
{
	if (len < 1 || len > 64 || n[0] == '-' || n[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = n[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
		if (c == '-' && i && n[i - 1] == '-')
			return 0;
	}
	return 1;
}

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* A prefix: segments of unreserved characters (a valid reg-name first,
 * valid path segments after), none "." or "..". */
static int prefix_valid(const char *p)
{
	if (!*p)
		return 1;
	const char *seg = p;
	for (const char *q = p;; q++) {
		if (*q == '/' || !*q) {
			size_t n = (size_t)(q - seg);
			if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && !strncmp(seg, "..", 2)))
				return 0;
			if (!*q)
				return 1;
			seg = q + 1;
		} else if (!unreserved((unsigned char)*q)) {
			return 0;
		}
	}
}

/* A file path: relative, '/'-separated, no empty, ".", ".." or hidden
 * segment, UTF-8 without control characters. */
static int file_path_valid(const char *p)
{
	if (!*p || !tp_utf8_valid((const unsigned char *)p, strlen(p)))
		return 0;
	const char *seg = p;
	for (const char *q = p;; q++) {
		if (*q == '/' || !*q) {
			size_t n = (size_t)(q - seg);
			if (n == 0 || seg[0] == '.')
				return 0;
			if (!*q)
				return 1;
			seg = q + 1;
		} else if ((unsigned char)*q < 0x20 || *q == 0x7f || *q == '\\') {
			return 0;
		}
	}
}

/* "skill://<skill-path>/<path>" with the path percent-encoded but for
 * unreserved characters and '/'.  Caller frees. */
static char *file_uri(const char *skill_path, const char *path)
{
	size_t n = strlen(skill_path) + 3 * strlen(path) + 16;
	char *u = malloc(n);
	if (!u)
		return NULL;
	char *o = u + sprintf(u, "skill://%s/", skill_path);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (unreserved(*p) || *p == '/')
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = 0;
	return u;
}

static const struct {
	const char *ext, *mime;
} mime_table[] = {
	{ ".md", "text/markdown" },	     { ".markdown", "text/markdown" },
	{ ".txt", "text/plain" },	     { ".py", "text/x-python" },
	{ ".sh", "text/x-shellscript" },     { ".js", "text/javascript" },
	{ ".mjs", "text/javascript" },	     { ".ts", "text/plain" },
	{ ".json", "application/json" },     { ".yaml", "application/yaml" },
	{ ".yml", "application/yaml" },	     { ".html", "text/html" },
	{ ".css", "text/css" },		     { ".csv", "text/csv" },
	{ ".xml", "application/xml" },	     { ".c", "text/x-c" },
	{ ".h", "text/x-c" },		     { ".png", "image/png" },
	{ ".jpg", "image/jpeg" },	     { ".jpeg", "image/jpeg" },
	{ ".gif", "image/gif" },	     { ".svg", "image/svg+xml" },
	{ ".webp", "image/webp" },	     { ".pdf", "application/pdf" },
};

static const char *guess_mime(const char *path, int text)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (dot && (!slash || dot > slash))
		for (size_t i = 0; i < sizeof mime_table / sizeof mime_table[0]; i++)
			if (!strcasecmp(dot, mime_table[i].ext))
				return mime_table[i].mime;
	return text ? "text/plain" : "application/octet-stream";
}

/* ---- building a skill -------------------------------------------------------------- */

static void file_clear(skill_file *f)
{
	free(f->path);
	free(f->uri);
	free(f->data);
	free(f->mime_type);
}

static void skill_unref(mcp_skill *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		file_clear(&s->files[i]);
	free(s->files);
	free(s->path);
	free(s->uri);
	free(s->name);
	free(s->description);
	json_object_put(s->frontmatter);
	free(s);
}

MCP_EXTERN void mcp_skill_free(mcp_skill *skill)
{
	skill_unref(skill);
}

/* Appends a file (data copied).  MCP_OK, MCP_EEXIST, MCP_EBUSY (a limit),
 * MCP_ENOMEM. */
static int add_file(mcp_skill *s, const char *path, const void *data, size_t len,
		    const char *mime_type, char *why, size_t whylen)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i].path, path)) {
			refuse(why, whylen, "%s: the skill already has this file", path);
			return MCP_EEXIST;
		}
	if (s->nfiles == SKILL_MAX_FILES) {
		refuse(why, whylen, "%s: a skill has at most %d files (SEP-2640)", path,
		       SKILL_MAX_FILES);
		return MCP_EBUSY;
	}
	if (len > SKILL_MAX_BYTES - s->total) {
		refuse(why, whylen, "%s: a skill holds at most 16 MiB of files (SEP-2640)", path);
		return MCP_EBUSY;
	}
	if (s->nfiles == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		skill_file *g = realloc(s->files, cap * sizeof *g);
		if (!g)
			return MCP_ENOMEM;
		s->files = g;
		s->cap = cap;
	}
	skill_file *f = &s->files[s->nfiles];
	memset(f, 0, sizeof *f);
	f->text = !memchr(data, 0, len) && tp_utf8_valid(data, len);
	f->path = strdup(path);
	f->uri = file_uri(s->path, path);
	f->data = malloc(len ? len : 1);
	f->mime_type = strdup(mime_type ? mime_type : guess_mime(path, f->text));
	if (!f->path || !f->uri || !f->data || !f->mime_type) {
		file_clear(f);
		return MCP_ENOMEM;
	}
	if (len)
		memcpy(f->data, data, len);
	f->len = len;
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, f->data, len);
	memcpy(f->digest, "sha256:", 7);
	sodium_bin2hex(f->digest + 7, sizeof f->digest - 7, h, sizeof h);
	s->total += len;
	s->nfiles++;
	return MCP_OK;
}

static mcp_skill *skill_new(const char *prefix, const char *skill_md, size_t len,
			    const char *dir_name, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!prefix)
		prefix = "";
	if (!skill_md) {
		refuse(why, whylen, "no SKILL.md text");
		return NULL;
	}
	if (!prefix_valid(prefix)) {
		refuse(why, whylen, "prefix \"%s\": segments of A-Z a-z 0-9 - . _ ~, none empty, "
				    "\".\" or \"..\"",
		       prefix);
		return NULL;
	}
	if (!tp_utf8_valid((const unsigned char *)skill_md, len) || memchr(skill_md, 0, len)) {
		refuse(why, whylen, "SKILL.md is not UTF-8 text");
		return NULL;
	}
	json_object *fm = api_skill_parse_frontmatter(skill_md, len, NULL, why, whylen);
	if (!fm)
		return NULL;
	json_object *jn = api_get(fm, "name"), *jd = api_get(fm, "description");
	const char *name = json_object_is_type(jn, json_type_string) ? json_object_get_string(jn)
								      : NULL;
	const char *desc = json_object_is_type(jd, json_type_string) ? json_object_get_string(jd)
								      : NULL;
	if (!name || !name_valid(name, strlen(name)) || !desc || !*desc ||
	    (dir_name && strcmp(dir_name, name) != 0)) {
		if (!name || !name_valid(name, strlen(name)))
			refuse(why, whylen, "frontmatter name must be 1 to 64 of a-z, 0-9 and '-' "
					    "(no leading, trailing or double '-')");
		else if (!desc || !*desc)
			refuse(why, whylen, "frontmatter description must be a non-empty string");
		else
			refuse(why, whylen, "frontmatter name \"%s\" differs from its directory "
					    "\"%s\" (Agent Skills)",
			       name, dir_name);
		json_object_put(fm);
		return NULL;
	}
	mcp_skill *s = calloc(1, sizeof *s);
	if (!s) {
		json_object_put(fm);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->frontmatter = fm;
	s->name = strdup(name);
	s->description = strdup(desc);
	size_t plen = strlen(prefix) + strlen(name) + 2;
	s->path = malloc(plen);
	if (s->path)
		snprintf(s->path, plen, "%s%s%s", prefix, *prefix ? "/" : "", name);
	s->uri = s->path ? file_uri(s->path, SKILL_FILE) : NULL;
	if (!s->name || !s->description || !s->path || !s->uri ||
	    add_file(s, SKILL_FILE, skill_md, len, "text/markdown", why, whylen) != MCP_OK) {
		skill_unref(s);
		return NULL;
	}
	return s;
}

MCP_EXTERN mcp_skill *mcp_skill_new(const char *prefix, const char *skill_md, size_t len,
				    char *why, size_t whylen)
{
	return skill_new(prefix, skill_md, len, NULL, why, whylen);
}

MCP_EXTERN int mcp_skill_add_file(mcp_skill *skill, const char *path, const void *data,
				  size_t len, const char *mime_type)
{
	if (!skill || skill->registered || !path || (!data && len) || !file_path_valid(path) ||
	    (mime_type && (!*mime_type || strpbrk(mime_type, " \t\r\n"))))
		return MCP_EINVAL;
	return add_file(skill, path, data ? data : "", len, mime_type, NULL, 0);
}

/* ---- reading a directory ----------------------------------------------------------
 *
 * As strict as mcp-files: every name is opened relative to an open
 * directory with O_NOFOLLOW, after an lstat, and the descriptor checked to
 * be what was inspected, so no path is ever resolved through a link
 * planted meanwhile; a symbolic link is followed only when realpath()
 * shows it stays inside the skill; only regular files are read (never a
 * FIFO or a device); hidden names are skipped. */

typedef struct walk {
	mcp_skill *s;
	char *root;               /* realpath of the skill directory */
	size_t root_len;
	char *why;
	size_t whylen;
} walk;

static int inside(const walk *w, const char *real)
{
	return !strncmp(real, w->root, w->root_len) &&
	       (real[w->root_len] == '/' || real[w->root_len] == 0);
}

/* Reads the regular file `fd` (taken) of `st`: at most `max` bytes. */
static int read_fd(int fd, const struct stat *st, size_t max, unsigned char **out, size_t *len)
{
	struct stat fst;
	if (fstat(fd, &fst) || !S_ISREG(fst.st_mode) || fst.st_dev != st->st_dev ||
	    fst.st_ino != st->st_ino) {
		close(fd);
		return MCP_ESYS;
	}
	if ((uint64_t)fst.st_size > max) {
		close(fd);
		return MCP_EBUSY;
	}
	size_t cap = (size_t)fst.st_size + 1, n = 0;
	unsigned char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return MCP_ENOMEM;
	}
	for (;;) {
		if (n == cap) { /* it grew while read: still bounded */
			if (cap > max) {
				free(buf);
				close(fd);
				return MCP_EBUSY;
			}
			unsigned char *g = realloc(buf, cap * 2);
			if (!g) {
				free(buf);
				close(fd);
				return MCP_ENOMEM;
			}
			buf = g;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return MCP_ESYS;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = n;
	return MCP_OK;
}

static int walk_dir(walk *w, int dfd, const char *rel, int depth);

/* One entry `name` of directory `dfd` (at `rel` in the skill). */
static int walk_entry(walk *w, int dfd, const char *rel, const char *name, int depth)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof path)
		return refuse(w->why, w->whylen, "%s/%s: path too long", rel, name);
	if (!file_path_valid(path))
		return refuse(w->why, w->whylen, "%s: not a name a skill:// URI can carry", path);
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return refuse(w->why, w->whylen, "%s: %s", path, strerror(errno));
	int fd = -1;
	if (S_ISLNK(st.st_mode)) {
		/* Followed only inside the skill. */
		char full[PATH_MAX];
		if (snprintf(full, sizeof full, "%s/%s", w->root, path) >= (int)sizeof full)
			return refuse(w->why, w->whylen, "%s: path too long", path);
		char *real = realpath(full, NULL);
		if (!real || !inside(w, real)) {
			free(real);
			return refuse(w->why, w->whylen,
				      "%s: a symbolic link that leads out of the skill", path);
		}
		if (stat(real, &st)) {
			free(real);
			return refuse(w->why, w->whylen, "%s: %s", path, strerror(errno));
		}
		if (S_ISREG(st.st_mode))
			fd = open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		else if (S_ISDIR(st.st_mode))
			fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		free(real);
	} else if (S_ISREG(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	} else if (S_ISDIR(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return refuse(w->why, w->whylen, "%s: not a regular file or directory (a FIFO, "
						 "socket or device is never read)",
			      path);
	if (fd < 0)
		return refuse(w->why, w->whylen, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		struct stat fst;
		if (fstat(fd, &fst) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
			close(fd);
			return refuse(w->why, w->whylen, "%s: changed while read", path);
		}
		return walk_dir(w, fd, path, depth + 1);
	}
	if (!strcmp(path, SKILL_FILE)) { /* read already */
		close(fd);
		return MCP_OK;
	}
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = read_fd(fd, &st, SKILL_MAX_BYTES - w->s->total, &data, &len);
	if (rc == MCP_EBUSY)
		return refuse(w->why, w->whylen, "%s: a skill holds at most 16 MiB of files "
						 "(SEP-2640)",
			      path);
	if (rc != MCP_OK)
		return rc == MCP_ENOMEM ? rc
					: refuse(w->why, w->whylen, "%s: cannot be read", path);
	rc = add_file(w->s, path, data, len, NULL, w->why, w->whylen);
	free(data);
	return rc == MCP_OK ? rc : rc == MCP_ENOMEM ? rc : MCP_EINVAL;
}

/* Walks the open directory `dfd` (taken), in name order. */
static int walk_dir(walk *w, int dfd, const char *rel, int depth)
{
	if (depth > SKILL_MAX_DEPTH) {
		close(dfd);
		return refuse(w->why, w->whylen, "%s: deeper than %d levels", rel, SKILL_MAX_DEPTH);
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return refuse(w->why, w->whylen, "%s: %s", *rel ? rel : ".", strerror(errno));
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = MCP_OK;
	struct dirent *e;
	while (rc == MCP_OK && (e = readdir(d))) {
		if (e->d_name[0] == '.') /* ".", ".." and hidden names */
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **g = realloc(names, cap * sizeof *g);
			if (!g) {
				rc = MCP_ENOMEM;
				break;
			}
			names = g;
		}
		if (n > SKILL_MAX_FILES * 2)
			rc = refuse(w->why, w->whylen, "%s: too many entries", *rel ? rel : ".");
		else if (!(names[n++] = strdup(e->d_name)))
			rc = MCP_ENOMEM;
	}
	/* Name order: the same skill reads the same on every machine. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (size_t i = 0; i < n && rc == MCP_OK; i++)
		if (names[i])
			rc = walk_entry(w, dirfd(d), rel, names[i], depth);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

/* The skill in directory `dir` (its SKILL.md and everything below). */
static int skill_from_dir(const char *dir, const char *prefix, mcp_skill **out, char *why,
			  size_t whylen)
{
	*out = NULL;
	walk w = { .why = why, .whylen = whylen };
	w.root = realpath(dir, NULL);
	if (!w.root)
		return errno == ENOMEM ? MCP_ENOMEM
				       : refuse(why, whylen, "%s: %s", dir, strerror(errno));
	w.root_len = strlen(w.root);
	int dfd = open(w.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int rc = refuse(why, whylen, "%s: %s", dir, strerror(errno));
		free(w.root);
		return rc;
	}
	struct stat st;
	int fd = -1;
	if (!fstatat(dfd, SKILL_FILE, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
		fd = openat(dfd, SKILL_FILE, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
						      O_CLOEXEC);
	if (fd < 0) {
		close(dfd);
		int rc = refuse(why, whylen, "%s: no SKILL.md (a regular file) at its root", dir);
		free(w.root);
		return rc;
	}
	unsigned char *md = NULL;
	size_t len = 0;
	int rc = read_fd(fd, &st, SKILL_MAX_BYTES, &md, &len);
	if (rc != MCP_OK) {
		close(dfd);
		free(w.root);
		return rc == MCP_ENOMEM ? rc : refuse(why, whylen, "%s/SKILL.md: cannot be read",
						      dir);
	}
	const char *base = strrchr(w.root, '/');
	base = base ? base + 1 : w.root;
	w.s = skill_new(prefix, (const char *)md, len, base, why, whylen);
	free(md);
	if (!w.s) {
		close(dfd);
		free(w.root);
		return why && why[0] ? MCP_EINVAL : MCP_ENOMEM;
	}
	rc = walk_dir(&w, dfd, "", 0);
	free(w.root);
	if (rc != MCP_OK) {
		skill_unref(w.s);
		return rc;
	}
	*out = w.s;
	return MCP_OK;
}

/* ---- registration --------------------------------------------------------------- */

/* A registered file: a reference to its skill. */
typedef struct file_ref {
	mcp_skill *s;
	size_t i;
} file_ref;

static void file_ref_free(void *p)
{
	file_ref *r = p;
	skill_unref(r->s);
	free(r);
}

static int file_read(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
		     void *user)
{
	(void)ctx, (void)vars;
	file_ref *r = user;
	skill_file *f = &r->s->files[r->i];
	return api_contents_add_item(out, uri, f->mime_type, f->data, f->len, f->text, NULL);
}

MCP_EXTERN int mcp_server_add_skill(mcp_server *srv, mcp_skill *skill)
{
	if (!srv || !skill || skill->registered) {
		if (skill && !skill->registered)
			skill_unref(skill);
		return MCP_EINVAL;
	}
	skill->registered = 1;
	/* Every file a resource; SKILL.md listed, with the frontmatter's
	 * name and description (SEP-2640, resource metadata). */
	size_t done = 0;
	int rc = MCP_OK;
	for (; done < skill->nfiles && rc == MCP_OK; done++) {
		skill_file *f = &skill->files[done];
		file_ref *ref = malloc(sizeof *ref);
		if (!ref) {
			rc = MCP_ENOMEM;
			break;
		}
		atomic_fetch_add(&skill->refs, 1);
		*ref = (file_ref){ skill, done };
		const char *base = strrchr(f->path, '/');
		base = base ? base + 1 : f->path;
		/* The supporting files are reached through the skill, not the
		 * global listing. */
		rc = api_resource_add_owned(srv, f->uri, done ? base : skill->name, NULL,
					    done ? NULL : skill->description, f->mime_type,
					    (int64_t)f->len, file_read, ref, file_ref_free, NULL,
					    done != 0);
	}
	if (rc == MCP_OK) {
		pthread_rwlock_wrlock(&srv->reg_lock);
		for (size_t i = 0; i < srv->nskills && rc == MCP_OK; i++)
			if (!strcmp(srv->skills[i]->uri, skill->uri))
				rc = MCP_EEXIST;
		mcp_skill **g = rc == MCP_OK ? realloc(srv->skills, (srv->nskills + 1) *
								      sizeof *g)
					     : NULL;
		if (rc == MCP_OK && !g)
			rc = MCP_ENOMEM;
		if (g) {
			srv->skills = g;
			g[srv->nskills++] = skill; /* the caller's reference */
		}
		pthread_rwlock_unlock(&srv->reg_lock);
	} else {
		done--; /* the one that failed was not registered */
	}
	if (rc != MCP_OK) {
		for (size_t i = 0; i < done; i++)
			api_registry_remove(srv, &srv->resources, skill->files[i].uri);
		skill_unref(skill);
	}
	return rc;
}

MCP_EXTERN int mcp_server_add_skill_dir(mcp_server *srv, const char *dir, const char *prefix,
					char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!srv || !dir)
		return MCP_EINVAL;
	mcp_skill *s;
	int rc = skill_from_dir(dir, prefix, &s, why, whylen);
	if (rc != MCP_OK)
		return rc;
	rc = mcp_server_add_skill(srv, s);
	if (rc == MCP_EEXIST)
		refuse(why, whylen, "%s: a skill or resource is already registered at its URI",
		       dir);
	return rc;
}

/* Registers every skill under `dir` at prefix `prefix`: a directory with a
 * SKILL.md is a skill (whatever is below it belongs to it), others are
 * searched further, their names joining the prefix. */
static int tree(mcp_server *srv, const char *dir, const char *prefix, int depth, int *count,
		char *why, size_t whylen)
{
	if (depth > SKILL_MAX_DEPTH)
		return refuse(why, whylen, "%s: deeper than %d levels", dir, SKILL_MAX_DEPTH);
	struct stat st;
	char md[PATH_MAX + 16];
	snprintf(md, sizeof md, "%s/%s", dir, SKILL_FILE);
	if (!lstat(md, &st)) {
		int rc = mcp_server_add_skill_dir(srv, dir, prefix, why, whylen);
		*count += rc == MCP_OK;
		return rc;
	}
	DIR *d = opendir(dir);
	if (!d)
		return refuse(why, whylen, "%s: %s", dir, strerror(errno));
	int rc = MCP_OK;
	struct dirent *e;
	while (rc == MCP_OK && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sub[PATH_MAX], np[PATH_MAX];
		if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub)
			continue;
		/* Only real directories: a link never leads the search out. */
		if (lstat(sub, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (!prefix_valid(e->d_name))
			continue; /* cannot be a URI segment: not a namespace */
		if (snprintf(np, sizeof np, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name) >=
			    (int)sizeof np ||
		    snprintf(md, sizeof md, "%s/%s", sub, SKILL_FILE) >= (int)sizeof md) {
			rc = refuse(why, whylen, "%s: path too long", sub);
			break;
		}
		/* A skill's own directory is named after it: not a prefix. */
		rc = tree(srv, sub, lstat(md, &st) ? np : prefix, depth + 1, count, why, whylen);
	}
	closedir(d);
	return rc;
}

MCP_EXTERN int mcp_server_add_skills_tree(mcp_server *srv, const char *root, const char *prefix,
					  int *count, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	int n = 0;
	if (count)
		*count = 0;
	if (!srv || !root)
		return MCP_EINVAL;
	if (!prefix)
		prefix = "";
	if (!prefix_valid(prefix))
		return refuse(why, whylen, "prefix \"%s\" is not a skill-path prefix", prefix);
	int rc = tree(srv, root, prefix, 0, &n, why, whylen);
	if (count)
		*count = n;
	return rc;
}

MCP_EXTERN int mcp_server_remove_skill(mcp_server *srv, const char *uri)
{
	if (!srv || !uri)
		return MCP_EINVAL;
	mcp_skill *s = NULL;
	pthread_rwlock_wrlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->nskills; i++)
		if (!strcmp(srv->skills[i]->uri, uri)) {
			s = srv->skills[i];
			/* registration order stays */
			memmove(srv->skills + i, srv->skills + i + 1,
				(srv->nskills - i - 1) * sizeof *srv->skills);
			srv->nskills--;
			break;
		}
	pthread_rwlock_unlock(&srv->reg_lock);
	if (!s)
		return MCP_ENOENT;
	for (size_t i = 0; i < s->nfiles; i++)
		api_registry_remove(srv, &srv->resources, s->files[i].uri);
	skill_unref(s);
	return MCP_OK;
}

void api_skills_free(mcp_server *srv)
{
	for (size_t i = 0; i < srv->nskills; i++)
		skill_unref(srv->skills[i]);
	free(srv->skills);
	srv->skills = NULL;
	srv->nskills = 0;
}

int api_skills_offered(mcp_server *srv)
{
	pthread_rwlock_rdlock(&srv->reg_lock);
	int n = srv->nskills > 0;
	pthread_rwlock_unlock(&srv->reg_lock);
	return n;
}

/* ---- the methods ------------------------------------------------------------------ */

/* The Skill entry (reg_lock held). */
static json_object *entry(const mcp_skill *s)
{
	json_object *o = json_object_new_object();
	eng_obj_add(o, "uri", json_object_new_string(s->uri));
	eng_obj_add(o, "frontmatter", api_json_copy(s->frontmatter));
	json_object *res = json_object_new_array();
	for (size_t i = 0; i < s->nfiles; i++) {
		json_object *r = json_object_new_object();
		eng_obj_add(r, "uri", json_object_new_string(s->files[i].uri));
		eng_obj_add(r, "digest", json_object_new_string(s->files[i].digest));
		eng_obj_add(r, "size", json_object_new_int64((int64_t)s->files[i].len));
		eng_arr_add(res, r);
	}
	eng_obj_add(o, "resources", res);
	return o;
}

static void answer(eng_session *s, api_answer *out, json_object *res, const api_view *v,
		   const char *method)
{
	api_sess *ms = s->proto_data;
	if (!res) {
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	if (v && v->modern)
		api_modern_decorate(ms->srv, method, res);
	api_answer_result(out, res);
}

static void invalid(api_answer *out, const char *message, const char *uri)
{
	json_object *data = NULL;
	if (uri) {
		data = json_object_new_object();
		eng_obj_add(data, "uri", json_object_new_string(uri));
	}
	api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS, message, data);
}

void api_skills_list(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	mcp_server *srv = ((api_sess *)s->proto_data)->srv;
	size_t offset = 0;
	json_object *jc = api_get(params, "cursor");
	if (jc && (!json_object_is_type(jc, json_type_string) ||
		   api_parse_cursor(srv, json_object_get_string(jc), "skills", &offset) != 0)) {
		invalid(out, "Invalid params: unknown cursor", NULL);
		return;
	}
	size_t page = (size_t)srv->page_size, next = 0;
	json_object *arr = json_object_new_array();
	pthread_rwlock_rdlock(&srv->reg_lock);
	/* Whole entries only: one never spans two pages. */
	for (size_t i = offset; i < srv->nskills && arr; i++) {
		if (i >= offset + page) {
			next = i;
			break;
		}
		eng_arr_add(arr, entry(srv->skills[i]));
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	json_object *res = json_object_new_object();
	eng_obj_add(res, "skills", arr);
	if (next) {
		char *c = api_make_cursor(srv, "skills", next);
		if (c)
			eng_obj_add(res, "nextCursor", json_object_new_string(c));
		free(c);
	}
	answer(s, out, res, v, "skills/list");
}

void api_skills_get(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	mcp_server *srv = ((api_sess *)s->proto_data)->srv;
	json_object *ju = api_get(params, "uri");
	if (!json_object_is_type(ju, json_type_string)) {
		invalid(out, "Invalid params: uri (string) is required", NULL);
		return;
	}
	const char *uri = json_object_get_string(ju);
	json_object *e = NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->nskills && !e; i++)
		if (!strcmp(srv->skills[i]->uri, uri))
			e = entry(srv->skills[i]);
	pthread_rwlock_unlock(&srv->reg_lock);
	if (!e) {
		invalid(out, "Invalid params: no skill is served at this URI", uri);
		return;
	}
	json_object *res = json_object_new_object();
	eng_obj_add(res, "skill", e);
	answer(s, out, res, v, "skills/get");
}

/* One child of a directory read, from the file URI `u` below `dir`. */
static int add_child(json_object *seen, const char *dir, const char *u, const skill_file *f)
{
	size_t dl = strlen(dir);
	const char *rest = u + dl + 1;
	const char *slash = strchr(rest, '/');
	char uri[PATH_MAX + 64];
	if (slash)
		snprintf(uri, sizeof uri, "%.*s", (int)(slash - u), u);
	else
		snprintf(uri, sizeof uri, "%s", u);
	if (api_get(seen, uri))
		return 0;
	json_object *r = json_object_new_object();
	eng_obj_add(r, "uri", json_object_new_string(uri));
	const char *name = uri + dl + 1;
	eng_obj_add(r, "name", json_object_new_string(name));
	if (slash) {
		eng_obj_add(r, "mimeType", json_object_new_string(DIR_MIME));
	} else {
		eng_obj_add(r, "mimeType", json_object_new_string(f->mime_type));
		eng_obj_add(r, "size", json_object_new_int64((int64_t)f->len));
	}
	return eng_obj_add(seen, uri, r);
}

void api_skills_read_dir(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	mcp_server *srv = ((api_sess *)s->proto_data)->srv;
	json_object *ju = api_get(params, "uri");
	if (!json_object_is_type(ju, json_type_string)) {
		invalid(out, "Invalid params: uri (string) is required", NULL);
		return;
	}
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof dir, "%s", json_object_get_string(ju)) >= (int)sizeof dir) {
		invalid(out, "Invalid params: not a directory resource", NULL);
		return;
	}
	size_t dl = strlen(dir);
	char list[PATH_MAX + 8];
	snprintf(list, sizeof list, "dir:%s", dir);
	size_t offset = 0;
	json_object *jc = api_get(params, "cursor");
	if (jc && (!json_object_is_type(jc, json_type_string) ||
		   api_parse_cursor(srv, json_object_get_string(jc), list, &offset) != 0)) {
		invalid(out, "Invalid params: unknown cursor", NULL);
		return;
	}
	/* A directory is any proper prefix, at a '/', of a skill file's URI:
	 * a skill's root, its subdirectories, the prefixes above it. */
	json_object *seen = json_object_new_object();
	int found = 0;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->nskills && seen; i++)
		for (size_t j = 0; j < srv->skills[i]->nfiles; j++) {
			const skill_file *f = &srv->skills[i]->files[j];
			if (dl > 8 && !strncmp(f->uri, dir, dl) && f->uri[dl] == '/' &&
			    dir[dl - 1] != '/') {
				found = 1;
				add_child(seen, dir, f->uri, f);
			}
		}
	pthread_rwlock_unlock(&srv->reg_lock);
	if (!seen) {
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	if (!found) {
		json_object_put(seen);
		invalid(out, "Invalid params: not a directory resource", dir);
		return;
	}
	/* Sorted by URI: the same page for the same cursor. */
	size_t n = (size_t)json_object_object_length(seen), k = 0;
	const char **keys = malloc((n ? n : 1) * sizeof *keys);
	json_object *arr = json_object_new_array();
	if (!keys || !arr) {
		free(keys);
		json_object_put(arr);
		json_object_put(seen);
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	json_object_object_foreach(seen, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];
			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	size_t page = (size_t)srv->page_size;
	for (size_t i = offset; i < n && i < offset + page; i++)
		eng_arr_add(arr, json_object_get(api_get(seen, keys[i])));
	json_object *res = json_object_new_object();
	eng_obj_add(res, "resources", arr);
	if (offset + page < n) {
		char *c = api_make_cursor(srv, list, offset + page);
		if (c)
			eng_obj_add(res, "nextCursor", json_object_new_string(c));
		free(c);
	}
	free(keys);
	json_object_put(seen);
	answer(s, out, res, v, "resources/directory/read");
}
