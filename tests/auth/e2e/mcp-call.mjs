// mcp-call.mjs - mcp-call --oauth end to end with peers nobody here wrote:
// oauth2-mock-server as the authorization server, mcp-everything --http
// --auth-* as the protected resource, and the real mcp-call binary driven
// headless.  make check-auth-e2e runs it after rotation.mjs
// (tests/auth/e2e/run.sh).
//
//   node mcp-call.mjs --server PATH/mcp-everything --mcp-call PATH/mcp-call [--log FILE]
//
// The script plays the person: it reads the authorization URL mcp-call
// prints on standard error, GETs it without following the redirect (the
// mock consents at once), and GETs the Location, which is mcp-call's
// loopback listener.  mcp-call runs with XDG_STATE_HOME in a scratch
// directory and no DISPLAY, as --oauth --client-id libmcp-e2e (the mock
// has no dynamic registration).
//
// 1. First use: the person is asked once, `call echo` succeeds, and the
//    token cache is a 0600 file.
// 2. A second run is served from the cache: no person, nothing at the AS.
// 3. Refresh after expiry: a new authorization for a token that lives
//    TTL_S seconds (--logout first), a wait until it has expired, then a
//    run that refreshes (one refresh_token grant) and asks no person.
// 4. Step-up: admin_echo gets 403 insufficient_scope; mcp-call authorizes
//    again for the union of the scopes and the call succeeds.
// 5. A revoked refresh token: the step-up's token is let expire, past the
//    60 s of clock skew the resource server allows (api/authz.c), so that
//    the server refuses it too, and the AS answers the refresh_token grant
//    with 400 invalid_grant; mcp-call goes back to the person and succeeds.
//    (Within the skew the expired token still works: the refusal of the
//    refresh alone does not send mcp-call to the person, rightly.)
// 6. A token kept for another resource is not sent: the cache file of this
//    server gets a record whose resource is another URL, holding a token
//    that this server would accept (shown first with --bearer: its subject
//    "planted" appears in the server's access log).  mcp-call must ask the
//    person instead, the subject must not appear again, and the record's
//    refresh token must never reach the AS.  Then the AS issues tokens for
//    another audience: the client cannot tell (api/client-oauth.c keeps a
//    token to the resource it asked it for, and does not read it), the
//    server refuses them, and the run must fail and end by itself (exit 3).
// 7. No token the AS issued appears on mcp-call's standard error in any run.
// Prints one "ok" or "FAIL" line per check and a table of the runs; exits
// 0 when all passed.  Every wait is bounded; nothing depends on speed.
//
// What the mock needs (read from oauth2-mock-server 9.3.0's source): it
// ignores `resource` and scopes its tokens "dummy" unless asked, so hooks
// set aud from `resource` and the scope from the authorization request
// (kept across refreshes by refresh token).  It issues a refresh token with
// every authorization_code and refresh_token grant, and accepts any refresh
// token it is shown; its tokens live 3600 s, so a hook shortens exp and
// expires_in when a step needs expiry.  mcp-call refreshes 30 s before
// expires_in runs out (REFRESH_SKEW_S in api/client-oauth.c), so TTL_S is
// above 30 to leave the run that gets the token a window to use it; for
// step 5 only the token's exp is short (JWT_TTL_S), as the client's
// expires_in need not be.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync }
	from 'node:fs';
import { createInterface } from 'node:readline';
import { arg, freePort, accepts } from './common.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuth2Server, Events } from 'oauth2-mock-server';

const serverBin = arg('--server', null);
const callBin = arg('--mcp-call', null);
const serverLog = arg('--log', null);
if (!serverBin || !callBin) {
	console.error('usage: mcp-call.mjs --server PATH/mcp-everything --mcp-call PATH/mcp-call [--log FILE]');
	process.exit(2);
}
const CLIENT_ID = 'libmcp-e2e';
const TTL_S = 36;
const JWT_TTL_S = 5;
const SERVER_SKEW_S = 60; // mcp_server_set_auth_clock_skew_ms's default
const scratch = mkdtempSync(join(tmpdir(), 'libmcp-e2e-call-'));
const stateHome = join(scratch, 'state');
const jwksFile = join(scratch, 'jwks.json');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let failures = 0;
function check(ok, what) {
	console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
	if (!ok) failures++;
	return ok;
}

// ---- the authorization server, and what it saw ---------------------------------------
const as = new OAuth2Server();
await as.issuer.keys.generate('RS256');
await as.start(0, '127.0.0.1');
as.issuer.url = `http://127.0.0.1:${as.address().port}`;
const issuer = as.issuer.url;
writeFileSync(jwksFile, JSON.stringify({ keys: as.issuer.keys.toJSON() }));

const mode = { ttl: null, jwtTtl: null, refuseRefresh: false, aud: null };
const seen = { metadata: 0, authorize: 0, authorization_code: 0, refresh_token: 0, refused: 0,
	other: 0 };
const issued = new Set();          // every access, refresh and id token handed out
const refreshSeen = [];            // every refresh token presented to the token endpoint
const scopeOfCode = new Map();     // authorization code -> scope asked for
const scopeOfRefresh = new Map();  // refresh token -> scope of its grant

as.service.on(Events.BeforeWellKnownOpenIdConfiguration, () => { seen.metadata++; });
as.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
	seen.authorize++;
	const code = redirect.url.searchParams.get('code');
	if (code) scopeOfCode.set(code, new URL(req.url, issuer).searchParams.get('scope') ?? '');
});
function grantScope(body) {
	if (body.grant_type === 'authorization_code') return scopeOfCode.get(body.code);
	if (body.grant_type === 'refresh_token') return scopeOfRefresh.get(body.refresh_token);
	return undefined;
}
as.service.on(Events.BeforeTokenSigning, (token, req) => {
	if (!('scope' in token.payload)) return; // the id_token keeps its own audience
	const body = req.body ?? {};
	if (body.resource) token.payload.aud = mode.aud ?? body.resource;
	const scope = grantScope(body);
	if (scope !== undefined) token.payload.scope = scope;
	token.payload.client_id = body.client_id ?? CLIENT_ID;
	if (mode.jwtTtl ?? mode.ttl) token.payload.exp = token.payload.iat + (mode.jwtTtl ?? mode.ttl);
});
as.service.on(Events.BeforeResponse, (response, req) => {
	const body = req.body ?? {};
	if (body.grant_type in seen) seen[body.grant_type]++;
	else seen.other++;
	if (body.grant_type === 'refresh_token') {
		refreshSeen.push(body.refresh_token);
		if (mode.refuseRefresh) {
			seen.refused++;
			response.statusCode = 400;
			response.body = { error: 'invalid_grant', error_description: 'the refresh token was revoked' };
			return;
		}
	}
	if (response.statusCode !== 200) return;
	const scope = grantScope(body);
	if (scope !== undefined) response.body.scope = scope;
	if (mode.ttl) response.body.expires_in = mode.ttl;
	for (const k of ['access_token', 'refresh_token', 'id_token'])
		if (response.body[k]) issued.add(response.body[k]);
	if (response.body.refresh_token)
		scopeOfRefresh.set(response.body.refresh_token, response.body.scope);
});
console.log(`AS ready ${issuer}`);

// ---- the resource server --------------------------------------------------------------
const port = await freePort();
const mcpUrl = `http://127.0.0.1:${port}/mcp`;
const serverArgs = ['--http', `127.0.0.1:${port}`, '--auth-resource', mcpUrl, '--auth-jwks', jwksFile,
	'--auth-issuer', issuer, '--auth-scopes', 'mcp:read mcp:admin', '--auth-require', 'mcp:read',
	'--access-log'];
console.log(`resource server: ${serverBin} ${serverArgs.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`);
const server = spawn(serverBin, serverArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
const serverLines = [];
const logFile = serverLog ? createWriteStream(serverLog) : null;
createInterface({ input: server.stderr }).on('line', (l) => {
	serverLines.push(l);
	logFile?.write(`${l}\n`);
});

async function serverUp() {
	for (let i = 0; i < 300 && server.exitCode === null; i++) {
		if (await accepts(port))
			return true;
		await sleep(50);
	}
	return false;
}

// ---- mcp-call, and the person -------------------------------------------------------------
const cacheFile = join(stateHome, 'mcp-call',
	`${mcpUrl.replace(/[^0-9A-Za-z]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}.json`);
const stderrs = [];

// One GET, redirects not followed.
async function get(url) {
	const res = await fetch(url, { redirect: 'manual' });
	await res.arrayBuffer();
	return { status: res.status, location: res.headers.get('location') };
}

// Runs mcp-call --http URL ARGS; whenever it prints the authorization URL
// the person follows it.  Bounded: mcp-call gives up after 60 s itself, and
// is killed at 90 s.
function run(args) {
	return new Promise((resolve) => {
		const env = { ...process.env, XDG_STATE_HOME: stateHome };
		delete env.DISPLAY;
		delete env.WAYLAND_DISPLAY;
		const argv = ['--http', mcpUrl, '--timeout', '60000', ...args];
		const p = spawn(callBin, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
		let out = '';
		const err = [];
		const person = [];
		let asked = 0;
		p.stdout.on('data', (d) => { out += d; });
		createInterface({ input: p.stderr }).on('line', (line) => {
			err.push(line);
			if (line.startsWith(`${issuer}/authorize?`)) {
				asked++;
				person.push((async () => {
					const a = await get(line.trim());
					if (a.status === 302 && a.location)
						await get(a.location);
				})().catch((e) => err.push(`(the person: ${e})`)));
			}
		});
		const killer = setTimeout(() => p.kill('SIGKILL'), 90000);
		p.on('close', async (code, signal) => {
			clearTimeout(killer);
			await Promise.allSettled(person);
			const stderr = err.join('\n');
			stderrs.push(stderr);
			resolve({ code: code ?? signal, out, stderr, asked });
		});
	});
}

function counts() { return { ...seen }; }
function delta(before) {
	const d = [];
	if (seen.metadata - before.metadata) d.push(`metadata ${seen.metadata - before.metadata}`);
	if (seen.authorize - before.authorize) d.push(`authorize ${seen.authorize - before.authorize}`);
	if (seen.authorization_code - before.authorization_code)
		d.push(`token(code) ${seen.authorization_code - before.authorization_code}`);
	if (seen.refresh_token - before.refresh_token)
		d.push(`token(refresh) ${seen.refresh_token - before.refresh_token}` +
			(seen.refused - before.refused ? ` [${seen.refused - before.refused} refused 400 invalid_grant]` : ''));
	if (seen.other - before.other) d.push(`token(other) ${seen.other - before.other}`);
	return d.length ? d.join(', ') : 'nothing';
}
function diff(before, key) { return seen[key] - before[key]; }

const table = [];
function row(step, did, before, code) {
	table.push([step, did, delta(before), String(code)]);
}
function why(r) {
	return `exit ${r.code}, asked ${r.asked}, stdout ${JSON.stringify(r.out.slice(0, 300))}, stderr:\n${r.stderr}`;
}
function cacheRecord() {
	try { return JSON.parse(readFileSync(cacheFile, 'utf8')); } catch { return null; }
}
function claims(token) {
	return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

// Waits, by the clock, until the cached access token has expired (its exp
// plus `beyond` seconds, with a second to spare): bounded by TTL_S +
// beyond + 30 s.
async function waitExpiry(beyond) {
	const rec = cacheRecord();
	const exp = rec?.access_token ? claims(rec.access_token).exp : 0;
	const t0 = Date.now();
	while (Date.now() / 1000 < exp + beyond + 1 && Date.now() - t0 < (TTL_S + beyond + 30) * 1000)
		await sleep(250);
	return Math.round((Date.now() - t0) / 1000);
}

const oauth = ['--oauth', '--client-id', CLIENT_ID];

try {
	check(await serverUp(), `resource server reachable at ${mcpUrl}`);

	// 1. First use.
	let b = counts();
	let r = await run([...oauth, 'call', 'echo', '{"text":"first"}']);
	check(r.code === 0 && r.out.includes('first'), `1 first use: echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	check(r.asked === 1, `1 first use: the person was asked once (${r.asked})`);
	check(diff(b, 'authorization_code') === 1, '1 first use: one authorization_code grant at the AS');
	const mode0 = existsSync(cacheFile) ? (statSync(cacheFile).mode & 0o777) : null;
	check(mode0 === 0o600, `1 first use: the token cache ${cacheFile} exists with mode ` +
		`${mode0 === null ? '(none)' : mode0.toString(8)}`);
	const rec1 = cacheRecord();
	check(rec1?.resource === mcpUrl && !!rec1?.refresh_token,
		`1 first use: the cache names the resource and keeps a refresh token (${rec1?.resource})`);
	row('1 first use', `asked ${r.asked}, echo ok, cache ${mode0?.toString(8)}`, b, r.code);

	// 2. From the cache.
	b = counts();
	r = await run([...oauth, 'call', 'echo', '{"text":"second"}']);
	check(r.code === 0 && r.out.includes('second'), `2 cached: echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	check(r.asked === 0 && delta(b) === 'nothing', `2 cached: no person, nothing at the AS (asked ${r.asked}; AS: ${delta(b)})`);
	row('2 cached token', `asked ${r.asked}, echo ok`, b, r.code);

	// 3. Refresh after expiry.
	b = counts();
	const lo = await run(['--logout']);
	mode.ttl = TTL_S;
	r = await run([...oauth, 'call', 'echo', '{"text":"short"}']);
	mode.ttl = null;
	check(lo.code === 0 && r.code === 0 && r.asked === 1,
		`3 refresh: --logout, then a new authorization for a ${TTL_S} s token (${r.code === 0 ? `asked ${r.asked}` : why(r)})`);
	row(`3a --logout, ${TTL_S} s token`, `asked ${r.asked}, echo ok`, b, r.code);
	const waited = await waitExpiry(0);
	const expired = cacheRecord()?.access_token && claims(cacheRecord().access_token).exp < Date.now() / 1000;
	check(!!expired, `3 refresh: the cached access token has expired (waited ${waited} s)`);
	b = counts();
	r = await run([...oauth, 'call', 'echo', '{"text":"refreshed"}']);
	check(r.code === 0 && r.out.includes('refreshed'), `3 refresh: echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	check(r.asked === 0 && diff(b, 'refresh_token') === 1 && diff(b, 'authorization_code') === 0,
		`3 refresh: one refresh_token grant, no person (asked ${r.asked}; AS: ${delta(b)})`);
	row(`3b after expiry (waited ${waited} s)`, `asked ${r.asked}, refreshed, echo ok`, b, r.code);

	// 4. Step-up; its token is short-lived again, for step 5.
	b = counts();
	mode.ttl = TTL_S;
	mode.jwtTtl = JWT_TTL_S;
	const authBefore = seen.authorize;
	const lastScope = [];
	const onAuth = (redirect, req) => lastScope.push(new URL(req.url, issuer).searchParams.get('scope'));
	as.service.on(Events.BeforeAuthorizeRedirect, onAuth);
	r = await run([...oauth, 'call', 'admin_echo', '{"text":"admin"}']);
	as.service.off(Events.BeforeAuthorizeRedirect, onAuth);
	mode.ttl = mode.jwtTtl = null;
	check(r.code === 0 && r.out.includes('admin'), `4 step-up: admin_echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	const asked4 = (lastScope[lastScope.length - 1] ?? '').split(' ');
	check(r.asked === 1 && seen.authorize - authBefore === 1 &&
		asked4.includes('mcp:admin') && asked4.includes('mcp:read'),
		`4 step-up: one new authorization for the union of scopes (${lastScope.join(' | ')})`);
	const granted4 = (cacheRecord()?.scope ?? '').split(' ');
	check(granted4.includes('mcp:admin') && granted4.includes('mcp:read'),
		`4 step-up: the cached grant holds both scopes (${cacheRecord()?.scope})`);
	row('4 step-up admin_echo', `403 -> asked ${r.asked} for "${lastScope.join(' | ')}", ok`, b, r.code);

	// 5. A revoked refresh token.
	const waited5 = await waitExpiry(SERVER_SKEW_S);
	const exp5 = cacheRecord()?.access_token ? claims(cacheRecord().access_token).exp : Infinity;
	check(exp5 + SERVER_SKEW_S < Date.now() / 1000,
		`5 revoked refresh token: the cached access token expired more than ${SERVER_SKEW_S} s ago (waited ${waited5} s)`);
	b = counts();
	mode.refuseRefresh = true;
	r = await run([...oauth, 'call', 'echo', '{"text":"revoked"}']);
	mode.refuseRefresh = false;
	check(r.code === 0 && r.out.includes('revoked'), `5 revoked refresh token: echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	check(diff(b, 'refused') === 1 && r.asked === 1 && diff(b, 'authorization_code') === 1,
		`5 revoked refresh token: refused once, then the person was asked (asked ${r.asked}; AS: ${delta(b)})`);
	row(`5 refresh refused (waited ${waited5} s)`, `refresh refused, asked ${r.asked}, echo ok`, b, r.code);

	// 6. A token kept for another resource.
	const planted = await as.issuer.buildToken({ scopesOrTransform: (_h, p) => {
		Object.assign(p, { aud: mcpUrl, scope: 'mcp:read mcp:admin', sub: 'planted', client_id: CLIENT_ID });
	} });
	const plantedRefresh = 'planted-refresh-token';
	const plantedSeen = () => serverLines.filter((l) => l.includes('sub=planted')).length;
	b = counts();
	r = await run(['--bearer', planted, 'call', 'echo', '{"text":"control"}']);
	const control = plantedSeen();
	check(r.code === 0 && control > 0,
		`6 control: the planted token is accepted by this server with --bearer (exit ${r.code}, ` +
		`${control} access-log lines with sub=planted)`);
	row('6a control --bearer', 'sent the token itself, echo ok', b, r.code);
	const other = 'http://127.0.0.1:1/other';
	writeFileSync(cacheFile, JSON.stringify({ resource: other, access_token: planted,
		refresh_token: plantedRefresh, expires_at: Math.floor(Date.now() / 1000) + 3600,
		scope: 'mcp:read mcp:admin', issuer }), { mode: 0o600 });
	b = counts();
	r = await run([...oauth, 'call', 'echo', '{"text":"own"}']);
	check(r.code === 0 && r.out.includes('own'), `6 other resource: echo answers (${r.code === 0 ? 'exit 0' : why(r)})`);
	check(plantedSeen() === control,
		`6 other resource: the token kept for ${other} never reached this server (sub=planted lines: ` +
		`${control} -> ${plantedSeen()})`);
	check(r.asked === 1 && !refreshSeen.includes(plantedRefresh),
		`6 other resource: the person was asked instead (${r.asked}), its refresh token never went to the AS`);
	check(cacheRecord()?.resource === mcpUrl, '6 other resource: the record was replaced by one for this server');
	row('6b cache record for another resource', `not used; asked ${r.asked}, echo ok`, b, r.code);

	// The authorization server gets it wrong: every token is for another
	// audience.  The client cannot see that (a token is opaque to it); the
	// server refuses it, and mcp-call must end by itself, without success.
	b = counts();
	const lo6 = await run(['--logout']);
	mode.aud = other;
	r = await run([...oauth, 'call', 'echo', '{"text":"wrong"}']);
	mode.aud = null;
	check(lo6.code === 0 && r.code === 3 && !r.out.includes('wrong') && r.asked === 1,
		`6 a token the AS issued for ${other}: refused by this server, mcp-call gives up with exit 3 ` +
		`after asking the person once (exit ${r.code}, asked ${r.asked}; AS: ${delta(b)}; ` +
		`${r.stderr.split('\n').filter((l) => l.includes('refused')).join(' ')})`);
	row('6c --logout, AS issues aud=other', `asked ${r.asked}, gave up, no answer`, b, r.code);

	// 7. No secrets on standard error.
	const leaks = [...issued, planted, plantedRefresh].filter((t) => stderrs.some((e) => e.includes(t)));
	check(issued.size > 0 && leaks.length === 0,
		`7 none of the ${issued.size} tokens the AS issued (nor the planted ones) appears on mcp-call's ` +
		`standard error in ${stderrs.length} runs`);
} catch (e) {
	check(false, `unexpected error: ${e?.stack ?? e}`);
} finally {
	if (server.exitCode === null) {
		const exited = new Promise((res) => server.once('exit', (code) => res(code)));
		server.kill('SIGTERM');
		const code = await Promise.race([exited, sleep(10000).then(() => 'no exit in 10 s')]);
		check(code === 0, `the resource server exits 0 on SIGTERM (got ${code})`);
		if (code !== 0) server.kill('SIGKILL');
	}
	await as.stop();
	rmSync(scratch, { recursive: true, force: true });
}

const head = ['step', 'mcp-call', 'at the authorization server', 'exit'];
const w = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i].length)));
const line = (cells) => `  ${cells.map((c, i) => c.padEnd(w[i])).join(' | ')}`;
console.log(`\n${line(head)}\n  ${w.map((n) => '-'.repeat(n)).join('-+-')}`);
for (const t of table)
	console.log(line(t));
console.log(failures ? `${failures} check(s) failed` : 'all steps passed');
process.exit(failures ? 1 : 0);
