import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createConditionCompiler } from '../../src/hooks/condition.js';
import type { HookEvent } from '../../src/hooks/hook-event.js';
import { percentile, round } from '../stats.js';

const USAGE = 'npm run bench -- hooks [--hooks 100] [--calls 10000] [--out FILE]';

/**
 * `npm run bench -- hooks`: what evaluating every loaded hook's `when` condition costs per event.
 * N conditions (the three of deploy_staging.md and variants with macros, `in`, `has` and string
 * functions, in Kiwi's and CEL's spelling) are compiled once, then all N are evaluated on each
 * of `calls` events, which rotate through a set of realistic ones; one sample is one event.
 */

const GOAL_P99_MS = 0.1;

const TEMPLATES = [
  (i: number) => `event.code == "permission_denied_${i}"`,
  (i: number) => `cost.turns > limits.turns * 0.${(i % 9) + 1}`,
  (i: number) => `event.name == "error" and event.code == "timeout_${i}"`,
  (i: number) => `tool.id in ["bash", "sh", "tool_${i}"] && tool.mutates_state`,
  (i: number) => `permissions.write.exists(p, p.startsWith("dist")) and cost.spend > ${i}.5`,
  (i: number) => `has(event.detail.missing) and event.detail.missing.contains("write:${i}")`,
  (i: number) => `not (client.id == "loopback") or arguments.args.size() > ${i % 7}`,
  (i: number) => `directive.name.endsWith("_staging") && cost.tokens >= limits.tokens * 0.${(i % 9) + 1} || event.code == "c${i}"`,
];

export async function runHooksBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { hooks: { type: 'string' }, calls: { type: 'string' }, out: { type: 'string' } }, strict: true });
  const hookCount = Number(values.hooks ?? 100);
  const calls = Number(values.calls ?? 10_000);
  if (!Number.isInteger(hookCount) || hookCount < 1 || !Number.isInteger(calls) || calls < 100) throw new Error(`usage: ${USAGE}`);

  const compiler = createConditionCompiler();
  const sources = Array.from({ length: hookCount }, (_, i) => (TEMPLATES[i % TEMPLATES.length] as (i: number) => string)(i));
  const compileStart = performance.now();
  const conditions = sources.map((source, i) => compiler.compileCondition(source, { file: 'bench/hooks', line: i + 1 }));
  const compileMs = performance.now() - compileStart;
  const events = Array.from({ length: 16 }, (_, i) => makeEvent(i));

  const tally = { matched: 0, notMatched: 0, failed: 0 };
  const evaluateAll = (event: HookEvent, counted: boolean) => {
    for (const condition of conditions) {
      const result = condition.evaluate(event);
      if (!counted) continue;
      if (!result.ok) tally.failed += 1;
      else if (result.matched) tally.matched += 1;
      else tally.notMatched += 1;
    }
  };
  for (let i = 0; i < Math.min(calls, 2_000); i++) evaluateAll(events[i % events.length] as HookEvent, false); // warm-up
  const samples: number[] = new Array<number>(calls);
  for (let i = 0; i < calls; i++) {
    const event = events[i % events.length] as HookEvent;
    const start = performance.now();
    evaluateAll(event, true);
    samples[i] = performance.now() - start;
  }

  const perCall = { p50: round(percentile(samples, 50), 4), p99: round(percentile(samples, 99), 4), max: round(Math.max(...samples), 4) };
  const library = await libraryVersion();
  const meanPerConditionUs = round((samples.reduce((a, b) => a + b, 0) / calls / hookCount) * 1000, 3);
  console.log(`hooks: ${hookCount} conditions (${library}) evaluated per call, ${calls} calls`);
  console.log(`  per call (all ${hookCount}): p50 ${perCall.p50} ms, p99 ${perCall.p99} ms, max ${perCall.max} ms (goal: p99 < ${GOAL_P99_MS} ms)`);
  console.log(`  per condition: ${meanPerConditionUs} µs on average; compiling all ${hookCount}: ${round(compileMs, 2)} ms`);
  console.log(`  results: ${tally.matched} true, ${tally.notMatched} false, ${tally.failed} failed (closed)`);
  for (const c of conditions.slice(0, 3)) console.log(`  e.g. ${c.source}`);

  if (values.out) {
    const report = {
      bench: 'hooks',
      library,
      hooks: hookCount,
      calls,
      goal_p99_ms: GOAL_P99_MS,
      per_call_ms: perCall,
      per_condition_mean_us: meanPerConditionUs,
      compile_all_ms: round(compileMs, 3),
      results: tally,
      machine: { node: process.version, cpus: os.availableParallelism() },
    };
    await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
    console.error(`wrote ${values.out}`);
  }
}

function makeEvent(i: number): HookEvent {
  const names = ['tool_call', 'error', 'tool_result', 'error'];
  const codes = ['ok', 'timeout', 'permission_denied', 'timeout_3'];
  return {
    event: { name: names[i % 4] as string, code: codes[(i >> 2) % 4] as string, detail: i % 3 === 0 ? { missing: `write:${i}`, message: 'denied' } : { message: 'ok' } },
    tool: { id: i % 2 === 0 ? 'bash' : 'read_file', type: 'script', mutates_state: i % 2 === 0 },
    arguments: { command: 'npm', args: Array.from({ length: i % 6 }, (_, j) => `arg${j}`) },
    client: { id: i % 5 === 0 ? 'key-abc' : 'loopback', conversation: `c${i}` },
    directive: { name: i % 3 === 0 ? 'deploy_staging' : 'triage', version: '1.0.0' },
    cost: { turns: i + 4, tokens: 2_000 * i, spawns: i % 3, duration: 30 * i, spend: 0.3 * i },
    limits: { turns: 20, tokens: 50_000, spawns: 3, duration: 600, spend: 5 },
    permissions: { read: ['src/**', 'docs/**'], write: i % 2 === 0 ? ['dist/**'] : [], execute: ['bash'] },
  };
}

async function libraryVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.resolve('@marcbachmann/cel-js')), 'utf8')) as { name: string; version: string };
  return `${manifest.name}@${manifest.version}`;
}
