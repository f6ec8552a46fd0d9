// rotation.mjs - a key rotation at a real authorization server, seen by a
// libmcp resource server with no reload and no restart.  make
// check-auth-e2e runs it after client.mjs (tests/auth/e2e/run.sh).
//
//   node rotation.mjs --server PATH/mcp-everything [--log FILE]
//
// 1. Starts oauth2-mock-server on 127.0.0.1 with one RS256 key, and
//      mcp-everything --http 127.0.0.1:P --auth-resource http://127.0.0.1:P/mcp
//        --auth-issuer ISSUER --auth-jwks-discover --auth-require mcp:read
//    which finds the key set through the issuer's metadata (jwks_uri) and
//    fetches it.
// 2. Gets a token by the client credentials grant and calls the server
//    with it (initialize, then tools/call echo): 200.
// 3. Rotates: the mock server generates a second key and signs the next
//    token with it.  The server has never seen that kid; the request is
//    answered 200 after the server fetched the set again by itself.
// 4. The first token (old key, still published) is still accepted, and a
//    token whose kid is forged is refused without another fetch.
// 5. Stops the server with SIGTERM and checks its exit status.
// Prints each step, the kids and statuses, and the server's own lines
// about its fetches; exits 0 when all passed.
//
// The mock's key store hands out its keys in turn (each token takes the
// key at the head of its list and moves it to the end), so after
// generating the new key the script takes the old one once: the next
// token is then signed by the new key, as after a real rotation.
import { spawn } from 'node:child_process';
import { arg, freePort, accepts } from './common.mjs';
import { OAuth2Server, Events } from 'oauth2-mock-server';

const serverBin = arg('--server', null);
if (!serverBin) {
	console.error('usage: rotation.mjs --server PATH/mcp-everything [--log FILE]');
	process.exit(2);
}

let failures = 0;
function step(ok, what) {
	console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
	if (!ok) failures++;
}

function kidOf(token) {
	return JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid;
}

// ---- the authorization server ------------------------------------------------
const as = new OAuth2Server();
const first = await as.issuer.keys.generate('RS256');
await as.start(0, '127.0.0.1');
as.issuer.url = `http://127.0.0.1:${as.address().port}`;
const issuer = as.issuer.url;
const port = await freePort();
const mcpUrl = `http://127.0.0.1:${port}/mcp`;
as.service.on(Events.BeforeTokenSigning, (token) => {
	token.payload.aud = mcpUrl;
	token.payload.scope = 'mcp:read';
	token.payload.client_id = 'libmcp-rotation';
});
console.log(`AS ready ${issuer}, first key ${first.kid}`);

// ---- the resource server ------------------------------------------------------
const args = ['--http', `127.0.0.1:${port}`, '--auth-resource', mcpUrl, '--auth-issuer', issuer,
	'--auth-jwks-discover', '--auth-require', 'mcp:read'];
console.log(`resource server: ${serverBin} ${args.join(' ')}`);
const server = spawn(serverBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
const serverLines = [];
let partial = '';
server.stderr.on('data', (d) => {
	partial += d.toString();
	const lines = partial.split('\n');
	partial = lines.pop();
	serverLines.push(...lines);
});

async function token() {
	const res = await fetch(`${issuer}/token`, { method: 'POST',
		headers: { 'content-type': 'application/x-www-form-urlencoded' },
		body: 'grant_type=client_credentials&scope=mcp%3Aread&client_id=libmcp-rotation' });
	const body = await res.json();
	return body.access_token;
}

// initialize, then tools/call echo in its session: the two statuses.
async function use(tok) {
	const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
		authorization: `Bearer ${tok}` };
	const init = await fetch(mcpUrl, { method: 'POST', headers,
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rot', version: '1' } } }) });
	const www = init.headers.get('www-authenticate') ?? '';
	await init.text();
	if (init.status !== 200)
		return { init: init.status, call: 0, www };
	const sid = init.headers.get('mcp-session-id');
	const h2 = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
	await (await fetch(mcpUrl, { method: 'POST', headers: h2,
		body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
	const call = await fetch(mcpUrl, { method: 'POST', headers: h2,
		body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
			params: { name: 'echo', arguments: { text: 'after rotation' } } }) });
	await call.text();
	return { init: init.status, call: call.status, www };
}

const fetchedLines = () => serverLines.filter((l) => /key set fetch/.test(l));

try {
	let up = false;
	for (let i = 0; i < 300 && server.exitCode === null && !up; i++) {
		up = await accepts(port);
		if (!up)
			await new Promise((r) => setTimeout(r, 50));
	}
	step(up, `resource server reachable at ${mcpUrl}`);
	step(fetchedLines().length === 1, `one fetch at start: ${fetchedLines().join(' | ')}`);

	const t1 = await token();
	const r1 = await use(t1);
	console.log(`before rotation: token kid ${kidOf(t1)} -> initialize ${r1.init}, tools/call ${r1.call}`);
	step(kidOf(t1) === first.kid && r1.init === 200 && r1.call === 200, 'the first key\'s token is accepted');

	// The rotation.
	const second = await as.issuer.keys.generate('RS256');
	as.issuer.keys.get(first.kid); // the new key signs next (see the top)
	const published = as.issuer.keys.toJSON().map((k) => k.kid);
	console.log(`rotated: the authorization server now publishes ${published.join(', ')}`);
	const t2 = await token();
	const r2 = await use(t2);
	console.log(`after rotation: token kid ${kidOf(t2)} -> initialize ${r2.init}, tools/call ${r2.call}` +
		(r2.www ? ` [${r2.www}]` : ''));
	step(kidOf(t2) === second.kid && kidOf(t2) !== kidOf(t1), 'the new token names the new key');
	step(r2.init === 200 && r2.call === 200, 'the new key\'s token is accepted with no reload and no restart');
	step(fetchedLines().length === 2 && /2 keys/.test(fetchedLines()[1] ?? ''),
		`the server fetched the set again by itself: ${fetchedLines().join(' | ')}`);

	const r3 = await use(t1);
	console.log(`old token again: kid ${kidOf(t1)} -> initialize ${r3.init}, tools/call ${r3.call}`);
	step(r3.init === 200, 'the old key\'s token is still accepted (the key is still published)');

	// A forged kid: the header names a key nobody has; refused, no fetch
	// (one was asked by an unknown kid less than the interval ago).
	const [, p, s] = t2.split('.');
	const forgedHeader = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'forged-kid' })).toString('base64url');
	const r4 = await use(`${forgedHeader}.${p}.${s}`);
	console.log(`forged kid: initialize ${r4.init} [${r4.www}]`);
	step(r4.init === 401 && /key id/.test(r4.www), 'a forged kid is refused, naming the key id');
	step(fetchedLines().length === 2, `no fetch for the forged kid (${fetchedLines().length} in all)`);
} catch (e) {
	step(false, `unexpected error: ${e?.stack ?? e}`);
} finally {
	if (server.exitCode === null) {
		const exited = new Promise((r) => server.once('exit', (code) => r(code)));
		server.kill('SIGTERM');
		const code = await exited;
		step(code === 0, `the resource server exits 0 on SIGTERM (got ${code})`);
	}
	await as.stop();
}
console.log('\nthe resource server\'s lines:');
for (const l of serverLines)
	console.log(`  ${l}`);
console.log(failures ? `${failures} step(s) failed` : 'all steps passed');
process.exit(failures ? 1 : 0);
