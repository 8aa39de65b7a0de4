/**
 * Argument filling alone: for every case with exactly one gold call, give the filler the gold
 * tool and score its arguments by shared/bench/FORMAT.md's call-accuracy rule.
 *
 *   npx tsx bench/resolve/eval-fill-args.ts --catalog shared/datasets/seal-tools/catalog.jsonl \
 *     --cases shared/datasets/seal-tools/dev.jsonl [--show 20] [--out FILE]
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { argumentMatches } from '../../src/resolver/score-call.js';
import { givenToolAccuracy, givenToolOutcomes, type GivenToolOutcome } from './given-tool.js';
import { round } from '../stats.js';
import { readCases } from '../../src/datasets/case-file.js';
import { importCatalog } from '../../src/datasets/catalog-file.js';

const USAGE = 'npx tsx bench/resolve/eval-fill-args.ts --catalog FILE --cases FILE [--cases FILE…] [--show N] [--out FILE]';

type Outcome = GivenToolOutcome;

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { catalog: { type: 'string' }, cases: { type: 'string', multiple: true }, show: { type: 'string' }, out: { type: 'string' } },
    strict: true,
  });
  if (!values.catalog || !values.cases?.length) throw new Error(`--catalog and --cases are required; usage: ${USAGE}`);
  const show = values.show === undefined ? 20 : Number(values.show);
  const catalog = await importCatalog(values.catalog);
  const tools = new Map(catalog.tools.map((t) => [t.id, t]));
  const cases = await readCases(values.cases);

  const { outcomes, goldToolMissing: noTool } = givenToolOutcomes(cases, tools);

  const stats = parameterStats(outcomes);
  const meanUs = timeIt(outcomes);
  const accuracy = givenToolAccuracy(outcomes).accuracy ?? 0;
  const report = {
    bench: 'fill-args',
    catalog: values.catalog,
    cases: values.cases.join(','),
    n: outcomes.length,
    gold_tool_missing: noTool,
    call_accuracy: round(accuracy),
    parameters: stats.totals,
    failure_patterns: stats.patterns.slice(0, 15),
    mean_fill_us: round(meanUs, 1),
  };
  console.log(`cases with one gold call: ${outcomes.length} (gold tool not in catalog: ${noTool})`);
  console.log(`call accuracy given the gold tool: ${report.call_accuracy}`);
  const t = stats.totals;
  console.log(`parameters: gold ${t.gold}, predicted ${t.predicted}, correct ${t.correct}, wrong ${t.wrong}, missed ${t.missed}, extra ${t.extra}`);
  console.log(`  precision ${t.precision}  recall ${t.recall}`);
  console.log(`mean fill time: ${report.mean_fill_us} µs per intent (fastest of 7 passes)`);
  console.log('\ntop failure patterns (parameter level):');
  for (const [pattern, n] of stats.patterns.slice(0, 15)) console.log(`  ${String(n).padStart(4)}  ${pattern}`);
  const failures = outcomes.filter((o) => !o.ok);
  if (show > 0 && failures.length > 0) console.log(`\nfailing examples (${Math.min(show, failures.length)} of ${failures.length}):`);
  for (const o of failures.slice(0, show)) {
    console.log(`- ${o.c.id}: ${o.c.intent}`);
    console.log(`    tool ${o.tool.id}(${o.tool.parameters.map((p) => `${p.name}${p.required ? '' : '?'}:${p.type}`).join(', ')})`);
    console.log(`    gold ${JSON.stringify(Object.fromEntries(Object.entries(o.gold).map(([k, v]) => [k, v[0]])))}`);
    console.log(`    got  ${JSON.stringify(o.filled.arguments)}${o.filled.missing.length ? `  missing ${o.filled.missing.join(',')}` : ''}`);
  }
  if (values.out) await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
}

function parameterStats(outcomes: Outcome[]) {
  let gold = 0;
  let predicted = 0;
  let correct = 0;
  let wrong = 0;
  let missed = 0;
  let extra = 0;
  const patterns = new Map<string, number>();
  const bump = (key: string): void => {
    patterns.set(key, (patterns.get(key) ?? 0) + 1);
  };
  for (const o of outcomes) {
    const args = o.filled.arguments;
    predicted += Object.keys(args).length;
    for (const [name, acceptable] of Object.entries(o.gold)) {
      gold++;
      const type = o.tool.parameters.find((p) => p.name === name)?.type ?? 'unknown';
      const required = o.tool.parameters.find((p) => p.name === name)?.required ? 'required' : 'optional';
      if (argumentMatches(acceptable, args, name)) {
        if (Object.hasOwn(args, name)) correct++;
        continue;
      }
      const where = whereInIntent(o.c.intent, acceptable[0]);
      if (Object.hasOwn(args, name)) {
        wrong++;
        bump(`wrong value, ${required} ${type}, gold ${where}`);
      } else {
        missed++;
        bump(`missed, ${required} ${type}, gold ${where}`);
      }
    }
    for (const name of Object.keys(args)) if (!Object.hasOwn(o.gold, name)) extra++;
  }
  const totals = {
    gold,
    predicted,
    correct,
    wrong,
    missed,
    extra,
    precision: round(predicted ? correct / predicted : 0),
    recall: round(gold ? correct / gold : 0),
  };
  return { totals, patterns: [...patterns].sort((a, b) => b[1] - a[1]) };
}

/** Whether the gold value can be read off the intent at all, which separates filler misses from data noise. */
function whereInIntent(intent: string, value: unknown): string {
  const text = String(value);
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return 'a date';
  if (typeof value === 'number' || /^-?\d+(\.\d+)?$/.test(text)) return intent.includes(text.replace(/\.0$/, '')) ? 'a number in the text' : 'a number not in the text';
  if (intent.includes(`"${text}`) || intent.includes(`'${text}'`)) return 'quoted in the text';
  if (intent.includes(text)) return 'in the text';
  if (intent.toLowerCase().includes(text.toLowerCase())) return 'in the text, other case';
  return 'not in the text';
}

/**
 * Mean fill time per intent: one untimed pass to warm up, then the fastest of several timed
 * passes, because other processes on a shared machine only ever add time.
 */
function timeIt(outcomes: Outcome[]): number {
  if (outcomes.length === 0) return 0;
  for (const o of outcomes) fillArguments(o.c.intent, o.tool);
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < 7; r++) {
    const start = performance.now();
    for (const o of outcomes) fillArguments(o.c.intent, o.tool);
    best = Math.min(best, performance.now() - start);
  }
  return (best * 1000) / outcomes.length;
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  console.error(`eval-fill-args: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
}
