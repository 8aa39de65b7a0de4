import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuditRecord } from '../audit/audit-record.js';
import { resultPreview as preview } from '../audit/result-preview.js';
import type { LoopDetector } from '../audit/loop-detector.js';
import { describeError, isKiwiError } from '../errors.js';
import { executePlan, type PrimitiveDeps } from '../executor/execute-plan.js';
import type { ToolResult } from '../contracts/tool-result.js';
import type { ThreadPlan } from '../executor/plan-types.js';
import type { PlanContext } from '../executor/plan.js';
import type { PermissionContext } from '../policy/permission-context.js';
import type { RateLimiter } from '../policy/rate-limiter.js';
import type { Directive, Knowledge, Tool } from '../registry/types.js';
import { authorize, authorizeServer, callContext, type Authorization } from './authorize.js';
import { itemTool } from './authorize-item.js';
import { isolationOf, type Isolation } from './call-isolation.js';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../policy/policy-hooks.js';
import { checkMcpTool } from '../policy/permission-context.js';
import type { McpToolInfo } from '../mcp-client/client-pool.js';
import type { Checkpointer } from '../checkpoints/checkpointer.js';
import type { LoadedHook } from '../hooks/hook-runner.js';
import { approvalReason, waitForApproval, type AskApproval } from './approval.js';
import { eventCode, fireCallHooks, type CallEventName, type CallEventFields, type CallHookDeps, type Fired } from './call-hooks.js';
import { HELP_TOOL, type HelpOutcome, type HelpSignal } from './help-signal.js';

export type CallSource = 'cli' | 'gateway' | 'mcp' | 'prefetch' | 'runner' | 'thread';

export interface ToolCall {
  /** The tool's id; a directive's name or a knowledge entry's id when `item` says so. */
  tool: string;
  /** A directive (run as a thread, as a thread tool is) or a knowledge entry (its content is the result); absent, a tool. */
  item?: 'directive' | 'knowledge';
  args?: unknown;
  /** The conversation the call belongs to; the audit files it under this id. */
  session: string;
  /** Who asked (see Caller): rate limits and loop detection count per client, never per session. */
  client: string;
  source: CallSource;
  /** A narrower context for this call (a directive's); it is intersected with the proxy's, never wider. */
  context?: PermissionContext;
  signal?: AbortSignal;
  /** The directive the call runs under: its hooks fire after the policy's, and conditions read its name and limits. */
  directive?: { name: string; hooks: readonly LoadedHook[]; limits?: Record<string, number> };
  /** What the request has used so far (`turns`, `tool_calls`, `tokens`) and may use, for hook conditions (`cost.turns > limits.turns * 0.9`). */
  cost?: Record<string, number>;
  limits?: Record<string, number>;
  /** Asks a person whether the call may run; absent, a call that needs approval is denied. */
  approve?: AskApproval;
  /** The thread making the call: a thread it spawns is its child (narrower rights, one level deeper), and counts as its spawn. */
  thread?: { id: string; depth: number; onSpawn?: () => void };
}

/** Runs a thread plan (the gateway's thread runtime), as the caller: its client, rights and thread. */
export type ThreadSpawner = (plan: ThreadPlan, call: ToolCall) => Promise<ToolResult>;
/** Starts a thread in the background for a call (a hook's directive), as the caller; answers its id. */
export type BackgroundSpawner = (plan: ThreadPlan, call: ToolCall) => Promise<string>;

interface OutcomeBase {
  callId: string;
  tool: string;
  durationMs: number;
  /** The same call was made again and again in this session: the caller is probably looping. */
  stuck: boolean;
  /** Directives the call's hooks asked to run next, their inputs filled. */
  directives?: { name: string; inputs: Record<string, string> }[];
}
export type CallOutcome =
  | (OutcomeBase & { status: 'ok'; result: ToolResult })
  | (OutcomeBase & { status: 'denied'; reason: string })
  | (OutcomeBase & { status: 'error'; error: { code: string; message: string } });

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
  /** Takes a git checkpoint before each allowed call of a tool that may change state; absent: none. */
  checkpoints?: Pick<Checkpointer, 'before'>;
  now?: () => number;
}

export type ListOutcome = { status: 'ok'; tools: McpToolInfo[] } | { status: 'denied'; reason: string };

export type OkOutcome = CallOutcome & { status: 'ok' };

/** What `reuse` already did before it hands a call over to `call`: the call is authorized once (one rate-limit token) and its before_call hooks fire once. */
interface Checked {
  decision: Authorization & { allowed: true };
  before: Fired;
}

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
  /** Where thread plans run (the gateway sets it once its thread runtime exists); unset, they are refused. */
  useThreads(spawn: ThreadSpawner, background: BackgroundSpawner): void;
  /**
   * The hooks' `limit` event for a limit that stopped a request (`code`: `turns`, `tokens`,
   * `budget`, …), outside any one call: webhooks are sent; the notes and directives asked for
   * come back for the caller to report.
   */
  limitReached(caller: Omit<ToolCall, 'tool' | 'args' | 'approve'>, code: string, detail: Record<string, unknown>): Promise<Fired>;
  /**
   * An agent's help signal (help-signal.ts): nothing runs, but it is audited as tool `help` (the
   * record's `help` names the action) and fires the hooks' `help` event; a `checkpoint` takes a
   * git checkpoint when checkpoints are on.
   */
  help(caller: Omit<ToolCall, 'tool' | 'args' | 'approve'>, signal: HelpSignal): Promise<HelpOutcome>;
}

/** The isolation of a record whose call ran nothing (refused, or a help signal); one that ran says how (call-isolation.ts). */
const NOTHING_RAN: Isolation = { sandbox: 'none', sandbox_reason: 'nothing ran' };

/**
 * The only way anything executes. Every call is checked (name, policy, arguments, rate, paths,
 * commands), then run on its primitive, and every call, denied ones included, is audited.
 */
export function createToolProxy(deps: ToolProxyDeps): ToolProxy {
  const now = deps.now ?? (() => performance.now());

  const hookDeps: CallHookDeps = { hooks: deps.context.hooks ?? [], http: deps.primitives.http };
  let spawner: ThreadSpawner | undefined;

  /**
   * Starts one call's audit: its id, the time since, and a writer of its records that fills the
   * fields they all share (`duration_ms` to the microsecond); each site passes what differs.
   */
  function startAudit(request: Pick<ToolCall, 'session' | 'client' | 'tool' | 'item' | 'source'>, args: unknown) {
    const callId = randomUUID();
    const ts = new Date().toISOString();
    const t0 = now();
    const elapsed = (): number => now() - t0;
    const record = (fields: Partial<AuditRecord> & Pick<AuditRecord, 'decision'>): void =>
      deps.audit.append({ ts, session: request.session, client: request.client, call_id: callId, tool: request.tool, ...(request.item ? { item: request.item } : {}), args, duration_ms: Math.round(elapsed() * 1000) / 1000, source: request.source, ...(fields.sandbox === undefined ? NOTHING_RAN : {}), ...fields });
    return { callId, elapsed, record };
  }

  const toolOf = (request: ToolCall): Tool | undefined => (request.item ? itemTool(request, deps) : deps.tools.get(request.tool));

  async function call(request: ToolCall, checked?: Checked): Promise<CallOutcome> {
    const audit = startAudit(request, request.args ?? {});
    const callId = audit.callId;
    const notes: string[] = [];
    const directives: NonNullable<OutcomeBase['directives']> = [];
    const tool = toolOf(request);
    const base = (stuck: boolean): OutcomeBase => ({ callId, tool: request.tool, durationMs: audit.elapsed(), stuck, ...(directives.length > 0 ? { directives } : {}) });
    const record = (fields: Partial<AuditRecord> & Pick<AuditRecord, 'decision'>): void => audit.record({ ...fields, ...(notes.length > 0 ? { notes } : {}) });
    const keep = (fired: Fired): Fired => {
      notes.push(...fired.notes);
      directives.push(...fired.directives);
      return fired;
    };
    const fire = async (name: CallEventName, fields: Omit<CallEventFields, 'tool'>) => keep(await fireCallHooks(hookDeps, request, name, { ...fields, tool }));
    const denied = async (reason: string, code: string, args: unknown, extra: Partial<AuditRecord> = {}): Promise<CallOutcome> => {
      await fire(code === 'rate_limited' ? 'limit' : 'denied', { code, detail: { reason, missing: request.tool }, args });
      record({ decision: 'deny', reason, ...extra });
      return { ...base(false), status: 'denied', reason };
    };

    let stuck = false;
    let authorized = false;
    let checkpoint: string | undefined;
    // What the hooks see: the arguments once they passed validation, and none before. A caller's
    // unchecked arguments may be anything, of any size, and a condition walks what it is given.
    let args: unknown = {};
    let granted: AuditRecord['approval'];
    let isolation: Isolation | undefined;
    // What the call got to before it ended, filed in its record however it ends.
    const reached = (): Partial<AuditRecord> => ({ ...(stuck ? { stuck } : {}), ...(checkpoint ? { checkpoint } : {}), ...(granted ? { approval: granted } : {}), ...isolation });
    try {
      const decision = checked?.decision ?? (await authorize(request, deps));
      if (!decision.allowed) return await denied(decision.reason, decision.code ?? 'permission_denied', decision.args ?? args);
      args = decision.args;
      isolation = isolationOf(decision.plan, deps.primitives);
      const before = checked ? keep(checked.before) : await fire('before_call', { args });
      if (before.deny !== undefined) return await denied(before.deny, 'hook_denied', args);
      const needs = approvalReason(tool, request.tool, deps.context.approvals, before.approval);
      if (needs !== undefined) {
        const asked = now();
        const timeoutMs = deps.context.approvals?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
        const answer = await waitForApproval(request.approve, { callId, tool: request.tool, arguments: decision.args, reason: needs, timeoutMs }, request.signal);
        const approval = { approved: answer.approved, decided_by: answer.decidedBy, ...(answer.reason === undefined ? {} : { reason: answer.reason }), waited_ms: now() - asked };
        const code = answer.approved ? 'granted' : answer.decidedBy === 'timeout' ? 'timeout' : 'denied';
        await fire('approval', { code, detail: { decided_by: answer.decidedBy, reason: answer.reason ?? '' }, args });
        if (!answer.approved) {
          const reason = answer.reason ?? `${answer.decidedBy} did not approve the call`;
          return await denied(reason, 'approval_denied', args, { approval });
        }
        granted = approval;
      }
      authorized = true;
      stuck = deps.loops.observe(request.client, request.tool, decision.args).stuck;
      // Unknown counts as mutating, as for prefetch: only a tool that says it is read-only goes without.
      if (deps.checkpoints && tool?.mutatesState !== false) {
        checkpoint = await deps.checkpoints.before({ tool: request.tool, callId, session: request.session }, request.signal);
      }
      const plan = decision.plan;
      const result =
        plan.kind === 'read' ? plan.result : plan.kind === 'thread' && spawner !== undefined ? await spawnThread(spawner, plan, request) : await executePlan(plan, deps.primitives, request.signal, request.tool);
      await fire('after_call', { detail: { result: preview(result) }, args });
      record({ decision: 'allow', reason: decision.reason, result: preview(result), ...reached() });
      return { ...base(stuck), status: 'ok', result };
    } catch (error) {
      const code = isKiwiError(error) ? error.code : 'INTERNAL';
      const message = isKiwiError(error) ? error.message : describeError(error);
      // Thrown while running (the address guard), so possibly after approval, loop detection and a checkpoint.
      if (code === 'POLICY_DENIED') return denied(message, 'permission_denied', args, reached());
      await fire('error', { code: eventCode(code), detail: { message }, args }).catch(() => undefined);
      // A call that failed before it was authorized (unknown tool, bad arguments, broken chain) never ran.
      record({ decision: authorized ? 'allow' : 'deny', ...(authorized ? {} : { reason: message }), error: { code, message }, ...reached() });
      return { ...base(stuck), status: 'error', error: { code, message } };
    }
  }

  async function reuse(request: ToolCall, earlier: OkOutcome): Promise<CallOutcome> {
    const audit = startAudit(request, request.args ?? {});
    const { callId, elapsed } = audit;
    const record = (fields: Partial<AuditRecord> & Pick<AuditRecord, 'decision'>): void => audit.record({ reused: earlier.callId, ...fields });
    try {
      const decision = await authorize(request, deps);
      if (!decision.allowed) {
        record({ decision: 'deny', reason: decision.reason });
        return { callId, tool: request.tool, durationMs: elapsed(), stuck: false, status: 'denied', reason: decision.reason };
      }
      const tool = toolOf(request);
      const before = await fireCallHooks(hookDeps, request, 'before_call', { args: decision.args, tool });
      const notes = before.notes.length > 0 ? { notes: before.notes } : {};
      if (before.deny !== undefined) {
        record({ decision: 'deny', reason: before.deny, ...notes });
        return { callId, tool: request.tool, durationMs: elapsed(), stuck: false, status: 'denied', reason: before.deny };
      }
      // A person is asked before the call, never after it ran: this one runs again once they answer.
      // Handed over as checked here, so the call is not authorized (a second rate-limit token) or hooked again.
      if (approvalReason(tool, request.tool, deps.context.approvals, before.approval) !== undefined) return call(request, { decision, before });
      const stuck = deps.loops.observe(request.client, request.tool, decision.args).stuck;
      record({ decision: 'allow', reason: decision.reason, result: preview(earlier.result), ...(stuck ? { stuck } : {}), ...notes, ...isolationOf(decision.plan, deps.primitives) });
      return { callId, tool: request.tool, durationMs: elapsed(), stuck, status: 'ok', result: earlier.result };
    } catch (error) {
      const code = isKiwiError(error) ? error.code : 'INTERNAL';
      const message = isKiwiError(error) ? error.message : describeError(error);
      record({ decision: 'deny', reason: message, error: { code, message } });
      return code === 'POLICY_DENIED'
        ? { callId, tool: request.tool, durationMs: elapsed(), stuck: false, status: 'denied', reason: message }
        : { callId, tool: request.tool, durationMs: elapsed(), stuck: false, status: 'error', error: { code, message } };
    }
  }

  async function listMcpTools(server: string, caller: Pick<ToolCall, 'context' | 'signal'> = {}): Promise<ListOutcome> {
    const ctx = callContext(deps.context, caller.context);
    const decision = authorizeServer(server, ctx, deps);
    if (!decision.allowed) return { status: 'denied', reason: decision.reason };
    const tools = await deps.primitives.mcp.listTools(decision.spec, caller.signal);
    return { status: 'ok', tools: tools.filter((t) => checkMcpTool(ctx, t.qualifiedName).allowed) };
  }

  const limitReached: ToolProxy['limitReached'] = (caller, code, detail) => fireCallHooks(hookDeps, { ...caller, tool: '' }, 'limit', { code, detail, args: {}, tool: undefined });

  async function help(caller: Omit<ToolCall, 'tool' | 'args' | 'approve'>, signal: HelpSignal): Promise<HelpOutcome> {
    const request: ToolCall = { ...caller, tool: HELP_TOOL };
    const args = { action: signal.action, message: signal.message };
    // A signal names no item, whatever its caller carries.
    const { callId, record } = startAudit({ session: caller.session, client: caller.client, tool: HELP_TOOL, source: caller.source }, args);
    // Each signal writes a record and may take a checkpoint and send webhooks: signals are rate-limited as calls are.
    const rate = deps.rateLimiter.take(callContext(deps.context, caller.context), HELP_TOOL, caller.client);
    if (!rate.allowed) {
      record({ decision: 'deny', reason: rate.reason, help: signal.action });
      return { callId, notes: [], directives: [], refused: rate.reason };
    }
    const checkpoint = signal.action === 'checkpoint' && deps.checkpoints ? await deps.checkpoints.before({ tool: HELP_TOOL, callId, session: caller.session }, caller.signal) : undefined;
    const fired = await fireCallHooks(hookDeps, request, 'help', { code: signal.action, detail: { message: signal.message }, args, tool: undefined, event: args });
    record({
      // Nothing was asked for, so nothing was refused.
      decision: 'allow',
      help: signal.action,
      ...(checkpoint ? { checkpoint } : {}),
      ...(fired.notes.length > 0 ? { notes: fired.notes } : {}),
    });
    return { callId, notes: fired.notes, directives: fired.directives, ...(checkpoint ? { checkpoint } : {}) };
  }

  return {
    call: (request) => call(request),
    reuse,
    listMcpTools,
    limitReached,
    help,
    useThreads(spawn, background) {
      spawner = spawn;
      hookDeps.startThread = (d, request) => {
        request.thread?.onSpawn?.();
        return background({ kind: 'thread', directive: d.name, inputs: d.inputs }, request);
      };
    },
  };
}

function spawnThread(spawn: ThreadSpawner, plan: ThreadPlan, request: ToolCall): Promise<ToolResult> {
  request.thread?.onSpawn?.();
  return spawn(plan, request);
}
