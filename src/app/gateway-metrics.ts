import type { MetricFamily } from '../base/metric-family.js';
import type { PrefetchCounters } from '../prefetch/types.js';
import type { PreviewDecision } from '../resolver/resolution-preview.js';
import type { FallbackCounters } from '../resolver/resolution-counts.js';

/**
 * The gateway's own counters, the ones GET /metrics serves as JSON (and `kiwi stats` prints),
 * in Prometheus form: `kiwi_*`, times in seconds as Prometheus has them.
 */

// A type, not an interface: the JSON form of /metrics takes it as a plain record.
export type GatewayMetrics = {
  uptime_s: number;
  prefetch: PrefetchCounters;
  /** The intents of chats by how they were resolved (resolver/resolution-counts.ts). */
  resolution: Record<PreviewDecision, number>;
  /** The resolver's fallback model: asked by outcome, and its time, tokens and cost. */
  fallback: FallbackCounters;
  transitions: { tools: number; pairs: number; observations: number };
};

/** Each prefetch counter's name (without `kiwi_prefetch_` and `_total`) and help; `ms` ones are shown in seconds. */
const PREFETCH: Record<keyof PrefetchCounters, [name: string, help: string, ms?: true]> = {
  snapshots: ['snapshots', 'Snapshots of streamed text taken for prediction'],
  predictions: ['predictions', 'Intents predicted from snapshots'],
  prefetches: ['prefetches', 'Retrievals run ahead of an intent'],
  hits: ['hits', 'Intents that reused a prefetched retrieval'],
  misses: ['misses', 'Intents resolved the normal way although prefetch was on'],
  wasted: ['wasted', 'Prefetched retrievals that expired or were evicted unused'],
  speculativeStarted: ['speculative_started', 'Read-only tool runs started ahead of their intent'],
  speculativeRefused: ['speculative_refused', 'Confident read-only predictions not run ahead'],
  speculativeUsed: ['speculative_used', 'Speculative results used as the real call'],
  speculativeDiscarded: ['speculative_discarded', 'Speculative results not used'],
  savedMs: ['saved_seconds', 'Search and tool time the hits did not have to spend (estimated)', true],
  predictorMs: ['predictor_seconds', 'Time spent predicting (embedding and search of snapshots)', true],
  dropped: ['dropped', 'Snapshots dropped unpredicted because the queue was full'],
  matchMs: ['match_seconds', 'Time spent scanning the prefetch cache for a match', true],
  verified: ['verified', 'Hits checked against the normal path'],
  disagreements: ['disagreements', 'Checked hits that answered differently from the normal path'],
};

export function gatewayMetricFamilies(m: GatewayMetrics): MetricFamily[] {
  return [
    { name: 'kiwi_uptime_seconds', help: 'Seconds since the gateway started', type: 'gauge', samples: [{ value: m.uptime_s }] },
    {
      name: 'kiwi_intents_total',
      help: 'Intents of chats by how they were resolved: resolved (the call ran), asked_back (a tool fits; the agent was asked for values or the exact call), unresolved',
      type: 'counter',
      samples: Object.entries(m.resolution).map(([decision, value]) => ({ labels: { decision }, value })),
    },
    {
      name: 'kiwi_resolver_fallback_total',
      help: "Intents the resolver's fallback model was asked about, by outcome: called (its call ran), refused (a check stopped its call), declined (it called nothing), failed",
      type: 'counter',
      samples: Object.entries(m.fallback.asked).map(([outcome, value]) => ({ labels: { outcome }, value })),
    },
    { name: 'kiwi_resolver_fallback_seconds_total', help: "Time spent waiting for the resolver's fallback model", type: 'counter', samples: [{ value: m.fallback.seconds }] },
    {
      name: 'kiwi_resolver_fallback_tokens_total',
      help: "Tokens the resolver's fallback model read (input) and wrote (output)",
      type: 'counter',
      samples: [
        { labels: { direction: 'input' }, value: m.fallback.inputTokens },
        { labels: { direction: 'output' }, value: m.fallback.outputTokens },
      ],
    },
    { name: 'kiwi_resolver_fallback_spend_usd_total', help: "US dollars spent on the resolver's fallback model (priced models only)", type: 'counter', samples: [{ value: m.fallback.usd }] },
    ...Object.entries(PREFETCH).map(([key, [name, help, ms]]): MetricFamily => {
      const value = m.prefetch[key as keyof PrefetchCounters];
      return { name: `kiwi_prefetch_${name}_total`, help, type: 'counter', samples: [{ value: ms ? value / 1000 : value }] };
    }),
    { name: 'kiwi_transitions_tools', help: 'Tools the learned tool-to-tool transition model knows', type: 'gauge', samples: [{ value: m.transitions.tools }] },
    { name: 'kiwi_transitions_pairs', help: 'Tool pairs in the transition model', type: 'gauge', samples: [{ value: m.transitions.pairs }] },
    { name: 'kiwi_transitions_observations', help: 'Calls the transition model learned from', type: 'gauge', samples: [{ value: m.transitions.observations }] },
  ];
}
