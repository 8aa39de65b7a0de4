import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_PREFETCH } from '../../src/prefetch/prefetch-config.js';
import { openSnapshotResolver } from '../../src/prefetch/snapshot-resolver.js';
import { loadTransitionModel } from '../../src/prefetch/transition-model.js';
import { PREFETCH_EMBEDDERS, type PrefetchEmbedder } from '../../src/prefetch/types.js';
import { peakRssMb, percentile, round } from '../stats.js';
import { openCatalogWorld, openProjectWorld, type BenchWorld } from './bench-world.js';
import { createPrefetchRig, plainPipeline, prefetchPipeline } from './prefetch-pipeline.js';
import { byGroup, counterDelta, differences, goalLines, printTable, type PairedTrace } from './prefetch-report.js';
import { replayTrace } from './replay-trace.js';
import { readTraces, type Trace } from './trace-format.js';

const USAGE =
  'npm run bench -- prefetch --traces FILE [--out FILE] [--limit N] [--tool-ms MS] [--speed X] [--catalog FILE] [--project DIR] [--index DIR] [--transitions FILE] [--min-cosine X] [--prefetch-embedder static|resolver] [--verbose]';
const DEFAULT_SEAL_CATALOG = '../shared/datasets/seal-tools/catalog.jsonl';

/**
 * `npm run bench -- prefetch`: replays agent traces (bench/traces/README.md) through the agent
 * loop with prefetch on and off in one process over one index, alternating which goes first per
 * trace, and reports hit rate, intent-to-result latency, turn time and wasted work.
 */
export async function runPrefetchBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      traces: { type: 'string' },
      out: { type: 'string' },
      limit: { type: 'string' },
      'tool-ms': { type: 'string' },
      speed: { type: 'string' },
      catalog: { type: 'string' },
      project: { type: 'string' },
      index: { type: 'string' },
      transitions: { type: 'string' },
      'min-cosine': { type: 'string' },
      'prefetch-embedder': { type: 'string' },
      verbose: { type: 'boolean' },
    },
    strict: true,
  });
  if (!values.traces) throw new Error(`--traces is required; usage: ${USAGE}`);
  const limit = values.limit === undefined ? undefined : number('--limit', values.limit, 1, Number.MAX_SAFE_INTEGER, true);
  const toolMs = number('--tool-ms', values['tool-ms'] ?? '60', 0, 600_000, false);
  const speed = number('--speed', values.speed ?? '1', 0.01, 1000, false);
  const minCosine = values['min-cosine'] === undefined ? undefined : number('--min-cosine', values['min-cosine'], 0.5, 1, false);
  const prefetchEmbedder = values['prefetch-embedder'] ?? DEFAULT_PREFETCH.embedder;
  if (!isPrefetchEmbedder(prefetchEmbedder)) throw new Error(`--prefetch-embedder ${prefetchEmbedder}: write ${PREFETCH_EMBEDDERS.join(' or ')}; usage: ${USAGE}`);
  const traces = await readTraces(values.traces, limit === undefined ? {} : { limit });
  if (traces.length === 0) throw new Error(`${values.traces} holds no traces; see bench/traces/README.md`);
  const transitions = values.transitions ? await loadTransitionModel(values.transitions) : undefined;
  if (values.transitions && !transitions) throw new Error(`--transitions ${values.transitions}: no such file; train one with \`kiwi predictor train\` or leave the flag out`);

  const log = (m: string) => console.error(m);
  const world = await openWorld(traces, values.traces, { toolMs, catalog: values.catalog, project: values.project, index: values.index, log });
  let closeSnapshots = async (): Promise<void> => undefined;
  try {
    console.error(`${world.catalog}: ${world.toolCount} tools, index ${(world.indexBuildMs / 1000).toFixed(1)} s (${world.embedderId}); ${traces.length} traces, tool ${toolMs} ms, speed ${speed}`);
    const snapshots = await openSnapshotResolver({
      embedder: prefetchEmbedder,
      resolver: world.resolvers.on,
      resolverEmbedderId: world.embedderId,
      tools: world.resolvable,
      settings: world.settings,
    });
    closeSnapshots = snapshots.close;
    console.error(`prefetch snapshots searched with ${snapshots.embedderId}${snapshots.sharesResolverIndex ? ' (the resolver\'s index)' : `, an index of their own built in ${snapshots.buildMs.toFixed(0)} ms`}`);
    await warmUp(world, traces);
    const config = { embedder: prefetchEmbedder, ...(minCosine === undefined ? {} : { minCosine }) };
    const rig = createPrefetchRig(world, { ...(transitions ? { transitions } : {}), config, snapshots, log });
    const cpuMs = { on: 0, off: 0 };
    const cpu = async <T>(side: 'on' | 'off', run: () => Promise<T>): Promise<T> => {
      const before = process.cpuUsage();
      try {
        return await run();
      } finally {
        const used = process.cpuUsage(before);
        cpuMs[side] += (used.user + used.system) / 1000;
      }
    };
    const pairs: PairedTrace[] = [];
    const t0 = performance.now();
    for (const [i, trace] of traces.entries()) {
      const onFirst = i % 2 === 0;
      const runOn = async () => {
        const before = rig.counters.snapshot();
        const { pipeline, finish } = prefetchPipeline(world, rig, { log });
        const replay = await replayTrace(trace, pipeline, { session: world.session, speed });
        await finish();
        return { replay, counters: counterDelta(rig.counters.snapshot(), before) };
      };
      const runOff = () => replayTrace(trace, plainPipeline(world), { session: world.session, speed });
      let on: Awaited<ReturnType<typeof runOn>>;
      let off: Awaited<ReturnType<typeof runOff>>;
      if (onFirst) {
        on = await cpu('on', runOn);
        off = await cpu('off', runOff);
      } else {
        off = await cpu('off', runOff);
        on = await cpu('on', runOn);
      }
      pairs.push({ on: on.replay, off, counters: on.counters, onFirst });
      if (values.verbose) printPair(pairs.at(-1) as PairedTrace);
      progress(i + 1, traces.length, t0);
    }

    const groups = byGroup(pairs);
    const all = groups['all'] as NonNullable<(typeof groups)['all']>;
    const totals = rig.counters.snapshot();
    const diffs = differences(pairs);
    const resultDiffs = differences(pairs, 'result');
    const report = {
      bench: 'prefetch',
      traces: values.traces,
      intents: all.intents,
      hit_rate: all.hit_rate ?? 0,
      wasted_prefetches: all.wasted_prefetches,
      intent_to_result_ms: all.intent_to_result_ms,
      turn_ms: all.turn_ms,
      latency_reduction: all.latency_reduction ?? 0,
      trace_count: traces.length,
      catalog: world.catalog,
      tools: world.toolCount,
      embedder: world.embedderId,
      tool_ms: toolMs,
      speed,
      transitions: values.transitions ?? null,
      prefetch_config: rig.config,
      index_build_ms: round(world.indexBuildMs, 0),
      peak_rss_mb: peakRssMb(),
      snapshot_embedder: snapshots.embedderId,
      snapshot_index_build_ms: round(snapshots.buildMs, 0),
      // The whole process, tool server and index threads' callbacks included: a comparison between runs, not an absolute cost.
      cpu_ms: { on: round(cpuMs.on, 0), off: round(cpuMs.off, 0) },
      predictor_ms_per_snapshot: { p50: round(percentile(rig.predictorMs, 50), 1), p95: round(percentile(rig.predictorMs, 95), 1), n: rig.predictorMs.length },
      speculative: all.speculative,
      answers_differed: diffs.length,
      differences: diffs.slice(0, 20),
      results_differed: resultDiffs.length,
      result_differences: resultDiffs.slice(0, 20),
      counters: totals,
      groups,
    };
    printTable(groups);
    console.log(`predictor: ${report.predictor_ms_per_snapshot.p50} ms per snapshot p50 (p95 ${report.predictor_ms_per_snapshot.p95}, ${totals.snapshots} snapshots, ${totals.prefetches} prefetches, ${totals.dropped} dropped)`);
    console.log(`CPU time of this process: ${(cpuMs.on / 1000).toFixed(1)} s with prefetch on, ${(cpuMs.off / 1000).toFixed(1)} s off (snapshots searched with ${snapshots.embedderId})`);
    console.log(`speculative calls: ${totals.speculativeStarted} started, ${totals.speculativeUsed} used, ${totals.speculativeDiscarded} discarded; wasted prefetches ${totals.wasted}`);
    console.log(`answers (call and outcome) that differed between prefetch on and off: ${diffs.length}${diffs.length > 0 ? ' (MUST be 0; see `differences` in --out or run with --verbose)' : ''}`);
    console.log(`result texts that differed: ${resultDiffs.length}${resultDiffs.length > 0 ? ' (the same call gave another output in the other run: see `result_differences`)' : ''}`);
    console.log(`hit = an intent served by prefetched work (its search made ahead, or a speculative result); searches reused: ${all.search_hit_rate ?? '-'} of intents (min_cosine ${rig.config.minCosine})`);
    for (const line of goalLines(all)) console.log(line);
    if (values.out) {
      await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
      console.error(`wrote ${values.out}`);
    }
  } finally {
    await closeSnapshots();
    await world.close();
  }
}

interface WorldFlags {
  toolMs: number;
  catalog: string | undefined;
  project: string | undefined;
  index: string | undefined;
  log: (m: string) => void;
}

/** One catalog per run (one index): "seal-tools", "demo", or a catalog path relative to the traces file. */
async function openWorld(traces: readonly Trace[], tracesFile: string, flags: WorldFlags): Promise<BenchWorld> {
  const catalogs = new Set(traces.map((t) => t.catalog));
  if (catalogs.size > 1) throw new Error(`${tracesFile}: traces name ${catalogs.size} catalogs (${[...catalogs].join(', ')}); a run uses one index, so put each catalog's traces in a file of their own`);
  const name = traces[0]?.catalog as string;
  const common = { ...(flags.index ? { indexDir: flags.index } : {}), log: flags.log, onIndexProgress: indexProgress() };
  if (name === 'demo') {
    const dir = flags.project ?? '.';
    if (!existsSync(path.join(dir, '.ai'))) throw new Error(`demo traces need the demo project: ${path.resolve(dir)} has no .ai/ folder; run from the repository root or pass --project DIR`);
    return openProjectWorld(dir, common);
  }
  const file = flags.catalog ?? (name === 'seal-tools' ? DEFAULT_SEAL_CATALOG : path.resolve(path.dirname(tracesFile), name));
  if (!existsSync(file)) throw new Error(`catalog ${file} (for traces of catalog "${name}") does not exist; pass --catalog FILE (a FORMAT.md catalog)`);
  return openCatalogWorld(file, { ...common, toolMs: flags.toolMs });
}

/** Not timed: loads the model, warms both resolvers and the HTTP connection on altered text (no measured intent is cached). */
async function warmUp(world: BenchWorld, traces: readonly Trace[]): Promise<void> {
  const intents = traces.flatMap((t) => t.turns.flatMap((turn) => turn.intents.map((i) => i.text))).slice(0, 4);
  for (const intent of intents) {
    for (const resolver of [world.resolvers.on, world.resolvers.off]) {
      const r = await resolver.resolve(`warm-up: ${intent}`);
      if (r.status === 'resolved' && world.tools.get(r.call.tool)?.mutatesState === false) {
        await world.proxy.call({ target: { tool: r.call.tool, args: r.call.arguments }, caller: { session: `${world.session}-warm-up`, client: `${world.session}-warm-up`, source: 'cli' } });
      }
    }
  }
}

function printPair(p: PairedTrace): void {
  const c = p.counters;
  console.error(`${p.on.id} [${p.on.group}] hits ${c.hits}/${p.on.intents.length}, spec ${c.speculativeUsed}/${c.speculativeStarted}, wasted ${c.wasted}`);
  p.on.intents.forEach((i, k) => {
    const off = p.off.intents[k];
    console.error(`  on ${i.latencyMs.toFixed(1)} ms / off ${off?.latencyMs.toFixed(1) ?? '-'} ms  ${i.text.slice(0, 90)}`);
    if (off && off.answer !== i.answer) console.error(`    DIFFERS\n      on:  ${i.answer.slice(0, 200)}\n      off: ${off.answer.slice(0, 200)}`);
  });
}

function progress(done: number, total: number, t0: number): void {
  const tty = process.stderr.isTTY;
  if (!tty && done % 10 !== 0 && done !== total) return;
  const s = ((performance.now() - t0) / 1000).toFixed(0);
  process.stderr.write(`${tty ? '\r' : ''}replaying: ${done}/${total} traces (${s} s)${done === total || !tty ? '\n' : ''}`);
}

function indexProgress(): (done: number, total: number) => void {
  let last = 0;
  return (done, total) => {
    const now = performance.now();
    if (done !== total && now - last < 10_000) return;
    last = now;
    console.error(`embedding tools: ${done}/${total}`);
  };
}

function isPrefetchEmbedder(value: string): value is PrefetchEmbedder {
  return (PREFETCH_EMBEDDERS as readonly string[]).includes(value);
}

function number(flag: string, raw: string, min: number, max: number, integer: boolean): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new Error(`${flag} ${raw}: write ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}; usage: ${USAGE}`);
  }
  return n;
}
