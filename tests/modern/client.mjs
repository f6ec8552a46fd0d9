// client.mjs - the official MCP TypeScript client v2 (@modelcontextprotocol/
// client, which speaks the stateless 2026-07-28 era) against mcp-everything,
// over stdio and over Streamable HTTP (make check-modern).
//
// With versionNegotiation 'auto' the client probes with server/discover and
// must settle on 2026-07-28; with the default ('legacy') it must still get a
// working 2025-11-25 session from the same binary.  Prints "ok - ..." lines
// and a summary; exits 1 on any failure.
//
// Tasks (the io.modelcontextprotocol/tasks extension, SEP-2663): this client
// (2.4.0) does not take a task as the answer of tools/call: its result
// decoding accepts resultType "complete" and "input_required" only, so
// callTool() and request('tools/call') throw UNSUPPORTED_RESULT_TYPE on a
// CreateTaskResult, and it has no task API.  What it does have is sending
// tasks/get, tasks/update and tasks/cancel with a result schema, with the
// extension declared in its per-request capabilities and the task id in
// Mcp-Name over HTTP.  So over each transport the tasks check sends the
// creating tools/call through the client's own transport, and the client
// drives everything after: a task to completion, one cancelled mid-run,
// and one answered through input_required inside the task.
//
// Usage: node client.mjs PATH/TO/mcp-everything
//        node client.mjs --tasks-url URL   (the task checks only, against a
//        running server or proxy: make check-cluster drives three processes
//        sharing a store behind round-robin nginx this way)
import { spawn } from 'node:child_process';
import net from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';

const TASKS = 'io.modelcontextprotocol/tasks';
const anyResult = z.object({}).passthrough();

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

// What the user answers to any elicitation: a name, and a confirmation.
function elicitationAnswer() {
  return { action: 'accept', content: { name: 'Alice', confirm: true } };
}

function newClient(modern, tasks) {
  const opts = {
    capabilities: { elicitation: {}, roots: {} },
  };
  if (tasks) opts.capabilities.extensions = { [TASKS]: {} };
  if (modern) opts.versionNegotiation = { mode: 'auto' };
  const client = new Client({ name: 'libmcp-modern-interop', version: '1.0.0' }, opts);
  client.setRequestHandler('elicitation/create', async () => elicitationAnswer());
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

// A request sent on the client's own transport, its answer taken off it
// before the client sees it (a CreateTaskResult, which it would refuse).
function rawRequest(client, msg) {
  const t = client.transport;
  return new Promise((resolve, reject) => {
    const prev = t.onmessage;
    t.onmessage = (m, extra) => {
      if (m && m.id === msg.id && !('method' in m)) {
        t.onmessage = prev;
        resolve(m);
        return;
      }
      prev(m, extra);
    };
    t.send(msg).catch((e) => {
      t.onmessage = prev;
      reject(e);
    });
  });
}

let rawId = 0;
async function createTask(client, name, args) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'libmcp-modern-interop', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { [TASKS]: {} } },
  };
  const m = await rawRequest(client, { jsonrpc: '2.0', id: `raw-${++rawId}`, method: 'tools/call',
    params: { name, arguments: args, _meta: meta } });
  if (!m.result || m.result.resultType !== 'task' || !m.result.taskId) {
    throw new Error(`${name} did not become a task: ${JSON.stringify(m)}`);
  }
  return m.result.taskId;
}

async function pollTask(client, taskId, until) {
  for (let i = 0; i < 400; i++) {
    const t = await client.request({ method: 'tasks/get', params: { taskId } }, anyResult);
    if (until(t)) return t;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${taskId} did not get there`);
}

const terminal = (t) => ['completed', 'failed', 'cancelled'].includes(t.status);

async function exerciseTasks(where, client, plain) {
  // A client that cannot take a task gets a plain call.
  const sync = await plain.callTool({ name: 'slow_compute', arguments: { seconds: 0 } });
  check(`${where}: without the tasks extension, slow_compute answers plainly`,
    text(sync).includes('computed'), sync);
  // The client's own limit, so that this check notices when it is lifted.
  let refused;
  try {
    await client.callTool({ name: 'slow_compute', arguments: { seconds: 0 } });
  } catch (e) {
    refused = e;
  }
  check(`${where}: client 2.4.0 refuses a CreateTaskResult from callTool (no SEP-2663 support)`,
    refused && refused.code === 'UNSUPPORTED_RESULT_TYPE', refused && refused.message);
  // To completion.
  const done = await createTask(client, 'slow_compute', { seconds: 0.2, label: 'modern' });
  const t1 = await pollTask(client, done, terminal);
  check(`${where}: task driven to completion (tasks/get inlines the result)`,
    t1.status === 'completed' && text(t1.result).includes('computed modern'), t1);
  // Cancelled mid-run.
  const long = await createTask(client, 'slow_compute', { seconds: 60, label: 'cancelled' });
  await pollTask(client, long, (t) => t.status === 'working');
  await client.request({ method: 'tasks/cancel', params: { taskId: long } }, anyResult);
  const t2 = await pollTask(client, long, terminal);
  check(`${where}: task cancelled mid-run`, t2.status === 'cancelled' && !('result' in t2), t2);
  // input_required inside a task, answered by the client's elicitation
  // answer through tasks/update.
  const ask = await createTask(client, 'confirm_delete', { filename: 'notes.txt' });
  const t3 = await pollTask(client, ask, (t) => t.status === 'input_required' || terminal(t));
  const keys = Object.keys(t3.inputRequests || {});
  const responses = {};
  for (const k of keys) responses[k] = elicitationAnswer(t3.inputRequests[k].params);
  await client.request({ method: 'tasks/update', params: { taskId: ask, inputResponses: responses } },
    anyResult);
  const t4 = await pollTask(client, ask, terminal);
  check(`${where}: input_required inside a task answered with tasks/update`,
    keys.length === 1 && t3.inputRequests[keys[0]].method === 'elicitation/create' &&
    t4.status === 'completed' && text(t4.result) === 'deleted notes.txt', { t3, t4 });
}

async function tasksOver(where, connect) {
  const client = newClient(true, true);
  const plain = newClient(true, false);
  await attempt(where, async () => {
    await client.connect(connect());
    await plain.connect(connect());
    await exerciseTasks(where, client, plain);
  });
  await client.close().catch(() => {});
  await plain.close().catch(() => {});
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
    // Each request on its own POST: the tasks outlive them.
    await tasksOver('http tasks', () =>
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  } finally {
    server.kill('SIGTERM');
    check('http: the server exits 0 on SIGTERM', (await exited) === 0);
  }
}

if (process.argv[2] === '--tasks-url') {
  const url = new URL(process.argv[3]);
  await tasksOver(`tasks through ${url.host}`, () => new StreamableHTTPClientTransport(url));
  console.log(`${passed} passed, ${failed.length} failed`);
  process.exit(failed.length ? 1 : 0);
}
await overStdio(true);
await overStdio(false);
// Over stdio each client has its own server process: the task checks use
// one connection for everything, a second only for the plain call.
await tasksOver('stdio tasks', () => new StdioClientTransport({ command: bin, args: [] }));
await overHttp();
console.log(`${passed} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
