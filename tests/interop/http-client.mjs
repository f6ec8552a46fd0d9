// Interoperability test over Streamable HTTP: the official TypeScript SDK
// client (Client + StreamableHTTPClientTransport) drives mcp-everything
// --http, the same checks as stdio-client.mjs plus the HTTP ones (session
// id, DELETE, a second session, stateless and JSON-only servers).
//
// Usage:
//   node http-client.mjs [SERVER [SERVER_ARGS...]]
//     Starts SERVER (default $MCP_EVERYTHING) with --http 127.0.0.1:PORT
//     --trace on a free loopback port, twice: once answering SSE, once with
//     --json; each run ends with SIGTERM and must exit 0.
//   node http-client.mjs --url URL [--stateless] [--json] [--label TEXT]
//     Runs once against an endpoint already there (through a proxy, say):
//     --stateless when it serves without sessions, --json when it answers
//     JSON only.  What only the server's own trace shows (the cancelled
//     handler, the exit status) is then left to the caller.
//   MCP_INTEROP_VERBOSE=1 prints every JSON-RPC message and HTTP exchange.
//
// Output: one "ok - NAME" / "not ok - NAME" line per check (with "#"
// diagnostics after a failure), then "N passed, M failed".  Exit status 0
// only if every check passed.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  LATEST_PROTOCOL_VERSION,
  ListRootsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';

const RUN_TIMEOUT_MS = 120000;
const CHECK_TIMEOUT_MS = 15000;
const START_TIMEOUT_MS = 10000;
const EXIT_WAIT_MS = 5000;
const ROOT = { uri: 'file:///tmp/interop-http-root', name: 'interop-http' };
const EXPECTED_TOOLS = ['echo', 'sleep', 'spin', 'roots', 'progress'];
const verbose = !!process.env.MCP_INTEROP_VERBOSE;

// ---- command line ----------------------------------------------------------------
const opts = { url: null, stateless: false, json: false, label: '', server: null, serverArgs: [] };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--url' && i + 1 < argv.length) opts.url = argv[++i];
    else if (a === '--stateless') opts.stateless = true;
    else if (a === '--json') opts.json = true;
    else if (a === '--label' && i + 1 < argv.length) opts.label = argv[++i];
    else {
      opts.server = a;
      opts.serverArgs = argv.slice(i + 1);
      break;
    }
  }
  if (!opts.url) opts.server = opts.server || process.env.MCP_EVERYTHING;
  if (!opts.url && !opts.server) {
    console.log('not ok - setup # no server: pass its path, set MCP_EVERYTHING, or give --url URL');
    console.log('0 passed, 1 failed');
    process.exit(2);
  }
}

let passed = 0;
let failed = 0;

// ---- diagnostics: JSON-RPC traffic, HTTP exchanges, server stderr ---------------
const wire = []; // {dir: '>' | '<', msg, who}
const http = []; // {method, status, sid, ctype, reqSid, body}
let stderrText = '';
const sdkErrors = []; // {err, who}

function brief(value, max = 400) {
  let s;
  try {
    s = typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    s = String(value);
  }
  if (s === undefined) s = String(value);
  return s.length > max ? `${s.slice(0, max)}... (${s.length} chars)` : s;
}

function comment(text) {
  for (const line of String(text).split('\n')) console.log(`#   ${line}`);
}

function dumpDiagnostics(err, wireStart, httpStart) {
  if (err) {
    const code = err && typeof err === 'object' && 'code' in err && err.code !== 'ERR_ASSERTION' ? ` (code ${err.code})` : '';
    comment(`error: ${err instanceof Error ? `${err.name}: ${err.message}` : brief(err)}${code}`);
  }
  const during = wire.slice(wireStart);
  comment(during.length ? `wire during this check (${during.length} messages, last 20 shown):` : 'wire during this check: nothing');
  for (const w of during.slice(-20)) comment(`${w.who} ${w.dir} ${brief(w.msg)}`);
  const exchanges = http.slice(httpStart);
  comment(exchanges.length ? `HTTP during this check (${exchanges.length}, last 20 shown):` : 'HTTP during this check: nothing');
  for (const x of exchanges.slice(-20)) {
    comment(`${x.method} (session ${x.reqSid ?? '-'}) -> ${x.status ?? x.error} ${x.ctype ?? ''}${x.sid ? ` Mcp-Session-Id ${x.sid}` : ''}`);
  }
  if (stderrText) {
    comment('server stderr (tail):');
    comment(stderrText.slice(-1500).trimEnd());
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

let notes = [];
function note(text) {
  notes.push(text);
}

let prefix = '';
async function check(name, fn) {
  const wireStart = wire.length;
  const httpStart = http.length;
  notes = [];
  const full = `${prefix}${name}`;
  try {
    await withTimeout(Promise.resolve().then(fn), CHECK_TIMEOUT_MS, full);
    passed++;
    console.log(`ok - ${full}`);
  } catch (err) {
    failed++;
    console.log(`not ok - ${full}`);
    dumpDiagnostics(err, wireStart, httpStart);
  }
  for (const n of notes) comment(n);
}

function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function textOf(result) {
  assert.ok(result && Array.isArray(result.content), `result has no content array: ${brief(result)}`);
  assert.ok(result.content.length >= 1, `result content is empty: ${brief(result)}`);
  const first = result.content[0];
  assert.equal(first.type, 'text', `first content item is not text: ${brief(first)}`);
  return first.text;
}

function assertNotToolError(result) {
  assert.notEqual(result?.isError, true, `tool reported isError: ${brief(result)}`);
}

// ---- the server, when this script starts it --------------------------------------
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise(resolve => {
    const sock = net.connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

// Starts the server on a free port (another one if that port was taken in
// between); resolves to {child, port, exit: Promise<{code, signal}>}.
async function startServer(extraArgs) {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePort();
    const args = ['--http', `127.0.0.1:${port}`, '--trace', ...extraArgs, ...opts.serverArgs];
    const child = spawn(opts.server, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env } });
    let exited = null;
    const exit = new Promise(resolve => {
      child.once('exit', (code, signal) => {
        exited = { code, signal };
        resolve(exited);
      });
      child.once('error', e => {
        exited = { code: null, signal: null, error: e };
        resolve(exited);
      });
    });
    child.stderr.on('data', chunk => {
      stderrText += chunk.toString('utf8');
      if (stderrText.length > 262144) stderrText = stderrText.slice(-131072);
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!exited && Date.now() < deadline) {
      if (await canConnect(port)) return { child, port, exit, args };
      await sleep(50);
    }
    if (!exited) {
      child.kill('SIGKILL');
      throw new Error(`${opts.server} ${args.join(' ')}: not listening after ${START_TIMEOUT_MS} ms`);
    }
    if (exited.error) throw exited.error;
    // Exited before listening: the port was taken meanwhile, or a bad option.
    if (attempt === 5) throw new Error(`${opts.server} ${args.join(' ')} exited ${brief(exited)}: ${stderrText.slice(-500)}`);
  }
  throw new Error('unreachable');
}

// ---- clients ---------------------------------------------------------------------
// A fetch that records each exchange (status, content type, session ids).
function recordingFetch(who) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const x = { who, method: init.method ?? 'GET', reqSid: headers.get('mcp-session-id') ?? undefined };
    http.push(x);
    try {
      const resp = await fetch(url, init);
      x.status = resp.status;
      x.ctype = resp.headers.get('content-type') ?? undefined;
      x.sid = resp.headers.get('mcp-session-id') ?? undefined;
      if (verbose) comment(`${who} HTTP ${x.method} (session ${x.reqSid ?? '-'}) -> ${x.status} ${x.ctype ?? ''}`);
      return resp;
    } catch (e) {
      x.error = e?.message ?? String(e);
      throw e;
    }
  };
}

// A Client with the roots capability on its own transport; traffic recorded
// under `who`.  `sessionId` resumes a session without initializing.
function makeClient(url, who, sessionId) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch(who),
    sessionId,
    // One quick retry of a dropped GET stream, so a test never waits long.
    reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 1 },
  });
  const sendOrig = transport.send.bind(transport);
  transport.send = (msg, o) => {
    wire.push({ dir: '>', msg, who });
    if (verbose) comment(`${who} > ${brief(msg, 2000)}`);
    return sendOrig(msg, o);
  };
  // Set before connect(): the SDK's Protocol chains its own handler after it.
  transport.onmessage = msg => {
    wire.push({ dir: '<', msg, who });
    if (verbose) comment(`${who} < ${brief(msg, 2000)}`);
  };
  const client = new Client(
    { name: 'libmcp-interop-http-client', version: '1.0.0' },
    { capabilities: { roots: { listChanged: true } } },
  );
  const state = { client, transport, who, rootsRequests: 0, closing: false };
  client.onerror = err => {
    sdkErrors.push({ err, who, closing: state.closing });
    if (verbose) comment(`${who} sdk onerror: ${err?.message ?? err}`);
  };
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    state.rootsRequests++;
    return { roots: [ROOT] };
  });
  return state;
}

async function closeClient(c) {
  c.closing = true;
  await withTimeout(c.client.close(), 5000, `${c.who} close()`).catch(() => {});
}

// A raw request to the endpoint, for what the SDK does not expose.
async function raw(url, method, headers = {}, body) {
  const resp = await fetch(url, { method, headers, body });
  const text = await resp.text();
  http.push({ who: 'raw', method, status: resp.status, ctype: resp.headers.get('content-type') ?? undefined, sid: resp.headers.get('mcp-session-id') ?? undefined });
  return { status: resp.status, headers: resp.headers, text };
}

// The server's trace lines: "started ID", "cleanup ID REASON".
function traceHas(line) {
  return stderrText.split('\n').some(l => l.trim() === line);
}

// The roots tool: the server asks the client roots/list and returns what
// came back.  Over SSE the request travels on the call's stream and the
// answer is POSTed.  A JSON-only server has no stream for a request tied to
// a call (documented: such messages are not delivered); there the tool must
// either get the roots some other way or fail cleanly, and the client must
// not have been asked.  Returns a note on what happened.
async function callRoots(c, json) {
  const before = c.rootsRequests;
  const wireStart = wire.length;
  const result = await c.client.callTool({ name: 'roots', arguments: { timeout_ms: json ? 1000 : 5000 } });
  const asked = c.rootsRequests - before;
  if (json && result?.isError === true) {
    assert.equal(asked, 0, 'the tool failed although the client answered roots/list');
    return `not delivered by a JSON-only server; the tool reported: ${brief(textOf(result), 120)}`;
  }
  assertNotToolError(result);
  assert.equal(asked, 1, `roots/list requests seen by the client: ${asked}`);
  const text = textOf(result);
  let roots;
  try {
    roots = JSON.parse(text);
  } catch (e) {
    assert.fail(`result text is not JSON: ${brief(text)} (${e.message})`);
  }
  assert.ok(Array.isArray(roots), `result text is not a JSON array: ${brief(text)}`);
  assert.ok(roots.some(r => r && r.uri === ROOT.uri && r.name === ROOT.name), `no ${brief(ROOT)} in ${brief(roots)}`);
  const answer = wire.slice(wireStart).find(w => w.who === c.who && w.dir === '>' && w.msg?.result?.roots);
  assert.ok(answer, 'the client\'s roots/list answer was not POSTed');
  return `roots/list answered by ${c.who}`;
}

// ---- one run: every check against one endpoint -----------------------------------
// run = {url, stateless, json, server?: {child, exit}}
async function runChecks(run) {
  const { url, stateless, json } = run;
  const first = makeClient(url, 'c1');
  const { client, transport } = first;
  const sdkErrStart = sdkErrors.length;
  const httpRunStart = http.length;
  const wireRunStart = wire.length;
  const explained = new Set();
  let negotiated = null;
  let sessionId = null;

  await check('connect: initialize handshake over Streamable HTTP', async () => {
    await client.connect(transport);
    const info = client.getServerVersion();
    assert.equal(info?.name, 'mcp-everything', `serverInfo: ${brief(info)}`);
    negotiated = transport.protocolVersion;
    assert.ok(
      SUPPORTED_PROTOCOL_VERSIONS.includes(negotiated),
      `negotiated protocol version ${brief(negotiated)} is not one the SDK supports (${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
    assert.ok(client.getServerCapabilities()?.tools, `server capabilities lack tools: ${brief(client.getServerCapabilities())}`);
    note(`server ${info.name} ${info.version}, protocol ${negotiated} (SDK latest ${LATEST_PROTOCOL_VERSION})`);
  });

  if (stateless) {
    await check('stateless: no Mcp-Session-Id issued, GET and DELETE answer 405', async () => {
      assert.equal(transport.sessionId, undefined, `the SDK holds session id ${brief(transport.sessionId)}`);
      assert.ok(!http.slice(httpRunStart).some(x => x.who === 'c1' && x.sid), 'a response carried Mcp-Session-Id');
      const get = await raw(url, 'GET', { Accept: 'text/event-stream', 'MCP-Protocol-Version': negotiated });
      assert.equal(get.status, 405, `GET: ${get.status} ${brief(get.text)}`);
      const del = await raw(url, 'DELETE', { 'Mcp-Session-Id': 'no-such-session', 'MCP-Protocol-Version': negotiated });
      assert.equal(del.status, 405, `DELETE: ${del.status} ${brief(del.text)}`);
    });
  } else {
    await check('session: the initialize response set Mcp-Session-Id (visible ASCII, >= 16 chars)', async () => {
      sessionId = transport.sessionId;
      assert.equal(typeof sessionId, 'string', `no session id: ${brief(sessionId)}`);
      assert.match(sessionId, /^[\x21-\x7e]{16,}$/, `session id ${brief(sessionId)}`);
      const mine = http.slice(httpRunStart).filter(x => x.who === 'c1');
      const init = mine.find(x => x.method === 'POST' && x.sid);
      assert.ok(init, 'no POST response carried Mcp-Session-Id');
      assert.equal(init.sid, sessionId);
      const later = mine.filter(x => x !== init);
      assert.ok(later.length > 0 && later.every(x => x.reqSid === sessionId), `later requests without the session id: ${brief(later)}`);
    });
  }

  await check('tools/list: echo, sleep, spin, roots, progress with object input schemas', async () => {
    const { tools } = await client.listTools();
    assert.ok(Array.isArray(tools), `tools is not an array: ${brief(tools)}`);
    const byName = new Map(tools.map(t => [t.name, t]));
    for (const name of EXPECTED_TOOLS) {
      const tool = byName.get(name);
      assert.ok(tool, `tool ${name} missing; got: ${[...byName.keys()].join(', ')}`);
      assert.equal(tool.inputSchema?.type, 'object', `tool ${name} inputSchema: ${brief(tool.inputSchema)}`);
    }
  });

  await check('tools/call echo: text echoed', async () => {
    const text = 'hello, interop over HTTP \u00fcn\u00efc\u00f8d\u00e9 \u2713 \ud83d\ude80 "quoted" \\ back';
    const result = await client.callTool({ name: 'echo', arguments: { text } });
    assertNotToolError(result);
    assert.equal(textOf(result), text);
  });

  await check('tools/call echo with pad_bytes 100000: padded text of the right length', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'pad:', pad_bytes: 100000 } });
    assertNotToolError(result);
    const got = textOf(result);
    assert.equal(got.length, 4 + 100000, `length ${got.length}`);
    assert.ok(got === `pad:${'x'.repeat(100000)}`, `content is not "pad:" + 100000 x: starts ${brief(got.slice(0, 40))}`);
  });

  const expectProgress = json ? 0 : 3;
  await check(`tools/call progress {steps:3, interval_ms:10}: ${expectProgress} progress notifications, then "done"`, async () => {
    const wireStart = wire.length;
    const seen = [];
    const result = await client.callTool({ name: 'progress', arguments: { steps: 3, interval_ms: 10 } }, undefined, {
      onprogress: p => seen.push(p),
    });
    await sleep(0);
    assertNotToolError(result);
    assert.equal(textOf(result), 'done');
    const during = wire.slice(wireStart);
    const req = during.find(w => w.dir === '>' && w.msg?.method === 'tools/call');
    const token = req?.msg?.params?._meta?.progressToken;
    assert.notEqual(token, undefined, 'the SDK sent no progressToken');
    const respAt = during.findIndex(w => w.dir === '<' && w.msg?.id === req.msg.id && ('result' in w.msg || 'error' in w.msg));
    const sent = [];
    during.forEach((w, i) => {
      if (w.dir === '<' && w.msg?.method === 'notifications/progress' && w.msg.params?.progressToken === token) {
        sent.push({ at: i, params: w.msg.params });
      }
    });
    assert.equal(sent.length, expectProgress, `server sent ${sent.length} notifications/progress for token ${token}`);
    for (let i = 0; i < sent.length; i++) {
      const p = sent[i].params;
      assert.ok(sent[i].at < respAt, `notification ${i + 1} arrived after the response: ${brief(p)}`);
      assert.equal(p.total, 3, `notification ${i + 1} total: ${brief(p)}`);
      if (i > 0) assert.ok(p.progress > sent[i - 1].params.progress, `progress not increasing: ${brief(sent.map(n => n.params))}`);
    }
    // Over HTTP each SSE event is dispatched on its own, so the SDK 1.x
    // notification/response race of stdio (typescript-sdk#2580) cannot drop
    // any: onprogress must have seen every one.
    assert.equal(seen.length, expectProgress, `onprogress got ${brief(seen)}`);
    seen.forEach((p, i) => assert.equal(p.progress, sent[i].params.progress, `onprogress ${i + 1}: ${brief(p)}`));
    if (json) note('JSON-only server: notifications tied to a request are not delivered (documented)');
    else if (stateless) note('stateless server: progress travels on the request\'s own SSE stream');
  });

  if (stateless) {
    await check('tools/call roots (stateless): the server cannot ask the client, the tool reports an error', async () => {
      const before = first.rootsRequests;
      let outcome;
      try {
        const result = await client.callTool({ name: 'roots', arguments: { timeout_ms: 2000 } });
        assert.equal(result?.isError, true, `roots succeeded without a session: ${brief(result)}`);
        outcome = `isError result: ${brief(textOf(result), 120)}`;
      } catch (e) {
        assert.ok(e instanceof McpError, `not an McpError: ${e?.name}: ${e?.message}`);
        outcome = `McpError ${e.code}`;
      }
      assert.equal(first.rootsRequests - before, 0, 'the client received roots/list');
      note(outcome);
    });
  } else {
    await check(json
      ? 'tools/call roots (JSON-only server): the client root, or a clean tool error without roots/list reaching the client'
      : 'tools/call roots: server asks roots/list on the SSE stream, returns the client root', async () => {
      note(await callRoots(first, json));
    });
  }

  await check('ping', async () => {
    const result = await client.ping();
    assert.equal(typeof result, 'object');
  });

  // Cancellation.  With a session the server hears notifications/cancelled
  // and its handler is woken (the trace says peer_cancelled); a stateless
  // server cannot tie the notification to anything (accepted and ignored,
  // documented), so there the call is short and its late answer, which the
  // SDK no longer expects, is allowed.
  let cancelledId = null;
  const sleepMs = stateless ? 1500 : 60000;
  await check(`cancel: aborting sleep ${sleepMs} rejects the call, server stays usable`, async () => {
    const ac = new AbortController();
    const wireStart = wire.length;
    const call = client.callTool({ name: 'sleep', arguments: { ms: sleepMs } }, undefined, { signal: ac.signal });
    call.catch(() => {}); // judged below, after the abort
    // Abort once the handler runs (our own server traces it; another is
    // given 200 ms), so the cancel cannot reach the server before the call.
    const deadline = Date.now() + 10000;
    let sent = null;
    await sleep(200);
    while (run.server && Date.now() < deadline) {
      sent = sent || wire.slice(wireStart).find(w => w.dir === '>' && w.msg?.method === 'tools/call');
      if (sent && traceHas(`started ${JSON.stringify(sent.msg.id)}`)) break;
      await sleep(20);
    }
    const aborted = Date.now();
    ac.abort(new Error('interop test abort'));
    await assert.rejects(call, 'the aborted call did not reject');
    const elapsed = Date.now() - aborted;
    assert.ok(elapsed < 1200, `rejection took ${elapsed} ms after the abort`);
    const req = wire.slice(wireStart).find(w => w.dir === '>' && w.msg?.method === 'tools/call');
    const cancel = wire.slice(wireStart).find(w => w.dir === '>' && w.msg?.method === 'notifications/cancelled');
    assert.ok(req && cancel, 'no tools/call + notifications/cancelled pair was sent');
    assert.equal(cancel.msg.params.requestId, req.msg.id, 'cancel names another request id');
    cancelledId = req.msg.id;
    const after = await client.callTool({ name: 'echo', arguments: { text: 'still alive' } });
    assertNotToolError(after);
    assert.equal(textOf(after), 'still alive');
  });

  if (!stateless) {
    await check('cancel: the server\'s handler was cancelled and nothing more is written for it', async () => {
      assert.notEqual(cancelledId, null, 'the previous check did not get as far as cancelling');
      if (run.server) {
        const want = `cleanup ${JSON.stringify(cancelledId)} peer_cancelled`;
        const deadline = Date.now() + 3000;
        while (!traceHas(want) && Date.now() < deadline) await sleep(20);
        assert.ok(traceHas(`started ${JSON.stringify(cancelledId)}`), `trace has no "started ${cancelledId}"`);
        assert.ok(traceHas(want), `trace has no "${want}"`);
      } else {
        await sleep(500);
        note('the handler\'s cancellation is not visible from here (the caller checks the backends\' stats)');
      }
      const late = wire.slice(wireRunStart).filter(w => w.who === 'c1' && w.dir === '<' && w.msg?.id === cancelledId && ('result' in w.msg || 'error' in w.msg));
      assert.equal(late.length, 0, `server answered the cancelled request ${cancelledId}: ${brief(late.map(w => w.msg))}`);
    });
  } else {
    await check('cancel (stateless): the late answer of the uncancellable call changes nothing', async () => {
      assert.notEqual(cancelledId, null, 'the previous check did not get as far as cancelling');
      await sleep(sleepMs + 300);
      const late = sdkErrors.slice(sdkErrStart).filter(e => /unknown message ID/i.test(e.err?.message ?? '') && (e.err.message.includes(`"id":${JSON.stringify(cancelledId)}`) || e.err.message.includes(`ID: ${cancelledId}`)));
      for (const e of late) explained.add(e);
      const result = await client.callTool({ name: 'echo', arguments: { text: 'after the late answer' } });
      assert.equal(textOf(result), 'after the late answer');
      note(late.length ? 'the SDK reported the late answer as one for an unknown request id' : 'no late answer reached the SDK');
    });
  }

  await check('tools/call of an unknown tool: McpError -32602', async () => {
    await assert.rejects(
      client.callTool({ name: 'no-such-tool-interop', arguments: {} }),
      err => {
        assert.ok(err instanceof McpError, `not an McpError: ${err?.name}: ${err?.message}`);
        assert.equal(err.code, -32602, `error code ${err.code}: ${err.message}`);
        return true;
      },
    );
  });

  await check(`a second client gets ${stateless ? 'served without a session too' : 'a session of its own'}; both keep working`, async () => {
    const second = makeClient(url, 'c2');
    try {
      await second.client.connect(second.transport);
      if (stateless) {
        assert.equal(second.transport.sessionId, undefined, `second client got session id ${second.transport.sessionId}`);
      } else {
        assert.equal(typeof second.transport.sessionId, 'string', 'second client has no session id');
        assert.notEqual(second.transport.sessionId, sessionId, 'both clients have the same session id');
      }
      const [a, b] = await Promise.all([
        client.callTool({ name: 'echo', arguments: { text: 'from c1' } }),
        second.client.callTool({ name: 'echo', arguments: { text: 'from c2' } }),
      ]);
      assert.equal(textOf(a), 'from c1');
      assert.equal(textOf(b), 'from c2');
      if (!stateless) {
        const firstAsked = first.rootsRequests;
        note(await callRoots(second, json));
        assert.equal(first.rootsRequests, firstAsked, 'roots/list of the second session reached the first client');
        await second.transport.terminateSession();
      }
    } finally {
      await closeClient(second);
    }
  });

  await check('the SDK reported no protocol errors', async () => {
    const unexplained = sdkErrors.slice(sdkErrStart).filter(e => !explained.has(e) && !e.closing);
    assert.equal(unexplained.length, 0, `onerror: ${unexplained.map(e => `${e.who}: ${e.err?.message ?? String(e.err)}`).join(' | ')}`);
  });

  if (!stateless) {
    await check('terminateSession(): DELETE ends the session; a request naming it gets 404', async () => {
      const httpStart = http.length;
      await transport.terminateSession();
      const del = http.slice(httpStart).find(x => x.method === 'DELETE');
      assert.ok(del, 'no DELETE was sent');
      assert.ok(del.status >= 200 && del.status < 300, `DELETE answered ${del.status}`);
      assert.equal(transport.sessionId, undefined, 'the SDK still holds the session id');
      await closeClient(first);
      // The SDK forgets the id after DELETE; a client that kept it (here a
      // new transport resuming it) must be told the session is gone.
      const stale = makeClient(url, 'c1-stale', sessionId);
      stale.transport.setProtocolVersion(negotiated);
      try {
        await stale.client.connect(stale.transport); // a resumption: no initialize
        await assert.rejects(stale.client.callTool({ name: 'echo', arguments: { text: 'too late' } }), err => {
          assert.ok(err instanceof StreamableHTTPError, `not a StreamableHTTPError: ${err?.name}: ${err?.message}`);
          assert.equal(err.code, 404, `HTTP status ${err.code}: ${err.message}`);
          return true;
        });
        const get = await raw(url, 'GET', { Accept: 'text/event-stream', 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': negotiated });
        assert.equal(get.status, 404, `GET with the ended session: ${get.status}`);
      } finally {
        // The rejected POST is reported through onerror too: expected here.
        stale.closing = true;
        await closeClient(stale);
      }
    });
  } else {
    await closeClient(first);
  }
}

// ---- the runs --------------------------------------------------------------------
const guard = setTimeout(() => {
  failed++;
  console.log(`not ok - overall timeout (${RUN_TIMEOUT_MS * 2} ms)`);
  dumpDiagnostics(null, Math.max(0, wire.length - 20), Math.max(0, http.length - 20));
  if (currentServer) currentServer.child.kill('SIGKILL');
  finish();
}, RUN_TIMEOUT_MS * 2);
let currentServer = null; // the server this script started, while it runs

if (opts.url) {
  prefix = opts.label ? `${opts.label}: ` : '';
  await runChecks({ url: opts.url, stateless: opts.stateless, json: opts.json });
} else {
  for (const mode of [{ name: 'sse', args: [] }, { name: 'json', args: ['--json'] }]) {
    prefix = `http ${mode.name}: `;
    stderrText = '';
    let server = null;
    await check(`server started: mcp-everything --http 127.0.0.1:PORT${mode.args.length ? ` ${mode.args.join(' ')}` : ''}`, async () => {
      server = await startServer(mode.args);
      currentServer = server;
      note(`${opts.server} ${server.args.join(' ')}`);
    });
    if (!server) continue;
    const url = `http://127.0.0.1:${server.port}/mcp`;
    await runChecks({ url, stateless: false, json: mode.name === 'json', server });
    await check('SIGTERM: the server exits within 5 s, status 0', async () => {
      const started = Date.now();
      server.child.kill('SIGTERM');
      const st = await withTimeout(server.exit, EXIT_WAIT_MS, 'exit after SIGTERM').catch(e => {
        server.child.kill('SIGKILL');
        throw e;
      });
      assert.equal(st.signal, null, `server killed by ${st.signal}`);
      assert.equal(st.code, 0, `server exit status ${st.code}`);
      note(`exited ${Date.now() - started} ms after SIGTERM`);
    });
    currentServer = null;
  }
}

clearTimeout(guard);
finish();
