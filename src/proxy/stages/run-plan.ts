import type { Checkpointer } from '../../checkpoints/checkpointer.js';
import type { RestoreOutcome } from '../../checkpoints/restore-checkpoint.js';
import type { ToolResult } from '../../contracts/tool-result.js';
import { executePlan, type PrimitiveDeps } from '../../executor/execute-plan.js';
import { KiwiError } from '../../base/errors.js';
import { succeeded, type CallHandler } from '../call-state.js';
import type { ItemCreations, OkOutcome, ThreadPort } from '../tool-call.js';

/** The end of the chain: the allowed plan runs on its primitive, a thread plan on the gateway's thread runtime, a read answers at once. */
export function runPlan(deps: { primitives: PrimitiveDeps; threads?: ThreadPort; checkpoints?: Pick<Checkpointer, 'restore'>; creations?: ItemCreations }): CallHandler {
  return async (call) => {
    const plan = call.verdict?.allowed ? call.planned?.plan : undefined;
    if (plan === undefined) throw new KiwiError('INTERNAL', `call ${call.callId} reached the executor without an allowed plan`);
    const { request } = call;
    const { target, caller, run } = request;
    if (plan.kind === 'read') return succeeded(call, plan.result);
    if (plan.kind === 'rollback') {
      if (deps.checkpoints === undefined) throw new KiwiError('INVALID_INPUT', 'checkpoints are not restored here; run `kiwi checkpoints restore ID`');
      const outcome = await deps.checkpoints.restore(plan.checkpoint, { tool: target.tool, callId: call.callId, session: caller.session, client: caller.client }, run?.signal);
      return succeeded(call, rollbackResult(outcome));
    }
    if (plan.kind === 'create') {
      if (deps.creations === undefined) throw new KiwiError('INVALID_INPUT', 'items are not created here; create them through a project (`kiwi serve` or `kiwi mcp`)');
      return succeeded(call, await deps.creations.land(plan, request));
    }
    if (plan.kind === 'thread' && deps.threads !== undefined) {
      run?.thread?.onSpawn?.();
      return succeeded(call, await deps.threads.spawn(plan, request));
    }
    return succeeded(call, await executePlan(plan, deps.primitives, run?.signal, target.tool));
  };
}

/**
 * The end of `reuse`: the earlier call's result, unless a person was asked — a person is asked
 * before a call runs, never after, so that call runs itself (through `run`: checkpoint, executor).
 */
export function reuseResult(earlier: OkOutcome, run: CallHandler): CallHandler {
  return (call) => {
    // The audit sees the approval too, and files the call as run, not reused.
    if (call.approval !== undefined) return run(call);
    return Promise.resolve(succeeded(call, earlier.result));
  };
}


/** What a rollback did, as `kiwi checkpoints restore --json` says it, with the checkpoint that undoes it. */
function rollbackResult(outcome: RestoreOutcome): ToolResult {
  const { plan, checkpoint, undo } = outcome;
  const short = (id: string): string => id.slice(0, 12);
  const text =
    plan.write.length + plan.remove.length === 0
      ? `the work tree already matches checkpoint ${short(checkpoint)}; nothing was changed`
      : `restored checkpoint ${short(checkpoint)}: ${plan.write.length} file(s) written back, ${plan.remove.length} removed; HEAD, branches and the index are unchanged. Undo: rollback to ${short(undo ?? '')}`;
  return { text, data: { checkpoint, ...plan, ...(undo ? { undo } : {}) }, isError: false };
}
