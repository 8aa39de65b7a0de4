/**
 * One catalog size of the scale bench, in its own process so that peak memory is this size's
 * alone and a size that dies does not take the run with it. Started by run-scale.ts:
 *
 *   node --import tsx bench/scale/one-size.ts --size N --catalog FILE --cases FILE… --warmup-cases FILE --vectors FILE
 *
 * Reports phases and the result over the IPC channel (or prints the result when run by hand).
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createUseLiteEmbedder } from '../../src/embed/use-lite-embedder.js';
import { createResolver, resolvableTools } from '../../src/resolver/resolver.js';
import { openToolIndex, type ToolIndex } from '../../src/store/tool-index.js';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import { latency } from '../resolve/metrics.js';
import { peakRssMb, round } from '../stats.js';
import { createDerivedEmbedder } from './derived-embedder.js';
import { scaleIntents } from './intents.js';
import { createProgress } from '../progress.js';
import type { ChildMessage, SizeResult } from './size-result.js';
import { syntheticTools } from './synthetic-catalog.js';
import { readTemplateVectors } from './template-vectors.js';
import { DEFAULT_ANN_THRESHOLD } from '../../src/store/tool-index.js';

const started = performance.now();
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    size: { type: 'string' },
    catalog: { type: 'string' },
    cases: { type: 'string', multiple: true },
    'warmup-cases': { type: 'string', multiple: true },
    vectors: { type: 'string' },
    'ann-threshold': { type: 'string', default: String(DEFAULT_ANN_THRESHOLD) },
    intents: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '10' },
    'max-intent-chars': { type: 'string', default: '200' },
    sigma: { type: 'string', default: '0.02' },
  },
  strict: true,
});

function int(name: keyof typeof values, min: number): number {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be a whole number ≥ ${min}, not ${String(values[name])}`);
  return value;
}

function send(message: ChildMessage): Promise<void> {
  if (!process.send) {
    if (message.type === 'result') console.log(JSON.stringify(message.result, null, 2));
    return Promise.resolve();
  }
  return new Promise((resolve) => process.send?.(message, undefined, {}, () => resolve()));
}

async function diskMb(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { recursive: true })) {
    const info = await stat(path.join(dir, entry));
    if (info.isFile()) bytes += info.size;
  }
  return round(bytes / 1024 / 1024, 1);
}

const rssMb = () => round(process.memoryUsage().rss / 1024 / 1024, 1);

async function main(): Promise<SizeResult> {
  const size = int('size', 1);
  const annThreshold = int('ann-threshold', 1);
  const sigma = Number(values.sigma);
  if (!values.catalog || !values.cases?.length || !values['warmup-cases']?.length || !values.vectors) {
    throw new Error('--catalog, --cases, --warmup-cases and --vectors are required (run-scale.ts passes them)');
  }
  const progress = createProgress(`[${size} tools] `);
  const phase = (name: string) => {
    progress.line(name);
    return send({ type: 'phase', phase: name });
  };
  const notes: string[] = [];

  await phase('building the synthetic catalog');
  const catalog = await importCatalog(values.catalog);
  const templates = await readTemplateVectors(values.vectors, catalog.tools.length);
  if (!templates) throw new Error(`template vectors ${values.vectors} are missing or stale; run the bench through run-scale.ts, which builds them`);
  const t0 = performance.now();
  const tools = syntheticTools(catalog.tools, size);
  const catalogMs = performance.now() - t0;
  const intents = await scaleIntents(values.cases, values['warmup-cases'], int('intents', 1), int('warmup', 1), int('max-intent-chars', 1));

  await phase('loading USE-lite');
  const model = await createUseLiteEmbedder();
  const dir = await mkdtemp(path.join(tmpdir(), `kiwi-scale-${size}-`));
  let index: ToolIndex | undefined;
  try {
    let annFailed = false;
    const log = (message: string) => {
      if (/ANN vector index .*failed/.test(message)) annFailed = true;
      if (!message.startsWith('no tool index at')) progress.line(message);
    };
    const derived = createDerivedEmbedder({ tools, templates, sigma });

    // The table first, with the ANN index held back (threshold out of reach), so that the
    // ANN build can be timed on its own by the next sync, which finds nothing else to do.
    await phase('building the table (derived vectors, writes, compaction, full-text index)');
    let t = performance.now();
    index = await openToolIndex({ dir, embedder: derived, annThreshold: Number.MAX_SAFE_INTEGER, log });
    const first = await index.sync(tools, { onProgress: progress.counter('vectors derived and written') });
    const tableMs = performance.now() - t;
    if (first.added !== size) notes.push(`the first sync added ${first.added} of ${size} tools`);
    await index.close();
    const deriveMs = derived.deriveMs();
    await derived.close();

    const ann = size >= annThreshold;
    if (ann) await phase(`building the ANN (HNSW-SQ) index over ${size} vectors`);
    index = await openToolIndex({ dir, embedder: derived, annThreshold, log });
    const reopened = index;
    t = performance.now();
    await progress.during(ann ? 'building the ANN index' : 'no-op sync', () => reopened.sync(tools));
    const secondMs = performance.now() - t;
    let noopMs = secondMs;
    if (ann) {
      t = performance.now();
      await index.sync(tools);
      noopMs = performance.now() - t;
    }
    if (ann && annFailed) notes.push('the ANN index build failed; vector search stayed exact');
    const rssAfterBuild = rssMb();

    await phase(`resolving ${intents.measured.length} intents (after ${intents.warmup.length} warm-up intents)`);
    const resolver = createResolver({ tools: resolvableTools(tools), search: index, embedder: model });
    t = performance.now();
    await resolver.resolve(intents.warmup[0] as string);
    const firstQueryMs = performance.now() - t;
    for (const text of intents.warmup.slice(1)) await resolver.resolve(text);
    const totals: number[] = [];
    const search: number[] = [];
    const embed: number[] = [];
    const fill: number[] = [];
    let familyHits = 0;
    let resolved = 0;
    const tick = progress.counter('intents resolved');
    for (const [i, c] of intents.measured.entries()) {
      const start = performance.now();
      const r = await resolver.resolve(c.intent);
      totals.push(performance.now() - start);
      search.push(r.timings.searchMs);
      embed.push(r.timings.embedMs);
      fill.push(r.timings.fillMs);
      const top = r.candidates[0]?.tool.replace(/_v\d+$/, '');
      if (top !== undefined && (catalog.names.get(top) ?? top) === c.calls[0]?.name) familyHits++;
      if (r.status === 'resolved') resolved++;
      tick(i + 1, intents.measured.length);
    }
    const rssAfterQueries = rssMb();
    await index.close();
    index = undefined;
    const disk = await diskMb(dir);
    return {
      tools: size,
      catalog_ms: round(catalogMs, 0),
      index_build_ms: round(tableMs + (ann ? secondMs : 0), 0),
      table_build_ms: round(tableMs, 0),
      derive_ms: round(deriveMs, 0),
      ann_index: ann && !annFailed,
      ann_index_build_ms: ann ? round(secondMs, 0) : null,
      noop_sync_ms: round(noopMs, 0),
      first_query_ms: round(firstQueryMs, 1),
      intents: intents.measured.length,
      latency_ms: latency(totals),
      search_ms: latency(search),
      embed_ms: latency(embed),
      fill_ms: latency(fill),
      family_top1: round(familyHits / intents.measured.length),
      resolved_rate: round(resolved / intents.measured.length),
      rss_after_build_mb: rssAfterBuild,
      rss_after_queries_mb: rssAfterQueries,
      peak_rss_mb: peakRssMb(),
      disk_mb: disk,
      wall_ms: round(performance.now() - started, 0),
      notes,
    };
  } finally {
    await index?.close();
    await model.close();
    await rm(dir, { recursive: true, force: true });
  }
}

try {
  const result = await main();
  await send({ type: 'result', result });
} catch (error) {
  console.error(`resolve-scale child: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
  process.exitCode = 1;
}
process.disconnect?.();
