import { decisionOf, type PreviewDecision } from './resolution-preview.js';
import type { FallbackUse, Resolution } from './types.js';

/**
 * How the intents of this process's chats were resolved, by decision (resolution-preview.ts):
 * the console's resolution rate and GET /metrics. Per process, like every counter of /metrics: a
 * deployment of replicas sums them (Prometheus does).
 */
export interface ResolutionCounts {
  count(resolution: Resolution): void;
  snapshot(): Record<PreviewDecision, number>;
  /** What the fallback model was asked and what it cost (resolver.yaml `fallback:`). */
  fallback(): FallbackCounters;
}

export interface FallbackCounters {
  asked: Record<FallbackUse['outcome'], number>;
  seconds: number;
  inputTokens: number;
  outputTokens: number;
  /** Of the priced models only. */
  usd: number;
}

export function createResolutionCounts(): ResolutionCounts {
  const counts: Record<PreviewDecision, number> = { resolved: 0, asked_back: 0, unresolved: 0 };
  const fallback: FallbackCounters = { asked: { called: 0, refused: 0, declined: 0, failed: 0 }, seconds: 0, inputTokens: 0, outputTokens: 0, usd: 0 };
  return {
    count(resolution) {
      counts[decisionOf(resolution)]++;
      const used = resolution.fallback;
      if (used === undefined) return;
      fallback.asked[used.outcome]++;
      fallback.seconds += used.ms / 1000;
      fallback.inputTokens += used.inputTokens ?? 0;
      fallback.outputTokens += used.outputTokens ?? 0;
      fallback.usd += used.usd ?? 0;
    },
    snapshot: () => ({ ...counts }),
    fallback: () => ({ ...fallback, asked: { ...fallback.asked } }),
  };
}

/** `resolve`, each answer counted. */
export function countingResolve<A extends unknown[]>(resolve: (...args: A) => Promise<Resolution>, counts: ResolutionCounts): (...args: A) => Promise<Resolution> {
  return async (...args) => {
    const resolution = await resolve(...args);
    counts.count(resolution);
    return resolution;
  };
}
