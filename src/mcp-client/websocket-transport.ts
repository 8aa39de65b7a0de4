import { parseJSONRPCMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { Agent, WebSocket } from 'undici';

/**
 * MCP over a WebSocket (Kiwi's `transport: websocket`), on undici's client: the SDK's own sends no
 * headers and reads messages of any size. Ours sends the spec's headers (auth) on the handshake,
 * asks for the `mcp` subprotocol as the SDK's does, gives the handshake a deadline, and caps each
 * message: undici stops reading a larger frame (or inflated message) and fails the connection.
 * It reports that only as an abnormal close (1006), like a server going away, so the call fails as
 * the connection closing and the next call opens a new one.
 */

export interface WebSocketTransportOptions {
  headers: Record<string, string>;
  maxMessageBytes: number;
  connectTimeoutMs: number;
}

const SUBPROTOCOL = 'mcp';

export function createWebSocketTransport(url: URL, options: WebSocketTransportOptions): Transport {
  const dispatcher = new Agent({ connect: { timeout: options.connectTimeoutMs }, webSocket: { maxPayloadSize: options.maxMessageBytes, maxFragments: 1024 } });
  let socket: WebSocket | undefined;
  let closed = false;
  const transport: Transport = {
    start() {
      if (socket !== undefined) return Promise.reject(new Error('the WebSocket transport was already started'));
      const ws = new WebSocket(url, { protocols: [SUBPROTOCOL], headers: options.headers, dispatcher });
      socket = ws;
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          ws.close();
          reject(new Error(`the WebSocket handshake with ${url.host} did not finish within ${options.connectTimeoutMs} ms`));
        }, options.connectTimeoutMs);
        ws.onopen = () => {
          clearTimeout(timer);
          resolve();
        };
        ws.onerror = (event) => {
          clearTimeout(timer);
          const error = new Error(`WebSocket ${url.host}: ${event.message || 'the connection failed'}`, { cause: event.error });
          if (ws.readyState === WebSocket.CONNECTING) reject(error);
          else transport.onerror?.(error);
        };
        ws.onclose = (event) => {
          clearTimeout(timer);
          reject(new Error(`the WebSocket handshake with ${url.host} was refused or cut off (close ${event.code}${event.reason ? `: ${event.reason}` : ''})`));
          if (!closed) {
            closed = true;
            transport.onclose?.();
          }
          void dispatcher.close().catch(() => undefined);
        };
        ws.onmessage = (event) => receive(event.data);
      });
    },
    send(message: JSONRPCMessage) {
      if (socket?.readyState !== WebSocket.OPEN) return Promise.reject(new Error(`the WebSocket to ${url.host} is not open`));
      socket.send(JSON.stringify(message));
      return Promise.resolve();
    },
    close() {
      if (socket === undefined || socket.readyState === WebSocket.CLOSED) {
        if (!closed) {
          closed = true;
          transport.onclose?.();
        }
        return dispatcher.close().catch(() => undefined);
      }
      socket.close(1000);
      return Promise.resolve();
    },
  };

  function receive(data: unknown): void {
    if (typeof data !== 'string') {
      transport.onerror?.(new Error(`WebSocket ${url.host} sent a binary message; MCP messages are JSON text`));
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(JSON.parse(data));
    } catch (error) {
      transport.onerror?.(new Error(`WebSocket ${url.host} sent a message that is not JSON-RPC: ${data.slice(0, 200)}`, { cause: error }));
      return;
    }
    transport.onmessage?.(message);
  }

  return transport;
}
