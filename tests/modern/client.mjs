// client.mjs - the official MCP TypeScript client v2 (@modelcontextprotocol/
// client, which speaks the stateless 2026-07-28 era) against mcp-everything,
// over stdio and over Streamable HTTP (make check-modern).
//
// With versionNegotiation 'auto' the client probes with server/discover and
// must settle on 2026-07-28; with the default ('legacy') it must still get a
// working 2025-11-25 session from the same binary.  Prints "ok - ..." lines
// and a summary; exits 1 on any failure.
//
// Usage: node client.mjs PATH/TO/mcp-everything
import { spawn } from 'node:child_process';
import net from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const bin = process.argv[2];
let passed = 0;
const failed = [];

function check(name, cond, detail) {
  if (cond) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed.push(name);
    console.log(`not ok - ${name}${detail === undefined ? '' : ' ' + JSON.stringify(detail).slice(0, 300)}`);
  }
}

async function attempt(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, String(e && e.stack ? e.stack : e));
  }
}

function text(result) {
  return (result.content || []).filter((b) => b.type === 'text').map((b) => b.text).join(' ');
}

function newClient(modern) {
  const opts = {
    capabilities: { elicitation: {}, roots: {} },
  };
  if (modern) opts.versionNegotiation = { mode: 'auto' };
  const client = new Client({ name: 'libmcp-modern-interop', version: '1.0.0' }, opts);
  client.setRequestHandler('elicitation/create', async () => ({
    action: 'accept', content: { name: 'Alice' },
  }));
  client.setRequestHandler('roots/list', async () => ({
    roots: [{ uri: 'file:///srv/project', name: 'project' }],
  }));
  return client;
}

// The checks every era must pass, then the modern-only ones.
async function exercise(where, client, modern) {
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  check(`${where}: negotiated ${modern ? '2026-07-28 (modern)' : '2025-11-25 (legacy)'}`,
    modern ? (era === 'modern' && version === '2026-07-28')
      : (era !== 'modern' && version === '2025-11-25'), { era, version });
  const tools = await client.listTools();
  check(`${where}: tools/list has echo`, tools.tools.some((t) => t.name === 'echo'));
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  check(`${where}: echo`, text(echo) === 'hi', echo);
  // The same re-entry handler: input_required rounds for the modern era,
  // a real elicitation/create request for the legacy one; the client's
  // handler answers either way.
  const greet = await client.callTool({ name: 'test_input_required_result_elicitation',
    arguments: {} });
  check(`${where}: input from the client (elicitation)`, text(greet) === 'Hello, Alice!', greet);
  const roots = await client.callTool({ name: 'test_input_required_result_list_roots',
    arguments: {} });
  check(`${where}: input from the client (roots)`, text(roots).includes('file:///srv/project'),
    roots);
  const res = await client.readResource({ uri: 'test://static-text' });
  check(`${where}: resources/read`, res.contents && res.contents.length === 1, res);
  const prompt = await client.getPrompt({ name: 'test_simple_prompt' });
  check(`${where}: prompts/get`, prompt.messages && prompt.messages.length > 0, prompt);
  let progress = 0;
  const prog = await client.callTool({ name: 'progress', arguments: { steps: 3, interval_ms: 50 } },
    { onprogress: () => { progress++; } });
  // The server writes all three before the answer (test_stdio.py's
  // progress_before_answer checks that on the wire).  This client, on a
  // legacy stdio connection, was seen to drop progress notifications that
  // come within milliseconds of its request (its handler is not yet in
  // place), so the steps are 50 ms apart and only arrival is checked.
  check(`${where}: progress notifications reach the client`, progress >= 1 && progress <= 3 &&
    !prog.isError, { progress });
  if (modern) {
    let error;
    try {
      await client.callTool({ name: 'test_missing_capability', arguments: {} });
    } catch (e) {
      error = e;
    }
    check(`${where}: a missing capability is -32021`, error && error.code === -32021,
      error && { code: error.code, message: error.message });
  }
}

async function overStdio(modern) {
  const where = `stdio ${modern ? 'modern' : 'legacy'}`;
  const client = newClient(modern);
  await attempt(where, async () => {
    await client.connect(new StdioClientTransport({ command: bin, args: [] }));
    await exercise(where, client, modern);
  });
  await client.close().catch(() => {});
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitListening(port) {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('server did not start');
}

async function overHttp() {
  const port = await freePort();
  const server = spawn(bin, ['--http', `127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  try {
    await waitListening(port);
    for (const modern of [true, false]) {
      const where = `http ${modern ? 'modern' : 'legacy'}`;
      const client = newClient(modern);
      await attempt(where, async () => {
        await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
        await exercise(where, client, modern);
      });
      await client.close().catch(() => {});
    }
  } finally {
    server.kill('SIGTERM');
    check('http: the server exits 0 on SIGTERM', (await exited) === 0);
  }
}

await overStdio(true);
await overStdio(false);
await overHttp();
console.log(`${passed} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
