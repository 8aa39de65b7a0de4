import type { AuditRecord } from '../audit/audit-record.js';
import type { ToolResult } from '../contracts/tool-result.js';
import { describeError, isKiwiError } from '../base/errors.js';
import type { Tool } from '../registry/types.js';
import type { Planned, Verdict } from './authorization.js';
import type { Isolation } from './call-isolation.js';
import type { HookDirective } from './call-hooks.js';
import type { Steering } from './hook-steering.js';
import type { CallOutcome, ToolCall } from './tool-call.js';

/**
 * One call on its way through the proxy's stages. Each stage reads what the stages before it found
 * and adds its own; the audit stage, outermost, files all of it in the call's record. Each fact
 * has one writer, named in its comment; the lists are appended to by every stage that fires hooks.
 */
export interface CallState {
  readonly request: ToolCall;
  readonly callId: string;
  /** The tool the call names (an item seen as a tool); undefined for an MCP server's own tool or an unknown one. */
  readonly tool: Tool | undefined;
  /** The call whose result this one reuses (a prefetch): the record says so unless a person was asked, and the call ran itself (run-plan.ts). */
  readonly reusedFrom?: string;
  /** What the call would run, or where planning stopped (the plan stage). */
  planned?: Planned;
  /** The policy's judgment of the plan, with the arguments as checked once granted (authorize); the hooks see `{}` before. */
  verdict?: Verdict;
  /** How the plan runs, for the record (the isolation stage). */
  isolation?: Isolation;
  /** Why a hook asks for a person's approval (the hook gate). */
  hookAsks?: string;
  /** The person's answer, when one was asked (approval). */
  approval?: NonNullable<AuditRecord['approval']>;
  /** Past the last gate: the call runs (approval). */
  cleared: boolean;
  /** The same call again and again: the caller is probably looping (loop check). */
  stuck: boolean;
  /** The git checkpoint taken before the call ran (checkpoint). */
  checkpoint?: string;
  /** Why it was refused, as hook conditions read `event.code` (`permission_denied`, `rate_limited`, …): set once, by the stage that refuses (refused()). */
  refusal?: string;
  notes: string[];
  directives: HookDirective[];
  /** How many times the call ran (the executor; a hook's `retry` runs it again). */
  attempts: number;
  /** What steering hooks decided, for the record. */
  steering: NonNullable<AuditRecord['steering']>;
}

export type CallHandler = (call: CallState) => Promise<CallOutcome>;
/** A stage wraps the rest of the chain: it may answer itself (a refusal) or hand the call on. */
export type CallStage = (next: CallHandler) => CallHandler;

/** The stages around `last`, the first outermost: as undici's Dispatcher.compose and hono's compose do it. */
export function composeStages(stages: readonly CallStage[], last: CallHandler): CallHandler {
  return stages.reduceRight<CallHandler>((next, stage) => stage(next), last);
}

export function newCallState(request: ToolCall, callId: string, tool: Tool | undefined, reusedFrom?: string): CallState {
  return { request, callId, tool, ...(reusedFrom === undefined ? {} : { reusedFrom }), cleared: false, stuck: false, notes: [], directives: [], attempts: 0, steering: [] };
}

/** The arguments the hooks, the loop check and a person see: checked and granted, `{}` before (unchecked arguments reach no hook). */
export function checkedArgs(call: CallState): Record<string, unknown> {
  return call.verdict?.args ?? {};
}

/** The outcome's own fields; the audit stage sets its duration, `stuck` and the directives asked for. */
const base = (call: CallState) => ({ callId: call.callId, tool: call.request.target.tool, durationMs: 0, stuck: false });

export function refused(call: CallState, reason: string, code: string): CallOutcome {
  call.refusal = code;
  return { ...base(call), status: 'denied', reason };
}

export function succeeded(call: CallState, result: ToolResult): CallOutcome {
  return { ...base(call), status: 'ok', result };
}

/** The call is not run: a hook decided so, and the caller reads which, without an error. */
export function skipped(call: CallState, steering: Steering): CallOutcome {
  const why = steering.reason === undefined ? '' : `: ${steering.reason}`;
  return { ...base(call), status: 'ok', result: { text: `skipped by hook ${steering.hook}${why}`, isError: false }, skipped: steering.hook };
}

/** The call fails (`fail`) or its run stops (`abort`) with the hook's reason. */
export function failedByHook(call: CallState, steering: Steering): CallOutcome & { status: 'error' } {
  const abort = steering.decision === 'abort';
  const message = `${steering.reason ?? `${steering.decision} by a hook`} (hook at ${steering.hook})`;
  return { ...base(call), status: 'error', error: { code: abort ? 'HOOK_ABORTED' : 'HOOK_FAILED', message }, ...(abort ? { abort: message } : {}) };
}

/** A thrown error as an outcome: a policy refusal met while running (the address guard) is a denial, anything else an error. */
export function outcomeOfError(call: CallState, error: unknown): CallOutcome {
  const code = isKiwiError(error) ? error.code : 'INTERNAL';
  const message = isKiwiError(error) ? error.message : describeError(error);
  if (code === 'POLICY_DENIED') return refused(call, message, 'permission_denied');
  return { ...base(call), status: 'error', error: { code, message } };
}
