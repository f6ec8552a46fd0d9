// ts-sse-server.mjs - a server of the HTTP+SSE transport (2024-11-05) not
// written here, for libmcp's client (make check-client): the official MCP
// TypeScript SDK's McpServer on its SSEServerTransport, one per event
// stream.  It serves GET /sse (the event stream, whose first event names
// POST /messages?sessionId=...) and nothing of Streamable HTTP: a POST to
// /sse is answered $TS_SSE_POST_STATUS (default 405), as a server of that
// era answers the client's first Streamable HTTP attempt.
//
//   PORT=N [TS_SSE_BEARER=T] [TS_SSE_POST_STATUS=404] node ts-sse-server.mjs
//
// Tools: echo {text}; slow {ms} (waits on its abort signal, and writes
// "started <requestId>" and "aborted <requestId>" to stderr); progress
// {steps} (a progress notification per step, a log message tied to the
// request, one not tied to it, and tools/list_changed); hangup (ends the
// event stream while the call waits).  With TS_SSE_BEARER every request
// must carry "Authorization: Bearer <it>" (else 401).  GET /evil/sse and
// /broken/sse are not the SDK: streams whose endpoint names another
// origin, or a path that answers every POST 404.  Prints
// "listening <port>" on stdout when ready.

import http from 'node:http';
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

const bearer = process.env.TS_SSE_BEARER;
const postStatus = Number(process.env.TS_SSE_POST_STATUS || 405);
const transports = new Map();

function makeServer(transport) {
  const server = new McpServer(
    { name: 'ts-sse', version: '0.1.0' },
    { capabilities: { logging: {} } },
  );
  server.registerTool(
    'echo',
    { description: 'Returns its text.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
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
  server.registerTool(
    'progress',
    { description: 'Reports progress in steps, and logs.', inputSchema: { steps: z.number().int().min(1).max(100) } },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
          });
        }
      }
      await extra.sendNotification({
        method: 'notifications/message',
        params: { level: 'info', logger: 'ts-sse', data: `did ${steps} steps` },
      });
      await server.server.sendLoggingMessage({ level: 'notice', logger: 'ts-sse', data: 'not tied to a call' });
      server.sendToolListChanged();
      return { content: [{ type: 'text', text: `done ${steps}` }] };
    },
  );
  server.registerTool(
    'hangup',
    { description: 'Ends the event stream while this call waits.' },
    async () => {
      setTimeout(() => transport.close(), 100);
      await new Promise((resolve) => setTimeout(resolve, 60000));
      return { content: [{ type: 'text', text: 'never' }] };
    },
  );
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (bearer && req.headers.authorization !== `Bearer ${bearer}`) {
    res.writeHead(401, { 'Content-Type': 'text/plain' }).end('missing or wrong bearer token');
    return;
  }
  if (url.pathname === '/sse' && req.method === 'GET') {
    const transport = new SSEServerTransport('/messages', res);
    transports.set(transport.sessionId, transport);
    transport.onclose = () => transports.delete(transport.sessionId);
    await makeServer(transport).connect(transport);
    return;
  }
  if (url.pathname === '/sse') {
    res.writeHead(postStatus, { Allow: 'GET', 'Content-Type': 'text/plain' }).end('this server speaks HTTP+SSE only');
    return;
  }
  if (url.pathname === '/messages' && req.method === 'POST') {
    const transport = transports.get(url.searchParams.get('sessionId'));
    if (!transport) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('no such session');
      return;
    }
    await transport.handlePostMessage(req, res);
    return;
  }
  if (url.pathname === '/broken/sse' && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write('event: endpoint\ndata: /nowhere?sessionId=x\n\n');
    return;
  }
  if (url.pathname === '/evil/sse' && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write('event: endpoint\ndata: http://127.0.0.2:9/messages?sessionId=x\n\n');
    return;
  }
  res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
});
httpServer.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${httpServer.address().port}\n`);
});
