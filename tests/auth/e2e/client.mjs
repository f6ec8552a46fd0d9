// client.mjs - end-to-end authorization with a real OAuth client: the
// official TypeScript SDK client's OAuth flow against oauth2-mock-server (the
// authorization server) and a libmcp resource server.  make check-auth-e2e
// runs it (tests/auth/e2e/run.sh).
//
//   node client.mjs --server PATH/mcp-everything [--log FILE]
//   node client.mjs --as-port PORT --jwks-out FILE --mcp URL      (by hand)
//
// 1. Starts oauth2-mock-server on 127.0.0.1 (RS256 key, authorization code
//    with PKCE; port from the OS unless --as-port), writes its public JWKS
//    and prints "AS ready <issuer>".  With --server it starts the resource
//    server itself on a free loopback port:
//      mcp-everything --http 127.0.0.1:P --auth-resource http://127.0.0.1:P/mcp
//        --auth-jwks JWKS --auth-issuer ISSUER --auth-scopes "mcp:read mcp:admin"
//        --auth-require mcp:read
//    (by hand, start it yourself once "AS ready" is printed).
// 2. Waits until the endpoint accepts connections (bounded), then runs the
//    SDK client's OAuth flow: the first request gets 401; the client reads
//    resource_metadata and scope from WWW-Authenticate, fetches the Protected
//    Resource Metadata, discovers the authorization server, authorizes with
//    PKCE and the resource indicator, and connects.
// 3. Calls --tool (default echo), then --scoped-tool (default admin_echo),
//    which needs --scoped-scope (default mcp:admin): the server answers 403
//    insufficient_scope, the client steps up (a new authorization for the
//    scopes the challenge names) and the retry succeeds.
// 4. With --server: stops it with SIGTERM and checks its exit status.
// Prints one "ok" or "FAIL" line per step; exits 0 when all passed.
//
// The mock server knows neither dynamic registration nor RFC 8707, so the
// client is pre-registered (client_id "libmcp-e2e"), and a hook gives each
// access token the audience the client asked for (its `resource`) and the
// scope it was authorized for.  Everything listens on 127.0.0.1 only.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { arg, freePort, accepts } from './common.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuth2Server, Events } from 'oauth2-mock-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const serverBin = arg('--server', null);
const serverLog = arg('--log', null);
const asPort = Number(arg('--as-port', '0'));
const tool = arg('--tool', 'echo');
const scopedTool = arg('--scoped-tool', 'admin_echo');
const scopedScope = arg('--scoped-scope', 'mcp:admin');
const scratch = serverBin ? mkdtempSync(join(tmpdir(), 'libmcp-e2e-')) : null;
const jwksOut = arg('--jwks-out', scratch ? join(scratch, 'jwks.json') : null);
let mcpUrl = arg('--mcp', null);
if (!jwksOut || (!mcpUrl && !serverBin)) {
	console.error('usage: client.mjs --server PATH [--log FILE] | ' +
		'--as-port PORT --jwks-out FILE --mcp URL; [--tool NAME] ' +
		'[--scoped-tool NAME --scoped-scope SCOPE]');
	process.exit(2);
}

// A port the OS says is free on the loopback.
// Whether a TCP connection to host:port succeeds.
let failures = 0;
function step(ok, what) {
	console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
	if (!ok) failures++;
}

// ---- the authorization server ------------------------------------------------
const as = new OAuth2Server();
await as.issuer.keys.generate('RS256');
await as.start(asPort, '127.0.0.1');
// It would name itself http://localhost:PORT; the loopback address keeps
// every connection on 127.0.0.1 whatever "localhost" resolves to.
as.issuer.url = `http://127.0.0.1:${as.address().port}`;
const issuer = as.issuer.url;
writeFileSync(jwksOut, JSON.stringify({ keys: as.issuer.keys.toJSON() }));
const granted = new Map(); // authorization code -> scope asked for
as.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
	const code = redirect.url.searchParams.get('code');
	if (code) granted.set(code, new URL(req.url, issuer).searchParams.get('scope') ?? '');
});
as.service.on(Events.BeforeTokenSigning, (token, req) => {
	if (!('scope' in token.payload)) return; // the id_token keeps its own audience
	const body = req.body ?? {};
	if (body.resource) token.payload.aud = body.resource;
	if (body.code && granted.has(body.code)) token.payload.scope = granted.get(body.code);
	token.payload.client_id = body.client_id ?? 'libmcp-e2e';
});
console.log(`AS ready ${issuer}`);

// ---- a scripted user agent --------------------------------------------------------
// Follows the authorization URL the client would open in a browser; the
// mock server consents at once and redirects with the code.
const seen = { authorizations: [], tokens: [] };
const provider = {
	_tokens: undefined,
	_verifier: undefined,
	_code: undefined,
	_client: { client_id: 'libmcp-e2e' },
	get redirectUrl() { return 'http://127.0.0.1:1/callback'; },
	get clientMetadata() {
		return { client_name: 'libmcp e2e', redirect_uris: [this.redirectUrl],
			grant_types: ['authorization_code'], response_types: ['code'],
			token_endpoint_auth_method: 'none' };
	},
	clientInformation() { return this._client; },
	saveClientInformation(info) { this._client = info; },
	tokens() { return this._tokens; },
	// No refresh token is kept: a step-up must be a new authorization for
	// the new scopes (the mock server would refresh to its default scope).
	saveTokens(t) {
		const { refresh_token, ...rest } = t;
		this._tokens = rest;
		seen.tokens.push(rest.access_token);
	},
	saveCodeVerifier(v) { this._verifier = v; },
	codeVerifier() { return this._verifier; },
	async redirectToAuthorization(url) {
		seen.authorizations.push(url);
		const res = await fetch(url, { redirect: 'manual' });
		const location = res.headers.get('location');
		exchanges.push(`GET AS${url.pathname} (the user agent; scope=${url.searchParams.get('scope')}, ` +
			`resource=${url.searchParams.get('resource')}) -> ${res.status}`);
		this._code = location ? new URL(location).searchParams.get('code') : undefined;
	},
};

function claims(token) {
	return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

// Waits until the endpoint accepts connections: at most 300 tries 50 ms
// apart, and no longer once the server process has exited.
async function waitFor(url) {
	const port = Number(new URL(url).port);
	for (let i = 0; i < 300 && !(server && server.exitCode !== null); i++) {
		if (await accepts(port))
			return true;
		await new Promise((r) => setTimeout(r, 50));
	}
	return false;
}

// ---- the resource server ------------------------------------------------------
let server = null;
if (serverBin) {
	const port = await freePort();
	mcpUrl = `http://127.0.0.1:${port}/mcp`;
	const args = ['--http', `127.0.0.1:${port}`, '--auth-resource', mcpUrl, '--auth-jwks', jwksOut,
		'--auth-issuer', issuer, '--auth-scopes', 'mcp:read mcp:admin', '--auth-require', 'mcp:read',
		'--access-log'];
	console.log(`resource server: ${serverBin} ${args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`);
	server = spawn(serverBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
	if (serverLog)
		server.stderr.pipe(createWriteStream(serverLog));
	else
		server.stderr.resume();
}

// Every HTTP exchange of the SDK client with either server, for the report.
const exchanges = [];
const loggingFetch = async (url, init) => {
	const res = await fetch(url, init);
	const u = new URL(url);
	let what = init?.method ?? 'GET';
	if (typeof init?.body === 'string' && init.body.startsWith('{')) {
		try {
			const m = JSON.parse(init.body);
			what += ` ${m.method ?? 'response'}${m.params?.name ? ` ${m.params.name}` : ''}`;
		} catch { /* not JSON */ }
	}
	const www = res.headers.get('www-authenticate');
	exchanges.push(`${what} ${u.host === new URL(issuer).host ? 'AS' : 'RS'}${u.pathname} -> ` +
		`${res.status}${www ? ` [WWW-Authenticate: ${www}]` : ''}`);
	return res;
};

// Runs fn; when the client had to send the user to authorize, completes the
// authorization with the code and runs fn again.
async function withAuthorization(transport, fn) {
	try {
		return await fn();
	} catch (e) {
		if (!(e instanceof UnauthorizedError) || !provider._code) throw e;
		const code = provider._code;
		provider._code = undefined;
		await transport.finishAuth(code);
		return fn();
	}
}

try {
	step(await waitFor(mcpUrl), `resource server reachable at ${mcpUrl}`);

	// Discovery from the 401 alone.
	const bare = await fetch(mcpUrl, { method: 'POST',
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }) });
	const challenge = bare.headers.get('www-authenticate') ?? '';
	step(bare.status === 401, `a request without a token gets 401 (got ${bare.status})`);
	const rm = /resource_metadata="([^"]+)"/.exec(challenge);
	step(!!rm, `the 401 names resource_metadata (${challenge})`);
	if (rm) {
		const meta = await (await fetch(rm[1])).json();
		step(meta.resource === mcpUrl || meta.resource + '/' === mcpUrl || meta.resource === mcpUrl + '/',
			`the metadata names the resource (${meta.resource})`);
		step(Array.isArray(meta.authorization_servers) && meta.authorization_servers.includes(issuer),
			`the metadata names the authorization server ${issuer}`);
	}

	const opts = { authProvider: provider, fetch: loggingFetch };
	let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), opts);
	const client = new Client({ name: 'libmcp-e2e', version: '1.0.0' });
	try {
		await client.connect(transport);
	} catch (e) {
		if (!(e instanceof UnauthorizedError) || !provider._code) throw e;
		await transport.finishAuth(provider._code);
		provider._code = undefined;
		transport = new StreamableHTTPClientTransport(new URL(mcpUrl), opts);
		await client.connect(transport);
	}
	step(seen.tokens.length === 1, 'the client got a token from the authorization server');
	const first = seen.authorizations[0];
	step(!!first && first.searchParams.get('resource') !== null,
		`the authorization request carried the resource indicator (${first?.searchParams.get('resource')})`);
	step(seen.tokens.length > 0 && [].concat(claims(seen.tokens[0]).aud).includes(mcpUrl.replace(/\/$/, '')) ||
		[].concat(claims(seen.tokens[0] ?? 'x.e30.x').aud ?? []).includes(mcpUrl),
		'the token names the resource as its audience');

	const tools = await client.listTools();
	step(tools.tools.some((t) => t.name === tool), `tools/list shows ${tool}`);
	step(!tools.tools.some((t) => t.name === scopedTool),
		`tools/list hides ${scopedTool} from a token without ${scopedScope}`);
	const r1 = await client.callTool({ name: tool, arguments: { text: 'hello' } });
	step(!r1.isError, `${tool} answers`);

	// Step-up: 403 insufficient_scope, a new authorization, the retry.
	const before = seen.authorizations.length;
	const r2 = await withAuthorization(transport, () =>
		client.callTool({ name: scopedTool, arguments: { text: 'admin' } }));
	step(!r2.isError, `${scopedTool} answers after the step-up`);
	const again = seen.authorizations.slice(before);
	step(again.length === 1 && (again[0].searchParams.get('scope') ?? '').split(' ').includes(scopedScope),
		`the step-up asked for ${scopedScope} (${again[0]?.searchParams.get('scope')})`);
	const last = seen.tokens[seen.tokens.length - 1];
	step((claims(last).scope ?? '').split(' ').includes(scopedScope), 'the new token holds the scope');
	await client.close();
} catch (e) {
	step(false, `unexpected error: ${e?.stack ?? e}`);
} finally {
	if (server && server.exitCode === null) {
		const exited = new Promise((r) => server.once('exit', (code) => r(code)));
		server.kill('SIGTERM');
		const code = await exited;
		step(code === 0, `the resource server exits 0 on SIGTERM (got ${code})`);
	}
	await as.stop();
	if (scratch)
		rmSync(scratch, { recursive: true, force: true });
}
console.log('\nthe client\'s HTTP exchanges, in order:');
for (const x of exchanges)
	console.log(`  ${x}`);
console.log(failures ? `${failures} step(s) failed` : 'all steps passed');
process.exit(failures ? 1 : 0);
