import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { peakRssMb, round } from '../stats.js';
import { readCases, spreadSample } from '../../src/datasets/case-file.js';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import { groupResults, latency, type CaseResult } from './metrics.js';
import { printResolveTable } from './resolve-table.js';
import { benchSettings, catalogSchemas, fallbackSummary, openCatalogResolver, parseCount, parseFallback, parseSettings, resolveCases, warmUp } from './resolve-catalog.js';

const USAGE = 'npm run bench -- resolve --catalog FILE --cases FILE [--cases FILE…] [--out FILE] [--index DIR] [--limit N] [--embedder use-lite|static] [--set key=value…] [--fallback-url URL --fallback-model MODEL] [--verbose]';

/** `npm run bench -- resolve`: resolution accuracy and latency on any catalog + cases (shared/bench/FORMAT.md). */
export async function runResolveBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { catalog: { type: 'string' }, cases: { type: 'string', multiple: true }, out: { type: 'string' }, index: { type: 'string' }, limit: { type: 'string' }, set: { type: 'string', multiple: true }, embedder: { type: 'string' }, verbose: { type: 'boolean' }, 'fallback-url': { type: 'string' }, 'fallback-model': { type: 'string' } },
    strict: true,
  });
  if (!values.catalog || !values.cases?.length) throw new Error(`--catalog and --cases are required; usage: ${USAGE}`);
  const settings = parseSettings(values.set ?? []);
  const limit = parseCount('limit', values.limit);
  const fallback = parseFallback(values['fallback-url'], values['fallback-model']);

  const catalog = await importCatalog(values.catalog);
  if (catalog.skipped.length) console.error(`catalog: skipped ${catalog.skipped.length} lines, e.g. ${catalog.skipped[0]}`);
  let cases = await readCases(values.cases);
  if (limit !== undefined) cases = spreadSample(cases, limit);
  console.error(`catalog ${values.catalog}: ${catalog.tools.length} tools; cases: ${cases.length}`);

  const opened = await openCatalogResolver({ catalog, settings, indexDir: values.index, embedder: values.embedder, fallback });
  try {
    await warmUp(opened.resolver, cases);
    const results = await resolveCases(opened.resolver, catalog, cases, { label: 'resolving', ...(values.verbose ? { onResult: printCase } : {}) });
    const groups = groupResults(results, catalogSchemas(catalog));
    const report = {
      bench: 'resolve',
      catalog: values.catalog,
      cases: values.cases.join(','),
      tools: catalog.tools.length,
      index_build_ms: round(opened.indexBuildMs, 0),
      index_reused: values.index !== undefined,
      peak_rss_mb: peakRssMb(),
      embedder: opened.embedderId,
      settings: benchSettings(settings),
      fallback: fallback === undefined ? null : { ...fallback, ...fallbackSummary(results) },
      groups,
    };
    printResolveTable(groups);
    const p50 = (pick: (r: CaseResult) => number) => latency(results.map(pick)).p50;
    console.log(`where the time went (p50 ms): embed ${p50((r) => r.resolution.timings.embedMs)}, search ${p50((r) => r.resolution.timings.searchMs)}, arguments ${p50((r) => r.resolution.timings.fillMs)}`);
    if (report.fallback) console.log(`fallback model ${report.fallback.model}: asked ${report.fallback.asked} times (${Object.entries(report.fallback.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')}), ${report.fallback.seconds} s, ${report.fallback.input_tokens} tokens in, ${report.fallback.output_tokens} out`);
    console.log(`tools ${report.tools}, index build ${report.index_build_ms} ms, peak RSS ${report.peak_rss_mb} MB, embedder ${report.embedder}`);
    if (values.out) {
      await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
      console.error(`wrote ${values.out}`);
    }
  } finally {
    await opened.close();
  }
}

function printCase(r: CaseResult): void {
  const res = r.resolution;
  const gold = r.case.calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(' + ') || '(no fit)';
  const got = res.status === 'resolved' ? `${res.call.tool}(${JSON.stringify(res.call.arguments)})` : `UNRESOLVED [${res.candidates[0]?.tool ?? '-'}] ${res.reason}`;
  console.error(`${r.case.id}: ${r.case.intent}\n  gold ${gold}\n  got  ${got} conf=${res.confidence.toFixed(2)}`);
}
