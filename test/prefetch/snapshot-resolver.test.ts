import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embed/embedder.js';
import { createStaticEmbedder } from '../../src/embed/static-embedder.js';
import { dot } from '../../src/embed/vector-math.js';
import { createCounters } from '../../src/prefetch/counters.js';
import { createPrefetchCache } from '../../src/prefetch/prefetch-cache.js';
import { createPrefetchingResolver, sameAnswer } from '../../src/prefetch/prefetching-resolver.js';
import { openSnapshotResolver, type SnapshotResolver } from '../../src/prefetch/snapshot-resolver.js';
import { resolvableTools } from '../../src/resolver/resolver.js';
import { toolEmbeddingText } from '../../src/registry/tool-document.js';
import { expectKiwiError } from '../fixtures/prefetch/expect-kiwi.js';
import { openWorld, type World } from '../fixtures/prefetch/prefetch-world.js';
import { wirePrefetch } from '../fixtures/prefetch/wire-prefetch.js';

/** The shipped static model, recording what it was asked to embed. */
interface RecordingEmbedder extends Embedder {
  embedded: string[];
}

async function recordingStatic(): Promise<RecordingEmbedder> {
  const inner = await createStaticEmbedder();
  const embedded: string[] = [];
  return {
    id: inner.id,
    dimensions: inner.dimensions,
    embedded,
    embed(texts, signal) {
      embedded.push(...texts);
      return inner.embed(texts, signal);
    },
    close: () => inner.close(),
  };
}

let world: World;
let staticEmbedder: RecordingEmbedder;
let snapshots: SnapshotResolver;

beforeAll(async () => {
  world = await openWorld();
  staticEmbedder = await recordingStatic();
  snapshots = await openSnapshotResolver({
    embedder: 'static',
    resolver: world.resolver,
    resolverEmbedderId: world.embedder.id,
    tools: resolvableTools(world.tools.values()),
    settings: { threshold: 0.3 },
    openStatic: async () => staticEmbedder,
  });
});

afterEach(async () => {
  world.server.release();
  await world.settle();
});

afterAll(async () => {
  await snapshots?.close();
  await world?.close();
});

const SESSION = 'snapshot-test';

/** Prefetch wired as the gateway wires it with `prefetch.embedder: static`. */
function setup() {
  const { resolver: prefetching, ...rest } = wirePrefetch(world, { session: SESSION, predictorResolver: snapshots.resolver, resolverOptions: { reuseSearches: snapshots.sharesResolverIndex } });
  return { prefetching, ...rest };
}

describe('prefetch snapshots on the static embedder', () => {
  it('builds its own index of the tools with the static model, beside the resolver\'s', () => {
    expect(snapshots.sharesResolverIndex).toBe(false);
    expect(snapshots.embedderId).toBe(staticEmbedder.id);
    expect(snapshots.embedderId).not.toBe(world.embedder.id);
    const tools = [...resolvableTools(world.tools.values()).values()];
    expect(staticEmbedder.embedded.slice(0, tools.length)).toEqual(tools.map(toolEmbeddingText));
  });

  it('searches a snapshot with the static model only: the resolver\'s embedder and index are not touched', async () => {
    const { prefetch } = setup();
    const query = 'Next I will get the weather forecast for the city of "Oslo".';
    const embeds = world.embedder.calls;
    const searches = world.search.calls;
    const entry = await prefetch(query);
    expect(world.embedder.calls).toBe(embeds);
    expect(world.search.calls).toBe(searches);
    expect(staticEmbedder.embedded.at(-1)).toBe(query);
    // The vector side is the static model's cosine of the snapshot and the tool's text.
    const [q, doc] = await staticEmbedder.embed([query, toolEmbeddingText(world.tools.get('get_weather_forecast')!)]);
    const candidate = entry!.retrieval.candidates.find((c) => c.tool === 'get_weather_forecast');
    expect(candidate?.vectorScore).toBeCloseTo(dot(q!, doc!), 5);
    expect(entry!.retrieval.candidates[0]?.tool).toBe('get_weather_forecast');
  });

  it('an intent whose exact text was prefetched still resolves with the resolver\'s embedder and index, and answers as without prefetch', async () => {
    const { counters, prefetching, prefetch } = setup();
    const intent = 'look up the web domain of the company "Acme Corp"';
    const entry = await prefetch(intent);
    expect(entry?.retrieval.candidates.length).toBeGreaterThan(0);
    const embedded = world.embedder.embedded.length;
    const searches = world.search.calls;
    const offered: unknown[] = [];
    const r = await prefetching.resolve(intent, { context: '', early: (call) => offered.push(call) });
    // Embedded and searched once, by the configured resolver: the static ranking answered nothing.
    expect(world.embedder.embedded.slice(embedded)).toEqual([intent]);
    expect(world.search.calls).toBe(searches + 1);
    expect(r.notes.join(' ')).not.toMatch(/prefetch: reused/);
    expect(counters).toMatchObject({ hits: 0, misses: 1 });
    expect(sameAnswer(r, await world.resolver.resolve(intent))).toBe(true);
    // The static search still gave the early call to run ahead, with the intent's own arguments.
    expect(offered).toEqual([{ tool: 'lookup_company_domain', arguments: { company: 'Acme Corp' } }]);
  });

  it('refuses a minCosine below 1 with a separate index: a paraphrase\'s static ranking would answer the intent', () => {
    const counters = createCounters();
    expectKiwiError(
      () => createPrefetchingResolver({ resolver: world.resolver, cache: createPrefetchCache({ counters }), counters, tools: world.tools, minCosine: 0.9, reuseSearches: false }),
      'INVALID_INPUT',
      /minCosine 0\.9 .*another index than the resolver's; use the resolver's embedder for prefetch, or minCosine 1/,
    );
  });

  it('with embedder "resolver", or a resolver that is already static, shares the resolver and its index', async () => {
    const base = { resolver: world.resolver, tools: resolvableTools(world.tools.values()), openStatic: () => Promise.reject(new Error('must not be opened')) };
    const shared = await openSnapshotResolver({ ...base, embedder: 'resolver', resolverEmbedderId: world.embedder.id });
    expect(shared).toMatchObject({ resolver: world.resolver, sharesResolverIndex: true, embedderId: world.embedder.id, buildMs: 0 });
    const already = await openSnapshotResolver({ ...base, embedder: 'static', resolverEmbedderId: staticEmbedder.id });
    expect(already).toMatchObject({ resolver: world.resolver, sharesResolverIndex: true });
  });
});
