import { executePlan, type PrimitiveDeps } from '../../executor/execute-plan.js';
import { KiwiError } from '../../errors.js';
import { succeeded, type CallHandler } from '../call-state.js';
import type { OkOutcome, ThreadPort } from '../tool-call.js';

/** The end of the chain: the allowed plan runs on its primitive, a thread plan on the gateway's thread runtime, a read answers at once. */
export function runPlan(deps: { primitives: PrimitiveDeps; threads?: ThreadPort }): CallHandler {
  return async (call) => {
    const plan = call.allowed?.plan;
    if (plan === undefined) throw new KiwiError('INTERNAL', `call ${call.callId} reached the executor without an allowed plan`);
    const { request } = call;
    if (plan.kind === 'read') return succeeded(call, plan.result);
    if (plan.kind === 'thread' && deps.threads !== undefined) {
      request.thread?.onSpawn?.();
      return succeeded(call, await deps.threads.spawn(plan, request));
    }
    return succeeded(call, await executePlan(plan, deps.primitives, request.signal, request.tool));
  };
}

/**
 * The end of `reuse`: the earlier call's result, unless a person was asked — a person is asked
 * before a call runs, never after, so that call runs itself (through `run`: checkpoint, executor).
 */
export function reuseResult(earlier: OkOutcome, run: CallHandler): CallHandler {
  return (call) => {
    if (call.approval !== undefined) {
      call.reusedFrom = undefined;
      return run(call);
    }
    return Promise.resolve(succeeded(call, earlier.result));
  };
}

