import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embed/create-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { createUseLiteEmbedder } from '../../src/embed/use-lite-embedder.js';
import { dot } from '../../src/embed/vector-math.js';
import { failure } from '../helpers/expect-failure.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

// The real USE-lite model (~0.5 s to load): one embedder in a worker for the whole file, and
// one in-process embedder for the test of that mode.

const norm = (v: Float32Array) => Math.sqrt(dot(v, v));
const texts = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix} ${i}: list the files in folder number ${i}`);

let embedder: Embedder;

beforeAll(async () => {
  // Through the config entry point, which picks the worker mode by default.
  embedder = await createEmbedder({ kind: 'use-lite' });
});

afterAll(async () => {
  await embedder?.close();
});

describe('USE-lite embedder (worker thread)', () => {
  it('gives 512-d unit vectors whose similarity follows meaning', async () => {
    expect(embedder.id).toBe('use-lite-512');
    expect(embedder.dimensions).toBe(512);
    const [ops, chat, math] = await embedder.embed(['send a message to the ops channel', 'post a note in the team chat', 'compute the factorial of 12']);
    for (const v of [ops, chat, math]) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v?.length).toBe(512);
      expect(norm(v as Float32Array)).toBeCloseTo(1, 5);
    }
    expect(dot(ops!, chat!)).toBeGreaterThan(dot(ops!, math!));
  });

  it('keeps the order of texts across batches and concurrent callers, and embeds the same text the same way', async () => {
    const many = texts(70, 'batch'); // three batches of 32 at the default size
    const [all, alone, again] = await Promise.all([embedder.embed(many), embedder.embed([many[45]!]), embedder.embed(['', many[0]!])]);
    expect(all).toHaveLength(70);
    expect(dot(all[45]!, alone[0]!)).toBeCloseTo(1, 4);
    expect(dot(all[0]!, again[1]!)).toBeCloseTo(1, 4);
    expect(dot(all[0]!, all[1]!)).toBeLessThan(0.9999);
    // An empty text still gets its own vector (the model would otherwise drop its row).
    expect(norm(again[0]!)).toBeCloseTo(1, 5);
    expect(await embedder.embed([])).toEqual([]);
  });

  it('leaves the event loop free while the worker embeds', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      await embedder.embed(texts(64, 'loop'));
    } finally {
      clearInterval(timer);
    }
    // Embedding 64 texts takes hundreds of milliseconds of model time, all of it in the worker.
    expect(ticks).toBeGreaterThan(5);
  });

  it('drops a queued request when its signal aborts, and refuses an already aborted one', async () => {
    const first = embedder.embed(texts(64, 'first'));
    const controller = new AbortController();
    const second = embedder.embed(texts(64, 'second'), controller.signal);
    controller.abort();
    await failure(second, 'TOOL_CANCELLED');
    expect(await first).toHaveLength(64);
    await failure(embedder.embed(['x'], AbortSignal.abort()), 'TOOL_CANCELLED');
  });

  it('rejects what is not an array of strings', async () => {
    await failure(embedder.embed('just a string' as unknown as string[]), 'INVALID_INPUT');
    await failure(embedder.embed([1, 2] as unknown as string[]), 'INVALID_INPUT');
  });

  it('rejects a bad batch size', async () => {
    await failure(createUseLiteEmbedder({ batchSize: 0 }), 'INVALID_INPUT');
  });
});

describe('USE-lite embedder lifecycle', () => {
  it('close() cancels its own calls in flight and refuses later ones; an embedder sharing the worker carries on', async () => {
    const own = await createUseLiteEmbedder({ batchSize: 8 });
    const pending = failure(own.embed(texts(64, 'closing')), 'TOOL_CANCELLED');
    const neighbour = embedder.embed(texts(40, 'neighbour'));
    await own.close();
    await pending;
    expect(await neighbour).toHaveLength(40);
    const after = await failure(own.embed(['x']), 'INTERNAL');
    expect(after.message).toMatch(/closed; create a new embedder/);
    await own.close(); // idempotent
    expect(await embedder.embed(['still here'])).toHaveLength(1);
  });

  it('shares one worker thread among the embedders of a process, which ends with the last of them', async () => {
    // In a process of its own: in this one, test/setup/hold-use-lite.ts holds the worker for the run.
    const script = path.join(REPO_ROOT, 'test/fixtures/embed/use-lite-lifecycle.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
    const seen = JSON.parse(stdout) as Record<string, number>;
    expect(seen['withOne']).toBeGreaterThan(seen['before']!);
    expect(seen['withTwo']).toBeLessThanOrEqual(seen['withOne']!);
    expect(seen['afterFirstClose']).toBeLessThanOrEqual(seen['withOne']!);
    expect(seen['secondStillEmbeds']).toBe(1);
    expect(seen['afterLastClose']).toBeLessThan(seen['withOne']!);
    expect(seen['thirdEmbeds']).toBe(1);
  });

  it('runs in-process when asked, yielding between batches, with the same vectors as the worker', async () => {
    const local = await createUseLiteEmbedder({ worker: false, batchSize: 4 });
    try {
      let turns = 0;
      let done = false;
      const tick = () => {
        if (done) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      const mine = await local.embed(texts(12, 'local'));
      done = true;
      expect(mine).toHaveLength(12);
      // Three batches of 4, with a turn of the event loop after each.
      expect(turns).toBeGreaterThanOrEqual(3);
      const theirs = await embedder.embed(texts(12, 'local'));
      mine.forEach((v, i) => expect(dot(v, theirs[i]!)).toBeCloseTo(1, 4));
    } finally {
      await local.close();
    }
  });
});
