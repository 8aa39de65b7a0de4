import Anthropic from '@anthropic-ai/sdk';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { estimatePromptTokens, estimateTokens } from '../../src/budgets/token-estimate.js';
import type { GatewayBudgets } from '../../src/app/gateway-budgets.js';
import { BUDGET_STATE_DIR } from '../../src/app/state-backends.js';
import type { ChatMessage } from '../../src/llm/types.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';

/**
 * Budgets through the whole gateway on 127.0.0.1, with the real `openai` and `@anthropic-ai/sdk`
 * clients and client keys; the upstream replays recorded OpenAI streams, each turn reporting 10
 * input and 5 output tokens. At $1000 per million tokens a turn costs $0.015.
 */

let demo: DemoGateway;
let served: ServedGateway;
let keys: Record<'capped' | 'tokens' | 'free' | 'spender' | 'calls' | 'mcpcalls' | 'cutter' | 'silent' | 'crowd', string>;
let budgets: GatewayBudgets;

beforeAll(async () => {
  demo = await serveDemoGateway({
    prefix: 'kiwi-budgets-',
    upstreams: (url) => [`{ name: recorded, kind: openai, base_url: "${url}/v1", models: ["gpt-*", "llama-*"] }`],
    config: [
      'prices:',
      '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }',
      'budgets:',
      '  default: { spend_usd: 100 }',
      '  clients:',
      '    capped: { spend_usd: 0.02, window: 1d }',
      '    tokens: { tokens: 20 }',
      '    free: {}',
      '    calls: { tool_calls: 1 }',
      '    mcpcalls: { tool_calls: 1 }',
      '    cutter: { tokens: 1000000 }',
      '    silent: { tokens: 100 }',
      '    crowd: { spend_usd: 0.05 }',
    ].join('\n'),
  });
  served = demo;
  const file = path.join(demo.root, KEY_FILE);
  const names = ['capped', 'tokens', 'free', 'spender', 'calls', 'mcpcalls', 'cutter', 'silent', 'crowd'] as const;
  const made: Partial<typeof keys> = {};
  // One after another: each writes the key file anew.
  for (const n of names) made[n] = (await createKey(file, n)).key;
  keys = made as typeof keys;
  if (demo.gateway.budgets === undefined) throw new Error('the gateway opened without budgets');
  budgets = demo.gateway.budgets;
}, 120_000);

afterAll(async () => {
  await served.close();
  if (served !== demo) await demo.close();
});

const EXACT_TURN = ['Counting: [TOOL: word_co', 'unt {"path": "READ', 'ME.md"}]'];
const openai = (key: string) => new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: key });
const anthropic = (key: string) => new Anthropic({ baseURL: served.server.url, apiKey: key });

interface LedgerLine {
  client: string;
  in: number;
  out: number;
  usd?: number;
  turns: number;
  estimated?: true;
}

/** The ledger's lines of `client`, once every request has ended and its charges are on disk. */
async function ledgerOf(client: string): Promise<LedgerLine[]> {
  await budgets.settled();
  const dir = path.join(demo.root, BUDGET_STATE_DIR);
  return readdirSync(dir)
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').trim().split('\n'))
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LedgerLine)
    .filter((l) => l.client === client);
}

// No retries: a 429 is the answer these tests read.
const noRetry = (key: string) => new OpenAI({ baseURL: `${demo.server.url}/v1`, apiKey: key, maxRetries: 0 });

describe('budgets cannot be bypassed by cutting the stream (issue 22, finding 4)', () => {
  it('charges a streamed request the client aborted before the usage chunk: its prompt and the text it received, marked estimated', async () => {
    // 40 chunks of 10 words; the upstream stalls after the opening chunk and 34 of them (340 words),
    // long before its usage chunk, and the client gives up there.
    const chunks = Array.from({ length: 40 }, () => 'word '.repeat(10));
    const index = demo.llm.requests.length;
    demo.llm.replyOnce({ recording: openAiStream(chunks), stallAfterChunks: 35 });
    const abort = new AbortController();
    const response = await fetch(`${demo.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.cutter}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Write 400 words.' }] }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    let received = '';
    while (received.split(' ').length - 1 < 340) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended after ${received.length} characters`);
      buffered += value;
      const events = buffered.split('\n\n');
      buffered = events.pop() ?? '';
      for (const event of events) {
        const data = event.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
        if (data === undefined || data === '[DONE]') continue;
        received += (JSON.parse(data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '';
      }
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    expect(received).toBe('word '.repeat(340));
    // The gateway cut its upstream call too.
    const upstream = await demo.llm.request(index);
    expect(await upstream.closed).toBe('cut');

    const lines = await ledgerOf('cutter');
    expect(lines).toHaveLength(1);
    const sent = (upstream.body as { messages: ChatMessage[] }).messages;
    expect(lines[0]).toMatchObject({ in: estimatePromptTokens(sent), out: estimateTokens(received), turns: 1, estimated: true });
    expect(lines[0]?.usd).toBeCloseTo((estimatePromptTokens(sent) + estimateTokens(received)) / 1000, 10);
  });

  it('counts tokens from the text when the upstream streams no usage at all, says so in the usage, and ends the client at its token budget', async () => {
    demo.llm.replyOnce(openAiStream(['four words of answer'], { usage: 'none' }));
    const before = demo.llm.requests.length;
    const first = await noRetry(keys.silent).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(first.choices[0]?.message.content).toBe('four words of answer');
    const sent = (demo.llm.requests[before]?.body as { messages: ChatMessage[] }).messages;
    const usage = { inputTokens: estimatePromptTokens(sent), outputTokens: estimateTokens('four words of answer') };
    // Reported as the estimate it is: in the usage fields, and marked in the gateway's own finish event.
    expect(first.usage).toMatchObject({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens });
    const events = (first as unknown as { kiwi: { events: { type: string; usage?: unknown }[] } }).kiwi.events;
    expect(events.find((e) => e.type === 'finish')?.usage).toEqual({ ...usage, estimated: true });
    expect(await ledgerOf('silent')).toEqual([expect.objectContaining({ in: usage.inputTokens, out: usage.outputTokens, estimated: true })]);

    // The prompt alone (the gateway's instructions included) is over 100 tokens: the next request is refused.
    const total = usage.inputTokens + usage.outputTokens;
    expect(total).toBeGreaterThanOrEqual(100);
    const refused = await noRetry(keys.silent).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({
      code: 'budget_exceeded',
      message: expect.stringContaining(`Client "silent" is over its token budget: ${total} tokens (${total} of them estimated) of 100 tokens in its 1d window`),
    });
    expect(demo.llm.requests.length).toBe(before + 1);
  });

  it('admits 30 parallel requests of a client with a small budget only as far as their caps fit: at most one request overshoots it', async () => {
    demo.llm.reply(openAiStream(['ok']));
    const before = demo.llm.requests.length;
    // Each request holds its cap while it runs (its prompt, the gateway's instructions included,
    // and max_tokens 10); each is charged $0.015, less than that.
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => noRetry(keys.crowd).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })));
    const passed = results.filter((r) => r.status === 'fulfilled');
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(passed.length).toBeGreaterThan(0);
    expect(passed.length + refused.length).toBe(30);
    for (const error of refused) {
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect((error as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('Client "crowd" is over its spend budget') });
    }
    expect(demo.llm.requests.length - before).toBe(passed.length);
    const spent = (await ledgerOf('crowd')).reduce((sum, l) => sum + (l.usd ?? 0), 0);
    expect(spent).toBeCloseTo(passed.length * 0.015, 10);
    // Each was admitted while what was charged and what running requests held was under $0.05,
    // and each was charged less than it held: over the budget by less than the last one's charge.
    expect(spent).toBeLessThan(0.05 + 0.015);
    // Nothing is held once they ended: the rest of the budget is there for the next request, if any is left.
    const next = await noRetry(keys.crowd).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    if (spent < 0.05) expect(next).toMatchObject({ choices: [{ message: { content: 'ok' } }] });
    else expect((next as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ message: expect.stringMatching(/over its spend budget: \$0\.0\d+ of \$0\.05 in its 1d window; it starts afresh/) });
  });
});

describe('budgets per client key', () => {
  it('warns at start that a model the upstream serves has no price', () => {
    expect(demo.gateway.config.warnings).toEqual([expect.stringContaining('upstream "recorded" serves "llama-*" with no price')]);
  });

  it('ends a running request after the turn that spent the budget, with the notice and finish.limit "budget" (OpenAI chat, streamed)', async () => {
    const before = demo.llm.requests.length;
    demo.llm.replyOnce(openAiStream(EXACT_TURN), openAiStream(EXACT_TURN));
    const stream = await openai(keys.capped).chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Count the README words, twice.' }] });
    let content = '';
    const kiwi: { type: string; limit?: string; budget?: unknown }[] = [];
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      const extra = (chunk as unknown as { kiwi?: { type: string } }).kiwi;
      if (extra) kiwi.push(extra);
    }
    // Turn 1 ($0.015) is under $0.02, turn 2 ($0.03) is not: no third turn (none was recorded).
    expect(demo.llm.requests.length - before).toBe(2);
    expect(content).toMatch(/\[Kiwi gateway: stopped because client "capped" used its spend budget \(\$0\.03 of \$0\.02 in its 1d window\); it starts afresh at \d{4}-\d\d-\d\dT00:00:00\.000Z \(in \d+ s\)\. To allow more, raise `budgets\.clients\.capped\.spend_usd` in \.ai\/config\/gateway\.yaml\.\]$/);
    expect(kiwi.at(-1)).toMatchObject({ type: 'finish', limit: 'budget', budget: { scope: 'client', name: 'capped', resource: 'spend', limit: 0.02 } });
  });

  it('answers a new request over budget 429 before anything goes upstream, in the OpenAI shape (chat and responses) with Retry-After', async () => {
    const before = demo.llm.requests.length;
    const refused = await openai(keys.capped).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const error = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.status).toBe(429);
    expect(error.error).toEqual({ message: expect.stringMatching(/^Client "capped" is over its spend budget: \$0\.03 of \$0\.02 in its 1d window; it starts afresh at .*budgets\.clients\.capped\.spend_usd/), type: 'rate_limit_error', param: null, code: 'budget_exceeded' });
    const retryAfter = Number(error.headers.get('retry-after'));
    const midnight = Math.ceil(Date.now() / 86_400_000) * 86_400_000;
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((midnight - Date.now()) / 1000) + 1);
    expect(error.headers.get('x-should-retry')).toBe('false');

    const responses = await openai(keys.capped).responses.create({ model: 'gpt-4o-mini', input: 'hi' }).catch((e: unknown) => e);
    expect(responses).toBeInstanceOf(OpenAI.RateLimitError);
    expect((responses as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('over its spend budget') });
    expect(demo.llm.requests.length).toBe(before);
  });

  it('answers it in the Anthropic shape on /v1/messages, and ends a running Messages request at a token budget', async () => {
    const refused = await anthropic(keys.capped).messages.create({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const error = refused as InstanceType<typeof Anthropic.RateLimitError>;
    expect(error.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/^Client "capped" is over its spend budget/) } });
    expect(error.headers.get('retry-after')).toMatch(/^\d+$/);

    demo.llm.replyOnce(openAiStream(EXACT_TURN), openAiStream(EXACT_TURN));
    const message = await anthropic(keys.tokens).messages.create({ model: 'gpt-4o-mini', max_tokens: 1024, messages: [{ role: 'user', content: 'Count the README words, twice.' }] });
    const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    expect(text).toContain('[Kiwi gateway: stopped because client "tokens" used its token budget (30 tokens of 20 tokens in its 1d window)');
    const again = await anthropic(keys.tokens).messages.create({ model: 'gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect((again as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({ error: { message: expect.stringContaining('over its token budget: 30 tokens of 20 tokens') } });
  });

  it('ends a running Responses request when the tool-call budget is spent, and refuses the next', async () => {
    const before = demo.llm.requests.length;
    demo.llm.replyOnce(openAiStream(EXACT_TURN));
    const response = await openai(keys.calls).responses.create({ model: 'gpt-4o-mini', input: 'Count the README words.' });
    expect(demo.llm.requests.length - before).toBe(1);
    expect(response.output_text).toMatch(/stopped because client "calls" used its tool-call budget \(1 call of 1 call in its 1d window\).*raise `budgets\.clients\.calls\.tool_calls`/s);
    const again = await openai(keys.calls).responses.create({ model: 'gpt-4o-mini', input: 'hi' }).catch((e: unknown) => e);
    expect((again as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ code: 'budget_exceeded', message: expect.stringContaining('over its tool-call budget') });
  });

  it("counts a client's MCP tool calls on /mcp too, and refuses the next once its tool-call budget is spent", async () => {
    const client = new Client({ name: 'budgets-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keys.mcpcalls}` } } }));
    try {
      const run = () => client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'word_count', parameters: { path: 'README.md' } } }) as Promise<{ content: { text: string }[]; isError?: boolean }>;
      const first = await run();
      expect(first.isError).not.toBe(true);
      const second = await run();
      expect(second.isError).toBe(true);
      expect(second.content[0]?.text).toMatch(/Client "mcpcalls" is over its tool-call budget: 1 call of 1 call in its 1d window/);
    } finally {
      await client.close();
    }
  });

  it('refuses a model with no price while the client has a spend budget (403), and lets a client without a budget use it', async () => {
    const before = demo.llm.requests.length;
    const refused = await openai(keys.spender).chat.completions.create({ model: 'llama-3', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).error).toMatchObject({
      message: expect.stringMatching(/^Model "llama-3" has no price in `prices` of \.ai\/config\/gateway\.yaml, and client "spender" has a spend budget, so its spend could not be counted; add it/),
    });
    expect(demo.llm.requests.length).toBe(before);
    demo.llm.replyOnce(openAiStream(['hello']));
    const free = await openai(keys.free).chat.completions.create({ model: 'llama-3', messages: [{ role: 'user', content: 'hi' }] });
    expect(free.choices[0]?.message.content).toBe('hello');
  });

  it('keeps what was used across a restart of the gateway: the ledger under .ai/state/budgets is read back', async () => {
    const ledger = path.join(demo.root, BUDGET_STATE_DIR);
    const lines = readdirSync(ledger).flatMap((f) => readFileSync(path.join(ledger, f), 'utf8').trim().split('\n')).map((l) => JSON.parse(l) as { client: string; usd?: number; calls: number });
    expect(lines.filter((l) => l.client === 'capped').reduce((sum, l) => sum + (l.usd ?? 0), 0)).toBeCloseTo(0.03, 10);
    expect(lines.filter((l) => l.client === 'capped').reduce((sum, l) => sum + l.calls, 0)).toBe(2);

    await demo.server.close(1000);
    await demo.gateway.close();
    served = await serveGateway(demo.root);
    const before = demo.llm.requests.length;
    const refused = await openai(keys.capped).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ message: expect.stringContaining('$0.03 of $0.02') });
    expect(demo.llm.requests.length).toBe(before);
  });
});
