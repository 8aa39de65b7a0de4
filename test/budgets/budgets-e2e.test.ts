import Anthropic from '@anthropic-ai/sdk';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { BUDGET_STATE_DIR } from '../../src/gateway/gateway-budgets.js';
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
let keys: Record<'capped' | 'tokens' | 'free' | 'spender' | 'calls' | 'mcpcalls', string>;

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
    ].join('\n'),
  });
  served = demo;
  const file = path.join(demo.root, KEY_FILE);
  keys = { capped: (await createKey(file, 'capped')).key, tokens: (await createKey(file, 'tokens')).key, free: (await createKey(file, 'free')).key, spender: (await createKey(file, 'spender')).key, calls: (await createKey(file, 'calls')).key, mcpcalls: (await createKey(file, 'mcpcalls')).key };
}, 120_000);

afterAll(async () => {
  await served.close();
  if (served !== demo) await demo.close();
});

const EXACT_TURN = ['Counting: [TOOL: word_co', 'unt {"path": "READ', 'ME.md"}]'];
const openai = (key: string) => new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: key });
const anthropic = (key: string) => new Anthropic({ baseURL: served.server.url, apiKey: key });

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
