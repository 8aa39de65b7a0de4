import type { CallHookDeps } from '../call-hooks.js';
import { failedByHook, refused, skipped, type CallStage } from '../call-state.js';
import { fireOnCall, noteSteering } from './fire-hooks.js';

/**
 * The `before_call` hooks, on the checked arguments: they may refuse the call, ask that a person
 * approve it, or steer it: `skip` (not run, and no error), `fail` or `abort` (not run, and an
 * error with the hook's reason; `abort` also stops the run that made it). A `retry` has nothing
 * to run again yet, and is only noted.
 */
export function hookGateStage(hooks: CallHookDeps): CallStage {
  return (next) => async (call) => {
    const before = await fireOnCall(hooks, call, 'before_call', { steers: true });
    if (before.deny !== undefined) return refused(call, before.deny, 'hook_denied');
    const steer = before.steer;
    if (steer !== undefined) {
      noteSteering(call, 'before_call', steer);
      if (steer.decision === 'skip') return skipped(call, steer);
      if (steer.decision === 'fail' || steer.decision === 'abort') return failedByHook(call, steer);
      if (steer.decision === 'retry') call.notes.push(`retry by the hook at ${steer.hook} is for a call that ran and failed; before the call it changes nothing`);
    }
    if (before.approval !== undefined) call.hookAsks = before.approval;
    return next(call);
  };
}
