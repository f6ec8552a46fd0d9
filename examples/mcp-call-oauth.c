/*
 * mcp-call-oauth.c - mcp-call's OAuth: the person is sent to the printed
 * URL (opened with xdg-open where there is a display), the redirect comes
 * back to a loopback listener (RFC 8252 7.3), and tokens are kept in a
 * 0600 file per resource under $XDG_STATE_HOME/mcp-call/.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mcp/client.h>

#include "mcp-call-oauth.h"

#define AUTHORIZE_WAIT_MS (5 * 60 * 1000) /* a person gets five minutes */

extern char **environ;

static int listener = -1;
static int listen_port;

/* $XDG_STATE_HOME/mcp-call (or ~/.local/state/mcp-call), made 0700. */
static int state_dir(char *out, size_t outsz)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	if (x && *x)
		snprintf(out, outsz, "%s/mcp-call", x);
	else if (home && *home)
		snprintf(out, outsz, "%s/.local/state/mcp-call", home);
	else
		return -1;
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", out);
	/* the parent may not exist yet either */
	for (char *p = parent + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(parent, 0700);
			*p = '/';
		}
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* The cache file of `resource`: its URL with every byte that is not
 * alphanumeric written as %XX, so two resources never share a file. */
static int cache_path(const char *resource, char *out, size_t outsz)
{
	char dir[4096];
	if (state_dir(dir, sizeof dir))
		return -1;
	size_t n = (size_t)snprintf(out, outsz, "%s/", dir);
	for (const unsigned char *r = (const unsigned char *)resource; *r && n + 4 < outsz; r++)
		n += (size_t)snprintf(out + n, outsz - n,
				      (*r >= '0' && *r <= '9') || (*r >= 'a' && *r <= 'z') ||
						      (*r >= 'A' && *r <= 'Z')
					      ? "%c"
					      : "%%%02X",
				      *r);
	if (n + 6 >= outsz)
		return -1;
	strcat(out, ".json");
	return 0;
}

static json_object *load_tokens(mcp_client *c, const char *resource, void *user)
{
	(void)c;
	(void)user;
	char path[8192];
	if (cache_path(resource, path, sizeof path))
		return NULL;
	return json_object_from_file(path);
}

static void save_tokens(mcp_client *c, const char *resource, json_object *rec, void *user)
{
	(void)c;
	(void)user;
	char path[8192], tmp[8300];
	if (cache_path(resource, path, sizeof path))
		return;
	snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	const char *s = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(s);
	int ok = write(fd, s, len) == (ssize_t)len;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		fprintf(stderr, "mcp-call: cannot keep the tokens in %s\n", path);
	}
}

static void open_browser(const char *url)
{
	if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
		return;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)"xdg-open", (char *)url, NULL};
	pid_t pid;
	if (posix_spawnp(&pid, "xdg-open", &fa, NULL, argv, environ) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	(void)pid; /* not waited for: SIGCHLD is not ignored, the zombie ends with us */
}

/* The person: the URL printed, the redirect awaited on the loopback
 * listener until the token fires or five minutes pass. */
static int authorize(mcp_client *c, const char *url, const char *redirect_uri, mcp_token *tok,
		     char **redirect_out, void *user)
{
	(void)c;
	(void)redirect_uri;
	(void)user;
	fprintf(stderr, "mcp-call: to authorize, open this URL:\n%s\n", url);
	open_browser(url);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long left = AUTHORIZE_WAIT_MS - ((t1.tv_sec - t0.tv_sec) * 1000L +
						 (t1.tv_nsec - t0.tv_nsec) / 1000000L);
		if (left <= 0) {
			fprintf(stderr, "mcp-call: nobody came back from the authorization page in "
					"%d minutes\n",
				AUTHORIZE_WAIT_MS / 60000);
			return MCP_ETIMEDOUT;
		}
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = mcp_token_fd(tok), .events = POLLIN}};
		int n = poll(p, p[1].fd >= 0 ? 2 : 1, (int)(left < 1000 ? left : 1000));
		if (mcp_token_reason(tok) != MCP_CANCEL_NONE)
			return MCP_ECANCELED;
		if (n <= 0 || !(p[0].revents & POLLIN))
			continue;
		int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct timeval tv = {.tv_sec = 5};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		char req[8192];
		ssize_t got = recv(fd, req, sizeof req - 1, 0);
		req[got > 0 ? got : 0] = 0;
		const char *page = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
		int done = 0;
		if (strncmp(req, "GET /callback?", 14) == 0) {
			size_t plen = strcspn(req + 4, " \r\n");
			char *r = malloc(plen + 40);
			if (r) {
				snprintf(r, plen + 40, "http://127.0.0.1:%d%.*s", listen_port, (int)plen,
					 req + 4);
				*redirect_out = r;
				done = 1;
#define DONE_TEXT "mcp-call: authorized; you may close this window.\n"
				page = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 49\r\n"
				       "Connection: close\r\n\r\n" DONE_TEXT;
				_Static_assert(sizeof DONE_TEXT - 1 == 49, "Content-Length");
			}
		}
		ssize_t w = send(fd, page, strlen(page), MSG_NOSIGNAL);
		(void)w;
		close(fd);
		if (done)
			return MCP_OK;
	}
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, len = 0, n;
	char chunk[4096];
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		char *nb = realloc(buf, len + n + 1);
		if (!nb) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = nb;
		memcpy(buf + len, chunk, n);
		len += n;
		cap = len;
	}
	(void)cap;
	fclose(f);
	if (buf) {
		buf[len] = 0;
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = 0;
	}
	return buf;
}

int mcp_call_oauth_logout(const char *url)
{
	char path[8192];
	if (cache_path(url, path, sizeof path)) {
		fprintf(stderr, "mcp-call: no state directory (XDG_STATE_HOME or HOME)\n");
		return 1;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		fprintf(stderr, "mcp-call: cannot remove %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int mcp_call_oauth_setup(mcp_client *c, const mcp_call_oauth_opts *o)
{
	char *secret = NULL, *key = NULL;
	if (o->secret_file && !(secret = read_file(o->secret_file))) {
		fprintf(stderr, "mcp-call: --client-secret-file %s: %s\n", o->secret_file,
			strerror(errno));
		return -1;
	}
	if (o->key_file && !(key = read_file(o->key_file))) {
		fprintf(stderr, "mcp-call: --client-key %s: %s\n", o->key_file, strerror(errno));
		free(secret);
		return -1;
	}
	int rc;
	if (o->client_credentials) {
		rc = mcp_client_set_oauth(c, MCP_OAUTH_CLIENT_CREDENTIALS, NULL, NULL);
	} else {
		/* RFC 8252 7.3: a loopback listener on a port of the
		 * system's choosing, on 127.0.0.1 rather than "localhost". */
		listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t al = sizeof a;
		if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) != 0 ||
		    listen(listener, 4) != 0 ||
		    getsockname(listener, (struct sockaddr *)&a, &al) != 0) {
			fprintf(stderr, "mcp-call: cannot listen on 127.0.0.1 for the redirect: %s\n",
				strerror(errno));
			free(secret);
			free(key);
			return -1;
		}
		listen_port = ntohs(a.sin_port);
		char ru[64];
		snprintf(ru, sizeof ru, "http://127.0.0.1:%d/callback", listen_port);
		rc = mcp_client_set_oauth(c, MCP_OAUTH_AUTHORIZATION_CODE, authorize, NULL);
		if (rc == MCP_OK)
			rc = mcp_client_set_oauth_redirect_uri(c, ru);
	}
	mcp_oauth_auth_method m = key ? MCP_OAUTH_AUTH_PRIVATE_KEY_JWT : MCP_OAUTH_AUTH_AUTO;
	if (rc == MCP_OK && (o->client_id || secret))
		rc = mcp_client_set_oauth_client(c, o->client_id, secret, m);
	if (rc == MCP_OK && key && (rc = mcp_client_set_oauth_private_key(c, key)) != MCP_OK)
		fprintf(stderr, "mcp-call: --client-key %s: not a PEM EC or RSA private key\n",
			o->key_file);
	if (rc == MCP_OK && o->scope)
		rc = mcp_client_set_oauth_scopes(c, o->scope);
	if (rc == MCP_OK)
		rc = mcp_client_set_oauth_store(c, load_tokens, save_tokens, NULL);
	/* explicit_bzero: a memset before free may be optimised away. */
	if (secret) {
		explicit_bzero(secret, strlen(secret));
		free(secret);
	}
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	if (rc != MCP_OK) {
		fprintf(stderr, "mcp-call: the OAuth settings were refused: %s\n", mcp_strerror(rc));
		return -1;
	}
	return 0;
}
