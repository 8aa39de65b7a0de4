import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuditRecord } from '../audit/audit-record.js';
import { resultPreview as preview } from '../audit/result-preview.js';
import type { LoopDetector } from '../audit/loop-detector.js';
import { describeError, isKiwiError } from '../errors.js';
import { executePlan, type PrimitiveDeps } from '../executor/execute-plan.js';
import type { ToolResult } from '../executor/plan-types.js';
import type { PlanContext } from '../executor/plan.js';
import type { PermissionContext } from '../policy/permission-context.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { Tool } from '../registry/types.js';
import { authorize, authorizeServer, callContext } from './authorize.js';
import { checkMcpTool } from '../policy/permission-context.js';
import type { McpToolInfo } from '../mcp/client-pool.js';
import type { Checkpointer } from '../checkpoints/checkpointer.js';

export type CallSource = 'cli' | 'gateway' | 'mcp' | 'prefetch' | 'runner';

export interface ToolCall {
  tool: string;
  args?: unknown;
  /** The conversation the call belongs to; the audit files it under this id. */
  session: string;
  /** Who asked (see Caller): rate limits and loop detection count per client, never per session. */
  client: string;
  source: CallSource;
  /** A narrower context for this call (a directive's); it is intersected with the proxy's, never wider. */
  context?: PermissionContext;
  signal?: AbortSignal;
}

interface OutcomeBase {
  callId: string;
  tool: string;
  durationMs: number;
  /** The same call was made again and again in this session: the caller is probably looping. */
  stuck: boolean;
}
export type CallOutcome =
  | (OutcomeBase & { status: 'ok'; result: ToolResult })
  | (OutcomeBase & { status: 'denied'; reason: string })
  | (OutcomeBase & { status: 'error'; error: { code: string; message: string } });

export interface ToolProxyDeps {
  tools: ReadonlyMap<string, Tool>;
  context: PermissionContext;
  primitives: PrimitiveDeps;
  audit: AuditLog;
  loops: LoopDetector;
  rateLimiter: RateLimiter;
  plan: PlanContext;
  /** Takes a git checkpoint before each allowed call of a tool that may change state; absent: none. */
  checkpoints?: Pick<Checkpointer, 'before'>;
  now?: () => number;
}

export type ListOutcome = { status: 'ok'; tools: McpToolInfo[] } | { status: 'denied'; reason: string };

export type OkOutcome = CallOutcome & { status: 'ok' };

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
  listMcpTools(server: string, caller?: Pick<ToolCall, 'context' | 'signal'>): Promise<ListOutcome>;
}

/**
 * The only way anything executes. Every call is checked (name, policy, arguments, rate, paths,
 * commands), then run on its primitive, and every call, denied ones included, is audited.
 */
export function createToolProxy(deps: ToolProxyDeps): ToolProxy {
  const now = deps.now ?? (() => performance.now());

  async function call(request: ToolCall): Promise<CallOutcome> {
    const callId = randomUUID();
    const startedAt = new Date();
    const t0 = now();
    const base = (stuck: boolean): OutcomeBase => ({ callId, tool: request.tool, durationMs: now() - t0, stuck });
    const record = (fields: Partial<AuditRecord> & Pick<AuditRecord, 'decision'>): void => {
      deps.audit.append({
        ts: startedAt.toISOString(),
        session: request.session,
        client: request.client,
        call_id: callId,
        tool: request.tool,
        args: request.args ?? {},
        duration_ms: Math.round((now() - t0) * 1000) / 1000,
        source: request.source,
        ...fields,
      });
    };

    let stuck = false;
    let authorized = false;
    let checkpoint: string | undefined;
    try {
      const decision = await authorize(request, deps);
      if (!decision.allowed) {
        record({ decision: 'deny', reason: decision.reason });
        return { ...base(false), status: 'denied', reason: decision.reason };
      }
      authorized = true;
      stuck = deps.loops.observe(request.client, request.tool, decision.args).stuck;
      // Unknown counts as mutating, as for prefetch: only a tool that says it is read-only goes without.
      if (deps.checkpoints && deps.tools.get(request.tool)?.mutatesState !== false) {
        checkpoint = await deps.checkpoints.before({ tool: request.tool, callId, session: request.session }, request.signal);
      }
      const result = await executePlan(decision.plan, deps.primitives, request.signal, request.tool);
      record({ decision: 'allow', reason: decision.reason, result: preview(result), ...(stuck ? { stuck } : {}), ...(checkpoint ? { checkpoint } : {}) });
      return { ...base(stuck), status: 'ok', result };
    } catch (error) {
      const code = isKiwiError(error) ? error.code : 'INTERNAL';
      const message = isKiwiError(error) ? error.message : describeError(error);
      if (code === 'POLICY_DENIED') {
        record({ decision: 'deny', reason: message });
        return { ...base(false), status: 'denied', reason: message };
      }
      // A call that failed before it was authorized (unknown tool, bad arguments, broken chain) never ran.
      record({ decision: authorized ? 'allow' : 'deny', ...(authorized ? {} : { reason: message }), error: { code, message }, ...(stuck ? { stuck } : {}), ...(checkpoint ? { checkpoint } : {}) });
      return { ...base(stuck), status: 'error', error: { code, message } };
    }
  }

  async function reuse(request: ToolCall, earlier: OkOutcome): Promise<CallOutcome> {
    const callId = randomUUID();
    const startedAt = new Date().toISOString();
    const t0 = now();
    const record = (fields: Partial<AuditRecord> & Pick<AuditRecord, 'decision'>): void =>
      deps.audit.append({ ts: startedAt, session: request.session, client: request.client, call_id: callId, tool: request.tool, args: request.args ?? {}, duration_ms: now() - t0, source: request.source, reused: earlier.callId, ...fields });
    try {
      const decision = await authorize(request, deps);
      if (!decision.allowed) {
        record({ decision: 'deny', reason: decision.reason });
        return { callId, tool: request.tool, durationMs: now() - t0, stuck: false, status: 'denied', reason: decision.reason };
      }
      const stuck = deps.loops.observe(request.client, request.tool, decision.args).stuck;
      record({ decision: 'allow', reason: decision.reason, result: preview(earlier.result), ...(stuck ? { stuck } : {}) });
      return { callId, tool: request.tool, durationMs: now() - t0, stuck, status: 'ok', result: earlier.result };
    } catch (error) {
      const code = isKiwiError(error) ? error.code : 'INTERNAL';
      const message = isKiwiError(error) ? error.message : describeError(error);
      record({ decision: 'deny', reason: message, error: { code, message } });
      return code === 'POLICY_DENIED'
        ? { callId, tool: request.tool, durationMs: now() - t0, stuck: false, status: 'denied', reason: message }
        : { callId, tool: request.tool, durationMs: now() - t0, stuck: false, status: 'error', error: { code, message } };
    }
  }

  async function listMcpTools(server: string, caller: Pick<ToolCall, 'context' | 'signal'> = {}): Promise<ListOutcome> {
    const ctx = callContext(deps.context, caller.context);
    const decision = authorizeServer(server, ctx, deps);
    if (!decision.allowed) return { status: 'denied', reason: decision.reason };
    const tools = await deps.primitives.mcp.listTools(decision.spec, caller.signal);
    return { status: 'ok', tools: tools.filter((t) => checkMcpTool(ctx, t.qualifiedName).allowed) };
  }

  return { call, reuse, listMcpTools };
}
