import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { haproxyAvailable, startHaproxy, type Haproxy } from '../../test/helpers/haproxy.js';
import { startKiwiServe, type KiwiServeProcess } from '../../test/helpers/kiwi-serve-process.js';
import { postgresAvailable, startPostgres } from '../../test/helpers/postgres-server.js';
import { redisAvailable, startRedis } from '../../test/helpers/redis-server.js';
import { createBenchProject } from '../gateway/bench-project.js';
import { INTENT_MODEL, startBenchUpstream } from '../gateway/bench-upstream.js';
import { timeStream } from '../gateway/http-timing.js';
import { plainBody } from '../gateway/load-client.js';
import { percentile, round } from '../stats.js';

const USAGE = 'npm run bench -- replicas [--seconds S] [--concurrency C] [--rounds N] [--out FILE]';

/**
 * `npm run bench -- replicas`: `kiwi serve` processes on one Postgres and one Redis behind HAProxy
 * (round robin), as docs/replicas.md deploys them, all on this machine and 127.0.0.1. Prints
 * (1) streaming chats a second and their p99 through one replica and through three (on a 2-core
 * machine the point is that nothing degrades, not that it scales), and (2) how long a chat waiting
 * for approval takes to go on once granted, and a running chat to stop once cancelled, when the
 * answer goes to the replica the chat runs on and when it goes to another (over Redis pub/sub).
 * The upstream is the gateway bench's local stand-in (no delays).
 */

interface LoadRun {
  replicas: number;
  requests: number;
  errors: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

interface Latencies {
  p50: number;
  p99: number;
  n: number;
}

export async function runReplicasBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { seconds: { type: 'string' }, concurrency: { type: 'string' }, rounds: { type: 'string' }, out: { type: 'string' } }, strict: true });
  const seconds = Number(values.seconds ?? 5);
  const concurrency = Number(values.concurrency ?? 16);
  const rounds = Number(values.rounds ?? 20);
  if (![seconds, concurrency, rounds].every((n) => Number.isInteger(n) && n >= 1 && n <= 10_000)) throw new Error(`usage: ${USAGE}`);
  const missing = [!postgresAvailable() && 'postgresql', !redisAvailable() && 'redis-server', !haproxyAvailable() && 'haproxy'].filter(Boolean);
  if (missing.length > 0) throw new Error(`it needs ${missing.join(', ')}: apt-get install ${missing.join(' ')}`);

  const upstream = await startBenchUpstream({ chunks: 64 });
  const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  const project = await createBenchProject(upstream.url, { prefetch: true });
  // The bench intent's read_file waits for a person here: the chat that approvals and cancels time.
  const manifest = path.join(project.root, '.ai', 'tools', 'project', 'read_file.yaml');
  await writeFile(manifest, (await readFile(manifest, 'utf8')).replace('mutates_state: false', 'mutates_state: false\nrequires_approval: true'));
  const env = { DATABASE_URL: postgres.url, REDIS_URL: redis.url };
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 120_000, keepAliveMaxTimeout: 120_000 });
  const loads: LoadRun[] = [];
  let answers: { grant: Record<'same' | 'other', Latencies>; cancel: Record<'same' | 'other', Latencies> } | undefined;
  let replicas: KiwiServeProcess[] = [];
  let balancer: Haproxy | undefined;
  const stopAll = async (): Promise<void> => {
    await balancer?.stop();
    for (const r of replicas) r.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => new Promise((resolve) => (r.child.exitCode === null ? r.child.once('exit', resolve) : resolve(undefined)))));
    replicas = [];
  };
  try {
    for (const count of [1, 3]) {
      console.error(`replicas: starting ${count} kiwi serve behind HAProxy…`);
      replicas = await Promise.all(Array.from({ length: count }, () => startKiwiServe(project.root, { env })));
      balancer = await startHaproxy(replicas);
      await load(dispatcher, `${balancer.url}/v1/chat/completions`, concurrency, 2 * count); // warm-up: each replica's JIT
      console.error(`replicas: ${count}: ${concurrency} clients × ${seconds} s of streaming chats…`);
      loads.push({ replicas: count, ...(await load(dispatcher, `${balancer.url}/v1/chat/completions`, concurrency, seconds)) });
      if (count === 3) {
        console.error(`replicas: ${rounds} approvals and ${rounds} cancels, answered on the chat's replica and on another…`);
        answers = await crossReplica(replicas, rounds);
      }
      await stopAll();
    }
  } finally {
    await stopAll();
    await dispatcher.close();
    await Promise.allSettled([project.remove(), upstream.close(), postgres.stop(), redis.stop()]);
  }

  console.log(`replicas: kiwi serve × N behind HAProxy (round robin) on one Postgres and one Redis, 127.0.0.1`);
  console.log(`${'replicas'.padEnd(10)}${'chats/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'errors'.padStart(8)}`);
  for (const r of loads) console.log(`${String(r.replicas).padEnd(10)}${r.rps.toFixed(1).padStart(10)}${r.p50Ms.toFixed(2).padStart(10)}${r.p99Ms.toFixed(2).padStart(10)}${String(r.errors).padStart(8)}`);
  if (answers !== undefined) {
    console.log(`a waiting chat goes on after a grant, or stops after a cancel (ms, ${rounds} each; the grant's includes running the tool)`);
    console.log(`${'answered on'.padEnd(28)}${'grant p50'.padStart(10)}${'p99'.padStart(8)}${'cancel p50'.padStart(12)}${'p99'.padStart(8)}`);
    for (const where of ['same', 'other'] as const) {
      console.log(`${(where === 'same' ? "the chat's own replica" : 'another replica').padEnd(28)}${answers.grant[where].p50.toFixed(1).padStart(10)}${answers.grant[where].p99.toFixed(1).padStart(8)}${answers.cancel[where].p50.toFixed(1).padStart(12)}${answers.cancel[where].p99.toFixed(1).padStart(8)}`);
    }
  }
  if (values.out) {
    const results = { bench: 'replicas', settings: { seconds, concurrency, rounds, chunks: 64, balancer: 'haproxy roundrobin', node: process.version }, loads, answers };
    await writeFile(values.out, `${JSON.stringify(results, null, 2)}\n`);
    console.error(`results written to ${values.out}`);
  }
}

async function load(dispatcher: Agent, url: string, concurrency: number, seconds: number): Promise<Omit<LoadRun, 'replicas'>> {
  const body = plainBody(true);
  const latency: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        try {
          latency.push((await timeStream(dispatcher, url, body, 'fast')).totalMs);
        } catch {
          errors++;
        }
      }
    }),
  );
  const took = (performance.now() - t0) / 1000;
  return { requests: latency.length, errors, rps: round(latency.length / took, 1), p50Ms: round(percentile(latency, 50), 2), p99Ms: round(percentile(latency, 99), 2) };
}

/** A streamed chat through `base` whose read_file waits for approval; resolves once the stream says so. */
async function waitingChat(base: string): Promise<{ executionId: string; stepId: string; next(): Promise<'data' | 'end'> }> {
  const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: INTENT_MODEL, stream: true, messages: [{ role: 'user', content: 'What is in package.json?' }] }) });
  if (res.body === null) throw new Error(`the chat answered ${res.status} without a body`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const lines: string[] = [];
  /** The next `data:` line, or the end of the stream. */
  const line = async (): Promise<string | undefined> => {
    for (;;) {
      const ready = lines.shift();
      if (ready !== undefined) return ready;
      const { value, done } = await reader.read();
      if (done) return undefined;
      buffer += value;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      for (const p of parts) if (p.startsWith('data: ')) lines.push(p.slice(6));
    }
  };
  for (;;) {
    const data = await line();
    if (data === undefined) throw new Error('the chat ended before its call waited for approval');
    const kiwi = data === '[DONE]' ? undefined : (JSON.parse(data) as { kiwi?: { type?: string; stepId?: string } }).kiwi;
    if (kiwi?.type === 'approval' && kiwi.stepId !== undefined) {
      return { executionId: res.headers.get('x-kiwi-execution-id') ?? '', stepId: kiwi.stepId, next: async () => ((await line()) === undefined ? 'end' : 'data') };
    }
  }
}

async function crossReplica(replicas: KiwiServeProcess[], rounds: number): Promise<{ grant: Record<'same' | 'other', Latencies>; cancel: Record<'same' | 'other', Latencies> }> {
  const [home, other] = [replicas[0] as KiwiServeProcess, replicas[1] as KiwiServeProcess];
  const times = { grant: { same: [] as number[], other: [] as number[] }, cancel: { same: [] as number[], other: [] as number[] } };
  for (let i = 0; i < rounds; i++) {
    for (const where of ['same', 'other'] as const) {
      const answerer = where === 'same' ? home : other;
      const granted = await waitingChat(home.url);
      let t0 = performance.now();
      const signal = await fetch(`${answerer.url}/v0/executions/${granted.executionId}/signal`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: granted.stepId, approved: true } }) });
      if (!signal.ok) throw new Error(`the grant answered ${signal.status}: ${await signal.text()}`);
      await granted.next();
      times.grant[where].push(performance.now() - t0);
      while ((await granted.next()) !== 'end');

      const cancelled = await waitingChat(home.url);
      t0 = performance.now();
      const cancel = await fetch(`${answerer.url}/v0/executions/${cancelled.executionId}/cancel`, { method: 'POST' });
      if (!cancel.ok) throw new Error(`the cancel answered ${cancel.status}: ${await cancel.text()}`);
      while ((await cancelled.next()) !== 'end');
      times.cancel[where].push(performance.now() - t0);
    }
  }
  const summary = (sample: number[]): Latencies => ({ p50: round(percentile(sample, 50), 1), p99: round(percentile(sample, 99), 1), n: sample.length });
  return {
    grant: { same: summary(times.grant.same), other: summary(times.grant.other) },
    cancel: { same: summary(times.cancel.same), other: summary(times.cancel.other) },
  };
}
