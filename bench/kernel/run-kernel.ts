import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createGatewayApp } from '../../src/http/server/app.js';
import { listen } from '../../src/http/server/listen.js';
import { openKernel, type Kernel } from '../../src/kernel/open-kernel.js';
import { openSse, type SseClient } from '../../test/fixtures/kernel/sse-client.js';
import { postgresAvailable, startPostgres } from '../../test/helpers/postgres-server.js';
import { percentile, round } from '../stats.js';

const USAGE = 'npm run bench -- kernel [--intents N] [--agents 1,8] [--out FILE]';

/**
 * `npm run bench -- kernel`: what a tool call costs through the kernel's v0 API, as an agent
 * sees it over HTTP and SSE on 127.0.0.1. Each agent runs one execution and, N times: an
 * `invoke_tool` intent (timed to its accepted answer, which holds the step id), then the step's
 * result (timed to the `tool.result` pushed back on its stream). Embedded PGlite on disk and a
 * Postgres server, with 1 and 8 agents at once. The agents run in this process beside the
 * kernel, so the numbers include their own HTTP work.
 */

interface Run {
  backend: string;
  agents: number;
  intents: number;
  seconds: number;
  intentsPerSecond: number;
  acceptedMs: { p50: number; p99: number };
  resultMs: { p50: number; p99: number };
}

const GOAL_P50_MS = 2;

export async function runKernelBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { intents: { type: 'string' }, agents: { type: 'string' }, out: { type: 'string' } }, strict: true });
  const intents = Number(values.intents ?? 300);
  const agentCounts = (values.agents ?? '1,8').split(',').map(Number);
  if (!Number.isInteger(intents) || intents < 1 || agentCounts.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error(`usage: ${USAGE}`);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'kiwi-bench-kernel-'));
  const policyFile = path.join(dir, 'kernel-policy.yaml');
  await writeFile(policyFile, 'rules:\n  - { id: all, priority: 1, then: { decision: allow } }\n');
  const runs: Run[] = [];
  try {
    const backends: [string, () => Promise<{ kernel: Kernel; stop(): Promise<void> }>][] = [
      ['embedded PGlite (on disk)', async () => ({ kernel: await openKernel({ root: dir, policyFile }), stop: async () => undefined })],
    ];
    if (postgresAvailable()) {
      backends.push([
        'Postgres server (local, fsync off)',
        async () => {
          const server = await startPostgres();
          return { kernel: await openKernel({ root: dir, policyFile, databaseUrl: server.url }), stop: server.stop };
        },
      ]);
    } else console.error('Postgres is not installed here (apt-get install postgresql): measuring the embedded kernel only');
    for (const [name, open] of backends) {
      const { kernel, stop } = await open();
      const app = createGatewayApp({ runLoop: () => (async function* () {})(), models: () => ({ models: [] }), health: () => ({}), kernel: async () => kernel });
      const server = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 });
      try {
        await measure(server.url, 1, 20, name); // warm-up
        for (const agents of agentCounts) {
          console.error(`${name}: ${agents} agent(s) × ${intents} intents…`);
          runs.push(await measure(server.url, agents, intents, name));
        }
      } finally {
        await server.close(100);
        await kernel.close();
        await stop();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  console.log(`kernel: invoke_tool → accepted step, and step-result → tool.result, over HTTP/SSE on 127.0.0.1`);
  console.log(`${'backend'.padEnd(36)}${'agents'.padStart(7)}${'intents/s'.padStart(11)}${'accepted p50'.padStart(14)}${'p99'.padStart(8)}${'result p50'.padStart(12)}${'p99'.padStart(8)}`);
  for (const r of runs) {
    console.log(`${r.backend.padEnd(36)}${String(r.agents).padStart(7)}${r.intentsPerSecond.toFixed(0).padStart(11)}${r.acceptedMs.p50.toFixed(2).padStart(14)}${r.acceptedMs.p99.toFixed(2).padStart(8)}${r.resultMs.p50.toFixed(2).padStart(12)}${r.resultMs.p99.toFixed(2).padStart(8)}`);
  }
  const embedded = runs.find((r) => r.backend.startsWith('embedded') && r.agents === 1);
  if (embedded) console.log(`goal: p50 from intent to accepted local step under ${GOAL_P50_MS} ms embedded — ${embedded.acceptedMs.p50.toFixed(2)} ms: ${embedded.acceptedMs.p50 < GOAL_P50_MS ? 'met' : 'NOT met'}`);
  console.log(`machine: node ${process.version}, ${os.availableParallelism()} CPUs`);
  if (values.out) {
    await writeFile(values.out, `${JSON.stringify({ bench: 'kernel', goal_accepted_p50_ms: GOAL_P50_MS, runs, machine: { node: process.version, cpus: os.availableParallelism() } }, null, 2)}\n`);
    console.error(`wrote ${values.out}`);
  }
}

async function measure(url: string, agents: number, intents: number, backend: string): Promise<Run> {
  const accepted: number[] = [];
  const results: number[] = [];
  const post = async (p: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const streams: SseClient[] = [];
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: agents }, async (_, i) => {
        const agent = `bench-${i}-${Math.random().toString(36).slice(2, 8)}`;
        const stream = await openSse(`${url}/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`);
        streams.push(stream);
        const id = (await post('/v0/executions', { agent_id: agent }))['id'] as string;
        const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
        for (let n = 0; n < intents; n++) {
          const a = performance.now();
          const step = (await post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: 'lookup', arguments: { n } } }))['step_id'] as string;
          const b = performance.now();
          await post('/v0/agents/step-result', { execution_id: id, session_id: session, step_id: step, success: true, data: { n } });
          await stream.next('tool.result');
          const c = performance.now();
          accepted.push(b - a);
          results.push(c - b);
        }
        await post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'complete' } });
      }),
    );
  } finally {
    for (const s of streams) s.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  const p = (xs: number[]) => ({ p50: round(percentile(xs, 50)), p99: round(percentile(xs, 99)) });
  return { backend, agents, intents: agents * intents, seconds: round(seconds, 2), intentsPerSecond: round((agents * intents) / seconds, 1), acceptedMs: p(accepted), resultMs: p(results) };
}
