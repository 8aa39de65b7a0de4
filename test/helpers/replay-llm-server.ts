import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A real HTTP server on 127.0.0.1 that replays the recorded LLM responses in
 * test/fixtures/llm-streams/ (one SSE event per write, setImmediate between writes, no sleeps)
 * and records what it was sent. For the provider adapters' tests and the gateway's.
 *
 *   const llm = await startReplayLlmServer();
 *   llm.reply('openai-plain');                       // every request, until changed
 *   llm.replyOnce('anthropic-429', 'anthropic-plain'); // the next two requests, then the standing one
 *   llm.reply({ recording: 'openai-plain', stallAfterChunks: 2 }); // 2 events, then silence
 *   llm.reply({ status: 503 });                      // fail with a status (provider-shaped body)
 *   llm.models(['llama3.1:8b']);                     // GET …/models lists these (Anthropic's shape when asked with anthropic-version)
 *   createOpenAiProvider({ baseUrl: `${llm.url}/v1` }) / createAnthropicProvider({ baseUrl: llm.url, apiKey })
 *   llm.requests[0].body; await llm.requests[0].closed; // 'finished' | 'cut'
 *   await llm.close();                               // in afterEach: cuts every connection
 */

export interface Recording {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
}

export interface ReplayOptions {
  /** A name in test/fixtures/llm-streams/ (without .http) or an inline recording. */
  recording: string | Recording;
  /** Send this many recorded chunks, then nothing more while keeping the connection open (a stalled upstream). */
  stallAfterChunks?: number;
  /** Send this many chunks, then end the response normally (a stream that stops early). */
  endAfterChunks?: number;
  /** Send this many chunks, then destroy the socket (a connection reset). */
  resetAfterChunks?: number;
  /** Cut every chunk further into pieces of this many bytes (lines and UTF-8 characters split across writes). */
  splitBytes?: number;
}

/** A recording's name, a recording with options, or a failure with a status (the body defaults to the provider's error shape). */
export type ReplayAnswer = string | ReplayOptions | { status: number; body?: string; headers?: Record<string, string> };

export type ModelsAnswer = string[] | { status: number; body: string } | 'stall';

export interface ReceivedRequest {
  method: string;
  /** The request target, query included. */
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  /** The JSON-parsed body, or undefined when it was not JSON. */
  body: unknown;
  /** Settles when the exchange is over: 'finished' if the whole answer was sent, 'cut' once the socket closed before that (client abort, reset, close()). */
  closed: Promise<'finished' | 'cut'>;
}

export interface ReplayLlmServer {
  /** http://127.0.0.1:<port>; OpenAI-compatible clients use `${url}/v1`. */
  url: string;
  /** Every request received, in order, recorded once its body was read. */
  requests: ReceivedRequest[];
  /** The answer for every following request (after any replyOnce answers). */
  reply(answer: ReplayAnswer): void;
  /** Answers for the next requests, one each, in order. */
  replyOnce(...answers: ReplayAnswer[]): void;
  /**
   * Answers requests by what they hold, before any queued answer: `by` returns the answer for a
   * request it recognises (a side request for one intent) and undefined for the rest, which the
   * queue answers. Undefined stops routing.
   */
  route(by: ((request: ReceivedRequest) => ReplayAnswer | undefined) | undefined): void;
  /** Drops the replyOnce answers no request has taken yet (a test cut short left them). */
  forgetQueued(): void;
  /** The answer to every GET …/models: ids, a failure, a body as given, or 'stall' (headers never come). Unset: 404. */
  models(answer: ModelsAnswer): void;
  /** Resolves with the request at `index` once it has arrived. */
  request(index: number): Promise<ReceivedRequest>;
  /** Cuts every open connection and stops the server. */
  close(): Promise<void>;
}

export const LLM_STREAMS_DIR = path.join(import.meta.dirname, '../fixtures/llm-streams');

const PATHS: Record<string, string> = { openai: '/v1/chat/completions', anthropic: '/v1/messages' };
// node:http frames the body itself; recorded framing headers would contradict it.
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** Reads test/fixtures/llm-streams/<name>.http: status line, headers, blank line, body byte for byte. */
export function loadRecording(name: string): Recording {
  const text = readFileSync(path.join(LLM_STREAMS_DIR, `${name}.http`), 'utf8');
  const split = text.indexOf('\n\n');
  if (split < 0) throw new Error(`recording ${name}: no blank line after the headers`);
  const [statusLine = '', ...lines] = text.slice(0, split).split('\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new Error(`recording ${name}: bad status line "${statusLine}"`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon < 1) throw new Error(`recording ${name}: bad header line "${line}"`);
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers, body: text.slice(split + 2) };
}

/** The recorded chunks: one per SSE event (each ends with its blank line), or the whole body. */
function chunksOf(recording: Recording, splitBytes: number | undefined): Buffer[][] {
  const sse = /^text\/event-stream/i.test(recording.headers['content-type'] ?? '');
  const events = sse ? recording.body.split(/(?<=\n\n)/) : [recording.body];
  return events.map((event) => {
    const bytes = Buffer.from(event, 'utf8');
    if (splitBytes === undefined) return [bytes];
    const pieces: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += splitBytes) pieces.push(bytes.subarray(i, i + splitBytes));
    return pieces;
  });
}

function modelsBody(ids: string[], anthropic: boolean): string {
  return anthropic
    ? JSON.stringify({ data: ids.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' })), has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null })
    : JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'replay' })) });
}

function errorBody(urlPath: string, status: number, message: string): string {
  return urlPath.startsWith(PATHS.anthropic ?? '')
    ? JSON.stringify({ type: 'error', error: { type: status === 404 ? 'not_found_error' : 'api_error', message } })
    : JSON.stringify({ error: { message, type: status === 404 ? 'invalid_request_error' : 'server_error', param: null, code: null } });
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function send(res: http.ServerResponse, options: ReplayOptions, recording: Recording): Promise<void> {
  const headers = Object.fromEntries(Object.entries(recording.headers).filter(([name]) => !FRAMING.has(name)));
  res.writeHead(recording.status, headers);
  res.flushHeaders();
  const chunks = chunksOf(recording, options.splitBytes);
  const limit = Math.min(chunks.length, options.stallAfterChunks ?? Infinity, options.endAfterChunks ?? Infinity, options.resetAfterChunks ?? Infinity);
  for (const pieces of chunks.slice(0, limit)) {
    for (const piece of pieces) {
      if (res.destroyed) return;
      if (!res.write(piece)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      await tick();
    }
  }
  if (res.destroyed) return;
  if (options.stallAfterChunks !== undefined && options.stallAfterChunks < chunks.length) return;
  if (options.resetAfterChunks !== undefined && options.resetAfterChunks < chunks.length) {
    res.socket?.destroy();
    return;
  }
  res.end();
}

export async function startReplayLlmServer(): Promise<ReplayLlmServer> {
  const requests: ReceivedRequest[] = [];
  const queued: ReplayAnswer[] = [];
  let standing: ReplayAnswer | undefined;
  let modelsAnswer: ModelsAnswer | undefined;
  let router: ((request: ReceivedRequest) => ReplayAnswer | undefined) | undefined;
  const waiters: (() => void)[] = [];

  function answer(req: ReceivedRequest, res: http.ServerResponse): void {
    const urlPath = req.path.replace(/\?.*$/, '');
    const fail = (status: number, message: string, headers: Record<string, string> = {}, body?: string): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body ?? errorBody(urlPath, status, message));
    };
    if (req.method === 'GET' && urlPath.endsWith('/models')) {
      if (modelsAnswer === undefined) return fail(404, 'replay server: no model list was set; call models() first');
      if (modelsAnswer === 'stall') return;
      const [status, body] = Array.isArray(modelsAnswer) ? [200, modelsBody(modelsAnswer, req.headers['anthropic-version'] !== undefined)] : [modelsAnswer.status, modelsAnswer.body];
      return void res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    }
    const routed = router?.(req);
    const next = routed ?? queued[0] ?? standing;
    if (next === undefined) return fail(500, 'replay server: no answer was set; call reply() or replyOnce() first');
    const take = (): void => {
      if (routed === undefined) queued.shift();
    };
    if (typeof next === 'object' && 'status' in next) {
      take();
      return fail(next.status, `replay server: failing with ${next.status} as told`, next.headers, next.body);
    }
    const options: ReplayOptions = typeof next === 'string' ? { recording: next } : next;
    if (typeof options.recording === 'string') {
      const provider = options.recording.split('-')[0] ?? '';
      const expected = PATHS[provider];
      if (req.method !== 'POST' || expected === undefined || urlPath !== expected) {
        return fail(404, `replay server: recording ${options.recording} is served at POST ${expected ?? '(a name starting with openai- or anthropic-)'}, not ${req.method} ${urlPath}`);
      }
    }
    take();
    const recording = typeof options.recording === 'string' ? loadRecording(options.recording) : options.recording;
    send(res, options, recording).catch(() => res.destroy());
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const closed = new Promise<'finished' | 'cut'>((resolve) => {
        res.once('close', () => {
          if (res.writableFinished) return resolve('finished');
          // 'cut' promises the socket itself is gone, not just this response.
          const socket = req.socket;
          if (socket.destroyed) resolve('cut');
          else socket.once('close', () => resolve('cut'));
        });
      });
      const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, rawBody, body, closed };
      requests.push(received);
      for (const wake of waiters.splice(0)) wake();
      answer(received, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    reply(next) {
      standing = next;
    },
    forgetQueued() {
      queued.length = 0;
    },
    replyOnce(...answers) {
      queued.push(...answers);
    },
    route(by) {
      router = by;
    },
    models(answer) {
      modelsAnswer = answer;
    },
    async request(index) {
      while (requests[index] === undefined) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[index];
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
