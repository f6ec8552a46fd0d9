/*
 * resource.c - resource identifiers (RFC 8707, RFC 9728) as the JWT
 * audience check and the HTTP layer compare them: an absolute http(s)
 * URI, and its canonical form.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/jwt/jwt.h"

int auth_uri_origin(const char *uri, size_t *origin_len)
{
	const char *p;
	if (strncasecmp(uri, "https://", 8) == 0)
		p = uri + 8;
	else if (strncasecmp(uri, "http://", 7) == 0)
		p = uri + 7;
	else
		return 0;
	size_t host = strcspn(p, "/?#");
	if (host == 0)
		return 0;
	for (size_t i = 0; i < host; i++)
		if (p[i] == '@' || (unsigned char)p[i] <= ' ' || (unsigned char)p[i] >= 0x7f)
			return 0; /* no userinfo, nothing a header cannot carry */
	*origin_len = (size_t)(p + host - uri);
	return 1;
}

int auth_resource_uri_valid(const char *uri)
{
	size_t origin;
	if (!uri || !auth_uri_origin(uri, &origin))
		return 0;
	for (const char *c = uri; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || *c == '"' || *c == '\\' ||
		    *c == '#' || *c == '?')
			return 0;
	return 1;
}

/* Writes the canonical form used to compare audiences into buf. */
static int canonical(const char *uri, char *buf, size_t cap)
{
	size_t origin;
	if (!auth_uri_origin(uri, &origin) || strlen(uri) >= cap)
		return 0;
	size_t o = 0;
	for (size_t i = 0; i < origin; i++)
		buf[o++] = (char)tolower((unsigned char)uri[i]);
	buf[o] = 0;
	/* A default port says nothing. */
	size_t bl = strlen(buf);
	if (strncmp(buf, "https://", 8) == 0 && bl > 4 && strcmp(buf + bl - 4, ":443") == 0)
		buf[o -= 4] = 0;
	else if (strncmp(buf, "http://", 7) == 0 && bl > 3 && strcmp(buf + bl - 3, ":80") == 0)
		buf[o -= 3] = 0;
	const char *path = uri + origin;
	size_t pl = strlen(path);
	if (pl > 0 && path[pl - 1] == '/')
		pl--;
	memcpy(buf + o, path, pl);
	buf[o + pl] = 0;
	return 1;
}

int auth_audience_matches(const char *aud, const char *resource)
{
	if (!aud || !resource)
		return 0;
	if (strcmp(aud, resource) == 0)
		return 1;
	char a[2048], r[2048];
	return canonical(aud, a, sizeof a) && canonical(resource, r, sizeof r) && strcmp(a, r) == 0;
}

void auth_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
