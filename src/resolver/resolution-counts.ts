import { decisionOf, type PreviewDecision } from './resolution-preview.js';
import type { Resolution } from './types.js';

/**
 * How the intents of this process's chats were resolved, by decision (resolution-preview.ts):
 * the console's resolution rate and GET /metrics. Per process, like every counter of /metrics: a
 * deployment of replicas sums them (Prometheus does).
 */
export interface ResolutionCounts {
  count(resolution: Resolution): void;
  snapshot(): Record<PreviewDecision, number>;
}

export function createResolutionCounts(): ResolutionCounts {
  const counts: Record<PreviewDecision, number> = { resolved: 0, asked_back: 0, unresolved: 0 };
  return {
    count(resolution) {
      counts[decisionOf(resolution)]++;
    },
    snapshot: () => ({ ...counts }),
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
