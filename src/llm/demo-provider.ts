import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { abortableDelay } from '../base/abort.js';
import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { formatFieldPath } from '../registry/validation-error.js';
import { didYouMeanSuffix } from '../base/did-you-mean.js';
import { parseYamlSource, yamlFailure } from '../registry/yaml-source.js';
import { checkRequest, parseOptions } from './provider-options.js';
import { isPlainObject } from '../base/plain-object.js';
import type { ChatCompletion, ChatEvent, ChatMessage, ChatProvider, ChatRequest, ChatUsage, FinishReason, NativeToolCall } from './types.js';

/**
 * The offline demo model: a deterministic stand-in for an LLM that replays recorded agent turns
 * (`.ai/demo/agent-turns.yaml`, format documented at the top of that file), so the whole agent
 * loop can be shown with no API key and no network. It reads the request the way a model would
 * see it: the first user message picks the conversation, and the number of assistant messages
 * after it says how far the conversation has gone. A side request the gateway makes (the
 * resolver's fallback model, `sideRequest`) is answered from the recorded `calls`, by its intent.
 */

export const DEMO_MODEL_ID = 'kiwi-demo';
/** Every response starts with one of these, so nobody mistakes a replay for a model's answer. */
export const DEMO_FIRST_PREFIX = '(offline demo model) ';
export const DEMO_LATER_PREFIX = '(demo model) ';

const MAX_FILE_BYTES = 256 * 1024;
const MAX_TURN_CHARS = 8000;
// Only the start of a long first message is searched: phrases are short and sit near the top.
const MAX_MATCHED_CHARS = 64 * 1024;
const WHO = 'Demo model';

/** A zod error message that tells a missing field from a wrong one. */
const says = (missing: string, wrong: string) => ({ error: (issue: { input?: unknown }) => (issue.input === undefined ? missing : wrong) });

const turnText = z.string().trim().min(1, 'must not be empty').max(MAX_TURN_CHARS, `must be at most ${MAX_TURN_CHARS} characters`);
// The closing is repeated for every later request, so an intent in it would run again and again.
const closingText = turnText.refine((t) => !/\[[ \t]*TOOL[ \t]*:/i.test(t), 'a closing turn must not contain a [TOOL: …] intent (it is repeated for every later request); move the intent into turns');
const turnsList = z.array(turnText, says('is required: the assistant turns, in order', 'must be a list of texts, one per assistant turn')).min(1, 'give at least one turn').max(32, 'at most 32 turns');

const scriptSchema = z.strictObject({
  closing: closingText.optional(),
  default: z.strictObject({ turns: turnsList, closing: closingText.optional() }).optional(),
  conversations: z
    .array(
      z.strictObject({
        name: z.string(says('is required: a short name for logs and errors', 'must be a string')).regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, "_", "." or "-"'),
        match: z
          .array(z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'), says('is required: the words or phrases that pick this conversation', 'must be a list of words or phrases'))
          .min(1, 'give at least one word or phrase')
          .max(50, 'at most 50 phrases'),
        turns: turnsList,
        closing: closingText.optional(),
      }),
      'must be a list of conversations',
    )
    .max(200, 'at most 200 conversations')
    .optional(),
  calls: z
    .array(
      z.strictObject({
        intent: z.string(says('is required: the intent the side request is about, as the agent writes it', 'must be a string')).trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters'),
        tool: z.string(says('is required: the function to call, as the side request names it (a tool id, "." written "_")', 'must be a string')).regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, "_" or "-" (a function name)'),
        arguments: z.custom<Record<string, unknown>>(isPlainObject, 'must be an object of argument values').optional(),
      }),
      'must be a list of recorded calls',
    )
    .max(200, 'at most 200 calls')
    .optional(),
});

/** The recorded script, in the YAML file's shape. */
export type DemoScript = z.input<typeof scriptSchema>;

interface Conversation {
  name: string;
  match: string[];
  turns: string[];
  closing: string;
}

interface RecordedCall {
  /** Lower case, spaces collapsed. */
  intent: string;
  tool: string;
  arguments: Record<string, unknown>;
}

interface Script {
  conversations: Conversation[];
  fallback: Conversation;
  calls: RecordedCall[];
}

const BUILTIN_CLOSING =
  'This recorded conversation is over. Start a new chat to try another one, or configure a real upstream in .ai/config/gateway.yaml (or set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL) and ask for that model.';

/** Used when the project has no agent-turns file: the demo still says what it is and shows one intent. */
const BUILTIN_SCRIPT: DemoScript = {
  closing: BUILTIN_CLOSING,
  default: {
    turns: [
      `I replay recorded turns, so this works with no API key. To talk to a real model, set OPENAI_API_KEY or ANTHROPIC_API_KEY, or point KIWI_UPSTREAM_URL at a local llama.cpp or Ollama server, then ask for that model. Meanwhile, one tool call through the gateway: [TOOL: list the entries of the directory "."]`,
      'The gateway answered my plain-words intent with the closest tools and their arguments instead of guessing: it runs a call from plain words only when it is sure enough (target_precision in .ai/config/resolver.yaml), and a real model would now write the call exactly, as tool_id {"arg": …}. Add .ai/demo/agent-turns.yaml to record more conversations.',
    ],
  },
};

export interface DemoProviderOptions {
  /** The YAML file of recorded turns; a missing file means the built-in default conversation only. */
  turnsFile?: string;
  /** The script itself, instead of a file (tests, embedding). */
  turns?: DemoScript;
  /** Characters per streamed text delta (default 6), small so intents arrive split across chunks. */
  chunkChars?: number;
  /** Pause between deltas; 0 (the default) yields to the event loop with setImmediate instead of a timer. */
  chunkDelayMs?: number;
}

const optionsSchema = z.strictObject({
  turnsFile: z.string().min(1).optional(),
  turns: z.unknown().optional(),
  chunkChars: z.number().int().min(1).max(4096).optional(),
  chunkDelayMs: z.number().int().min(0).max(10_000).optional(),
});

export function createDemoProvider(options: DemoProviderOptions = {}): ChatProvider {
  const o = parseOptions(optionsSchema, options, WHO);
  if (o.turnsFile !== undefined && o.turns !== undefined) throw new KiwiError('INVALID_INPUT', `${WHO}: give turnsFile or turns, not both`);
  const script = normalise(
    o.turns !== undefined ? checkScript(o.turns, 'the turns option') : o.turnsFile !== undefined ? loadDemoTurns(o.turnsFile) : BUILTIN_SCRIPT,
  );
  const chunkChars = o.chunkChars ?? 6;
  const delayMs = o.chunkDelayMs ?? 0;
  let closed = false;

  const cancelled = (): KiwiError => new KiwiError('TOOL_CANCELLED', `${WHO}: the stream was cancelled`);

  function prepare(request: ChatRequest) {
    if (closed) throw new KiwiError('INTERNAL', `${WHO}: this provider was closed; create a new one`);
    const r = checkRequest(request, WHO);
    const turn = selectTurn(script, r.messages);
    const { text, reason } = applyStops(turn.text, r.maxTokens, r.stop);
    // Rough on purpose: characters / 4, not a tokenizer; enough for the usage fields to be plausible.
    const usage: ChatUsage = {
      inputTokens: Math.ceil(r.messages.reduce((n, m) => n + m.content.length, 0) / 4),
      outputTokens: Math.ceil(text.length / 4),
    };
    return { id: `demo-${randomUUID()}`, model: r.model, text, finish: { type: 'finish' as const, reason, usage } };
  }

  async function* stream(request: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    const p = prepare(request);
    throwIfAborted(signal, `${WHO}: the stream`);
    yield { type: 'start', id: p.id, model: p.model };
    for (const piece of chunk(p.text, chunkChars)) {
      await pause(delayMs, signal);
      if (signal?.aborted) throw cancelled();
      yield { type: 'text', text: piece };
    }
    if (signal?.aborted) throw cancelled();
    yield p.finish;
  }

  async function complete(request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion> {
    if (request.sideRequest === true) return answerSideRequest(request, signal);
    const p = prepare(request);
    throwIfAborted(signal, `${WHO}: the completion`);
    return { id: p.id, model: p.model, text: p.text, finish: p.finish };
  }

  /** The recorded call for the side request's intent, when it is among the functions shown; else none, and it says so. */
  function answerSideRequest(request: ChatRequest, signal?: AbortSignal): ChatCompletion {
    if (closed) throw new KiwiError('INTERNAL', `${WHO}: this provider was closed; create a new one`);
    const r = checkRequest(request, WHO);
    throwIfAborted(signal, `${WHO}: the side request`);
    const recorded = sideCall(script, r.messages, r.clientTools?.tools.map((t) => t.name) ?? []);
    const toolCalls: NativeToolCall[] = recorded === undefined ? [] : [{ id: `call_demo_${randomUUID()}`, name: recorded.tool, arguments: JSON.stringify(recorded.arguments) }];
    const text =
      recorded === undefined
        ? `${DEMO_FIRST_PREFIX}I have no recorded call for this side request, so I call none.`
        : `${DEMO_FIRST_PREFIX}A recorded answer to the gateway's side request: ${recorded.tool} ${JSON.stringify(recorded.arguments)}`;
    const usage: ChatUsage = {
      inputTokens: Math.ceil((r.messages.reduce((n, m) => n + m.content.length, 0) + JSON.stringify(r.clientTools?.tools ?? []).length) / 4),
      outputTokens: Math.ceil((text.length + (toolCalls[0]?.arguments.length ?? 0)) / 4),
    };
    const finish = { type: 'finish' as const, reason: (toolCalls.length > 0 ? 'tool_calls' : 'stop') as FinishReason, usage };
    return { id: `demo-${randomUUID()}`, model: r.model, text, ...(toolCalls.length > 0 ? { toolCalls } : {}), finish };
  }

  return {
    kind: 'demo',
    stream,
    complete,
    close: async () => {
      closed = true;
    },
  };
}

/** Reads and checks an agent-turns file; a missing file gives the built-in script. Sync: it runs once, at startup. */
export function loadDemoTurns(file: string): DemoScript {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return BUILTIN_SCRIPT;
    throw new KiwiError('INVALID_INPUT', `${file}: cannot read the demo turns (${(error as Error).message})`);
  }
  return parseDemoTurns(text, file);
}

/** Parses the YAML text of an agent-turns file; errors say file:line:col, the field, and what to write. */
export function parseDemoTurns(text: string, file: string): DemoScript {
  if (text.length > MAX_FILE_BYTES) throw new KiwiError('INVALID_INPUT', `${file}: larger than ${MAX_FILE_BYTES} bytes; keep recorded conversations short`);
  const source = parseYamlSource(text);
  if (!source.ok) {
    throw new KiwiError('INVALID_INPUT', yamlFailure(file, source.errors));
  }
  const parsed = scriptSchema.safeParse(source.value.data ?? {});
  if (parsed.success) return parsed.data;
  // An unknown key is usually a typo, which also explains a "missing" field: report it first.
  const issue = parsed.error.issues.find((i) => i.code === 'unrecognized_keys') ?? parsed.error.issues[0];
  const at = issue?.path ?? [];
  let field = formatFieldPath(at);
  let message = issue?.message ?? 'invalid';
  let pos = source.value.locate(at);
  if (issue?.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    field = formatFieldPath([...at, key]);
    message = `unknown field${didYouMeanSuffix(key, ['closing', 'default', 'conversations', 'name', 'match', 'turns', 'calls', 'intent', 'tool', 'arguments'])}`;
    pos = source.value.locateKey(at, key) ?? pos;
  }
  const where = pos === undefined ? file : `${file}:${pos.line}:${pos.column}`;
  throw new KiwiError('INVALID_INPUT', `${where}: ${field || '(top level)'}: ${message}; see the format described at the top of .ai/demo/agent-turns.yaml`);
}

function checkScript(data: unknown, where: string): DemoScript {
  const parsed = scriptSchema.safeParse(data);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new KiwiError('INVALID_INPUT', `${WHO}: ${where}: ${formatFieldPath(issue?.path ?? []) || '(top level)'}: ${issue?.message ?? 'invalid'}`);
}

export interface DemoTurn {
  /** The conversation's name, or "default". */
  conversation: string;
  /** Which recorded turn (from 0); equal to the number of turns when the closing is replayed. */
  turn: number;
  closing: boolean;
  /** What the demo says, prefix included. */
  text: string;
}

/** The turn a request gets: the conversation its first user message matches, at the count of assistant messages after that message. */
export function selectDemoTurn(script: DemoScript, messages: readonly ChatMessage[]): DemoTurn {
  return selectTurn(normalise(checkScript(script, 'the script')), messages);
}

function selectTurn(script: Script, messages: readonly ChatMessage[]): DemoTurn {
  const first = messages.findIndex((m) => m.role === 'user');
  const said = first < 0 ? '' : normaliseSpace((messages[first]?.content ?? '').slice(0, MAX_MATCHED_CHARS).toLowerCase());
  const conversation = script.conversations.find((c) => c.match.some((phrase) => containsPhrase(said, phrase))) ?? script.fallback;
  const turn = first < 0 ? 0 : messages.slice(first + 1).filter((m) => m.role === 'assistant').length;
  const closing = turn >= conversation.turns.length;
  const body = closing ? conversation.closing : (conversation.turns[turn] ?? conversation.closing);
  const prefix = turn === 0 ? DEMO_FIRST_PREFIX : DEMO_LATER_PREFIX;
  const text = body.startsWith(DEMO_FIRST_PREFIX.trim()) || body.startsWith(DEMO_LATER_PREFIX.trim()) ? body : `${prefix}${body}`;
  return { conversation: conversation.name, turn, closing, text };
}

function normalise(s: DemoScript): Script {
  const closing = s.closing ?? BUILTIN_CLOSING;
  const fallbackSource = s.default ?? BUILTIN_SCRIPT.default ?? { turns: [BUILTIN_CLOSING] };
  return {
    conversations: (s.conversations ?? []).map((c) => ({
      name: c.name,
      match: c.match.map((m) => normaliseSpace(m.toLowerCase())),
      turns: c.turns,
      closing: c.closing ?? closing,
    })),
    fallback: { name: 'default', match: [], turns: fallbackSource.turns, closing: fallbackSource.closing ?? closing },
    calls: (s.calls ?? []).map((c) => ({ intent: normaliseSpace(c.intent.toLowerCase()), tool: c.tool, arguments: c.arguments ?? {} })),
  };
}

/** The recorded call whose intent is the side request's (its user message up to the conversation it quotes), if its function was shown. */
function sideCall(script: Script, messages: readonly ChatMessage[], shown: readonly string[]): RecordedCall | undefined {
  const asked = messages.find((m) => m.role === 'user')?.content ?? '';
  const intent = normaliseSpace((asked.split('\n\n')[0] ?? '').slice(0, MAX_MATCHED_CHARS).toLowerCase());
  return script.calls.find((c) => c.intent === intent && shown.includes(c.tool));
}

const normaliseSpace = (s: string): string => s.replace(/\s+/g, ' ').trim();
const WORD_CHAR = /[\p{L}\p{N}]/u;

/** `phrase` occurs in `text` as whole words: "words" is found in "how many words" but not in "passwords". */
function containsPhrase(text: string, phrase: string): boolean {
  if (phrase === '') return false;
  for (let at = text.indexOf(phrase); at >= 0; at = text.indexOf(phrase, at + 1)) {
    const before = text[at - 1];
    const after = text[at + phrase.length];
    const startOk = before === undefined || !WORD_CHAR.test(before) || !WORD_CHAR.test(phrase[0] ?? '');
    const endOk = after === undefined || !WORD_CHAR.test(after) || !WORD_CHAR.test(phrase.at(-1) ?? '');
    if (startOk && endOk) return true;
  }
  return false;
}

/** Honours max tokens (at the same rough 4 characters a token) and stop sequences, as a real model would. */
function applyStops(text: string, maxTokens: number | undefined, stop: string[] | undefined): { text: string; reason: FinishReason } {
  let out = text;
  let reason: FinishReason = 'stop';
  for (const s of stop ?? []) {
    const at = out.indexOf(s);
    if (at >= 0) out = out.slice(0, at);
  }
  if (maxTokens !== undefined && out.length > maxTokens * 4) {
    out = Array.from(out).slice(0, maxTokens * 4).join('');
    reason = 'length';
  }
  return { text: out, reason };
}

/** Pieces of about `size` characters, cut between code points so no surrogate pair is split. */
function chunk(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms === 0) return new Promise((resolve) => setImmediate(resolve));
  await abortableDelay(ms, signal);
}
