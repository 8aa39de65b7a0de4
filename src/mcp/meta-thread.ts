import { isKiwiError } from '../errors.js';
import type { Directive } from '../registry/types.js';
import type { ThreadOutcome, ThreadStart } from '../threads/run-thread.js';
import { errorResult, type MetaContext, type MetaResult } from './meta-common.js';

/** Runs a directive as a thread (the gateway's `runThread`). */
export type ThreadRunner = (start: ThreadStart) => Promise<ThreadOutcome>;

/**
 * `execute` of a directive where the gateway can run threads: the directive runs as one, with the
 * session's client and rights, and the answer is the thread's outcome (`status`, `steps_taken`,
 * `result`, `audit`, and the thread's id for `kiwi threads show`).
 */
export async function runDirectiveThread(ctx: MetaContext, run: ThreadRunner, directive: Directive, inputs: Record<string, unknown>, signal?: AbortSignal): Promise<MetaResult> {
  let outcome: ThreadOutcome;
  try {
    outcome = await run({ directive: directive.name, inputs, client: ctx.caller.client, ...(ctx.caller.context ? { context: ctx.caller.context } : {}), ...(signal ? { signal } : {}) });
  } catch (error) {
    if (isKiwiError(error)) return errorResult(error.code, error.message);
    throw error;
  }
  const body = { thread: outcome.id, status: outcome.status, steps_taken: outcome.steps_taken, result: outcome.result, ...(outcome.limit ? { limit: outcome.limit } : {}), audit: outcome.audit };
  return { content: [{ type: 'text', text: JSON.stringify(body, null, 2) }], structuredContent: body, ...(outcome.status === 'completed' ? {} : { isError: true }) };
}
