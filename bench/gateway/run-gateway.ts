import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openGateway, type Gateway } from '../../src/app/open-gateway.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { peakRssMb } from '../stats.js';
import { createBenchProject, type BenchProject } from './bench-project.js';
import { INTENT_TEXT } from './bench-upstream.js';
import { startReferenceProxy, type ReferenceProxy } from './reference-proxy.js';
import { startBenchChild, type BenchChild } from './child-process.js';
import { startCpuProfile } from './cpu-profile.js';
import { gatewayReport, printGatewayReport } from './gateway-report.js';
import { INTENT_CONTEXT, type IntentSample, type LoadResult, type PairedSamples } from './load-client.js';
import { createProgress } from '../progress.js';

const USAGE = 'npm run bench -- gateway [--requests N] [--warmup N] [--non-stream N] [--concurrency C] [--seconds S] [--chunks K] [--intents N] [--out FILE] [--cpu-profile DIR]';

/**
 * `npm run bench -- gateway`: what the gateway adds to an agent's LLM calls. The gateway runs
 * in this process, as `kiwi serve` would (openGateway + listen); the stand-in upstream and the
 * client each run in a process of their own, so that neither competes in the gateway's event loop.
 */
export async function runGatewayBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      requests: { type: 'string' },
      warmup: { type: 'string' },
      'non-stream': { type: 'string' },
      concurrency: { type: 'string' },
      seconds: { type: 'string' },
      chunks: { type: 'string' },
      intents: { type: 'string' },
      out: { type: 'string' },
      'cpu-profile': { type: 'string' },
      'no-prefetch': { type: 'boolean' },
    },
    strict: true,
  });
  const requests = count(values.requests, 2000, 'requests', 1);
  const settings = {
    requests,
    warmup: count(values.warmup, 200, 'warmup', 0),
    nonStream: count(values['non-stream'], Math.max(1, Math.round(requests / 4)), 'non-stream', 1),
    concurrency: count(values.concurrency, 16, 'concurrency', 1),
    seconds: count(values.seconds, 5, 'seconds', 1),
    loadRounds: LOAD_ROUNDS,
    chunks: count(values.chunks, 64, 'chunks', 1),
    intents: count(values.intents, 50, 'intents', 1),
    prefetch: !values['no-prefetch'],
  };
  const loadStart = os.loadavg()[0] ?? 0;

  let upstream: BenchChild<{ url: string }> | undefined;
  let client: BenchChild<object> | undefined;
  let project: BenchProject | undefined;
  let gateway: Gateway | undefined;
  let listener: Listener | undefined;
  let proxy: ReferenceProxy | undefined;
  try {
    upstream = await startBenchChild<{ url: string }>(['upstream', String(settings.chunks)]);
    project = await createBenchProject(upstream.ready.url, { prefetch: !values['no-prefetch'] });
    console.error(`upstream ${upstream.ready.url}; project ${project.root}`);
    const indexCounter = createProgress('').counter('indexing tools');
    const t0 = performance.now();
    gateway = await openGateway({
      projectDir: project.root,
      userDir: project.userDir,
      env: { PATH: process.env.PATH, HOME: project.root },
      log: (line) => console.error(`gateway: ${line}`),
      indexProgress: { embedded: (_table, done, total) => indexCounter(done, total) },
    });
    const indexSyncMs = performance.now() - t0;
    listener = await listen(gateway.app.fetch, { host: '127.0.0.1', port: 0 });
    console.error(`gateway ${listener.url} (${gateway.runtime.toolCount} tools, ${gateway.runtime.embedderId}, opened in ${(indexSyncMs / 1000).toFixed(1)} s)`);
    await checkIntentResolves(gateway);
    proxy = await startReferenceProxy(upstream.ready.url);
    const helper = await startBenchChild<object>(['client']);
    client = helper;
    const targets = { direct: `${upstream.ready.url}/v1/chat/completions`, gateway: `${listener.url}/v1/chat/completions` };
    const proxyUrl = `${proxy.url}/v1/chat/completions`;

    console.error(`pass-through: ${settings.warmup} + ${settings.requests} rounds of streaming requests (direct, gateway, reference proxy)…`);
    // --cpu-profile DIR: the gateway process's CPU profile of the pass-through, load (recorded and not) and intent phases.
    const profileDir = values['cpu-profile'];
    const profileLines: string[] = [];
    const profiled = async <T>(name: string, requests: number, phase: () => Promise<T>): Promise<T> => {
      if (profileDir === undefined) return phase();
      await mkdir(profileDir, { recursive: true });
      const profiler = await startCpuProfile();
      const result = await phase();
      const file = path.join(profileDir, `${name}.cpuprofile`);
      profileLines.push(`CPU profile of the ${name} phase (warm-up included), written to ${file}:`, ...(await profiler.stop(file, requests)));
      return result;
    };
    const passThrough = await profiled('pass-through', settings.warmup + settings.requests, () =>
      helper.call<PairedSamples>('passThrough', { ...targets, proxy: proxyUrl, n: settings.requests, warmup: settings.warmup }),
    );
    const fresh = Math.max(1, Math.round(settings.requests / 10));
    console.error(`pass-through with a new user message each round: ${fresh} rounds…`);
    const newMessages = await helper.call<PairedSamples>('passThrough', { ...targets, n: fresh, warmup: 5, newMessages: true });
    console.error(`non-stream: ${settings.nonStream} pairs…`);
    const nonStream = await helper.call<{ direct: number[]; gateway: number[] }>('nonStream', { ...targets, n: settings.nonStream, warmup: Math.min(settings.warmup, 50) });
    console.error(`load: ${settings.concurrency} clients × ${settings.seconds} s, direct, via the bare proxy, then ${LOAD_ROUNDS} rounds via gateways opened alike: the defaults${settings.prefetch ? ', prefetch off' : ''}, recording off…`);
    const loadArgs = { concurrency: settings.concurrency, seconds: settings.seconds };
    const loadDirect = await helper.call<LoadResult>('load', { ...loadArgs, url: targets.direct });
    const loadProxy = await onRequestThread(() => helper.call<LoadResult>('load', { ...loadArgs, url: proxyUrl }));
    // The gateway's load, and what prefetch and recording cost, through gateways opened alike (the
    // defaults, prefetch off, recording off), each warmed, in rounds with the order rotating: a
    // difference between them is what the setting costs, not two gateways' histories (the first
    // gateway served every phase before this one) or a slower spell of the machine.
    const variants = [
      { name: 'gateway', options: { prefetch: settings.prefetch } },
      ...(settings.prefetch ? [{ name: 'no-prefetch', options: { prefetch: false } }] : []),
      { name: 'no-recording', options: { prefetch: settings.prefetch, recordChats: false } },
    ] as const;
    const loads = new Map<string, LoadResult[]>(variants.map((v) => [v.name, []]));
    const opened: { url: string; close(): Promise<void> }[] = [];
    try {
      for (const v of variants) opened.push(await openComparisonGateway(upstream.ready.url, v.options));
      for (const [i, g] of opened.entries()) {
        console.error(`warming the ${variants[i]?.name} gateway…`);
        await helper.call<LoadResult>('load', { concurrency: settings.concurrency, seconds: 1, url: `${g.url}/v1/chat/completions` });
      }
      for (let round = 0; round < LOAD_ROUNDS; round++) {
        for (let k = 0; k < variants.length; k++) {
          const i = (k + round) % variants.length;
          const name = variants[i]?.name as string;
          const phase = (): Promise<LoadResult> => onRequestThread(() => helper.call<LoadResult>('load', { ...loadArgs, url: `${opened[i]?.url}/v1/chat/completions` }));
          // The profiles are of the first round: the defaults', and that without recording.
          const profile = round === 0 && name !== 'no-prefetch' ? (name === 'gateway' ? 'load' : 'load-unrecorded') : undefined;
          loads.get(name)?.push(await (profile === undefined ? phase() : profiled(profile, 1, phase)));
        }
      }
    } finally {
      for (const g of opened) await g.close();
    }
    const loadGateway = mergedLoads(loads.get('gateway') ?? []);
    const loadNoPrefetch = settings.prefetch ? mergedLoads(loads.get('no-prefetch') ?? []) : undefined;
    const loadNoRecording = mergedLoads(loads.get('no-recording') ?? []);
    console.error(`intent loop: ${settings.intents} requests…`);
    const intents = await profiled('intents', settings.intents + 3, () => helper.call<IntentSample[]>('intents', { ...targets, n: settings.intents, warmup: 3 }));
    const resolveMs = await timeResolution(gateway, settings.intents);
    const menuSearchMs = await timeMenuSearch(gateway, settings.intents);

    const report = gatewayReport({
      settings,
      passThrough,
      newMessages,
      nonStream,
      load: { direct: loadDirect, gateway: loadGateway, proxy: loadProxy, ...(loadNoPrefetch ? { gatewayNoPrefetch: loadNoPrefetch } : {}), gatewayNoRecording: loadNoRecording },
      intents,
      resolveMs,
      menuSearchMs,
      project: { tools: gateway.runtime.toolCount, embedder: gateway.runtime.embedderId, indexSyncMs, toolMenu: gateway.config.toolMenu },
      machine: {
        node: process.version,
        platform: `${process.platform} ${process.arch}`,
        cpus: os.availableParallelism(),
        cpu_model: os.cpus()[0]?.model ?? 'unknown',
        memory_gb: Math.round(os.totalmem() / 2 ** 30),
        load_avg_1m: { start: round2(loadStart), end: round2(os.loadavg()[0] ?? 0) },
        gateway_process_peak_rss_mb: peakRssMb(),
      },
    });
    printGatewayReport(report);
    if (profileLines.length > 0) console.log(profileLines.join('\n'));
    console.log(`machine: node ${process.version}, ${os.availableParallelism()} CPUs (${report.machine.cpu_model}), load avg ${round2(loadStart)} → ${round2(os.loadavg()[0] ?? 0)}`);
    if (values.out) {
      await writeFile(values.out, `${JSON.stringify(report, null, 2)}\n`);
      console.error(`wrote ${values.out}`);
    }
  } finally {
    await client?.close();
    await proxy?.close();
    await listener?.close(1000);
    await gateway?.close();
    await upstream?.close();
    await project?.remove();
  }
}

/**
 * A load through a gateway served by this process, with the CPU time its main thread (where
 * requests are served; the kernel's PGlite has a thread of its own) and the whole process (every
 * thread: PGlite, the embedder, LanceDB, the garbage collector) used per request. CPU time,
 * not busy wall time: on a machine with more busy threads than cores a thread is also busy while
 * it waits for a core.
 */
async function onRequestThread(phase: () => Promise<LoadResult>): Promise<LoadResult> {
  const before = mainThreadCpuUs();
  const processBefore = process.cpuUsage();
  const result = await phase();
  const after = mainThreadCpuUs();
  const processUs = process.cpuUsage(processBefore);
  if (result.requests === 0) return result;
  const perRequest = { processUsPerRequest: (processUs.user + processUs.system) / result.requests };
  return before === undefined || after === undefined ? { ...result, ...perRequest } : { ...result, ...perRequest, threadUsPerRequest: (after - before) / result.requests };
}

/** This process's main thread's CPU time (user and system) from /proc, in µs; undefined where there is no /proc (not Linux). */
function mainThreadCpuUs(): number | undefined {
  try {
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second on every architecture Node runs on. */
const CLOCK_TICKS_PER_S = 100;

/** Rounds of the gateways' load phase (each `--seconds` long a gateway). */
const LOAD_ROUNDS = 2;

/** The rounds of one gateway's load as one: their requests, time and latencies together, CPU per request over all of them. */
function mergedLoads(rounds: LoadResult[]): LoadResult {
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const seconds = rounds.reduce((n, r) => n + r.seconds, 0);
  const perRequest = (of: (r: LoadResult) => number | undefined): number | undefined =>
    requests === 0 || rounds.some((r) => of(r) === undefined) ? undefined : rounds.reduce((n, r) => n + (of(r) as number) * r.requests, 0) / requests;
  const firstError = rounds.find((r) => r.firstError !== undefined)?.firstError;
  const processUs = perRequest((r) => r.processUsPerRequest);
  const threadUs = perRequest((r) => r.threadUsPerRequest);
  return {
    requests,
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    ...(firstError === undefined ? {} : { firstError }),
    seconds,
    rps: seconds === 0 ? 0 : requests / seconds,
    latency: rounds.flatMap((r) => r.latency),
    ...(processUs === undefined ? {} : { processUsPerRequest: processUs }),
    ...(threadUs === undefined ? {} : { threadUsPerRequest: threadUs }),
  };
}

/** A gateway on its own copy of the project, listening: the defaults, or with prefetch or recording off. */
async function openComparisonGateway(upstreamUrl: string, options: { prefetch: boolean; recordChats?: boolean }): Promise<{ url: string; close(): Promise<void> }> {
  const project = await createBenchProject(upstreamUrl, options);
  let gateway: Gateway | undefined;
  try {
    gateway = await openGateway({ projectDir: project.root, userDir: project.userDir, env: { PATH: process.env.PATH, HOME: project.root } });
    const listener = await listen(gateway.app.fetch, { host: '127.0.0.1', port: 0 });
    const opened = gateway;
    return {
      url: listener.url,
      async close() {
        await listener.close(1000);
        await opened.close();
        await project.remove();
      },
    };
  } catch (error) {
    await gateway?.close();
    await project.remove();
    throw error;
  }
}

/** The bench's intent must run a cheap read-only tool; say so plainly when the demo resolves it otherwise. */
async function checkIntentResolves(gateway: Gateway): Promise<void> {
  const r = await gateway.runtime.resolver.resolve(INTENT_TEXT, { context: INTENT_CONTEXT });
  if (r.status !== 'resolved' || r.call.tool !== 'read_file') {
    const got = r.status === 'resolved' ? `${r.call.tool} ${JSON.stringify(r.call.arguments)}` : `unresolved (${r.reason}; candidates ${r.candidates.map((c) => c.tool).join(', ')})`;
    throw new Error(`the bench intent "${INTENT_TEXT}" should resolve to read_file but got ${got}; check the demo tools in .ai/tools/project`);
  }
  console.error(`intent "${INTENT_TEXT}" → ${r.call.tool} ${JSON.stringify(r.call.arguments)}`);
}

/** The search the tool menu makes for a message it has not seen: each text new, so nothing is cached. */
async function timeMenuSearch(gateway: Gateway, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await gateway.runtime.resolver.retrieve(`please look into question ${i} about the project files, round ${Date.now()}`, {});
    out.push(performance.now() - t0);
  }
  return out;
}

/** The resolver as the loop calls it, same intent and context, after the loop has warmed it. */
async function timeResolution(gateway: Gateway, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await gateway.runtime.resolver.resolve(INTENT_TEXT, { context: INTENT_CONTEXT });
    out.push(performance.now() - t0);
  }
  return out;
}

function count(raw: string | undefined, fallback: number, name: string, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} ${raw}: give a whole number of at least ${min}; usage: ${USAGE}`);
  return n;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
