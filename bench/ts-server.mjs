// ts-server.mjs - the comparison server of `make bench`: the official MCP
// TypeScript SDK (McpServer, as its documentation shows it) offering the
// same `echo {text, pad_bytes?}` tool as mcp-everything, with the same
// result shape.
//
// Usage: node ts-server.mjs [--stdio]                 one session on stdin/stdout
//        node ts-server.mjs --http HOST:PORT [--json] Streamable HTTP at /mcp,
//                                                     a session per initialize;
//                                                     --json answers POSTs with
//                                                     application/json, else SSE
//        node ts-server.mjs --http HOST:PORT --stateless [--json]
//                                                     no sessions: a server and a
//                                                     transport per POST, as the
//                                                     SDK documents stateless mode
//
// Installed by bench/run.sh next to node_modules in the build tree, with the
// versions pinned in bench/package.json.

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function newServer() {
  const server = new McpServer({ name: 'ts-echo', version: '0.1.0' });
  server.registerTool(
    'echo',
    {
      title: 'Echo',
      description: "Returns the text it was given, optionally padded with pad_bytes of 'x'.",
      inputSchema: { text: z.string(), pad_bytes: z.number().int().min(0).optional() },
    },
    async ({ text, pad_bytes }) => ({
      content: [{ type: 'text', text: pad_bytes ? text + 'x'.repeat(pad_bytes) : text }],
    }),
  );
  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function isInitialize(body) {
  return body && !Array.isArray(body) && body.method === 'initialize';
}

async function serveStateless(req, res, json) {
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  const body = JSON.parse(await readBody(req));
  const server = newServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: json,
  });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

async function serveHttp(addr, json, stateless) {
  const colon = addr.lastIndexOf(':');
  const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(addr.slice(colon + 1));
  const sessions = new Map(); // Mcp-Session-Id -> transport

  const httpServer = http.createServer(async (req, res) => {
    try {
      if (!req.url.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      if (stateless) {
        await serveStateless(req, res, json);
        return;
      }
      const sid = req.headers['mcp-session-id'];
      let body;
      if (req.method === 'POST') body = JSON.parse(await readBody(req));
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid || req.method !== 'POST' || !isInitialize(body)) {
          res.writeHead(sid ? 404 : 400).end();
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: json,
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await newServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  httpServer.keepAliveTimeout = 60000;
  await new Promise((resolve) => httpServer.listen(port, host, resolve));
  const stop = () => httpServer.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const args = process.argv.slice(2);
const at = args.indexOf('--http');
if (at >= 0 && args[at + 1]) {
  await serveHttp(args[at + 1], args.includes('--json'), args.includes('--stateless'));
} else {
  const server = newServer();
  const transport = new StdioServerTransport();
  // Exit at end of input, as a stdio server must.
  process.stdin.on('end', () => process.exit(0));
  await server.connect(transport);
}
