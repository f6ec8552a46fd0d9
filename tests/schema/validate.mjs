// validate.mjs - checks every message the server wrote, as recorded by the
// tests, against the official MCP JSON schema of the revision the
// connection negotiated.
//
// Usage: node validate.mjs SCHEMA_DIR RECORD.jsonl...
// A record line is {"rev": "2025-11-25", "method": "<method of the request
// this message answers, or null>", "msg": {...}}.  Exits 1 if any message
// is invalid, 2 on a usage or input error.
//
// The extensions' messages (the tasks extension of 2026-07-28, skills)
// are not in the core schemas: tests/schema/extensions.json defines them,
// referring to the core definitions of the record's revision, and serves
// for a name the core schema lacks.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// ajv lives in a cache outside the source tree (installed by the build);
// MCP_NODE_PREFIX names the folder whose node_modules holds it.
const require = createRequire(
  path.join(process.env.MCP_NODE_PREFIX || path.dirname(new URL(import.meta.url).pathname), 'noop.js'));
const Ajv7 = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;

const [schemaDir, ...records] = process.argv.slice(2);
if (!schemaDir || records.length === 0) {
  console.error('usage: node validate.mjs SCHEMA_DIR RECORD.jsonl...');
  process.exit(2);
}

// The result definition each request method must answer with.
const resultDefs = {
  'initialize': ['InitializeResult'],
  'server/discover': ['DiscoverResult'],
  'ping': ['EmptyResult', 'Result'],
  'logging/setLevel': ['EmptyResult', 'Result'],
  'resources/subscribe': ['EmptyResult', 'Result'],
  'resources/unsubscribe': ['EmptyResult', 'Result'],
  'tools/list': ['ListToolsResult'],
  // InputRequiredResult exists in 2026-07-28 only (missing definitions
  // are skipped), so it is never accepted for a 2025 answer.
  'tools/call': ['CallToolResult', 'CreateTaskResult', 'InputRequiredResult'],
  'resources/list': ['ListResourcesResult'],
  'resources/templates/list': ['ListResourceTemplatesResult'],
  'resources/read': ['ReadResourceResult', 'InputRequiredResult'],
  'prompts/list': ['ListPromptsResult'],
  'prompts/get': ['GetPromptResult', 'InputRequiredResult'],
  'subscriptions/listen': ['SubscriptionsListenResult'],
  'completion/complete': ['CompleteResult'],
  'tasks/get': ['GetTaskResult'],
  'tasks/list': ['ListTasksResult'],
  'tasks/cancel': ['CancelTaskResult'],
  'tasks/result': ['GetTaskPayloadResult', 'CallToolResult'],
  // From tests/schema/extensions.json where the core schema has none.
  'tasks/update': ['UpdateTaskResult'],
  'skills/list': ['ListSkillsResult'],
  'skills/get': ['GetSkillResult'],
  'resources/directory/read': ['ReadResourceDirectoryResult'],
};
// Notifications of extensions, by method: the core unions lack them.
const extNotifications = { 'notifications/tasks': 'TaskStatusNotification' };
// Results that are CacheableResults from 2026-07-28 on.
const cacheable2026 = new Set(['skills/list', 'skills/get']);
const extText = fs.readFileSync(new URL('./extensions.json', import.meta.url), 'utf8');

const validators = new Map();
function validatorsFor(rev) {
  if (validators.has(rev)) return validators.get(rev);
  const file = path.join(schemaDir, rev, 'schema.json');
  const schema = JSON.parse(fs.readFileSync(file, 'utf8'));
  const draft2020 = String(schema.$schema || '').includes('2020-12');
  const ajv = new (draft2020 ? Ajv2020 : Ajv7)({ strict: false, allErrors: true });
  addFormats(ajv); // uri, uri-template, byte (base64), email, date-time
  const defsKey = schema.$defs ? '$defs' : 'definitions';
  const id = `mcp-${rev}`;
  ajv.addSchema({ ...schema, $id: id });
  const defs = schema[defsKey];
  const ext = JSON.parse(extText.replaceAll('mcp-core#/$defs/', `${id}#/${defsKey}/`));
  delete ext.$schema; // read with the core schema's draft
  const extId = `ext-${rev}`;
  ajv.addSchema({ ...ext, $id: extId });
  const get = (name) => (defs[name] ? ajv.getSchema(`${id}#/${defsKey}/${name}`)
    : ext.$defs[name] ? ajv.getSchema(`${extId}#/$defs/${name}`) : null);
  const v = { get, defs };
  validators.set(rev, v);
  return v;
}

let total = 0;
let invalid = 0;
const perRev = new Map(); // revision -> messages validated against its schema
let nullIds = 0;
const report = (rec, why, errors) => {
  invalid++;
  if (invalid <= 20) {
    console.error(`INVALID (${rec.rev}, answering ${rec.method}): ${why}`);
    console.error('  message: ' + JSON.stringify(rec.msg).slice(0, 400));
    if (errors) console.error('  errors: ' + JSON.stringify(errors.slice(0, 3)));
  }
};

for (const file of records) {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
  for (const line of lines) {
    const rec = JSON.parse(line);
    const { get } = validatorsFor(rec.rev);
    const msgs = Array.isArray(rec.msg) ? rec.msg : [rec.msg];
    for (const msg of msgs) {
      total++;
      perRev.set(rec.rev, (perRev.get(rec.rev) || 0) + 1);
      const env = get('JSONRPCMessage');
      if (!env(msg.id === null && 'error' in msg ? { ...msg, id: 0 } : msg)) {
        report(rec, 'not a JSONRPCMessage', env.errors);
        continue;
      }
      if ('method' in msg && !('id' in msg) && extNotifications[msg.method]) {
        const n = get(extNotifications[msg.method]);
        if (!n(msg)) report(rec, `not a valid ${extNotifications[msg.method]}`, n.errors);
        continue;
      }
      if ('method' in msg) {
        const union = get('id' in msg ? 'ServerRequest' : 'ServerNotification');
        if (union && !union(msg)) report(rec, `not a valid server ${'id' in msg ? 'request' : 'notification'}`, union.errors);
        continue;
      }
      if ('error' in msg) {
        const e = get('JSONRPCErrorResponse') || get('JSONRPCError');
        // JSON-RPC 2.0 requires "id": null when the request's id could not
        // be read (DESIGN.md P3, P7); the MCP schemas cannot say null (the
        // older ones even require an id).  Such an answer is checked with
        // a stand-in id, so everything else about it must still be right.
        const checked = msg.id === null ? { ...msg, id: 0 } : msg;
        if (msg.id === null) nullIds++;
        if (!e(checked)) report(rec, 'not a valid error response', e.errors);
        continue;
      }
      const names = resultDefs[rec.method];
      if (!names) {
        report(rec, `no result definition known for method ${rec.method}`);
        continue;
      }
      const candidates = names.map(get).filter(Boolean);
      if (!candidates.some((c) => c(msg.result))) {
        report(rec, `result is not a ${names.join(' or ')}`, candidates[0] && candidates[0].errors);
        continue;
      }
      if (rec.rev >= '2026-07-28' && cacheable2026.has(rec.method)) {
        const c = get('Cacheable');
        if (!c(msg.result)) report(rec, 'a 2026-07-28 result without ttlMs and cacheScope', c.errors);
      }
    }
  }
}

// Per revision, so a revision whose recording broke shows as missing.
console.log('schema: per revision: ' +
  [...perRev.keys()].sort().map((r) => `${r} ${perRev.get(r)}`).join(', '));
console.log(`schema: ${total} messages validated, ${invalid} invalid ` +
  `(${nullIds} error answers with a null id, checked with a stand-in id)`);
console.log(`${total - invalid} passed, ${invalid} failed`);
process.exit(invalid ? 1 : 0);
