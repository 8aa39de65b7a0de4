import type { ThreadLine, ThreadRecord, ThreadStatus } from './thread-store.js';

/**
 * Why a thread failed, in one word, from its transcript alone (so an old transcript is classified
 * the same way as a new one). The rules, first match wins:
 *
 * 1. `escalated`: the agent asked for a person (`help escalate`).
 * 2. `cancelled`: whoever started it stopped it.
 * 3. `model_error`: the run broke on the upstream model (an HTTP error, an unknown model, a
 *    timeout); `error`: it broke on anything else (the resolver, the gateway).
 * 4. `limit:<name>`: a limit stopped it (`limit:turns`, `limit:tokens`, `limit:budget`,
 *    `limit:repeats`, `limit:tool_calls`, `limit:duration`).
 * 5. It completed, but its last intent did not succeed and nothing after it did: `denied` (the
 *    proxy refused the call, or a hook answered `fail` or `abort`: a policy's decision, not a
 *    fault of the directive), `tool_error` (the call failed, or the tool reported an error),
 *    `unresolved` (no call was made for it), `stuck` (the agent signalled `help stuck` and then
 *    gave up).
 *
 * Anything else succeeded: no class.
 */

export type FailureClass = `limit:${string}` | 'escalated' | 'cancelled' | 'model_error' | 'error' | 'denied' | 'tool_error' | 'unresolved' | 'stuck';

/** The end of a thread as classification reads it. */
export interface ThreadEnding {
  status: ThreadStatus;
  limit?: string;
  /** The error code of a run that broke. */
  code?: string;
}

/** What the upstream model's failures are thrown as (llm/, upstreams.ts). */
const MODEL_CODES = new Set(['UPSTREAM_HTTP', 'UNKNOWN_MODEL', 'HTTP_TIMEOUT', 'REQUEST_TIMEOUT']);
/** A hook's `fail` (the call) and `abort` (the whole run): the policy's answer, classed with refusals. */
const HOOK_CODES = new Set(['HOOK_FAILED', 'HOOK_ABORTED']);

type LastOutcome = 'ok' | 'denied' | 'tool_error' | 'unresolved' | 'stuck' | undefined;

export interface FailureTally {
  /** Each record of the thread, in order. */
  observe(record: ThreadRecord): void;
  classify(ending: ThreadEnding): FailureClass | undefined;
}

export function createFailureTally(): FailureTally {
  let last: LastOutcome;
  return {
    observe(record) {
      if (record.type === 'result') last = record.status === 'denied' || HOOK_CODES.has(record.code ?? '') ? 'denied' : record.status === 'error' || record.is_error === true ? 'tool_error' : 'ok';
      else if (record.type === 'unresolved') last = 'unresolved';
      else if (record.type === 'help' && record.action === 'stuck') last = 'stuck';
    },
    classify(ending) {
      if (ending.status === 'escalated') return 'escalated';
      if (ending.status === 'cancelled') return 'cancelled';
      if (ending.status === 'failed' && HOOK_CODES.has(ending.code ?? '')) return 'denied';
      if (ending.status === 'failed') return ending.code !== undefined && MODEL_CODES.has(ending.code) ? 'model_error' : 'error';
      if (ending.limit !== undefined) return `limit:${ending.limit}`;
      return last === 'ok' || last === undefined ? undefined : last;
    },
  };
}

/** A whole transcript's class: the one its end records, else worked out; undefined when it succeeded or has not ended. */
export function classifyThread(lines: readonly ThreadLine[]): FailureClass | undefined {
  const end = lines.at(-1);
  if (end?.type !== 'end') return undefined;
  if (end.failure !== undefined) return end.failure as FailureClass;
  const tally = createFailureTally();
  for (const line of lines) if (line.type !== 'thread' && line.type !== 'end') tally.observe(line);
  return tally.classify(end);
}
