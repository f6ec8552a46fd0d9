// make-tokens.mjs - the JWT verifier's test vectors, made by an independent
// JOSE implementation (jose), so that libmcp is checked against tokens it did
// not make itself.  Writes one JSON document to standard output:
//
//   { resource, issuer, now, jwks, jwks_single,
//     cases: [ { name, token, status, ... } ], http: { party: token } }
//
// `status` is what the HTTP layer must answer (200: accepted); accepted
// cases also say which subject, client id and scopes the principal gets.
// Optional per case: `strict` (typ must be at+jwt), `required` (scopes the
// server requires), `url` (the request target), `header` (the whole
// Authorization value instead of "Bearer <token>").  Keys are made afresh
// on every run; `now` is the time they were signed at, and the C test
// verifies at that instant.
import * as jose from 'jose';

const resource = 'https://mcp.example.test/mcp';
const issuer = 'https://auth.example.test';
const now = Math.floor(Date.now() / 1000);
const enc = new TextEncoder();

async function pair(alg, opts) {
	return jose.generateKeyPair(alg, { extractable: true, ...opts });
}

const rsa1 = await pair('RS256', { modulusLength: 2048 });
const rsa2 = await pair('PS256', { modulusLength: 3072 });
const ec1 = await pair('ES256');
const ec384 = await pair('ES384');
const ed1 = await pair('EdDSA', { crv: 'Ed25519' });
const rogue = await pair('RS256', { modulusLength: 2048 }); // not in the set

async function pub(kp, kid, extra = {}) {
	return { ...(await jose.exportJWK(kp.publicKey)), kid, use: 'sig', ...extra };
}

const jwks = {
	keys: [
		await pub(rsa1, 'rsa-1', { alg: 'RS256' }),
		await pub(rsa2, 'rsa-2'),
		await pub(ec1, 'ec-1', { alg: 'ES256' }),
		await pub(ec384, 'ec-384'),
		await pub(ed1, 'ed-1'),
		// Skipped by the verifier: an encryption key and a symmetric one.
		{ ...(await jose.exportJWK(rsa1.publicKey)), kid: 'rsa-enc', use: 'enc', alg: 'RSA-OAEP-256' },
		{ kty: 'oct', kid: 'hmac', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0' },
	],
};
// A set with one key, for tokens without a kid.
const jwks_single = { keys: [await pub(ec1, 'ec-1', { alg: 'ES256' })] };

const base = {
	iss: issuer,
	aud: resource,
	sub: 'user-1',
	client_id: 'client-a',
	scope: 'mcp:read mcp:write',
	iat: now - 10,
	exp: now + 600,
};

// WebCrypto binds a key to one algorithm; a token signed with a key under
// another algorithm of its type (RS384 with an RSA key made for PS256) needs
// the key imported again for that algorithm.
async function keyFor(key, alg) {
	if (key instanceof Uint8Array || alg.startsWith('HS')) return key;
	return jose.importJWK(await jose.exportJWK(key), alg);
}

async function sign(key, header, claims = {}, drop = []) {
	const body = { ...base, ...claims };
	for (const k of drop) delete body[k];
	for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
	return new jose.SignJWT(body).setProtectedHeader(header).sign(await keyFor(key, header.alg));
}

// Signs an arbitrary payload text (for malformed claims).
async function signRaw(key, header, text) {
	return new jose.CompactSign(enc.encode(text)).setProtectedHeader(header)
		.sign(await keyFor(key, header.alg));
}

const b64 = (s) => Buffer.from(s).toString('base64url');
const parts = (t) => t.split('.');

// The signature with one bit of one byte flipped.
function flipSignature(token) {
	const [h, p, s] = parts(token);
	const raw = Buffer.from(s, 'base64url');
	raw[raw.length >> 1] ^= 0x01;
	return `${h}.${p}.${raw.toString('base64url')}`;
}

// The same signature bytes spelled non-canonically: a bit set in the
// unused low bits of the last base64url character.
function nonCanonical(token) {
	const [h, p, s] = parts(token);
	const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
	const last = alphabet.indexOf(s[s.length - 1]);
	const spare = { 2: 0x0f, 3: 0x03 }[s.length % 4];
	if (!spare) throw new Error('no spare bits in this signature length');
	const changed = alphabet[(last & ~spare) | ((last & spare) ^ 1)];
	return `${h}.${p}.${s.slice(0, -1)}${changed}`;
}

const ok = (extra = {}) => ({ status: 200, sub: 'user-1', client_id: 'client-a', ...extra });
const rsaPem = await jose.exportSPKI(rsa1.publicKey);
const cases = [];
const add = (name, token, expect, extra = {}) => cases.push({ name, token, ...expect, ...extra });

// ---- accepted -----------------------------------------------------------
add('RS256 valid', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }),
	ok({ scopes: ['mcp:read', 'mcp:write'] }));
add('ES256 valid, aud array, scp array', await sign(ec1.privateKey, { alg: 'ES256', kid: 'ec-1', typ: 'JWT' },
	{ aud: ['https://other.example.test', resource], scope: undefined, scp: ['tools', 'admin'] }),
	ok({ scopes: ['tools', 'admin'] }));
add('EdDSA valid, typ at+jwt', await sign(ed1.privateKey, { alg: 'EdDSA', kid: 'ed-1', typ: 'at+jwt' }),
	ok({ scopes: ['mcp:read', 'mcp:write'] }));
add('EdDSA valid under strict typ', await sign(ed1.privateKey, { alg: 'EdDSA', kid: 'ed-1', typ: 'at+jwt' }),
	ok(), { strict: true });
add('PS256 valid (3072-bit key)', await sign(rsa2.privateKey, { alg: 'PS256', kid: 'rsa-2' }), ok());
add('RS384 valid', await sign(rsa2.privateKey, { alg: 'RS384', kid: 'rsa-2' }), ok());
add('ES384 valid', await sign(ec384.privateKey, { alg: 'ES384', kid: 'ec-384' }), ok());
add('azp as client id', await sign(ec1.privateKey, { alg: 'ES256', kid: 'ec-1' },
	{ client_id: undefined, azp: 'client-b' }), ok({ client_id: 'client-b' }));
add('aud with a trailing slash', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ aud: resource + '/' }), ok());
add('expired 30 s ago, within the skew', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ exp: now - 30 }), ok());
add('no kid, one key in the set', await sign(ec1.privateKey, { alg: 'ES256' }), ok(), { jwks: 'single' });
add('lowercase scheme', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }), ok(),
	{ scheme: 'bearer' });

// ---- refused: 401 invalid_token -------------------------------------------
const bad = { status: 401, error: 'invalid_token' };
add('wrong aud', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ aud: 'https://other.example.test/mcp' }), bad);
add('no aud', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }, {}, ['aud']), bad);
add('wrong iss', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ iss: 'https://evil.example.test' }), bad);
add('expired', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ iat: now - 7200, exp: now - 3600 }), bad);
add('not yet valid (nbf)', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ nbf: now + 3600 }), bad);
add('issued in the future (iat)', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ iat: now + 3600, exp: now + 7200 }), bad);
add('no exp', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }, {}, ['exp']), bad);
add('exp a string', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	{ exp: String(now + 600) }), bad);
add('bad signature (RS256)', flipSignature(await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' })), bad);
add('bad signature (ES256)', flipSignature(await sign(ec1.privateKey, { alg: 'ES256', kid: 'ec-1' })), bad);
add('bad signature (EdDSA)', flipSignature(await sign(ed1.privateKey, { alg: 'EdDSA', kid: 'ed-1' })), bad);
add('signed by a key not in the set, kid of one that is', await sign(rogue.privateKey,
	{ alg: 'RS256', kid: 'rsa-1' }), bad);
add('claims changed after signing', (() => {
	return null;
})(), bad); // filled below
add('alg none', new jose.UnsecuredJWT({ ...base }).encode(), bad);
add('alg none with a signature part', `${b64(JSON.stringify({ alg: 'none' }))}.${b64(JSON.stringify(base))}.c2ln`, bad);
add('HS256 keyed with the RSA public key (PEM)', await sign(enc.encode(rsaPem), { alg: 'HS256', kid: 'rsa-1' }), bad);
add('HS256 keyed with the oct key of the set', await sign(Buffer.from('c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', 'base64url'),
	{ alg: 'HS256', kid: 'hmac' }), bad);
add('kid not in the set', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-9' }), bad);
add('kid of the encryption key', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-enc' }), bad);
add('no kid, several keys fit', await sign(rsa1.privateKey, { alg: 'RS256' }), bad);
add('ES256 header over an RSA kid', await sign(ec1.privateKey, { alg: 'ES256', kid: 'rsa-1' }), bad);
add('RS256 header over an EC kid', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'ec-1' }), bad);
add('PS256 over a JWK pinned to RS256', await sign(rsa1.privateKey, { alg: 'PS256', kid: 'rsa-1' }), bad);
add('ES384 header over a P-256 kid', await sign(ec384.privateKey, { alg: 'ES384', kid: 'ec-1' }), bad);
add('crit header (b64, RFC 7797)', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1', b64: true, crit: ['b64'] }), bad);
add('typ dpop+jwt', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1', typ: 'dpop+jwt' }), bad);
add('typ JWT under strict typ', await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1', typ: 'JWT' }), bad,
	{ strict: true });
add('duplicate claim', await signRaw(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	`{"iss":"${issuer}","aud":"${resource}","sub":"user-1","sub":"admin","exp":${now + 600}}`), bad);
add('duplicate header member', `${b64(`{"alg":"RS256","kid":"rsa-1","alg":"none"}`)}.${b64(JSON.stringify(base))}.c2ln`, bad);
add('claims not an object', await signRaw(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }, '["not","claims"]'), bad);
add('claims with trailing bytes', await signRaw(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' },
	JSON.stringify(base) + ' x'), bad);

const good = await sign(ec1.privateKey, { alg: 'ES256', kid: 'ec-1' });
add('truncated (signature cut)', good.slice(0, good.length - 10), bad);
add('truncated (two parts)', parts(good).slice(0, 2).join('.'), bad);
add('four parts', good + '.AAAA', bad);
add('empty payload part', `${parts(good)[0]}..${parts(good)[2]}`, bad);
add('non-canonical base64url', nonCanonical(good), bad);
add('padded base64url', good + '=', bad);
add('standard base64 alphabet', (() => {
	const [h, p, sig] = parts(good);
	return `${h}.${p}.+${sig.slice(1)}`;
})(), bad);
add('oversized (20 KiB)', 'a'.repeat(20480), bad);

// The header of one token with the claims of another: the signature no
// longer covers what is claimed.
{
	const t = parts(await sign(rsa1.privateKey, { alg: 'RS256', kid: 'rsa-1' }));
	const forged = b64(JSON.stringify({ ...base, scope: 'admin' }));
	const i = cases.findIndex((c) => c.name === 'claims changed after signing');
	cases[i].token = `${t[0]}.${forged}.${t[2]}`;
}

// ---- refused at the door, whatever the token ------------------------------
add('token in the query string too', good, { status: 400, error: 'invalid_request' },
	{ url: `/mcp?session=1&access_token=${good}` });
add('two spaces after Bearer', good, { status: 400, error: 'invalid_request' },
	{ header: `Bearer  ${good}` });
add('Basic scheme', good, { status: 401 }, { header: 'Basic dXNlcjpwYXNz' });
add('no Authorization header', good, { status: 401 }, { header: null });
add('valid, but without a required scope', good, { status: 403, error: 'insufficient_scope' },
	{ required: 'mcp:read mcp:admin' });
add('valid, with the required scopes', good, ok(), { required: 'mcp:read' });

for (const c of cases)
	if (!c.token) throw new Error(`case "${c.name}" has no token`);

// ---- parties for the HTTP tests (tests/http/test_auth_http.py) -------------
// Valid tokens of several subjects: two sessions' owners for the hijack
// check, a step-up of the same subject, and callers of their own for the
// rate limit and the hooks, so that no test uses up another's bucket.
const http = {};
const parties = {
	alice: { sub: 'alice', client_id: 'client-a', scope: 'mcp:read' },
	alice_admin: { sub: 'alice', client_id: 'client-a', scope: 'mcp:read mcp:admin' },
	bob: { sub: 'bob', client_id: 'client-b', scope: 'mcp:read' },
	carol: { sub: 'carol', client_id: 'client-c', scope: 'mcp:read' },
	dave: { sub: 'dave', client_id: 'client-d', scope: 'mcp:read mcp:admin' },
	erin: { sub: 'erin', client_id: 'client-e', scope: 'mcp:read' },
};
for (const [name, claims] of Object.entries(parties))
	http[name] = await sign(ec1.privateKey, { alg: 'ES256', kid: 'ec-1' }, claims);

process.stdout.write(JSON.stringify({ resource, issuer, now, jwks, jwks_single, cases, http },
	null, 1) + '\n');
