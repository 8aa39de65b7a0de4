import type { AuditLog } from '../audit/audit-log.js';
import type { LoopDetector } from '../audit/loop-detector.js';
import type { Checkpointer } from '../checkpoints/checkpointer.js';
import type { PrimitiveDeps } from '../executor/execute-plan.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { AuthorizeDeps } from './authorization.js';
import type { CallHookDeps } from './call-hooks.js';
import type { CallHandler, CallStage } from './call-state.js';
import type { Tracing } from '../contracts/tracing.js';
import type { RunningCalls } from './running-calls.js';
import { approvalStage } from './stages/approval-stage.js';
import { auditStage } from './stages/audit-stage.js';
import { authorizeStage } from './stages/authorize-stage.js';
import { budgetStage } from './stages/budget-stage.js';
import { checkpointStage } from './stages/checkpoint-stage.js';
import { hookEventsStage } from './stages/hook-events-stage.js';
import { hookGateStage } from './stages/hook-gate-stage.js';
import { isolationStage } from './stages/isolation-stage.js';
import { loopCheckStage } from './stages/loop-check-stage.js';
import { planStage } from './stages/plan-stage.js';
import { rateLimitStage } from './stages/rate-limit-stage.js';

/** The stages of each way through the proxy, the first outermost; the executor (run-plan.ts) is the end of `call` and `run`. */
export interface ProxyStages {
  /** A call that runs. */
  call: CallStage[];
  /** A call answered with an identical earlier call's result: checked and audited like any, not run again. */
  reuse: CallStage[];
  /** What a reused call goes through when it must run after all (a person was asked: see reuseResult). */
  run: CallStage[];
}

export interface StageDeps extends AuthorizeDeps {
  primitives: PrimitiveDeps;
  audit: AuditLog;
  loops: LoopDetector;
  rateLimiter: RateLimiter;
  hooks: CallHookDeps;
  /** The executor at the end of the chain: a hook's `retry` runs the call on it again. */
  execute: CallHandler;
  checkpoints?: Pick<Checkpointer, 'before'>;
  now: () => number;
  /** A span per stage a call passes (nested: each holds the ones after it); absent, none. */
  tracing?: Tracing;
  /** The calls running, which a stopping gateway cancels; absent, none are tracked. */
  running?: Pick<RunningCalls, 'stage'>;
}

/**
 * The checks every call passes, in the order it meets them. The audit is outermost because every
 * call is recorded, refused ones too (only the list of running calls is outside it); the budget
 * counts every call asked; the hooks' events see how it ended. Then the plan (what would run) and
 * the gates: the policy's judgment of it, the isolation floor, the rate, the `before_call` hooks, a person. A new check is a stage in its own file and a line here.
 */
export function standardStages(deps: StageDeps): ProxyStages {
  const named = (name: string, stage: CallStage): CallStage => (deps.tracing ? tracedStage(deps.tracing, name, stage) : stage);
  const audit = named('audit', auditStage(deps));
  const budget = named('budget', budgetStage());
  const gates = [
    named('plan', planStage(deps)),
    named('authorize', authorizeStage(deps)),
    named('isolation', isolationStage(deps)),
    named('rate_limit', rateLimitStage(deps)),
    named('hooks', hookGateStage(deps.hooks)),
    named('approval', approvalStage({ rules: deps.context.approvals, hooks: deps.hooks, now: deps.now })),
  ];
  const loopCheck = named('loop_check', loopCheckStage(deps.loops));
  const run = deps.checkpoints ? [named('checkpoint', checkpointStage(deps.checkpoints))] : [];
  // Outside the audit, so a call is still listed until its record is written.
  const tracked = deps.running ? [deps.running.stage] : [];
  return {
    call: [...tracked, audit, budget, named('hook_events', hookEventsStage(deps.hooks, deps.execute)), ...gates, loopCheck, ...run],
    // A reused result ran once already: its hooks fired then, so no events fire for it again.
    reuse: [...tracked, audit, budget, ...gates, loopCheck],
    run,
  };
}

/** The stage inside a span `kiwi.proxy.NAME`, which also holds the stages after it and the run. */
function tracedStage(tracing: Tracing, name: string, stage: CallStage): CallStage {
  return (next) => {
    const handler = stage(next);
    return (call) => tracing.span(`kiwi.proxy.${name}`, { 'kiwi.tool': call.request.target.tool, 'kiwi.call_id': call.callId }, () => handler(call));
  };
}
