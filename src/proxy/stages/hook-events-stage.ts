import { resultPreview } from '../../audit/result-preview.js';
import { eventCode, type CallHookDeps } from '../call-hooks.js';
import { outcomeOfError, type CallStage } from '../call-state.js';
import type { CallOutcome } from '../tool-call.js';
import { fireOnCall } from './fire-hooks.js';

/**
 * The hooks on how a call ended: `after_call` when it ran, `denied` (or `limit` for a rate limit)
 * when any stage refused it, `error` when it failed. A hook that fails here is only noted: what
 * happened cannot be refused any more.
 */
export function hookEventsStage(hooks: CallHookDeps): CallStage {
  return (next) => async (call) => {
    let outcome: CallOutcome;
    try {
      outcome = await next(call);
    } catch (error) {
      outcome = outcomeOfError(call, error);
    }
    if (outcome.status === 'ok') {
      await fireOnCall(hooks, call, 'after_call', { detail: { result: resultPreview(outcome.result) } });
    } else if (outcome.status === 'denied') {
      const code = call.refusal ?? 'permission_denied';
      await fireOnCall(hooks, call, code === 'rate_limited' ? 'limit' : 'denied', { code, detail: { reason: outcome.reason, missing: call.request.tool } });
    } else {
      await fireOnCall(hooks, call, 'error', { code: eventCode(outcome.error.code), detail: { message: outcome.error.message } }).catch(() => undefined);
    }
    return outcome;
  };
}
