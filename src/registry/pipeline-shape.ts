import type { Pipeline } from './types.js';

/** `a → [b | c] → d`: a pipeline's groups in order, a parallel group in brackets. */
export function pipelineShape(pipeline: Pipeline): string {
  return pipeline.groups.map((g) => (g.length === 1 ? (g[0]?.name ?? '') : `[${g.map((s) => s.name).join(' | ')}]`)).join(' → ');
}
