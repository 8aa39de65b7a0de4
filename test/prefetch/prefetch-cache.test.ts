import { describe, expect, it } from 'vitest';
import { createCounters } from '../../src/prefetch/counters.js';
import { createPrefetchCache, type PrefetchCache } from '../../src/prefetch/prefetch-cache.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import type { Retrieval } from '../../src/resolver/types.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';

function unit(...values: number[]): Float32Array {
  const norm = Math.hypot(...values);
  return Float32Array.from(values.map((v) => v / norm));
}

function retrieval(intent: string, vector?: Float32Array, named = false): Retrieval {
  return {
    intent,
    ...(vector ? { vector } : {}),
    candidates: [{ tool: 'tool_a', score: 0.8 }],
    confidence: 0.8,
    ...(named ? { named: true } : {}),
    timings: { embedMs: 20, searchMs: 5, totalMs: 25 },
  };
}

const ok = (tool: string): CallOutcome => ({ callId: `id-${tool}`, tool, durationMs: 10, stuck: false, status: 'ok', result: { text: 'done', isError: false } });

function setup(options: { ttlMs?: number; max?: number; maxRunning?: number } = {}) {
  const clock = { t: 1000 };
  const counters = createCounters();
  const cache = createPrefetchCache({ ...options, counters, now: () => clock.t });
  return { clock, counters, cache };
}

/** A speculative call that ends only when the test says, or when it is aborted. */
function pendingCall(cache: PrefetchCache, entry: ReturnType<PrefetchCache['add']>, tool: string, argsKey = '{}') {
  let finish: (o: CallOutcome) => void = () => undefined;
  let aborted = false;
  const speculation = cache.speculate(entry, {
    tool,
    argsKey,
    session: 's1',
    run: (signal) =>
      new Promise<CallOutcome>((resolve) => {
        finish = resolve;
        signal.addEventListener('abort', () => {
          aborted = true;
          resolve({ callId: 'x', tool, durationMs: 1, stuck: false, status: 'error', error: { code: 'TOOL_CANCELLED', message: 'aborted' } });
        });
      }),
  });
  return { speculation, finish: (o: CallOutcome) => finish(o), wasAborted: () => aborted };
}

describe('counters', () => {
  it('snapshot() is a plain copy that no longer moves', () => {
    const counters = createCounters();
    counters.hits += 2;
    const copy = counters.snapshot();
    counters.hits++;
    expect(copy.hits).toBe(2);
    expect(Object.values(copy).every((v) => typeof v === 'number')).toBe(true);
    expect(Object.keys(copy)).toContain('speculativeDiscarded');
  });
});

describe('prefetch cache', () => {
  it('keeps one entry per query', () => {
    const { cache } = setup();
    const a = cache.add(retrieval('q1', unit(1, 0)));
    const b = cache.add(retrieval('q1', unit(0, 1)));
    expect(b).toBe(a);
    expect(cache.size).toBe(1);
    expect(cache.get('q1')?.vector).toEqual(unit(1, 0));
  });

  it('expires entries after the TTL and counts the unused ones as wasted', () => {
    const { cache, clock, counters } = setup({ ttlMs: 10_000 });
    cache.add(retrieval('unused', unit(1, 0)));
    cache.add(retrieval('used', unit(0, 1))).used = true;
    clock.t += 9_999;
    expect(cache.match(unit(1, 0), 0.9)?.entry.query).toBe('unused');
    expect(counters.wasted).toBe(0);
    clock.t += 2;
    expect(cache.match(unit(1, 0), 0.9)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(counters.wasted).toBe(1);
  });

  it('evicts the oldest beyond max, counting it wasted if never used', () => {
    const { cache, counters } = setup({ max: 2 });
    cache.add(retrieval('a', unit(1, 0, 0)));
    cache.add(retrieval('b', unit(0, 1, 0)));
    cache.add(retrieval('c', unit(0, 0, 1)));
    expect(cache.get('a')).toBeUndefined();
    expect(counters.wasted).toBe(1);
    cache.clear();
    expect(counters.wasted).toBe(3);
  });

  it('matches the closest query vector at or above minCosine, skipping named and foreign-sized entries', () => {
    const { cache } = setup();
    cache.add(retrieval('east', unit(1, 0, 0)));
    cache.add(retrieval('north-east', unit(1, 1, 0)));
    cache.add(retrieval('named', unit(1, 0.1, 0), true));
    cache.add(retrieval('no-vector'));
    cache.add(retrieval('other-size', unit(1, 0)));
    const m = cache.match(unit(1, 0.2, 0), 0.5);
    expect(m?.entry.query).toBe('east');
    expect(m?.cosine).toBeCloseTo(1 / Math.hypot(1, 0.2), 6);
    expect(cache.match(unit(0, 0, 1), 0.5)).toBeUndefined();
    // cos((1, .5), (1, 1)) ≈ 0.949, cos((1, .5), (1, 0)) ≈ 0.894
    expect(cache.match(unit(1, 0.5, 0), 0.95)).toBeUndefined();
    expect(cache.match(unit(1, 0.5, 0), 0.94)?.entry.query).toBe('north-east');
  });

  it('finds a speculation only for exactly its tool, arguments and session, and counts it used once', async () => {
    const { cache, counters } = setup();
    const entry = cache.add(retrieval('q', unit(1, 0)));
    const s = cache.speculate(entry, { tool: 'tool_a', argsKey: '{"x":1}', session: 's1', run: async () => ok('tool_a') });
    await s?.outcome;
    expect(s?.state).toBe('ready');
    expect(cache.findSpeculation('tool_a', '{"x":2}')).toBeUndefined();
    expect(cache.findSpeculation('tool_b', '{"x":1}')).toBeUndefined();
    expect(cache.findSpeculation('tool_a', '{"x":1}', 's2')).toBeUndefined();
    const found = cache.findSpeculation('tool_a', '{"x":1}', 's1');
    expect(found).toBe(s);
    cache.take(found!);
    expect(entry.used).toBe(true);
    expect(cache.findSpeculation('tool_a', '{"x":1}')).toBeUndefined();
    cache.markUsed(found!, 7);
    cache.markUsed(found!, 7);
    expect(counters).toMatchObject({ speculativeStarted: 1, speculativeUsed: 1, speculativeDiscarded: 0, savedMs: 7 });
  });

  it('discards a speculation that failed', async () => {
    const { cache, counters } = setup();
    const entry = cache.add(retrieval('q', unit(1, 0)));
    const s = cache.speculate(entry, { tool: 'tool_a', argsKey: '{}', session: 's1', run: async () => ({ ...ok('tool_a'), status: 'denied', reason: 'no' }) as CallOutcome });
    await s?.outcome;
    expect(s?.state).toBe('discarded');
    expect(cache.findSpeculation('tool_a', '{}')).toBeUndefined();
    // A run that throws becomes an error outcome, never an unhandled rejection.
    const t = cache.speculate(entry, { tool: 'tool_b', argsKey: '{}', session: 's1', run: () => Promise.reject(new Error('boom')) });
    expect(await t?.outcome).toMatchObject({ status: 'error', error: { code: 'INTERNAL', message: expect.stringMatching(/boom/) } });
    expect(counters.speculativeDiscarded).toBe(2);
  });

  it('aborts and discards an unused speculation when its entry expires', async () => {
    const { cache, clock, counters } = setup({ ttlMs: 100 });
    const entry = cache.add(retrieval('q', unit(1, 0)));
    const running = pendingCall(cache, entry, 'tool_a');
    clock.t += 101;
    expect(cache.match(unit(1, 0), 0.5)).toBeUndefined();
    await running.speculation?.outcome;
    expect(running.wasAborted()).toBe(true);
    expect(counters).toMatchObject({ wasted: 1, speculativeStarted: 1, speculativeDiscarded: 1 });
  });

  it('a call that may change state discards every speculation not yet taken, and none starts while it runs', async () => {
    const { cache, counters } = setup();
    const entry = cache.add(retrieval('q', unit(1, 0)));
    const ready = cache.speculate(entry, { tool: 'tool_a', argsKey: '{}', session: 's1', run: async () => ok('tool_a') });
    await ready?.outcome;
    const running = pendingCall(cache, entry, 'tool_b');
    const taken = pendingCall(cache, entry, 'tool_c');
    cache.take(taken.speculation!);
    cache.mutationStarted();
    expect(ready?.state).toBe('discarded');
    expect(running.speculation?.state).toBe('discarded');
    expect(running.wasAborted()).toBe(true);
    expect(taken.speculation?.state).toBe('taken'); // its taker ends it
    expect(cache.canSpeculate()).toBe(false);
    expect(cache.speculate(entry, { tool: 'tool_d', argsKey: '{}', session: 's1', run: async () => ok('tool_d') })).toBeUndefined();
    cache.mutationEnded();
    expect(cache.canSpeculate()).toBe(true);
    expect(counters.speculativeDiscarded).toBe(2);
    taken.finish(ok('tool_c'));
  });

  it('caps the speculative calls running at once', async () => {
    const { cache } = setup({ maxRunning: 2 });
    const entry = cache.add(retrieval('q', unit(1, 0)));
    const a = pendingCall(cache, entry, 'tool_a');
    const b = pendingCall(cache, entry, 'tool_b');
    expect(cache.canSpeculate()).toBe(false);
    expect(pendingCall(cache, entry, 'tool_c').speculation).toBeUndefined();
    a.finish(ok('tool_a'));
    await a.speculation?.outcome;
    expect(cache.canSpeculate()).toBe(true);
    b.finish(ok('tool_b'));
  });

  it('matches 256 entries of 512 dimensions in a linear scan', () => {
    const { cache } = setup();
    const dims = 512;
    const vectors: Float32Array[] = [];
    for (let i = 0; i < 256; i++) {
      const v = new Float32Array(dims);
      v[i % dims] = 1;
      v[(i * 7 + 3) % dims] = 0.5;
      vectors.push(unit(...v));
      cache.add(retrieval(`q${i}`, vectors[i]));
    }
    expect(cache.size).toBe(256);
    expect(cache.match(vectors[123]!, 0.99)?.entry.query).toBe('q123');
  });

  it('rejects bad options with a clear error', () => {
    const counters = createCounters();
    expectKiwiError(() => createPrefetchCache({ counters, ttlMs: 0 }), 'INVALID_INPUT', /ttlMs must be an integer from 1/);
    expectKiwiError(() => createPrefetchCache({ counters, max: 1.5 }), 'INVALID_INPUT', /max must be an integer/);
    expectKiwiError(() => createPrefetchCache({ counters, maxRunning: -1 }), 'INVALID_INPUT', /maxRunning/);
  });
});
