import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { createModernServer } from '../fixtures/mcp/modern-server.js';

/**
 * The modern fixture MCP server behind a WebSocket on 127.0.0.1 (RFC 6455, written out here since
 * the project has no WebSocket server package): the handshake needs `Authorization: Bearer TOKEN`
 * and the `mcp` subprotocol; each connection gets its own McpServer. `dropAll` cuts every
 * connection without a close frame, as a server that goes away does.
 */
export interface WebSocketMcpServer {
  url: string;
  /** Handshakes accepted so far. */
  accepted: number;
  dropAll(): void;
  close(): Promise<void>;
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export async function startWebSocketMcpServer(token: string): Promise<WebSocketMcpServer> {
  const sockets = new Set<Duplex>();
  const http = createServer((_req, res) => res.writeHead(426).end());
  const served: WebSocketMcpServer = {
    url: '',
    accepted: 0,
    dropAll: () => sockets.forEach((s) => s.destroy()),
    close: () => new Promise<void>((resolve) => {
      served.dropAll();
      http.close(() => resolve());
    }),
  };
  http.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (req.headers.authorization !== `Bearer ${token}` || !protocols.includes('mcp')) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}${GUID}`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: mcp\r\n\r\n`);
    sockets.add(socket);
    served.accepted++;
    void createModernServer('modern').connect(frameTransport(socket, () => sockets.delete(socket)));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address();
  served.url = `ws://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/mcp`;
  return served;
}

function frameTransport(socket: Duplex, onGone: () => void): Transport {
  let buffer = Buffer.alloc(0);
  const transport: Transport = {
    start: () => Promise.resolve(),
    send(message: JSONRPCMessage) {
      socket.write(frame(0x1, Buffer.from(JSON.stringify(message))));
      return Promise.resolve();
    },
    close() {
      socket.end(frame(0x8, Buffer.alloc(0)));
      return Promise.resolve();
    },
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (let next = readFrame(buffer); next !== undefined; next = readFrame(buffer)) {
      buffer = buffer.subarray(next.size);
      if (next.opcode === 0x1) transport.onmessage?.(JSON.parse(next.payload.toString('utf8')) as JSONRPCMessage);
      else if (next.opcode === 0x8) socket.end(frame(0x8, Buffer.alloc(0)));
      else if (next.opcode === 0x9) socket.write(frame(0xa, next.payload));
    }
  });
  socket.on('close', () => {
    onGone();
    transport.onclose?.();
  });
  socket.on('error', () => undefined);
  return transport;
}

/** One whole client frame (always masked, never fragmented by undici for these sizes), or undefined until it has all arrived. */
function readFrame(data: Buffer): { opcode: number; payload: Buffer; size: number } | undefined {
  if (data.length < 2) return undefined;
  const opcode = (data[0] as number) & 0x0f;
  let length = (data[1] as number) & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (data.length < 4) return undefined;
    length = data.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (data.length < 10) return undefined;
    length = Number(data.readBigUInt64BE(2));
    offset = 10;
  }
  if (data.length < offset + 4 + length) return undefined;
  const mask = data.subarray(offset, offset + 4);
  const payload = Buffer.from(data.subarray(offset + 4, offset + 4 + length));
  for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number);
  return { opcode, payload, size: offset + 4 + length };
}

function frame(opcode: number, payload: Buffer): Buffer {
  const head = payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : payload.length < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (payload.length >= 126) {
    head[0] = 0x80 | opcode;
    if (payload.length < 65536) {
      head[1] = 126;
      head.writeUInt16BE(payload.length, 2);
    } else {
      head[1] = 127;
      head.writeBigUInt64BE(BigInt(payload.length), 2);
    }
  }
  return Buffer.concat([head, payload]);
}
