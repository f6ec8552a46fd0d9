/*
 * fuzz-seal.c - libFuzzer target: what a client echoes back that the
 * server sealed or signed: the requestState of multi round-trip requests
 * (api/mrtr.c, seal/unseal: crypto_secretbox bound to the method, the
 * name, an argument digest and an expiry) and the cursors of the paged
 * lists (api/common.c, api_make_cursor/api_parse_cursor: an HMAC over the
 * list and the offset).
 *
 * seal_kind() and unseal() are static, and take a handler's context.
 * Rather than add an entry point to the library for a test, this file
 * compiles api/mrtr.c itself (the #include below): it then defines every
 * symbol of mrtr.c, so the linker never takes mrtr.o from the archive,
 * and the statics are in scope.  The context is a stack mcp_ctx whose
 * session names the server, which is all seal and unseal read.
 *
 * Input: byte 0 chooses
 *   bits 0-1: the method (tools/call, prompts/get, resources/read, or one
 *             made of the input's name);
 *   bit 2: the state is sealed as a parked handler's ("k":"park");
 *   bit 3: sealed under the previous key (server OLD), opened by server
 *          NEW which has it as its previous key (rotation);
 * and the rest is NAME NUL ARGS-JSON NUL TEXT (missing parts empty).
 *
 * Checked beyond ASan, UBSan and LeakSanitizer:
 *   - TEXT as a sealed state, opened for (method, NAME, ARGS) by both
 *     servers: never accepted unless it is one this run sealed (it cannot
 *     be: no key is known outside, and a seed's expiry has passed);
 *   - unseal(seal(TEXT)) == TEXT, park flag included, also across the key
 *     rotation; the sealed text is base64url;
 *   - a sealed state with one character changed, or opened for another
 *     name, other arguments or another method, is refused; one sealed
 *     under the new key is refused by the server that knows only the old;
 *   - TEXT as a cursor of the "tools" list: refused (the fuzzer holds no
 *     key); a cursor made for an input-chosen offset parses back to it,
 *     and is refused for another list or with a character changed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/mrtr.c"

static mcp_server *srv_new, *srv_old;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz-seal: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	unsigned char k_new[32], k_old[32];
	for (int i = 0; i < 32; i++) {
		k_new[i] = (unsigned char)(i * 7 + 1);
		k_old[i] = (unsigned char)(i * 13 + 5);
	}
	srv_new = mcp_server_new("fuzz-seal", "1");
	srv_old = mcp_server_new("fuzz-seal-old", "1");
	if (!srv_new || !srv_old || mcp_server_set_state_key(srv_new, k_new, k_old) != MCP_OK ||
	    mcp_server_set_state_key(srv_old, k_old, NULL) != MCP_OK)
		fail("cannot make the servers", NULL);
	return 0;
}

static json_object *parse_args(const char *text)
{
	json_object *o = json_tokener_parse(text);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* A sealed text with its character at `at` changed to another of the
 * alphabet. */
static char *changed(const char *s, size_t at)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char *t = strdup(s);
	if (!t)
		abort();
	size_t n = strlen(t);
	if (!n)
		return t;
	at %= n;
	const char *p = strchr(alphabet, t[at]);
	t[at] = alphabet[((p ? (size_t)(p - alphabet) : 0) + 1 + at % 63) % 64];
	return t;
}

/* Whether `sealed` opens for ctx, and to `want` (NULL: must not open). */
static void expect_open(const mcp_ctx *ctx, const char *sealed, const char *want, int park,
			const char *what)
{
	int got_park = -1;
	char *state = unseal(ctx, sealed, &got_park);
	if (!want) {
		if (state)
			fail(what, state);
		return;
	}
	if (!state)
		fail(what, sealed);
	if (strcmp(state, want) != 0 || got_park != park)
		fail(what, state);
	free(state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	/* NAME \0 ARGS \0 TEXT, each NUL-terminated here */
	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = buf[size] = buf[size + 1] = 0;
	const char *name = buf;
	const char *args_text = name + strlen(name) + 1;
	if (args_text > buf + size - 1)
		args_text = buf + size;
	const char *text = args_text + strlen(args_text) + 1;
	if (text > buf + size)
		text = buf + size + 1;
	static const char *const methods[] = { "tools/call", "prompts/get", "resources/read" };
	const char *method = (flags & 3) < 3 ? methods[flags & 3] : name;
	int park = (flags & 4) != 0;
	json_object *args = parse_args(args_text);

	api_sess s_new = { .srv = srv_new }, s_old = { .srv = srv_old };
	mcp_ctx ctx = { .sess = &s_new, .mrtr_method = method, .mrtr_name = name,
			.mrtr_args = args };
	mcp_ctx octx = ctx;
	octx.sess = &s_old;

	/* Arbitrary text as a sealed state, opened by both servers. */
	expect_open(&ctx, text, NULL, 0, "an unsealed text opened");
	expect_open(&octx, text, NULL, 0, "an unsealed text opened (old key)");

	/* The round trip, under the key of bit 3. */
	const mcp_ctx *sealer = flags & 8 ? &octx : &ctx;
	char *sealed = seal_kind(sealer, text, park);
	if (!sealed)
		fail("seal failed", NULL);
	for (const char *p = sealed; *p; p++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p))
			fail("a sealed state is not base64url", sealed);
	expect_open(&ctx, sealed, text, park, "unseal(seal(x)) != x");
	if (flags & 8)
		expect_open(&octx, sealed, text, park, "unseal(seal(x)) != x (old key)");
	else
		expect_open(&octx, sealed, NULL, 0,
			    "the old key opened a state sealed under the new");

	/* Bound to where it was sealed. */
	char *bad = changed(sealed, strlen(text) + strlen(name));
	expect_open(&ctx, bad, NULL, 0, "a changed sealed state opened");
	free(bad);
	mcp_ctx other = ctx;
	char other_name[300];
	snprintf(other_name, sizeof other_name, "%.200sx", name);
	other.mrtr_name = other_name;
	expect_open(&other, sealed, NULL, 0, "a state opened for another name");
	other = ctx;
	other.mrtr_method = strcmp(method, "tools/call") ? "tools/call" : "prompts/get";
	expect_open(&other, sealed, NULL, 0, "a state opened for another method");
	other = ctx;
	json_object *args2 = args ? json_object_get(args) : json_object_new_object();
	json_object_object_add(args2, "\x01fuzz", json_object_new_int(1));
	other.mrtr_args = args2;
	expect_open(&other, sealed, NULL, 0, "a state opened for other arguments");
	json_object_put(args2);
	free(sealed);

	/* Cursors: arbitrary text, then a round trip for an input offset. */
	size_t off = 0;
	if (api_parse_cursor(srv_new, text, "tools", &off) == 0)
		fail("an unsigned cursor parsed", text);
	size_t want = 0;
	for (size_t i = 0; i < size && i < 8; i++)
		want = want << 8 | data[i];
	char *cur = api_make_cursor(srv_new, name, want);
	if (!cur)
		fail("api_make_cursor failed", NULL);
	if (api_parse_cursor(srv_new, cur, name, &off) != 0 || off != want)
		fail("a cursor does not parse back", cur);
	if (api_parse_cursor(srv_old, cur, name, &off) == 0)
		fail("a cursor parsed with a key that did not sign it", cur);
	if (api_parse_cursor(srv_new, cur, other_name, &off) == 0)
		fail("a cursor parsed for another list", cur);
	char *cbad = changed(cur, want);
	if (api_parse_cursor(srv_new, cbad, name, &off) == 0)
		fail("a changed cursor parsed", cbad);
	free(cbad);
	free(cur);

	json_object_put(args);
	free(buf);
	return 0;
}
