import type { Readable, Writable } from 'node:stream';
import { parseJSONRPCMessage, ProtocolErrorCode as ErrorCode, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/server';
import { KiwiError } from '../base/errors.js';
import { jsonTooDeepAt, MAX_JSON_DEPTH } from '../base/json-depth.js';

/**
 * The MCP server's stdio transport: one JSON-RPC message a line, each line capped. The SDK's own
 * caps the whole buffer and, past it, closes the transport (the server exits, dropping the calls
 * in flight); a line it cannot parse it reports to the server only, so a request with an id waits
 * forever. Here a bad line gets a JSON-RPC error on stdout and the server goes on: an oversized
 * line is discarded up to its newline (never buffered past the cap), a line that is not JSON is a
 * parse error, and JSON that is not a JSON-RPC message, or nests too deeply, is an invalid request
 * answered with its id where it has one.
 */

export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;

export interface StdioLineTransportOptions {
  /** Longest line (one message) read, in bytes, newline excluded; default 4 MiB. */
  maxLineBytes?: number;
}

const NEWLINE = 0x0a;

export function createStdioLineTransport(stdin: Readable, stdout: Writable, options: StdioLineTransportOptions = {}): Transport {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) throw new KiwiError('INVALID_INPUT', `createStdioLineTransport: maxLineBytes must be a whole number of at least 1, got ${String(maxLineBytes)}`);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Inside a line that passed the cap: everything up to its newline is dropped. */
  let discarding = false;
  let started = false;

  const write = (message: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdout.once('drain', resolve);
    });

  const transport: Transport = {
    async start() {
      if (started) throw new KiwiError('INVALID_INPUT', 'the stdio transport is already started (Server.connect starts it)');
      started = true;
      stdin.on('data', onData);
      stdin.on('error', onStreamError);
    },
    send: (message) => write(message),
    async close() {
      stdin.off('data', onData);
      stdin.off('error', onStreamError);
      if (stdin.listenerCount('data') === 0) stdin.pause();
      pending = [];
      pendingBytes = 0;
      transport.onclose?.();
    },
  };

  function reject(code: number, id: string | number | null, message: string): void {
    transport.onerror?.(new KiwiError('INVALID_INPUT', message));
    void write({ jsonrpc: '2.0', id, error: { code, message } });
  }

  function onStreamError(error: Error): void {
    transport.onerror?.(error);
  }

  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let from = 0;
    while (from < bytes.length) {
      const newline = bytes.indexOf(NEWLINE, from);
      const end = newline === -1 ? bytes.length : newline;
      if (!discarding) {
        pending.push(bytes.subarray(from, end));
        pendingBytes += end - from;
        if (pendingBytes > maxLineBytes) {
          pending = [];
          pendingBytes = 0;
          discarding = true;
          reject(ErrorCode.InvalidRequest, null, `A message line is longer than the limit of ${maxLineBytes} bytes; it was dropped. Send smaller messages (one JSON-RPC message a line)`);
        }
      }
      if (newline === -1) return;
      from = newline + 1;
      if (discarding) {
        discarding = false;
        continue;
      }
      const line = Buffer.concat(pending, pendingBytes).toString('utf8');
      pending = [];
      pendingBytes = 0;
      onLine(line);
    }
  }

  function onLine(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const why = error instanceof SyntaxError ? ` (${error.message.slice(0, 200)})` : '';
      reject(ErrorCode.ParseError, null, `Parse error: a line is not JSON${why}; send one JSON-RPC message a line`);
      return;
    }
    const id = idOf(value);
    if (jsonTooDeepAt(line) !== -1) {
      reject(ErrorCode.InvalidRequest, id, `Invalid request: the message is nested more than ${MAX_JSON_DEPTH} levels deep; flatten it`);
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch (error) {
      reject(ErrorCode.InvalidRequest, id, `Invalid request: a line is JSON but not a JSON-RPC 2.0 message (${firstLine(error)})`);
      return;
    }
    transport.onmessage?.(message);
  }

  return transport;
}

/** The id of a would-be request, to answer it by; null when it has none that JSON-RPC allows. */
function idOf(value: unknown): string | number | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The first line of what the SDK's parser threw (a zod report runs to many lines). */
function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]?.slice(0, 200) || 'invalid';
}
