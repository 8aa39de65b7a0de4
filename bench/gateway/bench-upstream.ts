import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from './read-body.js';

/**
 * A stand-in OpenAI upstream for the gateway bench: `POST /v1/chat/completions` answers at once
 * (no delays), streamed as `chat.completion.chunk`s up to `data: [DONE]` or as one JSON
 * `chat.completion`. Answers are built once at start, so the upstream costs both paths the same
 * little CPU per request.
 *
 * The model picks the script: `bench-plain` answers K short content chunks; `bench-intent` writes
 * one `[TOOL: …]` intent (turn 1), unless the last user message is the gateway's results
 * message, which gets the plain answer (turn 2, so the loop ends).
 */

export const PLAIN_MODEL = 'bench-plain';
export const INTENT_MODEL = 'bench-intent';
/** What the bench's intent asks for; the demo's read_file tool must resolve it. */
// Named with its value stated, so it runs under the default gate (plain words are asked back).
export const INTENT_TEXT = 'read_file {"path": "package.json"}';
/** The intent turn as streamed: INTENT_TEXT split over chunks, as a model writes it. */
export const INTENT_TURN_PIECES = ['Let me ', 'read it. ', '[TOOL: read', '_file {"path": ', '"package.json"}', ']', '\n'];
/** How the gateway's results message starts (src/gateway/agent-feedback.ts). */
export const RESULTS_PREFIX = 'Results of ';

const CREATED = 1_700_000_000;

export interface BenchUpstream {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface Answer {
  /** SSE frames before the optional usage frame: role, content chunks, finish. */
  frames: string[];
  usage: string;
  json: string;
}

/** The K plain chunks: a few characters each, never a `[` (which could open an intent). */
export function plainPieces(chunks: number): string[] {
  return Array.from({ length: chunks }, (_, i) => `w${i} `);
}

function answer(model: string, pieces: string[]): Answer {
  const id = `chatcmpl-bench-${model}`;
  const frame = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const usage = { prompt_tokens: 20, completion_tokens: pieces.length, total_tokens: 20 + pieces.length };
  return {
    frames: [frame({ role: 'assistant', content: '' }, null), ...pieces.map((p) => frame({ content: p }, null)), frame({}, 'stop')],
    usage: `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [], usage })}\n\n`,
    json: JSON.stringify({
      id,
      object: 'chat.completion',
      created: CREATED,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: pieces.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage,
    }),
  };
}

interface ChatBody {
  model?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
  messages?: { role?: unknown; content?: unknown }[];
}

function isResultsTurn(body: ChatBody): boolean {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  const last = users.at(-1)?.content;
  return typeof last === 'string' && last.startsWith(RESULTS_PREFIX);
}

export async function startBenchUpstream(options: { chunks: number; host?: string }): Promise<BenchUpstream> {
  if (!Number.isInteger(options.chunks) || options.chunks < 1 || options.chunks > 100_000) throw new Error(`--chunks must be a whole number from 1 to 100000, got ${options.chunks}`);
  const plain = answer(PLAIN_MODEL, plainPieces(options.chunks));
  const intent = answer(INTENT_MODEL, INTENT_TURN_PIECES);
  const after = answer(INTENT_MODEL, plainPieces(options.chunks));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"the bench upstream serves only POST /v1/chat/completions"}}');
      return;
    }
    const body = JSON.parse((await readBody(req)).toString('utf8')) as ChatBody;
    const a = body.model !== INTENT_MODEL ? plain : isResultsTurn(body) ? after : intent;
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(a.json);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // One write per chunk, as an LLM server flushes each token.
    for (const f of a.frames) res.write(f);
    if (body.stream_options?.include_usage === true) res.write(a.usage);
    res.end('data: [DONE]\n\n');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `bench upstream: ${error instanceof Error ? error.message : String(error)}` } }));
    });
  });
  // The bench reuses its connections for the whole run.
  server.keepAliveTimeout = 120_000;
  const host = options.host ?? '127.0.0.1';
  const port = await listenOn(server, host);
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Listens on a free port of `host`; the port. */
export async function listenOn(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
