import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimatePromptTokens, estimateTokens } from '../../src/budgets/token-estimate.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { BUDGET_STATE_DIR, type GatewayBudgets } from '../../src/gateway/gateway-budgets.js';
import type { ChatMessage } from '../../src/llm/types.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * Issue 22, finding 4: budgets bypassed by cutting the stream. Through the whole gateway on
 * 127.0.0.1 with client keys; the upstream replays recorded OpenAI streams. At $1000 per million
 * tokens a turn that reports 10 input and 5 output tokens costs $0.015.
 */

let demo: DemoGateway;
let keys: Record<'cutter' | 'silent' | 'crowd', string>;
let budgets: GatewayBudgets;

beforeAll(async () => {
  demo = await serveDemoGateway({
    prefix: 'kiwi-charging-',
    config: [
      'prices:',
      '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }',
      'budgets:',
      '  clients:',
      '    cutter: { tokens: 1000000 }',
      '    silent: { tokens: 100 }',
      '    crowd: { spend_usd: 0.05 }',
    ].join('\n'),
  });
  const file = path.join(demo.root, KEY_FILE);
  keys = { cutter: (await createKey(file, 'cutter')).key, silent: (await createKey(file, 'silent')).key, crowd: (await createKey(file, 'crowd')).key };
  if (demo.gateway.budgets === undefined) throw new Error('the gateway opened without budgets');
  budgets = demo.gateway.budgets;
}, 120_000);

afterAll(async () => {
  await demo.close();
});

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

const openai = (key: string) => new OpenAI({ baseURL: `${demo.server.url}/v1`, apiKey: key, maxRetries: 0 });

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
    const first = await openai(keys.silent).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
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
    const refused = await openai(keys.silent).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
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
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => openai(keys.crowd).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })));
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
    const next = await openai(keys.crowd).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    if (spent < 0.05) expect(next).toMatchObject({ choices: [{ message: { content: 'ok' } }] });
    else expect((next as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ message: expect.stringMatching(/over its spend budget: \$0\.0\d+ of \$0\.05 in its 1d window; it starts afresh/) });
  });
});
