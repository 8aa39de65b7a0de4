import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUDGET_STATE_DIR } from '../../src/app/state-backends.js';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiCompletion, openAiStream } from '../helpers/openai-sse.js';

/**
 * The fallback model on by default (issue 40): with no `fallback:` in resolver.yaml and the
 * shipped target_precision, plain words the rules are not sure of go to the request's own model
 * (same upstream, same model id) in one side request; its call runs once validated, and the side
 * request is charged to the client's budget. The upstream is a local server replaying OpenAI's
 * wire format (the side request's answers are hand-written in it): no model runs here.
 */

interface LedgerLine {
  client: string;
  model: string;
  in: number;
  out: number;
  usd?: number;
  turns: number;
}

interface KiwiEvent {
  type: string;
  reason?: string;
  fallback?: { model: string; upstream: string; outcome: string; inputTokens?: number };
  call?: { tool: string; arguments: Record<string, unknown> };
  text?: string;
}

const sideAnswer = openAiCompletion;

const PLAIN_TURN = ['I will count them. [TOOL: count the words in "README.md"]'];

function prepare(resolverYaml: string | undefined) {
  return (root: string): void => {
    // A tool that fits the intent but that the policy does not list: never shown to the model.
    const dir = path.join(root, '.ai', 'tools', 'project');
    writeFileSync(
      path.join(dir, 'count_words_fast.yaml'),
      ['tool_id: count_words_fast', 'tool_type: script', 'executor: python_runtime', 'version: "1.0.0"', 'description: "Count the words in a file, fast"', 'config: { script: word_count.py, args: ["{script}", "{path}"] }', 'parameters:', '  - { name: path, type: string, required: true, description: "The file whose words to count" }', ''].join('\n'),
    );
    if (resolverYaml !== undefined) writeFileSync(path.join(root, '.ai', 'config', 'resolver.yaml'), resolverYaml);
  };
}

async function ledgerOf(served: DemoGateway, client: string): Promise<LedgerLine[]> {
  await served.gateway.budgets?.settled();
  const dir = path.join(served.root, BUDGET_STATE_DIR);
  return readdirSync(dir)
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').trim().split('\n'))
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LedgerLine)
    .filter((l) => l.client === client);
}

const eventsOf = (completion: unknown): KiwiEvent[] => (completion as { kiwi: { events: KiwiEvent[] } }).kiwi.events;

describe("the request's own model where the rules stop (default settings)", () => {
  let served: DemoGateway;
  let keys: Record<'runs' | 'declines' | 'guesses', string>;

  beforeAll(async () => {
    served = await serveDemoGateway({
      prefix: 'kiwi-own-fallback-',
      prepare: prepare(undefined),
      config: ['prices:', '  "gpt-*": { input_per_mtok: 1, output_per_mtok: 2 }', 'budgets:', '  default: { tokens: 1000000 }'].join('\n'),
    });
    const file = path.join(served.root, KEY_FILE);
    keys = { runs: (await createKey(file, 'runs')).key, declines: (await createKey(file, 'declines')).key, guesses: (await createKey(file, 'guesses')).key };
  }, 120_000);

  afterAll(async () => {
    await served?.close();
  });

  const client = (key: string) => new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: key, maxRetries: 0 });

  it('asks the same upstream and model in one side request, runs the validated call, streams its result, charges the client and audits it', async () => {
    const { llm } = served;
    llm.replyOnce(openAiStream(PLAIN_TURN), sideAnswer({ name: 'word_count', args: { path: 'README.md' } }), openAiStream(['The README has that many words.']));
    const before = llm.requests.length;
    const completion = await client(keys.runs).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'How many words are in the README?' }] });

    // The agent was told what becomes of plain words under these settings.
    const turn = (await llm.request(before)).body as { messages: { role: string; content: string }[] };
    expect(turn.messages[0]?.content).toContain('Plain words run once a model confirms the call.');

    const side = await llm.request(before + 1);
    const asked = side.body as { model: string; stream?: boolean; tools: { function: { name: string } }[]; messages: { role: string; content: string }[] };
    expect(side.path).toBe('/v1/chat/completions');
    expect(asked.model).toBe('gpt-4o-mini');
    const shown = asked.tools.map((t) => t.function.name);
    expect(shown).toContain('word_count');
    expect(shown.length).toBeLessThanOrEqual(5);
    expect(shown).not.toContain('count_words_fast');
    expect(asked.messages.at(-1)?.content).toMatch(/^count the words in "README\.md"\n\nEarlier in the conversation .*\nI will count them\./s);

    const events = eventsOf(completion);
    expect(events.find((e) => e.type === 'call')).toMatchObject({ call: { tool: 'word_count', arguments: { path: 'README.md' } }, fallback: { model: 'gpt-4o-mini', upstream: 'recorded', outcome: 'called', inputTokens: 300 } });
    expect(events.find((e) => e.type === 'result')?.text).toMatch(/"words": \d+/);
    expect(llm.requests.length).toBe(before + 3);
    // The next turn read the result.
    expect(JSON.stringify((await llm.request(before + 2)).body)).toMatch(/\\"words\\": \d+/);

    // Charged to the client: the two turns (10 in, 5 out each) and the side request (300 in, 20 out), which is not a turn.
    const ledger = await ledgerOf(served, 'runs');
    expect(ledger.filter((l) => l.in > 0 || l.out > 0).map((l) => ({ model: l.model, in: l.in, out: l.out, turns: l.turns, usd: l.usd }))).toEqual([
      { model: 'gpt-4o-mini', in: 10, out: 5, turns: 1, usd: (10 * 1 + 5 * 2) / 1e6 },
      { model: 'gpt-4o-mini', in: 300, out: 20, turns: 0, usd: (300 * 1 + 20 * 2) / 1e6 },
      { model: 'gpt-4o-mini', in: 10, out: 5, turns: 1, usd: (10 * 1 + 5 * 2) / 1e6 },
    ]);
    const usage = await served.gateway.budgets?.usage.of('runs');
    expect(usage?.used.tokens).toBe(15 + 320 + 15);

    await served.gateway.project.audit.flush();
    const record = (await readAuditTail({ dir: served.gateway.project.auditDir, limit: 50 })).find((r) => r.tool === 'word_count' && r.client === 'runs');
    expect(record).toMatchObject({ decision: 'allow', resolved_by: { model: 'gpt-4o-mini', upstream: 'recorded', input_tokens: 300, output_tokens: 20 } });
  });

  it('asks back cleanly when the model declines, and still charges its side request', async () => {
    const { llm } = served;
    llm.replyOnce(openAiStream(PLAIN_TURN), sideAnswer({ content: 'None of these functions fits.' }), openAiStream(['Then I will write it exactly.']));
    const before = llm.requests.length;
    const completion = await client(keys.declines).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'How many words are in the README?' }] });
    const events = eventsOf(completion);
    expect(events.some((e) => e.type === 'call')).toBe(false);
    expect(events.find((e) => e.type === 'unresolved')).toMatchObject({ fallback: { outcome: 'declined' }, reason: expect.stringMatching(/word_count/) });
    // The ask-back went to the agent's next turn, with the closest tools.
    const feedback = (await llm.request(before + 2)).body as { messages: { role: string; content: string }[] };
    expect(feedback.messages.at(-1)?.content).toMatch(/word_count/);
    expect((await ledgerOf(served, 'declines')).filter((l) => l.turns === 0 && l.in > 0)).toEqual([expect.objectContaining({ in: 300, out: 20 })]);
  });

  it('refuses a call with a value the text does not hold (a guess), and asks back', async () => {
    const { llm } = served;
    llm.replyOnce(openAiStream(PLAIN_TURN), sideAnswer({ name: 'word_count', args: { path: 'CHANGELOG.md' } }), openAiStream(['I will write it exactly.']));
    const completion = await client(keys.guesses).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'How many words are in the README?' }] });
    const events = eventsOf(completion);
    expect(events.some((e) => e.type === 'call')).toBe(false);
    expect(events.find((e) => e.type === 'unresolved')).toMatchObject({ fallback: { outcome: 'refused' } });
  });
});

describe('fallback: off', () => {
  let served: DemoGateway;

  beforeAll(async () => {
    served = await serveDemoGateway({ prefix: 'kiwi-no-fallback-', prepare: prepare('fallback: off\n') });
  }, 120_000);

  afterAll(async () => {
    await served?.close();
  });

  it('makes no side request: plain words are asked back, and the instructions say to write the exact call', async () => {
    const { llm } = served;
    llm.replyOnce(openAiStream(PLAIN_TURN), openAiStream(['I will write it exactly.']));
    const before = llm.requests.length;
    const completion = await new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: 'unused', maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'How many words are in the README?' }] });
    const events = eventsOf(completion);
    expect(events.find((e) => e.type === 'unresolved')?.fallback).toBeUndefined();
    expect(llm.requests.length).toBe(before + 2);
    const second = (await llm.request(before + 1)).body as { tools?: unknown; messages: { role: string; content: string }[] };
    expect(second.tools).toBeUndefined();
    expect(second.messages[0]?.content).toContain('Plain words may be asked back: write the exact call from the menu.');
  });
});
