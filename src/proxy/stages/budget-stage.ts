import type { CallStage } from '../call-state.js';

/**
 * Each call asked of the proxy counts on the request's budget (`tool_calls`), refused or not: the
 * agent spent one of its calls either way. A budget that ran out stops the request where its
 * owner checks (the agent loop, admission), not here.
 */
export function budgetStage(): CallStage {
  return (next) => (call) => {
    call.request.run?.budget?.countToolCall();
    return next(call);
  };
}
