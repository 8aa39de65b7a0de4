import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuse } from '../../src/resolver/fuse.js';
import { createLlmArgumentFiller } from '../../src/resolver/llm-argument-filler.js';
import { replay, startReplayServer } from '../fixtures/llm/replay-server.js';
import { createResolver, resolvableTools } from '../../src/resolver/resolver.js';
import type { Resolver } from '../../src/resolver/types.js';
import { openToolIndex, type ToolIndex } from '../../src/store/tool-index.js';
import { createHashEmbedder } from '../helpers/hash-embedder.js';
import { makeTool } from '../helpers/make-tool.js';

const TOOLS = [
  makeTool({
    id: 'get_weather_forecast',
    type: 'api',
    description: 'Get the weather forecast for a city',
    parameters: [
      { name: 'city', type: 'string', required: true, description: 'City name' },
      { name: 'days', type: 'integer', required: false, description: 'How many days' },
    ],
  }),
  makeTool({
    id: 'send_slack_message',
    type: 'api',
    description: 'Send a message to a Slack channel',
    parameters: [
      { name: 'channel', type: 'string', required: true, description: 'Channel such as #ops' },
      { name: 'text', type: 'string', required: true, description: 'The message text' },
    ],
  }),
  makeTool({ id: 'read_file', type: 'script', description: 'Read a text file from the project', parameters: [{ name: 'path', type: 'string', required: true, format: 'path' }] }),
  makeTool({ id: 'list_open_issues', type: 'api', description: 'List the open issues of the bug tracker' }),
  makeTool({ id: 'list_files', type: 'script', description: 'List the files of a folder', parameters: [{ name: 'path', type: 'string', required: false, format: 'path' }] }),
  makeTool({ id: 'python_runtime', type: 'runtime', description: 'Run python scripts' }),
];

let dir: string;
let index: ToolIndex;
let resolver: Resolver;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-resolver-'));
  const embedder = createHashEmbedder({ dimensions: 128 });
  const tools = resolvableTools(TOOLS);
  index = await openToolIndex({ dir, embedder });
  await index.sync([...tools.values()]);
  resolver = createResolver({ tools, search: index, embedder, settings: { threshold: 0.3 } });
});

afterAll(async () => {
  await index?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('resolver (hash embedder, real LanceDB)', () => {
  it('asks instead of running a call below the gate for the target precision, with the values it found, and still runs exact calls', async () => {
    // A calibration that maps raw confidence r to r (logit in, logistic out) and a gate of 0.999 for 0.95 precision.
    const model = { version: 1 as const, embedder: 'hash', calibration: { mean: [0], std: [1], weights: [1], bias: 0 }, gates: [{ precision: 0.95, threshold: 0.999 }, { precision: 0.99, threshold: null }], card: {} };
    const strict = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder: createHashEmbedder({ dimensions: 128 }), settings: { threshold: 0.3 }, model });
    const r = await strict.resolve('get the weather forecast for "Paris" for 3 days');
    expect(strict.gates).toEqual({ threshold: 0.3, callGate: 0.999, targetPrecision: 0.95, calibrated: true });
    expect(r).toMatchObject({ status: 'unresolved', stop: 'gate', missing: [], found: { city: 'Paris' }, reason: expect.stringMatching(/`get_weather_forecast` may fit, but a call from plain words is not sure enough to run \(confidence 0\.\d\d; calls run at 1\.00 and above, for 0\.95 precision\)/) });
    expect(r.candidates[0]?.tool).toBe('get_weather_forecast');
    expect(await strict.resolve('get_weather_forecast {"city": "Paris"}')).toMatchObject({ status: 'resolved', confidence: 1 });

    const unreachable = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder: createHashEmbedder({ dimensions: 128 }), settings: { threshold: 0.3, targetPrecision: 0.99 }, model });
    expect(await unreachable.resolve('get the weather forecast for "Paris" for 3 days')).toMatchObject({ status: 'unresolved', reason: expect.stringMatching(/no confidence reaches 0\.99 precision on unseen catalogs/) });
    expect(unreachable.gates.callGate).toBeNull();
    const open = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder: createHashEmbedder({ dimensions: 128 }), settings: { threshold: 0.3, targetPrecision: 0 }, model });
    expect(open.gates.callGate).toBe(0);
    expect(await open.resolve('get the weather forecast for "Paris" for 3 days')).toMatchObject({ status: 'resolved', call: { tool: 'get_weather_forecast', arguments: { city: 'Paris' } } });
  });

  it('runs an exact call as written, with no search, and refuses a malformed one with the tool as the candidate', async () => {
    const exact = await resolver.resolve('send_slack_message {"channel": "#ops", "text": "deploy done"}');
    expect(exact).toMatchObject({ status: 'resolved', call: { tool: 'send_slack_message', arguments: { channel: '#ops', text: 'deploy done' } }, confidence: 1 });
    expect(exact.timings.embedMs).toBe(0);
    const short = await resolver.resolve('send_slack_message(channel="#ops")');
    expect(short).toMatchObject({ status: 'unresolved', stop: 'exact_call', missing: ['text'], candidates: [{ tool: 'send_slack_message' }] });
    const unknown = await resolver.resolve('get_weather {"city": "Paris"}');
    expect(unknown).toMatchObject({ status: 'unresolved', reason: expect.stringMatching(/there is no tool `get_weather`/) });
    expect(unknown.candidates[0]?.tool).toBe('get_weather_forecast');
  });

  it('resolves an intent to a call with filled arguments, candidates and timings', async () => {
    const r = await resolver.resolve('get the weather forecast for "Paris" for 3 days');
    expect(r.status, JSON.stringify(r)).toBe('resolved');
    if (r.status !== 'resolved') return;
    expect(r.call).toEqual({ tool: 'get_weather_forecast', arguments: { city: 'Paris', days: 3 } });
    expect(r.candidates[0]?.tool).toBe('get_weather_forecast');
    expect(r.candidates.length).toBeGreaterThan(1);
    expect(r.timings.totalMs).toBeGreaterThanOrEqual(r.timings.embedMs);
  });

  it('answers "unresolved" with what is missing rather than guessing an argument', async () => {
    const r = await resolver.resolve('send a slack message to the channel');
    expect(r.status).toBe('unresolved');
    if (r.status !== 'unresolved') return;
    expect(r.candidates[0]?.tool).toBe('send_slack_message');
    expect(r.missing).toEqual(expect.arrayContaining(['text']));
    expect(r.stop).toBe('arguments');
    expect(r.reason).toMatch(/does not give/);
  });

  it('ranks a tool id written in the intent first, as evidence: the call is not stated and is gated like any from plain words', async () => {
    const r = await resolver.resolve('use list_open_issues to see what the weather forecast bugs are');
    expect(r.candidates[0]?.tool).toBe('list_open_issues');
    expect(r.notes.join(' ')).toMatch(/names the tool `list_open_issues`: ranked first/);
    expect(r.confidence).toBeLessThan(1);
  });

  it('does not run a tool with no required arguments because a sentence names it (issue 40), and still runs its exact calls', async () => {
    const model = { version: 1 as const, embedder: 'hash', calibration: { mean: [0], std: [1], weights: [1], bias: 0 }, gates: [{ precision: 0.95, threshold: 0.999 }], card: {} };
    const gated = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder: createHashEmbedder({ dimensions: 128 }), settings: { threshold: 0.3 }, model });
    const mention = await gated.resolve('help me with the list_files functionality');
    expect(mention).toMatchObject({ status: 'unresolved', stop: 'gate' });
    expect(mention.candidates[0]?.tool).toBe('list_files');
    expect(mention.confidence).toBeLessThan(1);
    const retrieval = await gated.retrieve('help me with the list_files functionality');
    expect(retrieval.named).toBeUndefined();
    // Ungated, it may run, but at the confidence retrieval gives it, never 1 for the name alone.
    const open = await resolver.resolve('help me with the list_files functionality');
    expect(open.confidence).toBeLessThan(1);
    for (const exact of ['list_files {}', 'list_files()']) {
      expect(await gated.resolve(exact)).toMatchObject({ status: 'resolved', call: { tool: 'list_files', arguments: {} }, confidence: 1 });
    }
  });

  it('runs the tool the caller chose (a menu pick) when the intent states every value, and gates it when it does not', async () => {
    const model = { version: 1 as const, embedder: 'hash', calibration: { mean: [0], std: [1], weights: [1], bias: 0 }, gates: [{ precision: 0.95, threshold: 0.999 }], card: {} };
    const gated = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder: createHashEmbedder({ dimensions: 128 }), settings: { threshold: 0.3 }, model });
    expect(await gated.resolve('the open issues', { tool: 'list_open_issues' })).toMatchObject({ status: 'resolved', call: { tool: 'list_open_issues', arguments: {} }, confidence: 1 });
    expect(await gated.resolve('read "notes.txt"', { tool: 'read_file' })).toMatchObject({ status: 'resolved', call: { tool: 'read_file', arguments: { path: 'notes.txt' } }, confidence: 1 });
    // The id in a sentence with every value quoted used to be a "stated" call at confidence 1; it is plain words.
    expect(await gated.resolve('please use read_file on "notes.txt" for the weather')).toMatchObject({ status: 'unresolved', stop: 'gate', found: { path: 'notes.txt' } });
  });

  it('never resolves to a runtime, primitive or MCP server', async () => {
    const r = await resolver.resolve('python_runtime run python scripts');
    expect(r.candidates.map((c) => c.tool)).not.toContain('python_runtime');
  });

  it('abstains when nothing fits', async () => {
    const r = await resolver.resolve('zebra quantum lullaby');
    expect(r).toMatchObject({ status: 'unresolved', stop: expect.stringMatching(/^(threshold|match)$/) });
  });

  it('answers an empty or NUL-only intent with a clear unresolved, not an error', async () => {
    for (const text of ['', '   ', '\u0000\u0000']) {
      const r = await resolver.resolve(text);
      expect(r).toMatchObject({ status: 'unresolved', stop: 'intent', candidates: [] });
      if (r.status === 'unresolved') expect(r.reason).toMatch(/empty/);
    }
  });

  it('survives intents that would break a query parser', async () => {
    for (const text of ['read "README.md" AND (NOT *', 'weather: OR "', '🚀🚀🚀 -- ::']) {
      const r = await resolver.resolve(text);
      expect(['resolved', 'unresolved']).toContain(r.status);
    }
  });

  it('cancels through its signal', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(resolver.resolve('weather in Paris', { signal: controller.signal })).rejects.toThrow(/cancel/i);
  });
});

describe('resolver with the optional argument model (replayed chat completions)', () => {
  it('takes the arguments from the model, and the rules fill what it left out', async () => {
    const server = await startReplayServer();
    server.answer = replay(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather_forecast', arguments: '{"days":5}' } }] } }] }));
    const llm = createLlmArgumentFiller({ url: server.url, model: 'recorded' });
    const embedder = createHashEmbedder({ dimensions: 128 });
    const withModel = createResolver({ tools: resolvableTools(TOOLS), search: index, embedder, settings: { threshold: 0.3 }, llm });
    try {
      const r = await withModel.resolve('get the weather forecast for "Lisbon" for five days');
      expect(r.status === 'resolved' && r.call).toEqual({ tool: 'get_weather_forecast', arguments: { days: 5, city: 'Lisbon' } });
      expect(server.seen).toHaveLength(1);
      await server.close();
      // The model is gone: the rules answer alone, and say so.
      const fallback = await withModel.resolve('get the weather forecast for "Lisbon"');
      expect(fallback.status === 'resolved' && fallback.call.arguments).toEqual({ city: 'Lisbon' });
      expect(fallback.notes.join(' ')).toMatch(/argument model failed/);
    } finally {
      await llm.close();
      await server.close();
    }
  });
});

describe('fuse', () => {
  it('adds normalised BM25 to cosine and scales into [0, 1]', () => {
    const fused = fuse(
      [
        { id: 'a', score: 0.8 },
        { id: 'b', score: 0.6 },
      ],
      [
        { id: 'b', score: 10 },
        { id: 'c', score: 5 },
      ],
      { textWeight: 0.5 },
    );
    expect(fused.map((c) => c.tool)).toEqual(['b', 'a', 'c']);
    expect(fused[0]).toMatchObject({ tool: 'b', vectorScore: 0.6, textScore: 1 });
    expect(fused[0]!.score).toBeCloseTo((0.6 + 0.5) / 1.5, 6);
    // `a` was not found by BM25: it gets the weakest BM25 seen (5/10) as a stand-in, `c` the weakest cosine.
    expect(fused[1]!.score).toBeCloseTo((0.8 + 0.5 * 0.5) / 1.5, 6);
    expect(fused[2]!.score).toBeCloseTo((0.6 + 0.5 * 0.5) / 1.5, 6);
  });

  it('handles an empty side', () => {
    expect(fuse([], [], { textWeight: 0.4 })).toEqual([]);
    expect(fuse([{ id: 'a', score: 0.5 }], [], { textWeight: 0.4 })[0]).toMatchObject({ tool: 'a' });
  });
});
