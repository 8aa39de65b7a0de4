import { resultPreview } from '../../audit/result-preview.js';
import { eventCode, type CallEventName, type CallHookDeps, type Fired } from '../call-hooks.js';
import { failedByHook, outcomeOfError, type CallHandler, type CallStage, type CallState } from '../call-state.js';
import type { Steering } from '../hook-steering.js';
import type { CallOutcome } from '../tool-call.js';
import { fireOnCall, noteSteering } from './fire-hooks.js';

/**
 * The hooks on how a call ended: `after_call` when it ran, `denied` (or `limit` for a rate limit)
 * when any stage refused it, `error` when it failed. A hook that fails here is only noted: what
 * happened cannot be refused any more. A steering hook may still decide: `retry` runs the call
 * again (`run`: the executor alone, past the gates it cleared once) at most its `max` times,
 * firing these events again on each run's end; `fail` makes a result an error with the hook's
 * reason; `abort` stops the run that made the call. A skipped call ran nothing and fires nothing.
 */
export function hookEventsStage(hooks: CallHookDeps, run: CallHandler): CallStage {
  return (next) => async (call) => {
    let outcome = await settled(next, call);
    for (;;) {
      if (outcome.status === 'ok' && outcome.skipped !== undefined) return outcome;
      const [name, fired] = await fireEnd(hooks, call, outcome);
      const steer = fired.steer;
      if (steer === undefined) return outcome;
      noteSteering(call, name, steer);
      if (steer.decision !== 'retry' || !mayRetry(call, name, steer)) return steered(call, name, steer, outcome);
      outcome = await settled(run, call);
    }
  };
}

async function settled(handler: CallHandler, call: CallState): Promise<CallOutcome> {
  try {
    return await handler(call);
  } catch (error) {
    return outcomeOfError(call, error);
  }
}

async function fireEnd(hooks: CallHookDeps, call: CallState, outcome: CallOutcome): Promise<[CallEventName, Fired]> {
  if (outcome.status === 'ok') return ['after_call', await fireOnCall(hooks, call, 'after_call', { detail: { result: resultPreview(outcome.result) }, steers: true })];
  if (outcome.status === 'denied') {
    const code = call.refusal ?? 'permission_denied';
    const name = code === 'rate_limited' ? 'limit' : 'denied';
    return [name, await fireOnCall(hooks, call, name, { code, detail: { reason: outcome.reason, missing: call.request.target.tool }, steers: true })];
  }
  const fired = await fireOnCall(hooks, call, 'error', { code: eventCode(outcome.error.code), detail: { message: outcome.error.message }, steers: true }).catch(() => ({ notes: [], directives: [] }));
  return ['error', fired];
}

/** Whether a `retry` may run the call again; when it may not, the record says why. */
function mayRetry(call: CallState, name: CallEventName, steer: Steering): boolean {
  const max = steer.max ?? 1;
  const why =
    name !== 'error' && name !== 'after_call'
      ? `a ${name} call did not run`
      : call.attempts === 0
        ? 'the call never ran'
        : call.attempts > max
          ? `it ran ${call.attempts} times, and the hook allows ${max} ${max === 1 ? 'retry' : 'retries'}`
          : call.request.run?.signal?.aborted
            ? 'its caller stopped waiting'
            : undefined;
  if (why !== undefined) call.notes.push(`retry by the hook at ${steer.hook} not taken: ${why}`);
  return why === undefined;
}

function steered(call: CallState, name: CallEventName, steer: Steering, outcome: CallOutcome): CallOutcome {
  if (steer.decision === 'abort') return { ...outcome, abort: failedByHook(call, steer).error.message };
  if (steer.decision === 'fail' && outcome.status !== 'denied') return failedByHook(call, steer);
  if (steer.decision === 'fail') call.notes.push(`fail by the hook at ${steer.hook} changes nothing on a call already refused`);
  if (steer.decision === 'skip') call.notes.push(`skip by the hook at ${steer.hook} is for a call before it runs; on ${name} it changes nothing`);
  return outcome;
}
