import { z } from 'zod';
import { KiwiError, isKiwiError } from '../../base/errors.js';
import { createHttpClient, type HttpClient } from '../../primitives/http-client.js';
import { createChatTranscript, terminalSafe } from '../../cli/chat-transcript.js';
import { clientKey, defaultGatewayBase, gatewayUrl } from '../../cli/gateway-address.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { CHAT_HELP } from './chat-help.js';

const USAGE = CHAT_HELP.usage;
const CONNECT_TIMEOUT_MS = 5000;
/** The gateway answers with headers once the request is checked (key, model), before any upstream turn. */
const HEADERS_TIMEOUT_MS = 60_000;
/** The gateway sends a keep-alive comment every 15 s while a turn or a tool runs; this much silence means it is stuck. */
const IDLE_TIMEOUT_MS = 120_000;
const MAX_STREAM_BYTES = 64 * 1024 * 1024;

/** One chunk of the gateway's OpenAI stream, loosely: only what the client reads is checked. */
const chunkSchema = z.looseObject({
  choices: z.array(z.looseObject({ delta: z.looseObject({ content: z.string().nullish() }).nullish() })).nullish(),
  kiwi: z.looseObject({ type: z.string() }).nullish(),
  error: z.looseObject({ message: z.string() }).nullish(),
});

/**
 * `kiwi chat`: one message to a running gateway over `/v1/chat/completions`, streamed; prints
 * the agent's text as it arrives and each step the gateway took (intent, asked back, call,
 * result) from the `kiwi` events on the chunks. `--json` prints the events as JSON lines.
 */
export async function chatCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, CHAT_HELP);
  const message = positionals.join(' ').trim();
  if (message === '') throw new UsageError(`give the message to send, in quotes; usage: ${USAGE}`);
  if (values.model !== undefined && values.model.trim() === '') throw new UsageError(`--model must name a model, e.g. kiwi-demo (the offline demo); usage: ${USAGE}`);
  const url = chatUrl(values.url ?? defaultGatewayBase(ctx.env));
  const key = clientKey(values.key ?? ctx.env['KIWI_API_KEY']);

  const http = createHttpClient();
  const model = values.model?.trim() ?? DEMO_MODEL;
  if (values.model === undefined && !values.json) {
    const real = await realModels(http, url, key, ctx.signal);
    if (real.length > 0) ctx.io.err(`kiwi chat: asking the offline demo model ${DEMO_MODEL}; the gateway also serves ${real.length === 1 ? 'the model' : `${real.length} models, e.g.`} ${terminalSafe(real[0] ?? '', false)}: pass --model NAME to ask one`);
  }
  // The console answers a waiting call too: on the gateway's origin, under /ui (a path prefix before /v1 is kept).
  const consoleUrl = new URL(url.replace(/\/v1\/chat\/completions$/, '/ui/approvals'));
  const transcript = values.json ? undefined : createChatTranscript(ctx.io, { consoleUrl: consoleUrl.toString() });
  let received = false;
  let finished = false;
  try {
    const events = http.stream({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: message }] }),
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: IDLE_TIMEOUT_MS,
      maxResponseBytes: MAX_STREAM_BYTES,
      maxRedirects: 0,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    read: for await (const batch of events) {
      for (const sse of batch) {
        received = true;
        if (sse.data === '[DONE]') break read;
        const chunk = parseChunk(sse.data, url);
        if (chunk.error) throw new KiwiError('UPSTREAM_HTTP', `the gateway stopped the answer: ${oneLine(chunk.error.message)}`);
        const content = chunk.choices?.[0]?.delta?.content ?? '';
        if (chunk.kiwi?.type === 'finish') finished = true;
        if (values.json) {
          // A chunk with a `kiwi` event carries that step rendered as text; the event says it all.
          if (chunk.kiwi) ctx.io.out(JSON.stringify(chunk.kiwi));
          else if (content !== '') ctx.io.out(JSON.stringify({ type: 'text', text: content }));
        } else if (transcript) {
          if (chunk.kiwi) transcript.event(chunk.kiwi);
          else transcript.text(content);
        }
      }
    }
  } catch (error) {
    throw explain(error, url, received, ctx.signal);
  } finally {
    transcript?.end();
    await http.close();
  }
  if (!finished) throw new KiwiError('UPSTREAM_HTTP', `the stream from ${url} ended before the answer finished; check the gateway's log`);
  return 0;
}

const DEMO_MODEL = 'kiwi-demo';

/**
 * The real models the gateway lists (`GET /v1/models`: a configured upstream's, KIWI_UPSTREAM_URL's
 * server's), so that a chat without --model says it asks the demo model while they are there:
 * it answered from recordings, silently, with a real upstream set. None is chosen for the user:
 * an upstream's list (OpenAI's) holds models that do not chat. A list that cannot be read is
 * empty; the chat itself then says what is wrong.
 */
async function realModels(http: HttpClient, chatUrl: string, key: string | undefined, signal: AbortSignal | undefined): Promise<string[]> {
  try {
    const res = await http.request({
      method: 'GET',
      url: chatUrl.replace(/\/chat\/completions$/, '/models'),
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: HEADERS_TIMEOUT_MS,
      maxResponseBytes: 4 * 1024 * 1024,
      maxRedirects: 0,
      ...(signal ? { signal } : {}),
    });
    if (res.status !== 200) return [];
    const ids = (JSON.parse(res.body) as { data?: { id?: unknown }[] } | null)?.data?.map((m) => m.id) ?? [];
    // A configured pattern (`gpt-*`) is listed too, and is no model to ask.
    return ids.filter((id): id is string => typeof id === 'string' && id !== DEMO_MODEL && !id.includes('*') && id.length <= 256);
  } catch {
    return [];
  }
}

/** `<base>/v1/chat/completions`; a base that already ends in /v1 or /v1/chat/completions is taken as it is. */
function chatUrl(base: string): string {
  const url = gatewayUrl(base, '; pass a client key with --key or KIWI_API_KEY');
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/chat/completions')) url.pathname = path.endsWith('/v1') ? `${path}/chat/completions` : `${path}/v1/chat/completions`;
  return url.toString();
}

function parseChunk(data: string, url: string): z.infer<typeof chunkSchema> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new KiwiError('UPSTREAM_HTTP', `${url} sent an event that is not JSON (${oneLine(data)}); check that --url points at a Kiwi gateway`);
  }
  const parsed = chunkSchema.safeParse(json);
  if (!parsed.success) throw new KiwiError('UPSTREAM_HTTP', `${url} sent an event that is not a chat completion chunk (${oneLine(data)}); check that --url points at a Kiwi gateway`);
  return parsed.data;
}

/** What went wrong, said in terms of the gateway: not running, refusing the request, or going away. */
function explain(error: unknown, url: string, received: boolean, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted || isKiwiError(error, 'TOOL_CANCELLED')) {
    return new KiwiError('TOOL_CANCELLED', 'cancelled; the gateway stops the request, and any tool it runs for it, when the connection closes');
  }
  if (!(error instanceof KiwiError)) return error;
  if (error.code === 'HTTP_TIMEOUT') {
    return new KiwiError('HTTP_TIMEOUT', `the gateway at ${url} ${received ? `sent nothing for ${IDLE_TIMEOUT_MS / 1000} s` : 'did not answer in time'}; check its log`, { cause: error });
  }
  if (error.code !== 'UPSTREAM_HTTP' || error.details === undefined) return error;
  const status = error.details['status'];
  if (typeof status === 'number') return refused(status, String(error.details['body'] ?? ''), url);
  if (received) return new KiwiError('UPSTREAM_HTTP', `the connection to the gateway at ${url} broke mid-answer; check the gateway's log`, { cause: error });
  const code = causeCode(error.cause);
  return new KiwiError(
    'UPSTREAM_HTTP',
    `no gateway answers at ${url} (${code ?? oneLine(error.message)}); start one with \`npm start\` (or \`kiwi serve\`) in another terminal, or pass --url (or set KIWI_PORT) to reach the one that runs`,
    { cause: error },
  );
}

/**
 * The gateway's own error message when it sent one (OpenAI's `{"error": {"message", "code"}}`),
 * with a hint for the usual causes, under the code of what refused it: a key the gateway does not
 * know is UNAUTHORIZED, a spent budget BUDGET_EXCEEDED, an unknown model UNKNOWN_MODEL — not
 * UPSTREAM_HTTP, which says a model's server failed.
 */
function refused(status: number, body: string, url: string): KiwiError {
  if (status >= 200 && status <= 299) return new KiwiError('UPSTREAM_HTTP', `${url} did not answer with an event stream; check that --url points at a Kiwi gateway`);
  let said: string | undefined;
  let saidCode: unknown;
  try {
    const error = (JSON.parse(body) as { error?: { message?: unknown; code?: unknown } } | null)?.error;
    if (typeof error?.message === 'string') said = error.message;
    saidCode = error?.code;
  } catch {
    // Not the gateway's JSON: the status and the start of the body say what there is.
  }
  const hint =
    status === 401 || status === 403
      ? '; kiwi chat sends --key (or KIWI_API_KEY) as the client key'
      : said === undefined
        ? `; check that --url points at a Kiwi gateway`
        : '';
  const code = status === 401 ? 'UNAUTHORIZED' : saidCode === 'budget_exceeded' ? 'BUDGET_EXCEEDED' : saidCode === 'model_not_found' ? 'UNKNOWN_MODEL' : 'UPSTREAM_HTTP';
  return new KiwiError(code, `the gateway at ${url} answered HTTP ${status}: ${oneLine(said ?? body)}${hint}`);
}

/** The socket error code (ECONNREFUSED, ENOTFOUND…) under undici's error, if there is one. */
function causeCode(cause: unknown): string | undefined {
  const first = cause instanceof AggregateError ? cause.errors[0] : cause;
  const code = (first as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function oneLine(text: string): string {
  const folded = terminalSafe(text.replace(/\s+/g, ' ').trim(), false);
  return (folded.length <= 300 ? folded : `${folded.slice(0, 299)}…`) || '(empty)';
}
