import { describe, expect, it } from 'vitest';
import { createBatchQueue, type BatchQueueOptions } from '../../src/embed/batch-queue.js';
import { dot, normalize } from '../../src/embed/vector-math.js';
import { KiwiError } from '../../src/base/errors.js';
import { failure } from '../helpers/expect-failure.js';


/** A model stand-in whose batches finish when the test says so; each text's vector is [its length]. */
function controlledModel() {
  const batches: { texts: string[]; signal: AbortSignal; finish(): void; fail(error: unknown): void }[] = [];
  const waiters: (() => void)[] = [];
  const run = (texts: string[], signal: AbortSignal) =>
    new Promise<Float32Array[]>((resolve, reject) => {
      batches.push({ texts, signal, finish: () => resolve(texts.map((t) => Float32Array.of(t.length))), fail: reject });
      waiters.splice(0).forEach((w) => w());
    });
  /** Resolves once `n` batches have been started. */
  const started = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => (batches.length >= n ? resolve() : waiters.push(check));
      check();
    });
  return { batches, run, started };
}

function queue(run: BatchQueueOptions['run'], extra: Partial<BatchQueueOptions> = {}) {
  return createBatchQueue({ name: 'the test embedder', batchSize: 4, maxQueuedTexts: 100, maxTextChars: 1000, run, ...extra });
}

describe('batch queue', () => {
  it('merges small requests into one batch, splits large ones, and answers each caller in order', async () => {
    const model = controlledModel();
    const q = queue(model.run);
    const a = q.embed(['a', 'bb']);
    const b = q.embed(['ccc', 'dddd', 'eeeee', 'ffffff']);
    const c = q.embed(['g']);
    await model.started(1);
    expect(model.batches[0]?.texts).toEqual(['a', 'bb', 'ccc', 'dddd']);
    model.batches[0]?.finish();
    expect((await a).map((v) => v[0])).toEqual([1, 2]);
    await model.started(2);
    expect(model.batches[1]?.texts).toEqual(['eeeee', 'ffffff', 'g']);
    model.batches[1]?.finish();
    expect((await b).map((v) => v[0])).toEqual([3, 4, 5, 6]);
    expect((await c).map((v) => v[0])).toEqual([1]);
  });

  it('drops a waiting request on abort, and abandons a running batch only when all its callers are gone', async () => {
    const model = controlledModel();
    const q = queue(model.run);
    const first = new AbortController();
    const second = new AbortController();
    const a = failure(q.embed(['a', 'b'], first.signal), 'TOOL_CANCELLED');
    const b = failure(q.embed(['c', 'd'], second.signal), 'TOOL_CANCELLED');
    const waiting = new AbortController();
    const c = failure(q.embed(['e'], waiting.signal), 'TOOL_CANCELLED');
    await model.started(1);
    waiting.abort();
    await c;
    first.abort();
    await a;
    expect(model.batches[0]?.signal.aborted).toBe(false);
    second.abort();
    await b;
    expect(model.batches[0]?.signal.aborted).toBe(true);
    model.batches[0]?.finish();
    // The cancelled request never reached the model, and the queue still works.
    const d = q.embed(['zz']);
    await model.started(2);
    expect(model.batches[1]?.texts).toEqual(['zz']);
    model.batches[1]?.finish();
    expect((await d)[0]?.[0]).toBe(2);
  });

  it('fails only the callers of a failed batch', async () => {
    const model = controlledModel();
    const q = queue(model.run, { batchSize: 2 });
    const a = q.embed(['a', 'b']);
    const b = q.embed(['c']);
    await model.started(1);
    model.batches[0]?.fail(new KiwiError('UPSTREAM_HTTP', 'server said no'));
    await failure(a, 'UPSTREAM_HTTP');
    await model.started(2);
    model.batches[1]?.finish();
    expect(await b).toHaveLength(1);
  });

  it('reports a model that returns the wrong number of vectors', async () => {
    const q = queue(async () => [Float32Array.of(1)]);
    const error = await failure(q.embed(['a', 'b']), 'INTERNAL');
    expect(error.message).toMatch(/1 vectors for 2 texts/);
  });

  it('cuts long texts without splitting a surrogate pair', async () => {
    const seen: string[] = [];
    const q = queue(
      async (texts) => {
        seen.push(...texts);
        return texts.map(() => Float32Array.of(1));
      },
      { maxTextChars: 5 },
    );
    await q.embed(['abcdefgh', 'abcd😀xyz', 'ok']);
    expect(seen).toEqual(['abcde', 'abcd', 'ok']);
  });

  it('refuses work past its queue cap, bad input, and anything after close', async () => {
    const model = controlledModel();
    const busy: boolean[] = [];
    const q = queue(model.run, { maxQueuedTexts: 5, onBusyChange: (b) => busy.push(b) });
    const a = failure(q.embed(['a', 'b', 'c', 'd']), 'TOOL_CANCELLED');
    const capped = await failure(q.embed(['e', 'f']), 'RATE_LIMITED');
    expect(capped.message).toMatch(/4 texts queued \(cap 5\)/);
    await failure(q.embed([42] as unknown as string[]), 'INVALID_INPUT');
    await model.started(1);
    let closed = false;
    const closing = q.close(new KiwiError('TOOL_CANCELLED', 'closed')).then(() => (closed = true));
    await a;
    // close() waits for the running batch to return before the model may be freed.
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    model.batches[0]?.finish();
    await closing;
    expect(busy).toEqual([true, false]);
    await failure(q.embed(['x']), 'INTERNAL');
  });
});

describe('vector math', () => {
  it('normalises to unit length and refuses what cannot be', () => {
    const v = normalize([3, 4]);
    expect(Array.from(v ?? [])).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(dot(v!, v!)).toBeCloseTo(1, 6);
    expect(normalize([0, 0])).toBeNull();
    expect(normalize([])).toBeNull();
    expect(normalize([1, Number.NaN])).toBeNull();
    expect(() => dot([1], [1, 2])).toThrow(RangeError);
  });
});
