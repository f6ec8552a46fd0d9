// client.mjs - end-to-end authorization with a real OAuth client.  NOT RUN
// YET: it needs the HTTP transport to call the authorization code of
// api/authz.c (doc/auth.md, "Wiring"), and mcp-everything to take
// --auth-jwks, --auth-issuer, --auth-resource and a tool that needs a scope.
//
//   node client.mjs --as-port PORT --jwks-out FILE --mcp URL
//                   [--tool NAME] [--scoped-tool NAME --scoped-scope SCOPE]
//
// 1. Starts oauth2-mock-server on 127.0.0.1:PORT as the authorization
//    server (RS256 key, authorization code with PKCE), writes its public
//    JWKS to FILE and prints "AS ready <issuer>": start the resource server
//    then, e.g.
//      mcp-everything --http 127.0.0.1:9401 --auth-jwks FILE
//        --auth-issuer http://127.0.0.1:PORT --auth-resource URL
// 2. Waits until URL answers, then runs the official TypeScript SDK
//    client's OAuth flow against it: the first request gets 401; the client
//    reads resource_metadata and scope from WWW-Authenticate, fetches the
//    Protected Resource Metadata, discovers the authorization server,
//    authorizes with PKCE and the resource indicator, and connects.
// 3. Calls --tool (default echo), then --scoped-tool (default admin_echo),
//    which needs --scoped-scope (default mcp:admin): the server answers 403
//    insufficient_scope, the client steps up (a new authorization for the
//    scopes the challenge names) and the retry succeeds.
// Prints one "ok" or "FAIL" line per step; exits 0 when all passed.
//
// The mock server knows neither dynamic registration nor RFC 8707, so the
// client is pre-registered (client_id "libmcp-e2e"), and a hook gives each
// access token the audience the client asked for (its `resource`) and the
// scope it was authorized for.
import { writeFileSync } from 'node:fs';
import { OAuth2Server, Events } from 'oauth2-mock-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

function arg(name, dflt) {
	const i = process.argv.indexOf(name);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const asPort = Number(arg('--as-port', '9400'));
const jwksOut = arg('--jwks-out', null);
const mcpUrl = arg('--mcp', null);
const tool = arg('--tool', 'echo');
const scopedTool = arg('--scoped-tool', 'admin_echo');
const scopedScope = arg('--scoped-scope', 'mcp:admin');
if (!jwksOut || !mcpUrl) {
	console.error('usage: client.mjs --as-port PORT --jwks-out FILE --mcp URL [--tool NAME] ' +
		'[--scoped-tool NAME --scoped-scope SCOPE]');
	process.exit(2);
}

let failures = 0;
function step(ok, what) {
	console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
	if (!ok) failures++;
}

// ---- the authorization server ------------------------------------------------
const as = new OAuth2Server();
await as.issuer.keys.generate('RS256');
await as.start(asPort, '127.0.0.1');
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
		this._code = location ? new URL(location).searchParams.get('code') : undefined;
	},
};

function claims(token) {
	return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

async function waitFor(url) {
	for (let i = 0; i < 300; i++) {
		try {
			await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
			return true;
		} catch {
			await new Promise((r) => setTimeout(r, 100));
		}
	}
	return false;
}

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

	let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
	const client = new Client({ name: 'libmcp-e2e', version: '1.0.0' });
	try {
		await client.connect(transport);
	} catch (e) {
		if (!(e instanceof UnauthorizedError) || !provider._code) throw e;
		await transport.finishAuth(provider._code);
		provider._code = undefined;
		transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
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
	await as.stop();
}
console.log(failures ? `${failures} step(s) failed` : 'all steps passed');
process.exit(failures ? 1 : 0);
