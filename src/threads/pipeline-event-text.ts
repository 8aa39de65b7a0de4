import { textHead } from '../base/text-cut.js';
import type { PipelineEvent } from './run-pipeline.js';

/** A stage's result (or why it failed) as one line of at most 200 characters. */
const RESULT_CHARS = 200;

export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= RESULT_CHARS ? flat : `${textHead(flat, RESULT_CHARS)}…`;
}

/** One event of a pipeline run as people and agents read it: `kiwi pipelines run|resume`, and MCP progress notifications. */
export function pipelineEventText(event: PipelineEvent): string {
  if (event.type === 'run') return `pipeline run ${event.run}: ${event.pipeline}`;
  if (event.type === 'stage-start') return `[${event.stage}] ${event.resumed ? 'resumed' : 'started'}: thread ${event.thread}`;
  const o = event.outcome;
  const why = o.error === undefined ? '' : ` (${oneLine(o.error)})`;
  return `[${o.stage}] ${event.reused ? 'completed before, reused' : o.status}${why}${o.result === '' ? '' : `: ${oneLine(o.result)}`}`;
}
