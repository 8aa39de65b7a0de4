import { percentile, round } from '../stats.js';
import { INTENT_TEXT } from './bench-upstream.js';
import type { IntentSample, LoadResult, PairedSamples } from './load-client.js';

/**
 * The gateway bench's numbers: the FORMAT.md `gateway` object (plus extra keys) and the table
 * printed for people. All times in milliseconds.
 */

export interface P50P99 {
  p50: number;
  p99: number;
}

/**
 * Issue 43's goals, a pass-through chat under load against the bare proxy of the same run: the
 * gateway process's CPU per chat at most 2.5 times the proxy's, at least 0.4 of its throughput,
 * recording chats as executions at most 0.1 of throughput, first token added p50 at most 0.8 ms.
 * Issue 11's prefetch goal (at most 0.1 of throughput) still stands beside them.
 */
export const GOAL = { cpuVsBareProxy: 2.5, throughputVsBareProxy: 0.4, recordingThroughputCost: 0.1, firstTokenP50Ms: 0.8, prefetchThroughputCost: 0.1 };

export function p5099(sample: number[]): P50P99 {
  return { p50: round(percentile(sample, 50)), p99: round(percentile(sample, 99)) };
}

/**
 * Added latency as percentiles of the paired differences gateway_i − direct_i: requests
 * alternate (direct, gateway, then gateway, direct…; with the reference proxy the order of the
 * three rotates), so each pair ran under the same machine conditions and drift (other
 * processes, GC, CPU clocks) cancels within the pair. The difference of the two percentiles is
 * also kept, as `added_ms_percentile_difference`, for comparison.
 */
export function pairedDiff(gateway: number[], direct: number[]): P50P99 {
  return p5099(gateway.map((g, i) => g - (direct[i] ?? 0)));
}

const diffOfPercentiles = (gateway: number[], direct: number[]): P50P99 => {
  const g = p5099(gateway);
  const d = p5099(direct);
  return { p50: round(g.p50 - d.p50), p99: round(g.p99 - d.p99) };
};

export interface GatewayBenchInput {
  settings: { requests: number; warmup: number; nonStream: number; concurrency: number; seconds: number; loadRounds: number; chunks: number; intents: number; prefetch: boolean };
  passThrough: PairedSamples;
  /** Pass-through with a new user message each round (fewer rounds): what a chat pays per message. */
  newMessages: PairedSamples;
  nonStream: { direct: number[]; gateway: number[] };
  load: { direct: LoadResult; gateway: LoadResult; proxy?: LoadResult; gatewayNoPrefetch?: LoadResult; gatewayNoRecording?: LoadResult };
  intents: IntentSample[];
  resolveMs: number[];
  /** The tool menu's search for a new message (the search a catalog larger than the menu pays), timed in the gateway process. */
  menuSearchMs: number[];
  project: { tools: number; embedder: string; indexSyncMs: number; toolMenu: number };
  machine: Record<string, unknown>;
}

function loadSummary(r: LoadResult) {
  return {
    requests: r.requests,
    errors: r.errors,
    seconds: round(r.seconds, 2),
    rps: round(r.rps, 1),
    latency_ms: p5099(r.latency),
    ...(r.processUsPerRequest === undefined ? {} : { process_cpu_us_per_request: round(r.processUsPerRequest, 1) }),
    ...(r.threadUsPerRequest === undefined ? {} : { request_thread_cpu_us_per_request: round(r.threadUsPerRequest, 1) }),
    ...(r.firstError === undefined ? {} : { first_error: r.firstError }),
  };
}

export function gatewayReport(input: GatewayBenchInput) {
  const { passThrough: pt, nonStream: ns, intents } = input;
  const firstToken = pairedDiff(pt.gateway.firstToken, pt.direct.firstToken);
  const fullResponse = pairedDiff(pt.gateway.total, pt.direct.total);
  const nsAdded = pairedDiff(ns.gateway, ns.direct);
  const { proxy, gatewayNoPrefetch, gatewayNoRecording } = input.load;
  // The gateway process's CPU per chat against the bare proxy's, both measured in that process under the same load.
  const gatewayCpuUs = input.load.gateway.processUsPerRequest;
  const proxyCpuUs = proxy?.processUsPerRequest;
  const cpuVsBareProxy = gatewayCpuUs === undefined || proxyCpuUs === undefined || proxyCpuUs === 0 ? null : round(gatewayCpuUs / proxyCpuUs, 2);
  const vsBareProxy = proxy === undefined || proxy.rps === 0 ? null : round(input.load.gateway.rps / proxy.rps, 3);
  const prefetchCost = gatewayNoPrefetch === undefined || gatewayNoPrefetch.rps === 0 ? null : round(1 - input.load.gateway.rps / gatewayNoPrefetch.rps, 3);
  // What recording each chat as a kernel execution costs (kernel.record_chats).
  const recordingCost = gatewayNoRecording === undefined || gatewayNoRecording.rps === 0 ? null : round(1 - input.load.gateway.rps / gatewayNoRecording.rps, 3);
  // The same on the thread that serves requests alone: its busy time per request, recorded or not.
  const recordedUs = input.load.gateway.threadUsPerRequest;
  const unrecordedUs = gatewayNoRecording?.threadUsPerRequest;
  const recordingThreadCost = recordedUs === undefined || unrecordedUs === undefined || recordedUs === 0 ? null : round(1 - unrecordedUs / recordedUs, 3);
  // Loop overhead per request: what is left of the total after the parts measured on their own.
  // Resolution is timed separately in the gateway process; its i-th sample is paired with the i-th request.
  const overhead = intents.map((s, i) => s.totalMs - s.turn1Ms - s.turn2Ms - s.toolMs - (input.resolveMs[i] ?? 0));
  const parts = {
    upstream_turn1: p5099(intents.map((s) => s.turn1Ms)),
    upstream_turn2: p5099(intents.map((s) => s.turn2Ms)),
    resolution: p5099(input.resolveMs),
    tool_run: p5099(intents.map((s) => s.toolMs)),
  };
  const total = p5099(intents.map((s) => s.totalMs));
  return {
    bench: 'gateway',
    cpu_us_per_request: {
      what: "CPU time of the gateway process (all its threads: PGlite's and the embedder's too) per streamed pass-through chat under load; the bare proxy runs in that process",
      via_gateway: gatewayCpuUs === undefined ? null : round(gatewayCpuUs, 1),
      bare_proxy: proxyCpuUs === undefined ? null : round(proxyCpuUs, 1),
      ratio: cpuVsBareProxy,
    },
    added_ms: { first_token: firstToken, full_response: fullResponse },
    bare_proxy_added_ms: pt.proxy === undefined ? null : { first_token: pairedDiff(pt.proxy.firstToken, pt.direct.firstToken), full_response: pairedDiff(pt.proxy.total, pt.direct.total) },
    requests_per_s: {
      direct: round(input.load.direct.rps, 1),
      via_gateway: round(input.load.gateway.rps, 1),
      ...(proxy === undefined ? {} : { bare_proxy: round(proxy.rps, 1) }),
      ...(gatewayNoPrefetch === undefined ? {} : { via_gateway_without_prefetch: round(gatewayNoPrefetch.rps, 1) }),
      ...(gatewayNoRecording === undefined ? {} : { via_gateway_without_recording: round(gatewayNoRecording.rps, 1) }),
    },
    ratios: { throughput_vs_bare_proxy: vsBareProxy, prefetch_throughput_cost: prefetchCost, recording_throughput_cost: recordingCost, recording_request_thread_cost: recordingThreadCost },
    request_thread_us_per_request: {
      what: "CPU time of the gateway process's main thread per request under load (Linux /proc); the embedded PGlite runs on a thread of its own",
      via_gateway: recordedUs === undefined ? null : round(recordedUs, 1),
      via_gateway_without_recording: unrecordedUs === undefined ? null : round(unrecordedUs, 1),
    },
    added_ms_new_message: {
      requests: input.newMessages.gateway.firstToken.length,
      menu: input.project.tools <= input.project.toolMenu ? 'the whole catalog, no search (it fits the menu)' : 'searched for each new message',
      first_token: pairedDiff(input.newMessages.gateway.firstToken, input.newMessages.direct.firstToken), full_response: pairedDiff(input.newMessages.gateway.total, input.newMessages.direct.total),
    },
    menu_search_ms: { what: 'one tool-menu search for a new message, in the gateway process: what a catalog larger than the menu adds before the upstream call', ...p5099(input.menuSearchMs) },
    added_ms_method: 'percentiles of the paired differences (gateway_i - direct_i) between requests of the same round; the order within a round rotates',
    added_ms_percentile_difference: { first_token: diffOfPercentiles(pt.gateway.firstToken, pt.direct.firstToken), full_response: diffOfPercentiles(pt.gateway.total, pt.direct.total) },
    direct_ms: { headers: p5099(pt.direct.headers), first_token: p5099(pt.direct.firstToken), full_response: p5099(pt.direct.total) },
    via_gateway_ms: { headers: p5099(pt.gateway.headers), first_token: p5099(pt.gateway.firstToken), full_response: p5099(pt.gateway.total) },
    bare_proxy: pt.proxy === undefined ? null : {
      what: 'a bare node:http + undici proxy in the gateway process that copies bytes (reference-proxy.ts): the floor of any Node gateway on this machine',
      via_proxy_ms: { headers: p5099(pt.proxy.headers), first_token: p5099(pt.proxy.firstToken), full_response: p5099(pt.proxy.total) },
    },
    goal: {
      cpu_vs_bare_proxy_at_most: GOAL.cpuVsBareProxy,
      throughput_vs_bare_proxy_at_least: GOAL.throughputVsBareProxy,
      recording_throughput_cost_at_most: GOAL.recordingThroughputCost,
      first_token_added_p50_at_most_ms: GOAL.firstTokenP50Ms,
      prefetch_throughput_cost_at_most: GOAL.prefetchThroughputCost,
      cpu_met: cpuVsBareProxy === null ? null : cpuVsBareProxy <= GOAL.cpuVsBareProxy,
      first_token_met: firstToken.p50 <= GOAL.firstTokenP50Ms,
      throughput_met: vsBareProxy !== null && vsBareProxy >= GOAL.throughputVsBareProxy,
      prefetch_cost_met: prefetchCost === null ? null : prefetchCost <= GOAL.prefetchThroughputCost,
      recording_cost_met: recordingCost === null ? null : recordingCost <= GOAL.recordingThroughputCost,
    },
    non_stream: { requests: ns.direct.length, direct_ms: p5099(ns.direct), via_gateway_ms: p5099(ns.gateway), added_ms: nsAdded },
    load: {
      concurrency: input.settings.concurrency,
      seconds: input.settings.seconds,
      direct: loadSummary(input.load.direct),
      via_gateway: loadSummary(input.load.gateway),
      ...(proxy === undefined ? {} : { bare_proxy: loadSummary(proxy) }),
      ...(gatewayNoPrefetch === undefined ? {} : { via_gateway_without_prefetch: loadSummary(gatewayNoPrefetch) }),
      ...(gatewayNoRecording === undefined ? {} : { via_gateway_without_recording: loadSummary(gatewayNoRecording) }),
    },
    intent: {
      requests: intents.length,
      intent: INTENT_TEXT,
      tool: intents[0]?.tool ?? null,
      tool_ok: intents.every((s) => s.status === 'ok'),
      total_ms: total,
      parts_ms: parts,
      loop_overhead_ms: p5099(overhead),
      loop_overhead_method: 'per request: total - turn1 - turn2 - tool durationMs - resolution (i-th resolve sample); p50/p99 of that',
      loop_overhead_from_p50s_ms: round(total.p50 - parts.upstream_turn1.p50 - parts.upstream_turn2.p50 - parts.resolution.p50 - parts.tool_run.p50),
    },
    settings: input.settings,
    project: { tools: input.project.tools, embedder: input.project.embedder, index_sync_ms: round(input.project.indexSyncMs, 0) },
    machine: input.machine,
  };
}

export type GatewayReport = ReturnType<typeof gatewayReport>;

const ms = (x: number) => x.toFixed(3).padStart(9);
const row = (label: string, p: P50P99) => `  ${label.padEnd(36)}${ms(p.p50)}${ms(p.p99)}`;
const yes = (ok: boolean) => (ok ? 'met' : 'NOT met');

export function printGatewayReport(r: GatewayReport): void {
  const s = r.settings;
  const cpu = r.cpu_us_per_request;
  const lines = [
    `CPU per pass-through chat under load (gateway process, all threads): via gateway ${cpu.via_gateway?.toFixed(0) ?? '-'} µs, bare proxy ${cpu.bare_proxy?.toFixed(0) ?? '-'} µs: ${cpu.ratio ?? '-'}×`,
    `streaming pass-through: ${s.requests} rounds after ${s.warmup} warm-up, ${s.chunks} chunks per answer   p50 ms   p99 ms`,
    row('response headers, direct', r.direct_ms.headers),
    row('response headers, via gateway', r.via_gateway_ms.headers),
    row('first token, direct', r.direct_ms.first_token),
    row('first token, via gateway', r.via_gateway_ms.first_token),
    row('first token, added (paired)', r.added_ms.first_token),
    row('full response, direct', r.direct_ms.full_response),
    row('full response, via gateway', r.via_gateway_ms.full_response),
    row('full response, added (paired)', r.added_ms.full_response),
    row('first token, added (p_gw - p_direct)', r.added_ms_percentile_difference.first_token),
    row('full resp., added (p_gw - p_direct)', r.added_ms_percentile_difference.full_response),
    ...(r.bare_proxy === null || r.bare_proxy_added_ms === null
      ? []
      : [
          row('first token, via bare proxy', r.bare_proxy.via_proxy_ms.first_token),
          row('full response, via bare proxy', r.bare_proxy.via_proxy_ms.full_response),
          row('first token, bare proxy added (paired)', r.bare_proxy_added_ms.first_token),
          row('full response, bare proxy added', r.bare_proxy_added_ms.full_response),
        ]),
    `new user message each request: ${r.added_ms_new_message.requests} rounds (tool menu: ${r.added_ms_new_message.menu})`,
    row('first token, added (paired)', r.added_ms_new_message.first_token),
    row('full response, added (paired)', r.added_ms_new_message.full_response),
    row('menu search, one new message', r.menu_search_ms),
    `non-stream: ${r.non_stream.requests} pairs`,
    row('full response, direct', r.non_stream.direct_ms),
    row('full response, via gateway', r.non_stream.via_gateway_ms),
    row('full response, added (paired)', r.non_stream.added_ms),
    `requests per second: ${r.load.concurrency} concurrent clients, ${r.load.seconds} s each; the gateways (opened alike, each warmed) ${r.settings.loadRounds} rounds each, the order rotating (streaming)`,
    ...(['direct', 'via_gateway', 'via_gateway_without_prefetch', 'via_gateway_without_recording', 'bare_proxy'] as const).flatMap((k) => {
      const l = r.load[k];
      if (l === undefined) return [];
      const line = `  ${k.replaceAll('_', ' ').padEnd(30)}${l.rps.toFixed(1).padStart(9)} req/s  (${l.requests} requests, ${l.errors} errors; latency p50 ${l.latency_ms.p50.toFixed(2)} ms, p99 ${l.latency_ms.p99.toFixed(2)} ms)`;
      if (l.process_cpu_us_per_request === undefined) return line;
      const thread = l.request_thread_cpu_us_per_request === undefined ? '' : `, ${l.request_thread_cpu_us_per_request.toFixed(0)} on the request thread`;
      return [line, `  ${''.padEnd(30)}gateway process CPU ${l.process_cpu_us_per_request.toFixed(0)} µs per request${thread}`];
    }),
    `intent loop: ${r.intent.requests} requests, [TOOL: ${r.intent.intent}] -> ${r.intent.tool ?? '-'} (${r.intent.tool_ok ? 'ok' : 'NOT ok'})   p50 ms   p99 ms`,
    row('whole request via gateway', r.intent.total_ms),
    row('upstream turn 1 (direct)', r.intent.parts_ms.upstream_turn1),
    row('upstream turn 2 (direct)', r.intent.parts_ms.upstream_turn2),
    row('resolution (warm, in-process)', r.intent.parts_ms.resolution),
    row('tool run (result durationMs)', r.intent.parts_ms.tool_run),
    row('loop overhead (total - parts)', r.intent.loop_overhead_ms),
    `  loop overhead from p50s: ${r.intent.loop_overhead_from_p50s_ms.toFixed(3)} ms`,
    `goal: gateway CPU per pass-through chat ≤ ${GOAL.cpuVsBareProxy}× the bare proxy's — ${cpu.ratio ?? '-'}×${r.goal.cpu_met === null ? '' : `: ${yes(r.goal.cpu_met)}`}`,
    `goal: throughput ≥ ${GOAL.throughputVsBareProxy} of the bare proxy's — ${r.ratios.throughput_vs_bare_proxy ?? '-'}: ${yes(r.goal.throughput_met)}`,
    `goal: recording chats as kernel executions costs ≤ ${GOAL.recordingThroughputCost} of throughput — ${r.ratios.recording_throughput_cost ?? '-'}${r.goal.recording_cost_met === null ? '' : `: ${yes(r.goal.recording_cost_met)}`}; ${r.ratios.recording_request_thread_cost ?? '-'} of the request thread (${r.request_thread_us_per_request.via_gateway ?? '-'} µs of it a chat recorded, ${r.request_thread_us_per_request.via_gateway_without_recording ?? '-'} not)`,
    `goal: first token added p50 ≤ ${GOAL.firstTokenP50Ms} ms for pass-through — ${r.added_ms.first_token.p50.toFixed(3)}: ${yes(r.goal.first_token_met)}`,
    `goal: prefetch costs ≤ ${GOAL.prefetchThroughputCost} of throughput — ${r.ratios.prefetch_throughput_cost ?? '- (run without --no-prefetch to measure)'}${r.goal.prefetch_cost_met === null ? '' : `: ${yes(r.goal.prefetch_cost_met)}`}`,
  ];
  console.log(lines.join('\n'));
}
