import { createDataFence } from '../base/data-fence.js';
import { KiwiError } from '../base/errors.js';
import type { LoopLimits } from '../loop/loop-limits.js';
import type { Directive } from '../registry/types.js';
import { textTail } from '../base/text-cut.js';
import type { ThreadLine } from './thread-store.js';
import { threadLineText } from './thread-text.js';

/**
 * Where a stopped thread goes on from: what it already used of its limits, and the record of what
 * it did, which the agent reads before it goes on. The record holds tools' output, so it goes in
 * a data fence; its oldest part is cut first when it is long.
 */
export interface ResumePoint {
  done: { turns: number; calls: number; steps: number };
  /** For the agent: why the thread stopped, what it did, and to go on from there. */
  recap: string;
}

/** Limits that bound a whole thread: one that ran out ends it for good. Out of time or budget, it may go on (the budget is asked again). */
const FINAL_LIMITS = new Set(['turns', 'tool_calls', 'tokens', 'repeats']);
const MAX_RECAP_CHARS = 24_000;
const MAX_ITEM_CHARS = 2_000;

export function resumePoint(lines: readonly ThreadLine[], directive: Directive, limits: LoopLimits, message: string | undefined): ResumePoint {
  const id = lines[0]?.type === 'thread' ? lines[0].id : '?';
  const last = lines.at(-1);
  if (last?.type === 'end') {
    if (last.status === 'completed' && last.limit === undefined) {
      throw new KiwiError('CONFLICT', `thread ${id} completed; run the directive ${directive.name} again for a new thread`);
    }
    if (last.limit !== undefined && FINAL_LIMITS.has(last.limit)) {
      throw new KiwiError('CONFLICT', `thread ${id} used up its ${last.limit} limit; raise it in the directive ${directive.name}'s <limits> and run the directive again`);
    }
  }
  const done = { turns: 0, calls: 0, steps: 0 };
  for (const line of lines) {
    if (line.type === 'turn') done.turns = Math.max(done.turns, line.turn);
    else if (line.type === 'call' || line.type === 'unresolved') done.calls++;
    else if (line.type === 'result') done.steps++;
  }
  if (done.turns >= limits.maxTurns || done.calls >= limits.maxToolCalls) {
    const which = done.turns >= limits.maxTurns ? `all ${limits.maxTurns} turns` : `all ${limits.maxToolCalls} tool calls`;
    throw new KiwiError('CONFLICT', `thread ${id} already used ${which} its directive ${directive.name} allows; raise its <limits> and run the directive again`);
  }
  const why = last?.type === 'end' ? `it ended ${last.status}${last.limit ? ` at its ${last.limit} limit` : ''}${last.error ? `: ${last.error}` : ''}` : 'it was cut short (the process running it stopped)';
  const record = textTail(lines.slice(1).map((l) => threadLineText(l, { turn: MAX_ITEM_CHARS, item: MAX_ITEM_CHARS })).join('\n'), MAX_RECAP_CHARS);
  const fence = createDataFence([record]);
  const recap = [
    `This thread ran before and stopped: ${why}. What it did, as recorded (oldest cut first when long):`,
    fence.wrap(record),
    fence.notice,
    'Go on from where it stopped: do not repeat calls that already succeeded.',
    ...(message === undefined ? [] : [`The person resuming it says: ${message}`]),
  ].join('\n');
  return { done, recap };
}
