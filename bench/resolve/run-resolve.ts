import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openResolverRuntime } from '../../src/resolver-runtime.js';
import { DEFAULT_RESOLVER_SETTINGS, type ResolverSettings } from '../../src/resolver/resolver.js';
import type { Resolution } from '../../src/resolver/types.js';
import { peakRssMb, round } from '../stats.js';
import { importCatalog } from './catalog.js';
import { readCases } from './cases.js';
import { groupResults, latency, type CaseResult, type GroupMetrics } from './metrics.js';
import { createProgress } from '../progress.js';

const USAGE = 'npm run bench -- resolve --catalog FILE --cases FILE [--cases FILE…] [--out FILE] [--index DIR] [--limit N] [--set key=value…] [--verbose]';

/** `npm run bench -- resolve`: resolution accuracy and latency on any catalog + cases (shared/bench/FORMAT.md). */
export async function runResolveBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { catalog: { type: 'string' }, cases: { type: 'string', multiple: true }, out: { type: 'string' }, index: { type: 'string' }, limit: { type: 'string' }, set: { type: 'string', multiple: true }, verbose: { type: 'boolean' } },
    strict: true,
  });
  if (!values.catalog || !values.cases?.length) throw new Error(`--catalog and --cases are required; usage: ${USAGE}`);
  const settings = parseSettings(values.set ?? []);

  const catalog = await importCatalog(values.catalog);
  if (catalog.skipped.length) console.error(`catalog: skipped ${catalog.skipped.length} lines, e.g. ${catalog.skipped[0]}`);
  let cases = await readCases(values.cases);
  if (values.limit) cases = cases.slice(0, Number(values.limit));
  console.error(`catalog ${values.catalog}: ${catalog.tools.length} tools; cases: ${cases.length}`);

  // --index keeps the LanceDB table between runs (sync is incremental), for tuning; by default it is temporary.
  const dir = values.index ?? (await mkdtemp(path.join(tmpdir(), 'kiwi-bench-index-')));
  const resolution = await openResolverRuntime({ tools: catalog.tools, indexDir: dir, settings, log: (m) => console.error(m) });
  try {
    const t0 = performance.now();
    await resolution.sync({ onProgress: createProgress('').counter('embedding tools') });
    const indexBuildMs = performance.now() - t0;
    console.error(`index built in ${(indexBuildMs / 1000).toFixed(1)} s (${resolution.embedderId})`);

    // Warm-up (not timed) on altered text, so that no measured intent is already in the query-vector cache.
    for (const c of cases.slice(0, 5)) await resolution.resolver.resolve(`warm-up: ${c.intent}`);
    const results: CaseResult[] = [];
    const tick = createProgress('').counter('resolving');
    for (const [i, c] of cases.entries()) {
      const start = performance.now();
      const r = await resolution.resolver.resolve(c.intent);
      const ms = performance.now() - start;
      results.push({ case: c, resolution: catalogNames(r, catalog.names), ms });
      tick(i + 1, cases.length);
      if (values.verbose) printCase(results.at(-1) as CaseResult);
    }
    const schemas = new Map(catalog.tools.map((t) => [catalog.names.get(t.id) ?? t.id, t.parameters.map((p) => p.name)]));
    const groups = groupResults(results, schemas);
    const report = {
      bench: 'resolve',
      catalog: values.catalog,
      cases: values.cases.join(','),
      tools: catalog.tools.length,
      index_build_ms: round(indexBuildMs, 0),
      index_reused: values.index !== undefined,
      peak_rss_mb: peakRssMb(),
      embedder: resolution.embedderId,
      settings: { ...DEFAULT_RESOLVER_SETTINGS, ...settings },
      groups,
    };
    printTable(groups);
    const p50 = (pick: (r: CaseResult) => number) => latency(results.map(pick)).p50;
    console.log(`where the time went (p50 ms): embed ${p50((r) => r.resolution.timings.embedMs)}, search ${p50((r) => r.resolution.timings.searchMs)}, arguments ${p50((r) => r.resolution.timings.fillMs)}`);
    console.log(`tools ${report.tools}, index build ${report.index_build_ms} ms, peak RSS ${report.peak_rss_mb} MB, embedder ${report.embedder}`);
    if (values.out) {
      await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
      console.error(`wrote ${values.out}`);
    }
  } finally {
    await resolution.close();
    if (!values.index) await rm(dir, { recursive: true, force: true });
  }
}

/** Puts the catalog's own spelling back on respelt tool ids, so scoring compares like with like. */
function catalogNames(r: Resolution, names: Map<string, string>): Resolution {
  if (names.size === 0) return r;
  const name = (id: string) => names.get(id) ?? id;
  const candidates = r.candidates.map((c) => ({ ...c, tool: name(c.tool) }));
  return r.status === 'resolved' ? { ...r, candidates, call: { ...r.call, tool: name(r.call.tool) } } : { ...r, candidates };
}

function parseSettings(pairs: string[]): Partial<ResolverSettings> {
  const out: Partial<ResolverSettings> = {};
  for (const pair of pairs) {
    const [key, raw] = pair.split('=');
    if (!key || raw === undefined || !(key in DEFAULT_RESOLVER_SETTINGS) || !Number.isFinite(Number(raw))) {
      throw new Error(`--set ${pair}: write key=number with key one of ${Object.keys(DEFAULT_RESOLVER_SETTINGS).join(', ')}`);
    }
    out[key as keyof ResolverSettings] = Number(raw);
  }
  return out;
}

function printTable(groups: Record<string, GroupMetrics>): void {
  const f = (x: number | null) => (x === null ? '   -  ' : x.toFixed(3).padStart(6));
  console.log('group                              n  top1  rec@5 rec@10   mrr   call  resolv abst  falseR  p50ms  p95ms  p99ms');
  for (const [name, g] of Object.entries(groups)) {
    console.log(
      `${name.slice(0, 30).padEnd(30)} ${String(g.n).padStart(5)} ${f(g.tool_top1)} ${f(g.recall_at_5)} ${f(g.recall_at_10)} ${f(g.mrr)} ${f(g.call_accuracy)} ${f(g.resolved_rate)} ${f(g.abstention_accuracy)} ${f(g.false_resolution_rate)} ${g.latency_ms.p50.toFixed(1).padStart(6)} ${g.latency_ms.p95.toFixed(1).padStart(6)} ${g.latency_ms.p99.toFixed(1).padStart(6)}`,
    );
  }
}

function printCase(r: CaseResult): void {
  const res = r.resolution;
  const gold = r.case.calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(' + ') || '(no fit)';
  const got = res.status === 'resolved' ? `${res.call.tool}(${JSON.stringify(res.call.arguments)})` : `UNRESOLVED [${res.candidates[0]?.tool ?? '-'}] ${res.reason}`;
  console.error(`${r.case.id}: ${r.case.intent}\n  gold ${gold}\n  got  ${got} conf=${res.confidence.toFixed(2)}`);
}
