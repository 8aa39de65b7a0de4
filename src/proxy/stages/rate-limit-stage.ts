import type { PermissionContext } from '../../policy/permission-context.js';
import type { RateLimiter } from '../../policy/rate-limiter.js';
import { callContext } from '../call-context.js';
import { refused, type CallStage } from '../call-state.js';

/** The policy's rate limits, per client and tool: a call past them is refused before it is hooked or asked about. */
export function rateLimitStage(deps: { context: PermissionContext; rateLimiter: RateLimiter }): CallStage {
  return (next) => async (call) => {
    const { caller, target } = call.request;
    const rate = await deps.rateLimiter.take(callContext(deps.context, caller.context), target.tool, caller.client);
    return rate.allowed ? next(call) : refused(call, rate.reason, 'rate_limited');
  };
}
