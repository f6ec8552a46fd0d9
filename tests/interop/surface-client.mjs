// surface-client.mjs - the official MCP TypeScript SDK client drives
// mcp-everything over stdio through the rest of the server surface:
// resources (text, blob, template, subscribe), prompts, completion, logging,
// and the server-to-client requests sampling, elicitation and roots, each
// answered by this client.  Prints "ok - ..." lines and "N passed, M failed";
// exits non-zero on any failure.  Usage: node surface-client.mjs SERVER
import assert from 'node:assert/strict';
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const server = process.argv[2] || process.env.MCP_EVERYTHING;
if (!server) {
  console.error('usage: node surface-client.mjs path/to/mcp-everything');
  process.exit(2);
}
const guard = setTimeout(() => {
  console.log('not ok - the run did not finish within 60 s');
  process.exit(1);
}, 60000);

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e && e.message ? e.message : e}`);
  }
}

const client = new Client(
  { name: 'libmcp-surface-interop', version: '1.0.0' },
  { capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: { form: {} } } },
);
const seen = { sampling: null, elicitation: null, logs: [] };
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  seen.sampling = req.params;
  return { role: 'assistant', model: 'interop-model',
           content: { type: 'text', text: 'sampled by the SDK client' } };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  seen.elicitation = req.params;
  return { action: 'accept', content: { username: 'alice', email: 'alice@example.com' } };
});
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: [{ uri: 'file:///tmp/surface-root', name: 'surface' }],
}));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  seen.logs.push(n.params);
});

const transport = new StdioClientTransport({ command: server, args: [], stderr: 'inherit' });
await client.connect(transport);

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

await check('resources/list holds the static resources', async () => {
  const r = await client.listResources();
  const uris = r.resources.map((x) => x.uri);
  assert.ok(uris.includes('test://static-text') && uris.includes('test://static-binary'), uris.join(','));
});
await check('resources/read: text', async () => {
  const r = await client.readResource({ uri: 'test://static-text' });
  assert.equal(typeof r.contents[0].text, 'string');
  assert.ok(r.contents[0].text.length > 0);
});
await check('resources/read: blob', async () => {
  const r = await client.readResource({ uri: 'test://static-binary' });
  assert.ok(Buffer.from(r.contents[0].blob, 'base64').length > 0);
});
await check('resources/templates/list and a templated read', async () => {
  const t = await client.listResourceTemplates();
  assert.ok(t.resourceTemplates.some((x) => x.uriTemplate === 'test://template/{id}/data'));
  const r = await client.readResource({ uri: 'test://template/123/data' });
  assert.equal(r.contents[0].uri, 'test://template/123/data');
});
await check('resources/read of an unknown URI: McpError -32002', async () => {
  await assert.rejects(client.readResource({ uri: 'test://no-such-thing' }), (e) => e.code === -32002);
});
await check('resources/subscribe and unsubscribe', async () => {
  await client.subscribeResource({ uri: 'test://watched-resource' });
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
});
await check('prompts/list and prompts/get with arguments', async () => {
  const l = await client.listPrompts();
  assert.ok(l.prompts.some((p) => p.name === 'test_prompt_with_arguments'));
  const g = await client.getPrompt({ name: 'test_prompt_with_arguments',
                                     arguments: { arg1: 'alpha', arg2: 'beta' } });
  assert.match(g.messages[0].content.text, /alpha/);
});
await check('prompts/get without a required argument: McpError -32602', async () => {
  await assert.rejects(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: {} }),
                       (e) => e.code === -32602);
});
await check('completion/complete on a prompt argument', async () => {
  const c = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
                                    argument: { name: 'arg1', value: 'pa' } });
  assert.ok(c.completion.values.length > 0);
  assert.ok(c.completion.values.every((v) => v.startsWith('pa')), c.completion.values.join(','));
});
await check('logging/setLevel and notifications/message from a tool', async () => {
  await client.setLoggingLevel('info');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  assert.ok(seen.logs.length >= 1, `got ${seen.logs.length} log messages`);
});
await check('sampling/createMessage answered by the client', async () => {
  const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hello?' } });
  assert.ok(seen.sampling && seen.sampling.messages.length >= 1);
  assert.match(text(r), /sampled by the SDK client/);
});
await check('elicitation/create answered by the client', async () => {
  const r = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who are you?' } });
  assert.ok(seen.elicitation && seen.elicitation.requestedSchema);
  assert.match(JSON.stringify(r.content), /alice/);
});
await check('roots/list answered by the client', async () => {
  const r = await client.callTool({ name: 'roots', arguments: {} });
  assert.match(text(r), /surface-root/);
});

await client.close();
clearTimeout(guard);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
