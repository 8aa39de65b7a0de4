import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadDemoTurns } from '../../src/llm/demo-provider.js';
import { readCases } from '../../src/datasets/case-file.js';
import { demoTraces } from './demo-traces.js';
import { sealTraces } from './seal-traces.js';
import { parseTraceLine, turnText, type Trace } from './trace-format.js';

const USAGE = 'npm run bench -- prefetch-traces [--seal-dir DIR] [--demo FILE] [--out-dir DIR] [--seed N] [--announced N] [--silent N]';

/** The shipped traces: which Seal-Tools file becomes which traces file. */
const SEAL_FILES = [
  { cases: 'test_out_domain.jsonl', out: 'seal-test-out.jsonl' },
  { cases: 'dev.jsonl', out: 'seal-dev.jsonl' },
] as const;

export interface BuildTracesOptions {
  sealDir: string;
  demoFile: string;
  outDir: string;
  seed: number;
  announced: number;
  silent: number;
}

export const DEFAULT_BUILD_OPTIONS: BuildTracesOptions = {
  sealDir: '../shared/datasets/seal-tools',
  demoFile: '.ai/demo/agent-turns.yaml',
  outDir: 'bench/traces',
  seed: 1,
  announced: 80,
  silent: 30,
};

/** `npm run bench -- prefetch-traces`: rebuilds bench/traces/*.jsonl (deterministic for a seed). */
export async function runBuildTraces(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { 'seal-dir': { type: 'string' }, demo: { type: 'string' }, 'out-dir': { type: 'string' }, seed: { type: 'string' }, announced: { type: 'string' }, silent: { type: 'string' } },
    strict: true,
  });
  const d = DEFAULT_BUILD_OPTIONS;
  const options: BuildTracesOptions = {
    sealDir: values['seal-dir'] ?? d.sealDir,
    demoFile: values.demo ?? d.demoFile,
    outDir: values['out-dir'] ?? d.outDir,
    seed: count('--seed', values.seed, d.seed),
    announced: count('--announced', values.announced, d.announced),
    silent: count('--silent', values.silent, d.silent),
  };
  await mkdir(options.outDir, { recursive: true });
  for (const f of SEAL_FILES) {
    const cases = await readCases([path.join(options.sealDir, f.cases)]);
    const report = sealTraces(cases, { seed: options.seed, announced: options.announced, silent: options.silent, source: `seal-tools/${f.cases}` });
    const dropped = Object.entries(report.dropped).map(([why, n]) => `${n} ${why}`).join(', ');
    console.log(`${f.cases}: ${report.multiCall} multi-call cases, ${report.eligible} split one step per call (left out: ${dropped || 'none'})`);
    await writeTraces(path.join(options.outDir, f.out), report.traces);
  }
  const traces = demoTraces(loadDemoTurns(options.demoFile), { seed: options.seed, source: path.basename(options.demoFile) });
  await writeTraces(path.join(options.outDir, 'demo.jsonl'), traces);
}

/** Writes the traces, each checked the way a run reads it, and prints what the file holds. */
async function writeTraces(file: string, traces: Trace[]): Promise<void> {
  const lines = traces.map((t, i) => {
    const line = JSON.stringify(t);
    parseTraceLine(line, `${file}:${i + 1}`);
    return line;
  });
  await writeFile(file, `${lines.join('\n')}\n`);
  console.log(`wrote ${file}: ${describe(traces)}`);
}

export function describe(traces: readonly Trace[]): string {
  const groups = new Map<string, { traces: number; intents: number }>();
  let chars = 0;
  let tokens = 0;
  let ms = 0;
  for (const t of traces) {
    const g = groups.get(t.group) ?? { traces: 0, intents: 0 };
    g.traces++;
    for (const turn of t.turns) {
      g.intents += turn.intents.length;
      chars += turnText(turn).length;
      tokens += turn.chunks.length;
      ms += turn.chunks.at(-1)?.t ?? 0;
    }
    groups.set(t.group, g);
  }
  const parts = [...groups].map(([name, g]) => `${name} ${g.traces} traces / ${g.intents} intents`);
  return `${parts.join(', ')}; ${(chars / Math.max(1, tokens)).toFixed(2)} chars per chunk, ${((tokens * 1000) / Math.max(1, ms)).toFixed(1)} chunks/s`;
}

function count(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} ${raw}: write a whole number (0 or more); usage: ${USAGE}`);
  return n;
}
