import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { estimatePromptTokens, estimateTokens } from '../../src/budgets/token-estimate.js';
import { listenOn } from '../gateway/bench-upstream.js';
import { readBody } from '../gateway/read-body.js';

/**
 * A replayed OpenAI upstream for the side-request bench: `POST /v1/chat/completions` answers at
 * once from a fixed script, chosen by what the request holds — no model runs. Every answer
 * carries `usage` counted on what this server actually received and sent, with the project's own
 * estimate (src/budgets/token-estimate.ts: about 4 bytes of UTF-8 a token, plus the chat format's
 * overhead per message; a side request's tool schemas are counted as their JSON text), so the
 * gateway charges and reports the same counts this server logs.
 *
 * The script, one agent writing one intent in its reply:
 * - a side request (native `tools`, not streamed: the gateway's fallback model): a call of
 *   read_file on package.json, when read_file is among the functions shown; otherwise none;
 * - the gateway's results message with an ask-back ("Not run: …"): the agent writes the exact call;
 * - the results message with a result: the agent's final answer;
 * - anything else (the client's own turn): the agent writes its intent — in plain words for model
 *   `bench-plain-words`, as the exact call for `bench-exact`.
 */

export const PLAIN_WORDS_MODEL = 'bench-plain-words';
export const EXACT_MODEL = 'bench-exact';
// The demo's read_file: a Node script, quick to start, so the tool's run adds little noise to the turn.
export const TOOL = 'read_file';
export const PLAIN_INTENT = 'show me what package.json holds';
export const EXACT_CALL = 'read_file {"path": "package.json"}';
export const SIDE_ARGUMENTS = { path: 'package.json' };

const LEAD = 'Before we change the manifest, let me read what it holds now, so the review can compare. ';
export const SCRIPT = {
  intent: `${LEAD}[TOOL: ${PLAIN_INTENT}]`,
  exact: `${LEAD}[TOOL: ${EXACT_CALL}]`,
  askedBack: `I will call it exactly as the gateway asks. [TOOL: ${EXACT_CALL}]`,
  final: 'The manifest is short: it names the package and its version and nothing more, so the change we planned stays small and easy to review.',
};

/** What a request was, as the script read it. */
export type RequestKind = 'side' | 'intent' | 'exact' | 'asked_back' | 'final';

export interface UpstreamRecord {
  kind: RequestKind;
  model: string;
  stream: boolean;
  messages: number;
  request_bytes: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** What the side request showed: the functions' names, in order. */
  tools?: string[];
  /** When its first byte came and when its answer was sent: epoch ms, comparable across processes on one machine. */
  received_at: number;
  answered_at: number;
}

interface WireMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: { function?: { name?: unknown; arguments?: unknown } }[];
}

interface WireBody {
  model?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
  messages?: WireMessage[];
  tools?: { function?: { name?: unknown } }[];
}

const text = (content: unknown): string => (typeof content === 'string' ? content : content === undefined || content === null ? '' : JSON.stringify(content));

/** The prompt's tokens as the project estimates them: every message, and the tool schemas' JSON. */
export function promptTokens(body: WireBody): number {
  const messages = (body.messages ?? []).map((m) => ({
    role: 'user' as const,
    content: text(m.content),
    ...(m.tool_calls ? { toolCalls: m.tool_calls.map((c) => ({ id: '', name: text(c.function?.name), arguments: text(c.function?.arguments) })) } : {}),
  }));
  return estimatePromptTokens(messages) + (body.tools && body.tools.length > 0 ? estimateTokens(JSON.stringify(body.tools)) : 0);
}

/** Which part of the script a request asks for. */
export function kindOf(body: WireBody): RequestKind {
  if (Array.isArray(body.tools) && body.tools.length > 0 && body.stream !== true) return 'side';
  const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
  const said = text(last?.content);
  if (said.startsWith('Results of ')) return said.includes('\nNot run: ') ? 'asked_back' : 'final';
  return body.model === EXACT_MODEL ? 'exact' : 'intent';
}

interface Answer {
  content: string;
  call?: { name: string; arguments: string };
}

function answerFor(kind: RequestKind, body: WireBody): Answer {
  if (kind !== 'side') return { content: kind === 'intent' ? SCRIPT.intent : kind === 'exact' ? SCRIPT.exact : kind === 'asked_back' ? SCRIPT.askedBack : SCRIPT.final };
  const shown = (body.tools ?? []).map((t) => text(t.function?.name));
  return shown.includes(TOOL) ? { content: '', call: { name: TOOL, arguments: JSON.stringify(SIDE_ARGUMENTS) } } : { content: 'None of these functions fits.' };
}

const CREATED = 1_765_100_000;

function send(res: ServerResponse, body: WireBody, model: string, a: Answer, usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }): void {
  const id = 'chatcmpl-side-bench';
  const finish = a.call ? 'tool_calls' : 'stop';
  const toolCalls = a.call ? [{ id: 'call_side', type: 'function', function: a.call }] : undefined;
  if (body.stream !== true) {
    const message = { role: 'assistant', content: a.call ? null : a.content, ...(toolCalls ? { tool_calls: toolCalls } : {}) };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'chat.completion', created: CREATED, model, choices: [{ index: 0, message, finish_reason: finish }], usage }));
    return;
  }
  const frame = (delta: unknown, finishReason: string | null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(frame({ role: 'assistant', content: '' }, null));
  // A few words a chunk, one write each, as a server flushes tokens.
  for (const piece of a.content.match(/(?:\S+\s*){1,3}/g) ?? []) res.write(frame({ content: piece }, null));
  if (toolCalls) res.write(frame({ tool_calls: toolCalls.map((c, index) => ({ index, ...c })) }, null));
  res.write(frame({}, finish));
  if (body.stream_options?.include_usage === true) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

export interface ReplayUpstream {
  url: string;
  /** The requests answered since the last call, in order; the log starts afresh. */
  takeLog(): UpstreamRecord[];
  close(): Promise<void>;
}

export async function startReplayUpstream(host = '127.0.0.1'): Promise<ReplayUpstream> {
  let log: UpstreamRecord[] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = performance.timeOrigin + performance.now();
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"the side-request bench upstream serves only POST /v1/chat/completions"}}');
      return;
    }
    const raw = await readBody(req);
    const body = JSON.parse(raw.toString('utf8')) as WireBody;
    const model = text(body.model);
    const kind = kindOf(body);
    const a = answerFor(kind, body);
    const prompt = promptTokens(body);
    const completion = estimateTokens(a.content + (a.call ? a.call.name + a.call.arguments : ''));
    send(res, body, model, a, { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    log.push({
      kind,
      model,
      stream: body.stream === true,
      messages: body.messages?.length ?? 0,
      request_bytes: raw.length,
      prompt_tokens: prompt,
      completion_tokens: completion,
      ...(kind === 'side' ? { tools: (body.tools ?? []).map((t) => text(t.function?.name)) } : {}),
      received_at: receivedAt,
      answered_at: performance.timeOrigin + performance.now(),
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `side-request bench upstream: ${error instanceof Error ? error.message : String(error)}` } }));
    });
  });
  server.keepAliveTimeout = 120_000;
  const port = await listenOn(server, host);
  return {
    url: `http://${host}:${port}`,
    takeLog() {
      const out = log;
      log = [];
      return out;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
