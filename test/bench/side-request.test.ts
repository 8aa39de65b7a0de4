import { afterEach, describe, expect, it } from 'vitest';
import { estimatePromptTokens, estimateTokens } from '../../src/budgets/token-estimate.js';
import type { BenchCase } from '../../src/datasets/case-file.js';
import { catalogRecall, oneCallCases, seededSample, type CandidateOutcome } from '../../bench/side-request/candidate-recall.js';
import { DEFAULT_SHAPE, earlierTurns } from '../../bench/side-request/conversation.js';
import { EXACT_MODEL, kindOf, PLAIN_WORDS_MODEL, promptTokens, SCRIPT, startReplayUpstream, type ReplayUpstream, type UpstreamRecord } from '../../bench/side-request/replay-upstream.js';
import type { ChatSample } from '../../bench/side-request/turn-cost.js';
import { summarizeTurns } from '../../bench/side-request/turn-summary.js';

const words = (text: string) => text.split(/\s+/).filter((w) => w !== '').length;

describe("the side-request bench's conversation", () => {
  it('is the same for the same seed and another for another seed', () => {
    expect(earlierTurns(7)).toEqual(earlierTurns(7));
    expect(earlierTurns(7)).not.toEqual(earlierTurns(8));
  });

  it('alternates user and assistant for the given number of pairs, each of its declared size, with nothing that opens an intent', () => {
    const turns = earlierTurns(3);
    expect(turns).toHaveLength(2 * DEFAULT_SHAPE.turns);
    turns.forEach((t, i) => {
      expect(t.role).toBe(i % 2 === 0 ? 'user' : 'assistant');
      const [min, max] = t.role === 'user' ? DEFAULT_SHAPE.userWords : DEFAULT_SHAPE.assistantWords;
      expect(words(t.content)).toBeGreaterThanOrEqual(min);
      expect(words(t.content)).toBeLessThanOrEqual(max);
      expect(t.content).not.toMatch(/[[\]]/);
    });
    expect(earlierTurns(3, { ...DEFAULT_SHAPE, turns: 2 })).toHaveLength(4);
  });
});

describe('the candidate recall', () => {
  const outcome = (gold: string, shown: string[] | null, stop = shown === null ? 'threshold' : 'gate'): CandidateOutcome => ({ id: gold, gold, stop, shown });

  it('counts, of the intents asked, those whose gold tool is among the first K shown', () => {
    const outcomes = [
      outcome('a', ['a', 'b', 'c', 'd', 'e', 'f']),
      outcome('b', ['x', 'y', 'b']),
      outcome('c', ['x', 'y', 'z', 'w', 'v', 'u', 't', 'c']),
      outcome('d', ['x']),
      outcome('e', null),
      outcome('f', null, 'ran'),
    ];
    const r = catalogRecall('toy', 10, outcomes, [1, 3, 5, 8]);
    expect(r).toEqual({ dataset: 'toy', pool: 10, sampled: 6, asked: 4, ran: 1, not_asked: { threshold: 1 }, recall: { at_1: 0.25, at_3: 0.5, at_5: 0.5, at_8: 0.75 } });
  });

  it('has no recall where nothing was asked', () => {
    expect(catalogRecall('none', 0, []).recall).toEqual({ at_1: null, at_3: null, at_5: null, at_8: null });
  });

  it('keeps distinct one-call intents, and samples them the same way for the same seed, without repeats', () => {
    const c = (id: string, intent: string, calls: string[]): BenchCase => ({ id, intent, calls: calls.map((name) => ({ name, arguments: null })), groups: {}, file: 'x.jsonl' });
    const cases = [c('1', 'do a', ['a']), c('2', 'do a', ['a']), c('3', 'do a then b', ['a', 'b']), c('4', 'no fit', []), c('5', 'do b', ['b'])];
    expect(oneCallCases(cases).map((x) => x.id)).toEqual(['1', '5']);
    const items = Array.from({ length: 50 }, (_, i) => i);
    const sample = seededSample(items, 10, 40);
    expect(sample).toEqual(seededSample(items, 10, 40));
    expect(sample).not.toEqual(seededSample(items, 10, 41));
    expect(new Set(sample).size).toBe(10);
    expect(seededSample(items, 80, 40)).toEqual(items);
  });
});

describe('the replayed upstream', () => {
  let upstream: ReplayUpstream | undefined;
  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });

  it('reads which part of the script a request asks for', () => {
    const results = (text: string) => ({ model: PLAIN_WORDS_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x' }, { role: 'user', content: text }] });
    expect(kindOf({ model: PLAIN_WORDS_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] })).toBe('intent');
    expect(kindOf({ model: EXACT_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] })).toBe('exact');
    expect(kindOf({ model: PLAIN_WORDS_MODEL, stream: false, tools: [{ function: { name: 'read_file' } }], messages: [] })).toBe('side');
    expect(kindOf(results('Results of the tool intent in your last reply, from the Kiwi gateway.\n\n[1] Intent: x\nNot run: `read_file` may fit'))).toBe('asked_back');
    expect(kindOf(results('Results of the tool intent in your last reply, from the Kiwi gateway.\n\n[1] Intent: x\nCall: read_file {}\nResult:'))).toBe('final');
  });

  it("reports in `usage` its own count of what it received and sent, and logs each request", async () => {
    upstream = await startReplayUpstream();
    const tools = [{ type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
    const side = { model: PLAIN_WORDS_MODEL, stream: false, tools, messages: [{ role: 'system', content: 'Call one function.' }, { role: 'user', content: 'show me what package.json holds' }] };
    const answer = (await (await fetch(`${upstream.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(side) })).json()) as {
      choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[];
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    const call = answer.choices[0]?.message.tool_calls[0]?.function;
    expect(call).toEqual({ name: 'read_file', arguments: '{"path":"package.json"}' });
    const expectedPrompt = estimatePromptTokens(side.messages.map((m) => ({ role: 'user' as const, content: m.content }))) + estimateTokens(JSON.stringify(tools));
    expect(promptTokens(side)).toBe(expectedPrompt);
    expect(answer.usage).toEqual({ prompt_tokens: expectedPrompt, completion_tokens: estimateTokens('read_file{"path":"package.json"}'), total_tokens: expectedPrompt + estimateTokens('read_file{"path":"package.json"}') });

    const turn = { model: PLAIN_WORDS_MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'What does package.json hold?' }] };
    const sse = await (await fetch(`${upstream.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(turn) })).text();
    const chunks = sse.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[]; usage?: { completion_tokens: number } });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(SCRIPT.intent);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(estimateTokens(SCRIPT.intent));
    expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);

    const log = upstream.takeLog();
    expect(log.map((r) => [r.kind, r.prompt_tokens, r.tools])).toEqual([
      ['side', expectedPrompt, ['read_file']],
      ['intent', promptTokens(turn), undefined],
    ]);
    expect(upstream.takeLog()).toEqual([]);
  });

  it("declines a side request that does not show the script's tool", async () => {
    upstream = await startReplayUpstream();
    const side = { model: PLAIN_WORDS_MODEL, stream: false, tools: [{ type: 'function', function: { name: 'git_status' } }], messages: [{ role: 'user', content: 'x' }] };
    const answer = (await (await fetch(`${upstream.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(side) })).json()) as { choices: { message: { content: string; tool_calls?: unknown } }[] };
    expect(answer.choices[0]?.message).toEqual({ role: 'assistant', content: 'None of these functions fits.' });
  });
});

describe('the turn summary', () => {
  const record = (kind: UpstreamRecord['kind'], prompt: number, completion: number, tools?: string[]): UpstreamRecord => ({
    kind,
    model: 'm',
    stream: kind !== 'side',
    messages: 1,
    request_bytes: 1,
    prompt_tokens: prompt,
    completion_tokens: completion,
    ...(tools ? { tools } : {}),
    received_at: 0,
    answered_at: 0,
  });
  const fallback = { model: 'm', upstream: 'u', outcome: 'called' as const, ms: 4 };

  it('pairs each variant with the exact call of its round, with and without the tool run, and sums each request', () => {
    const samples: ChatSample[] = [];
    for (const round of [0, 1]) {
      samples.push({ round, variant: 'exact', ms: 100 + round, toolMs: 50, requests: [record('exact', 1000, 30), record('final', 1100, 20)] });
      samples.push({ round, variant: 'side', ms: 130 + round, toolMs: 60, requests: [record('intent', 1000, 30), record('side', 500, 8, ['a', 'b']), record('final', 1100, 20)], fallback });
      samples.push({ round, variant: 'asked_back', ms: 150 + round, toolMs: 40, requests: [record('intent', 1000, 30), record('asked_back', 1200, 20), record('final', 1300, 20)] });
    }
    const s = summarizeTurns(samples);
    expect(s.rounds).toBe(2);
    expect(s.side_request).toEqual({
      prompt_tokens: { p50: 500, p95: 500 },
      completion_tokens: { p50: 8, p95: 8 },
      tools_shown: { p50: 2, p95: 2 },
      gateway_ms: { p50: 4, p95: 4 },
      added_ms: { p50: 30, p95: 30 },
      added_ms_without_tool: { p50: 20, p95: 20 },
    });
    expect(s.ask_back_turn).toEqual({ prompt_tokens: { p50: 1200, p95: 1200 }, completion_tokens: { p50: 20, p95: 20 }, added_ms: { p50: 50, p95: 50 }, added_ms_without_tool: { p50: 60, p95: 60 } });
    expect(s.chat.asked_back).toMatchObject({ upstream_requests: 3, prompt_tokens: { p50: 3500, p95: 3500 }, completion_tokens: { p50: 70, p95: 70 } });
    expect(s.chat.exact.ms).toEqual({ p50: 100, p95: 101 });
    expect(s.prompt_ratio).toBe(2.4);
    // 8 and 20 tokens at 50 tokens/s: 160 and 400 ms on top of the measured medians.
    expect(s.modelled).toEqual({ output_tokens_per_s: 50, side_request_added_ms: 180, ask_back_turn_added_ms: 460 });
  });
});
