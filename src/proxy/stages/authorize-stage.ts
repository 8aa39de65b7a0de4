import type { PermissionContext } from '../../policy/permission-context.js';
import { authorize } from '../authorize.js';
import { callContext } from '../call-context.js';
import { refused, type CallStage } from '../call-state.js';

/** The policy's judgment of the planned call (authorize.ts): the directive's `<tools>`, the grant, and what its plan touches. */
export function authorizeStage(deps: { context: PermissionContext }): CallStage {
  return (next) => async (call) => {
    const { request } = call;
    call.verdict = authorize(request, call.planned ?? {}, callContext(deps.context, request.caller.context));
    return call.verdict.allowed ? next(call) : refused(call, call.verdict.reason, 'permission_denied');
  };
}
