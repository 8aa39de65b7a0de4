import type { PrimitiveDeps } from '../../executor/execute-plan.js';
import { isolationRefusal, toIsolationPolicy } from '../../policy/isolation-policy.js';
import type { PermissionContext } from '../../policy/permission-context.js';
import type { IsolationLevel } from '../../registry/types.js';
import type { AllowedPlan } from '../authorization.js';
import { isolationOf } from '../call-isolation.js';
import { refused, type CallStage } from '../call-state.js';

/**
 * The policy's isolation floor (`isolation.minimum`, `isolation.per_tool`) and whether containers
 * run here: an allowed call whose process would run below the floor, or in a container on a
 * machine without one, is refused with what to change. A call that runs no process here (an HTTP
 * request, an MCP server over the network, a read) has no level and passes.
 */
export function isolationStage(deps: { context: PermissionContext; primitives: PrimitiveDeps }): CallStage {
  let root = deps.context;
  while (root.parent !== undefined) root = root.parent;
  // A context made without a policy file has the policy file's defaults.
  const policy = root.isolation ?? toIsolationPolicy(undefined);
  return (next) => async (call) => {
    const plan = call.planned?.plan;
    if (plan === undefined) return next(call);
    call.isolation = isolationOf(plan, deps.primitives);
    const level = processLevel(plan);
    if (level === undefined) return next(call);
    const tool = call.request.target.tool;
    const below = isolationRefusal(policy, tool, level, root.label);
    if (below !== undefined) return refused(call, below, 'permission_denied');
    if (level === 'sandboxed' || level === 'restricted') {
      const probe = await deps.primitives.containers?.runner.availability();
      if (probe === undefined) return refused(call, `${tool} runs at isolation ${level}, in a container, and this gateway was started without a container runner`, 'permission_denied');
      if (!probe.ok) return refused(call, `${tool} runs at isolation ${level}, in a container, and containers do not run here: ${probe.reason}`, 'permission_denied');
    }
    return next(call);
  };
}

/** The level a plan's process runs at: a stdio MCP server always under the sandbox; nothing for a plan that starts no process. */
function processLevel(plan: AllowedPlan): IsolationLevel | undefined {
  if (plan.kind === 'subprocess') return plan.isolation;
  if (plan.kind === 'mcp' && plan.server.transport === 'stdio') return 'standard';
  return undefined;
}
