import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../audit/audit-log.js';
import type { LoopDetector } from '../audit/loop-detector.js';
import type { Tracing } from '../contracts/tracing.js';
import type { Checkpointer } from '../checkpoints/checkpointer.js';
import type { PrimitiveDeps } from '../executor/execute-plan.js';
import type { PlanContext } from '../executor/plan.js';
import type { McpToolInfo } from '../mcp-client/client-pool.js';
import { checkMcpTool, type PermissionContext } from '../policy/permission-context.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { Directive, Knowledge, Tool } from '../registry/types.js';
import { authorizeServer } from './authorize.js';
import { itemTool } from './plan-item.js';
import { callContext } from './call-context.js';
import { fireCallHooks, type CallHookDeps, type Fired } from './call-hooks.js';
import { composeStages, newCallState, type CallHandler } from './call-state.js';
import { HELP_TOOL, type HelpOutcome, type HelpSignal } from './help-signal.js';
import { NOTHING_RAN } from './stages/audit-stage.js';
import { reuseResult, runPlan } from './stages/run-plan.js';
import { standardStages } from './standard-stages.js';
import type { RunningCalls } from './running-calls.js';
import type { CallOutcome, ItemCreations, OkOutcome, ThreadPort, ToolCall } from './tool-call.js';

export interface ToolProxyDeps {
  tools: ReadonlyMap<string, Tool>;
  /** The directives and knowledge entries a call may name with `item`; without them, such calls find nothing. */
  items?: { directives: ReadonlyMap<string, Directive>; knowledge: ReadonlyMap<string, Knowledge> };
  context: PermissionContext;
  primitives: PrimitiveDeps;
  audit: AuditLog;
  loops: LoopDetector;
  rateLimiter: RateLimiter;
  plan: PlanContext;
  /** Spans of each stage and each tool run (contracts/tracing.ts); absent, none. */
  tracing?: Tracing;
  /** Takes a git checkpoint before each allowed call of a tool that may change state; absent: none. */
  checkpoints?: Pick<Checkpointer, 'before' | 'restore'>;
  /** Where thread plans and the hooks' directives run (the gateway's thread runtime); absent, thread plans are refused. */
  threads?: ThreadPort;
  /** Lands the items agents create (MCP `execute action=create`); absent, creations are refused. */
  creations?: ItemCreations;
  /** Tracks the calls running, so that a stopping gateway can name and cancel them; absent, none are tracked. */
  running?: Pick<RunningCalls, 'stage'>;
  now?: () => number;
}

export type ListOutcome = { status: 'ok'; tools: McpToolInfo[] } | { status: 'denied'; reason: string };

/** What a caller of the proxy passes for an event outside one call (a limit, a help signal): who asks, in which run. */
export type CallerOf = Pick<ToolCall, 'caller' | 'run'>;

export interface ToolProxy {
  call(call: ToolCall): Promise<CallOutcome>;
  /**
   * Answers `call` with the result of an identical call that already ran (a speculative prefetch):
   * the call is checked (policy, arguments, rate limits) and audited like any call, only not run
   * again. The caller guarantees that `earlier` ran exactly this tool with these arguments.
   */
  reuse(call: ToolCall, earlier: OkOutcome): Promise<CallOutcome>;
  /**
   * The tools an MCP server offers that the policy lets this caller use (starting the server is
   * checked too). Not audited: a listing calls no tool, and the audit log is the record of calls
   * (`kiwi audit tail` and `kiwi predictor train` read every record as one).
   */
  listMcpTools(server: string, caller?: { context?: PermissionContext; signal?: AbortSignal }): Promise<ListOutcome>;
  /**
   * The hooks' `limit` event for a limit that stopped a request (`code`: `turns`, `tokens`,
   * `budget`, …), outside any one call: webhooks are sent; the notes and directives asked for
   * come back for the caller to report.
   */
  limitReached(caller: CallerOf, code: string, detail: Record<string, unknown>): Promise<Fired>;
  /**
   * An agent's help signal (help-signal.ts): nothing runs, but it is audited as tool `help` (the
   * record's `help` names the action) and fires the hooks' `help` event; a `checkpoint` takes a
   * git checkpoint when checkpoints are on.
   */
  help(caller: CallerOf, signal: HelpSignal): Promise<HelpOutcome>;
}

/**
 * The only way anything executes. A call passes a chain of stages (standard-stages.ts: audit,
 * budget, hook events, plan, authorize, isolation, rate limit, hooks, approval, loop check, checkpoint)
 * and then runs on its primitive; every call, refused ones included, is audited.
 */
export function createToolProxy(deps: ToolProxyDeps): ToolProxy {
  const now = deps.now ?? (() => performance.now());
  const threads = deps.threads;
  const hooks: CallHookDeps = {
    hooks: deps.context.hooks ?? [],
    http: deps.primitives.http,
    ...(threads
      ? {
          startThread: (d, request) => {
            request.run?.thread?.onSpawn?.();
            return threads.background({ kind: 'thread', directive: d.name, inputs: d.inputs }, request);
          },
          steerThread: (d, request) => {
            request.run?.thread?.onSpawn?.();
            return threads.spawn({ kind: 'thread', directive: d.name, inputs: d.inputs }, request);
          },
        }
      : {}),
  };
  const run = runPlan({ primitives: deps.primitives, ...(threads ? { threads } : {}), ...(deps.checkpoints ? { checkpoints: deps.checkpoints } : {}), ...(deps.creations ? { creations: deps.creations } : {}) });
  const tracing = deps.tracing;
  const traced: CallHandler = tracing ? (call) => tracing.span('kiwi.tool.run', { 'kiwi.tool': call.request.target.tool, 'kiwi.call_id': call.callId }, () => run(call)) : run;
  const execute: CallHandler = (call) => {
    call.attempts++;
    return traced(call);
  };
  const stages = standardStages({ ...deps, hooks, execute, now });
  const callChain = composeStages(stages.call, execute);
  const runChain = composeStages(stages.run, execute);

  const start = (request: ToolCall, reusedFrom?: string) => {
    const { target } = request;
    return newCallState(request, randomUUID(), target.item ? itemTool(target, deps) : deps.tools.get(target.tool), reusedFrom);
  };

  return {
    call: (request) => callChain(start(request)),
    reuse: (request, earlier) => composeStages(stages.reuse, reuseResult(earlier, runChain))(start(request, earlier.callId)),
    async listMcpTools(server, caller = {}) {
      const ctx = callContext(deps.context, caller.context);
      const decision = authorizeServer(server, ctx, deps);
      if (!decision.allowed) return { status: 'denied', reason: decision.reason };
      const tools = await deps.primitives.mcp.listTools(decision.spec, caller.signal);
      return { status: 'ok', tools: tools.filter((t) => checkMcpTool(ctx, t.qualifiedName).allowed) };
    },
    limitReached: (asker, code, detail) => fireCallHooks(hooks, { ...asker, target: { tool: '' } }, 'limit', { code, detail, args: {}, tool: undefined }),
    async help(asker, signal) {
      const request: ToolCall = { ...asker, target: { tool: HELP_TOOL } };
      const { caller } = asker;
      const args = { action: signal.action, message: signal.message };
      const callId = randomUUID();
      const ts = new Date().toISOString();
      const t0 = now();
      // A signal names no item, whatever its caller carries.
      const record = (fields: { decision: 'allow' | 'deny'; reason?: string; checkpoint?: string; notes?: string[] }): Promise<void> =>
        deps.audit.append({ ts, session: caller.session, client: caller.client, call_id: callId, tool: HELP_TOOL, args, duration_ms: Math.round((now() - t0) * 1000) / 1000, source: caller.source, ...NOTHING_RAN, help: signal.action, ...fields });
      // Each signal writes a record and may take a checkpoint and send webhooks: signals are rate-limited as calls are.
      const rate = await deps.rateLimiter.take(callContext(deps.context, caller.context), HELP_TOOL, caller.client);
      if (!rate.allowed) {
        await record({ decision: 'deny', reason: rate.reason });
        return { callId, notes: [], directives: [], refused: rate.reason };
      }
      const checkpoint = signal.action === 'checkpoint' && deps.checkpoints ? await deps.checkpoints.before({ tool: HELP_TOOL, callId, session: caller.session }, asker.run?.signal) : undefined;
      const fired = await fireCallHooks(hooks, request, 'help', { code: signal.action, detail: { message: signal.message }, args, tool: undefined, event: args });
      // Nothing was asked for, so nothing was refused.
      await record({ decision: 'allow', ...(checkpoint ? { checkpoint } : {}), ...(fired.notes.length > 0 ? { notes: fired.notes } : {}) });
      return { callId, notes: fired.notes, directives: fired.directives, ...(checkpoint ? { checkpoint } : {}) };
    },
  };
}
