import type { CallHookDeps } from '../call-hooks.js';
import { refused, type CallStage } from '../call-state.js';
import { fireOnCall } from './fire-hooks.js';

/** The `before_call` hooks, on the checked arguments: they may refuse the call, or ask that a person approve it. */
export function hookGateStage(hooks: CallHookDeps): CallStage {
  return (next) => async (call) => {
    const before = await fireOnCall(hooks, call, 'before_call', {});
    if (before.deny !== undefined) return refused(call, before.deny, 'hook_denied');
    if (before.approval !== undefined) call.hookAsks = before.approval;
    return next(call);
  };
}
