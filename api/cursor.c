/*
 * cursor.c - the cursors of paged lists (tools/list, resources/list,
 * resources/templates/list, prompts/list, tasks/list): opaque to the
 * client, issued and checked here.
 *
 * A cursor is the offset of the next page and a MAC (libsodium's
 * crypto_auth, HMAC-SHA-512-256) over the list's name and that offset,
 * base64url without padding.  So a cursor the server did not issue, one
 * edited by hand, or one of another list fails verification and is
 * answered -32602, as the spec asks of an invalid cursor.  The MAC key is
 * derived from the state key (mcp_server_set_state_key): processes behind
 * one load balancer that share it accept each other's cursors, and a key
 * rotation keeps the previous key's cursors valid like its states.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/internal.h"

#define CURSOR_RAW (8 + crypto_auth_BYTES)

void mcp_cursor_keys_derive(mcp_server *srv)
{
	/* A subkey per purpose: the sealing key itself never signs cursors. */
	crypto_kdf_derive_from_key(srv->cursor_key, sizeof srv->cursor_key, 1, "mcp_curs",
				   srv->state_key);
	if (srv->have_state_key_old)
		crypto_kdf_derive_from_key(srv->cursor_key_old, sizeof srv->cursor_key_old, 1,
					   "mcp_curs", srv->state_key_old);
	else
		sodium_memzero(srv->cursor_key_old, sizeof srv->cursor_key_old);
}

/* The MAC of (list, offset) under `key`. */
static void cursor_mac(unsigned char tag[crypto_auth_BYTES], const char *list,
		       const unsigned char off[8], const unsigned char key[32])
{
	crypto_auth_hmacsha512256_state st;
	static const char label[] = "libmcp cursor 1";
	crypto_auth_hmacsha512256_init(&st, key, 32);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)label, sizeof label);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)list, strlen(list) + 1);
	crypto_auth_hmacsha512256_update(&st, off, 8);
	crypto_auth_hmacsha512256_final(&st, tag);
}

char *mcp_make_cursor(const mcp_server *srv, const char *list, size_t offset)
{
	unsigned char raw[CURSOR_RAW];
	uint64_t v = offset;
	for (int i = 7; i >= 0; i--, v >>= 8)
		raw[i] = (unsigned char)v;
	cursor_mac(raw + 8, list, raw, srv->cursor_key);
	size_t n = sodium_base64_ENCODED_LEN(sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = malloc(n);
	if (out)
		sodium_bin2base64(out, n, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return out;
}

int mcp_parse_cursor(const mcp_server *srv, const char *cursor, const char *list,
		     size_t *offset)
{
	unsigned char raw[CURSOR_RAW];
	size_t got = 0;
	const char *end = NULL;
	if (strlen(cursor) > 2 * sizeof raw ||
	    sodium_base642bin(raw, sizeof raw, cursor, strlen(cursor), NULL, &got, &end,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    got != sizeof raw || *end)
		return -1;
	unsigned char tag[crypto_auth_BYTES];
	cursor_mac(tag, list, raw, srv->cursor_key);
	int ok = sodium_memcmp(tag, raw + 8, sizeof tag) == 0;
	if (!ok && srv->have_state_key_old) {
		cursor_mac(tag, list, raw, srv->cursor_key_old);
		ok = sodium_memcmp(tag, raw + 8, sizeof tag) == 0;
	}
	if (!ok)
		return -1;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | raw[i];
	if (v > SIZE_MAX)
		return -1;
	*offset = (size_t)v;
	return 0;
}
