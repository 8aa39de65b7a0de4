import type { PrimitiveDeps } from '../../executor/execute-plan.js';
import { authorize } from '../authorize.js';
import { type AuthorizeDeps } from '../authorization.js';
import { isolationOf } from '../call-isolation.js';
import { refused, type CallStage } from '../call-state.js';

/** The policy's checks (authorize.ts): the call's name, grant, arguments and what its plan touches. */
export function authorizeStage(deps: AuthorizeDeps & { primitives: PrimitiveDeps }): CallStage {
  return (next) => async (call) => {
    const decision = await authorize(call.request, deps);
    if (!decision.allowed) {
      if (decision.args !== undefined) call.args = decision.args;
      return refused(call, decision.reason, 'permission_denied');
    }
    call.allowed = decision;
    call.args = decision.args;
    call.isolation = isolationOf(decision.plan, deps.primitives);
    return next(call);
  };
}
