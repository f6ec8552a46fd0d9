// ts-client.mjs - the comparison client of `make bench`'s client
// section: the official MCP TypeScript SDK Client over StdioClientTransport
// against a server (mcp-everything), `echo {"text":"hello"}` calls with
// WINDOW always in flight for DURATION_MS after WARMUP calls.  Prints
//   RESULT kind=client label=LABEL calls=N seconds=S rps=R
// Usage: node ts-client.mjs LABEL WINDOW DURATION_MS WARMUP SERVER [ARGS...]

import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [label, windowArg, durationArg, warmupArg, command, ...args] = process.argv.slice(2);
const window = Number(windowArg), duration = Number(durationArg), warmup = Number(warmupArg);
const client = new Client({ name: 'ts-client-bench', version: '0.1.0' });
// The whole environment: the server may need LD_LIBRARY_PATH (a libtool
// build), which the SDK's default environment leaves out.
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: 'ignore' }));
const call = () => client.callTool({ name: 'echo', arguments: { text: 'hello' } });

let done = 0;
async function lane(until) {
  while (performance.now() < until) {
    await call();
    done++;
  }
}
for (let i = 0; i < warmup; i += window) await Promise.all(Array.from({ length: window }, call));
const start = performance.now();
const until = start + duration;
await Promise.all(Array.from({ length: window }, () => lane(until)));
const seconds = (performance.now() - start) / 1000;
console.log(`RESULT kind=client label=${label} calls=${done} seconds=${seconds.toFixed(3)} rps=${(done / seconds).toFixed(1)}`);
await client.close();
