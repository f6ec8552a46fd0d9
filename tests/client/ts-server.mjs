// ts-server.mjs - a server not written here for libmcp's client
// (make check-client): the official MCP TypeScript SDK's McpServer over
// stdio with a `slow {ms}` tool that waits on its abort signal, so that a
// cancelled call and a server killed mid-call can be observed from the
// server's side.  It writes to stderr "started <requestId>" when the tool
// begins and "aborted <requestId>" when the SDK tells it the client
// cancelled (notifications/cancelled); its pid goes to $TS_SERVER_PIDFILE.

import fs from 'node:fs';
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.env.TS_SERVER_PIDFILE) fs.writeFileSync(process.env.TS_SERVER_PIDFILE, `${process.pid}\n`);
const server = new McpServer({ name: 'ts-slow', version: '0.1.0' });
server.registerTool(
  'slow',
  { description: 'Waits ms milliseconds, or until cancelled.', inputSchema: { ms: z.number().int().min(0) } },
  async ({ ms }, extra) => {
    process.stderr.write(`started ${extra.requestId}\n`);
    await new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(t);
        process.stderr.write(`aborted ${extra.requestId}\n`);
        resolve();
      });
    });
    return { content: [{ type: 'text', text: `slept ${ms}` }] };
  },
);
await server.connect(new StdioServerTransport());
