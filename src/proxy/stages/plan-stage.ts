import type { AuthorizeDeps } from '../authorization.js';
import { callContext } from '../call-context.js';
import type { CallStage } from '../call-state.js';
import { planItem } from '../plan-item.js';
import { planTool } from '../plan-tool.js';

/**
 * What the call would run (plan-tool.ts, plan-item.ts): its arguments checked and its plan, or
 * where that stopped. It refuses nothing itself: authorize, next, judges the plan and reports
 * what stopped it in the order a caller meets the checks.
 */
export function planStage(deps: AuthorizeDeps): CallStage {
  return (next) => async (call) => {
    const { request } = call;
    const ctx = callContext(deps.context, request.caller.context);
    const item = request.target.item;
    call.planned = item === undefined ? await planTool(request, ctx, deps) : planItem({ ...request, target: { ...request.target, item } }, ctx, deps);
    return next(call);
  };
}
