import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { importCatalog } from '../../src/datasets/catalog-file.js';
import { round } from '../stats.js';
import { describeEstimate, estimateSize, type SizeEstimate } from './estimate.js';
import { createProgress } from '../progress.js';
import type { ChildMessage, SizeResult } from './size-result.js';
import { ensureTemplateVectors, templateVectorsFile } from './template-vectors.js';
import { DEFAULT_ANN_THRESHOLD } from '../../src/store/tool-index.js';

const USAGE =
  'npm run bench -- resolve-scale [--sizes 1000,10000,100000] [--out FILE] [--catalog FILE] [--cases FILE…] [--warmup-cases FILE…] [--intents 200] [--sigma 0.02] [--ann-threshold 10000] [--timeout-min 15] [--max-minutes 10] [--max-gib 16]';
const VECTORS = 'template USE-lite vectors + seeded noise (synthetic)';
/** Sizes above this run only when the estimate from the smaller ones fits the limits. */
const ESTIMATE_ABOVE = 100_000;
const DATASETS = fileURLToPath(new URL('../../../shared/datasets/seal-tools/', import.meta.url));
const CHILD = fileURLToPath(new URL('./one-size.ts', import.meta.url));

type SizeOutcome = SizeResult | { tools: number; error: string; last_phase?: string; estimate?: SizeEstimate };

/** `npm run bench -- resolve-scale`: resolution latency and memory against catalog size. */
export async function runScaleBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      sizes: { type: 'string', default: '1000,10000,100000' },
      out: { type: 'string' },
      catalog: { type: 'string', default: path.join(DATASETS, 'catalog.jsonl') },
      cases: { type: 'string', multiple: true, default: [path.join(DATASETS, 'test_out_domain.jsonl'), path.join(DATASETS, 'test_in_domain.jsonl')] },
      'warmup-cases': { type: 'string', multiple: true, default: [path.join(DATASETS, 'dev.jsonl')] },
      intents: { type: 'string', default: '200' },
      sigma: { type: 'string', default: '0.02' },
      'ann-threshold': { type: 'string', default: String(DEFAULT_ANN_THRESHOLD) },
      'timeout-min': { type: 'string', default: '15' },
      'max-minutes': { type: 'string', default: '10' },
      'max-gib': { type: 'string', default: '16' },
    },
    strict: true,
  });
  const sizes = [...new Set(values.sizes.split(',').map((s) => Number(s.trim().replace(/_/g, ''))))].sort((a, b) => a - b);
  if (sizes.length === 0 || !sizes.every((n) => Number.isInteger(n) && n >= 1)) throw new Error(`--sizes ${values.sizes}: give whole numbers ≥ 1, comma-separated; usage: ${USAGE}`);
  const number = (name: 'intents' | 'sigma' | 'ann-threshold' | 'timeout-min' | 'max-minutes' | 'max-gib') => {
    const value = Number(values[name]);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} ${values[name]}: give a positive number; usage: ${USAGE}`);
    return value;
  };
  const annThreshold = number('ann-threshold');
  const progress = createProgress('resolve-scale: ');

  const catalog = await importCatalog(values.catalog);
  if (catalog.tools.length === 0) throw new Error(`${values.catalog} has no usable tools (${catalog.skipped[0] ?? 'empty'})`);
  const vectorsFile = await templateVectorsFile(values.catalog);
  const templates = await ensureTemplateVectors(vectorsFile, catalog.tools, progress.counter('embedding the templates with USE-lite (once; cached)'));
  progress.line(
    `${catalog.tools.length} templates ${templates.cached ? 'read from' : 'embedded and cached in'} ${vectorsFile} in ${(templates.ms / 1000).toFixed(1)} s. ` +
      `Vectors of the synthetic tools: ${VECTORS}, sigma ${values.sigma}: this measures search cost against size, not accuracy.`,
  );

  const outcomes: SizeOutcome[] = [];
  for (const tools of sizes) {
    const measured = outcomes.filter((o): o is SizeResult => !('error' in o));
    let estimate: SizeEstimate | undefined;
    if (tools > ESTIMATE_ABOVE) {
      estimate = estimateSize(measured, tools, annThreshold) ?? undefined;
      const tooBig = !estimate
        ? 'no two smaller sizes were measured to estimate from'
        : estimate.total_s === null
          ? 'its ANN build time cannot be estimated'
          : estimate.total_s > number('max-minutes') * 60 || estimate.peak_rss_gb > number('max-gib')
            ? `over the limits (${values['max-minutes']} min, ${values['max-gib']} GiB)`
            : null;
      progress.line(estimate ? describeEstimate(estimate) : `no estimate for ${tools} tools`);
      if (tooBig) {
        progress.line(`not trying ${tools} tools: ${tooBig}`);
        outcomes.push({ tools, error: `not tried: ${tooBig}`, ...(estimate ? { estimate } : {}) });
        continue;
      }
    }
    const childArgs = ['--size', String(tools), '--catalog', values.catalog, '--vectors', vectorsFile, '--intents', values.intents, '--sigma', values.sigma, '--ann-threshold', values['ann-threshold']];
    for (const file of values.cases) childArgs.push('--cases', file);
    for (const file of values['warmup-cases']) childArgs.push('--warmup-cases', file);
    const outcome = await runChild(tools, childArgs, number('timeout-min') * 60_000);
    outcomes.push(estimate ? { ...outcome, estimate } : outcome);
    progress.line('error' in outcome ? `${tools} tools failed: ${outcome.error}` : `${tools} tools done in ${(outcome.wall_ms / 1000).toFixed(0)} s`);
  }

  printTable(outcomes);
  const at100k = outcomes.find((o): o is SizeResult => o.tools === 100_000 && !('error' in o));
  if (at100k) console.log(`goal p95 <= 100 ms at 100k tools: ${at100k.latency_ms.p95 <= 100 ? 'met' : 'NOT met'} (p95 ${at100k.latency_ms.p95} ms)`);
  const report = {
    bench: 'resolve-scale',
    vectors: VECTORS,
    noise_sigma: Number(values.sigma),
    catalog: values.catalog,
    templates: catalog.tools.length,
    cases: values.cases,
    warmup_cases: values['warmup-cases'],
    ann_threshold: annThreshold,
    machine: { cpus: cpus().length, memory_gb: round(totalmem() / 1024 ** 3, 1), node: process.version },
    sizes: outcomes,
  };
  if (values.out) {
    await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
    progress.line(`wrote ${values.out}`);
  }
}

/** One size in a child process: its own peak memory, and a crash or a hang costs only that size. */
function runChild(tools: number, args: string[], timeoutMs: number): Promise<SizeOutcome> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  // Headroom for the largest sizes; V8's default heap limit is ~4 GiB whatever the machine has.
  const child = spawn(process.execPath, ['--max-old-space-size=16384', '--import', tsx, CHILD, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let phase = 'starting';
  let result: SizeResult | undefined;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) => {
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'phase') phase = message.phase;
      else if (message.type === 'result') result = message.result;
    });
    const finish = (error?: string) => {
      clearTimeout(timer);
      if (result && !error) resolve(result);
      else resolve({ tools, error: error ?? 'the child exited without a result', last_phase: phase });
    };
    child.on('error', (error) => finish(`could not start the child: ${error.message}`));
    child.on('exit', (code, signal) => {
      if (timedOut) finish(`timed out after ${timeoutMs / 60_000} min`);
      else if (code !== 0 || signal) finish(`the child exited with ${signal ?? `code ${code}`}${signal === 'SIGKILL' ? ' (out of memory?)' : ''}`);
      else finish();
    });
  });
}

function printTable(outcomes: SizeOutcome[]): void {
  const n = (x: number | null | undefined, width: number, digits = 1) => (x === null || x === undefined ? '-' : x.toFixed(digits)).padStart(width);
  console.log(`vectors: ${VECTORS} — search cost against size, not accuracy`);
  console.log('  tools  build_s  ann_s |  p50_ms  p95_ms  p99_ms | search p50    p95    p99 | embed p50   p95 | rss_build_mb peak_rss_mb disk_mb | top1fam');
  for (const o of outcomes) {
    if ('error' in o) {
      console.log(`${String(o.tools).padStart(7)}  ${o.error}${o.last_phase ? ` (during: ${o.last_phase})` : ''}`);
      if (o.estimate) console.log(`         ${describeEstimate(o.estimate)}`);
      continue;
    }
    const ann = o.ann_index_build_ms === null ? null : o.ann_index_build_ms / 1000;
    console.log(
      `${String(o.tools).padStart(7)} ${n(o.index_build_ms / 1000, 8)} ${n(ann, 6)} | ${n(o.latency_ms.p50, 7)} ${n(o.latency_ms.p95, 7)} ${n(o.latency_ms.p99, 7)} | ` +
        `${n(o.search_ms.p50, 10)} ${n(o.search_ms.p95, 6)} ${n(o.search_ms.p99, 6)} | ${n(o.embed_ms.p50, 9)} ${n(o.embed_ms.p95, 5)} | ` +
        `${n(o.rss_after_build_mb, 12, 0)} ${n(o.peak_rss_mb, 11, 0)} ${n(o.disk_mb, 7)} | ${n(o.family_top1, 7, 3)}`,
    );
    for (const note of o.notes) console.log(`         note: ${note}`);
  }
}
