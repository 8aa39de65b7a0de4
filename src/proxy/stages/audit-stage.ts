import { abortReasonText } from '../../base/abort.js';
import type { AuditLog } from '../../audit/audit-log.js';
import type { Tracing } from '../../contracts/tracing.js';
import type { AuditRecord } from '../../audit/audit-record.js';
import { resultPreview } from '../../audit/result-preview.js';
import type { Isolation } from '../call-isolation.js';
import { outcomeOfError, type CallStage, type CallState } from '../call-state.js';
import type { CallOutcome } from '../tool-call.js';

/** The isolation of a record whose call ran nothing (refused, or a help signal); one that ran says how (call-isolation.ts). */
export const NOTHING_RAN: Isolation = { sandbox: 'none', sandbox_reason: 'nothing ran' };

/**
 * Outermost: every call gets one record, however it ends — allowed, refused by any stage, or
 * failed — with what the stages found on the way (checkpoint, approval, loop, isolation, notes).
 */
export function auditStage(deps: { audit: AuditLog; now: () => number; tracing?: Tracing }): CallStage {
  return (next) => async (call) => {
    const ts = new Date().toISOString();
    const t0 = deps.now();
    const traceId = deps.tracing?.traceId();
    let outcome: CallOutcome;
    try {
      outcome = await next(call);
    } catch (error) {
      outcome = outcomeOfError(call, error);
    }
    const elapsed = deps.now() - t0;
    const { request } = call;
    // Durable before the result goes back: a gateway killed after this loses no record of a call anyone saw the result of.
    await deps.audit.append({
      ts,
      session: request.caller.session,
      client: request.caller.client,
      call_id: call.callId,
      tool: request.target.tool,
      ...(request.target.item ? { item: request.target.item } : {}),
      args: request.target.args ?? {},
      duration_ms: Math.round(elapsed * 1000) / 1000,
      source: request.caller.source,
      ...reused(call),
      ...verdict(call, outcome),
      ...cancelled(call, outcome),
      ...(call.notes.length > 0 ? { notes: call.notes } : {}),
      ...(call.steering.length > 0 ? { steering: call.steering } : {}),
      ...(call.attempts > 1 ? { attempts: call.attempts } : {}),
      ...(traceId === undefined ? {} : { trace_id: traceId }),
      ...(request.ext?.resolvedBy ? { resolved_by: request.ext.resolvedBy } : {}),
    });
    return { ...outcome, durationMs: elapsed, stuck: outcome.status !== 'denied' && call.stuck, ...(call.checkpoint ? { checkpoint: call.checkpoint } : {}), ...(call.directives.length > 0 ? { directives: call.directives } : {}) };
  };
}

/** A call stopped while it ran says why: the reason its signal was aborted with (`gateway stopping`, …). */
function cancelled(call: CallState, outcome: CallOutcome): Pick<AuditRecord, 'cancelled'> {
  const signal = call.request.run?.signal;
  if (outcome.status !== 'error' || outcome.error.code !== 'TOOL_CANCELLED' || signal?.aborted !== true) return {};
  return { cancelled: abortReasonText(signal.reason) };
}

/** A reused call says whose result it got, unless a person was asked: then it ran itself (run-plan.ts, reuseResult). */
function reused(call: CallState): Pick<AuditRecord, 'reused'> {
  const ranItself = call.cleared && call.approval !== undefined;
  return call.reusedFrom === undefined || ranItself ? {} : { reused: call.reusedFrom };
}

/** What the call got to before it ended, filed in its record however it ends. */
function reached(call: CallState): Partial<AuditRecord> {
  const granted = call.approval?.approved ? { approval: call.approval } : {};
  return { ...(call.stuck ? { stuck: true } : {}), ...(call.checkpoint ? { checkpoint: call.checkpoint } : {}), ...granted, ...(stoppedByHook(call) ? NOTHING_RAN : (call.isolation ?? NOTHING_RAN)) };
}

/** A `before_call` hook that decided anything but retry or continue ran nothing: the record says so rather than how the call would have run. */
function stoppedByHook(call: CallState): boolean {
  return call.steering.some((s) => s.event === 'before_call' && s.decision !== 'retry' && s.decision !== 'continue');
}

function verdict(call: CallState, outcome: CallOutcome): Partial<AuditRecord> & Pick<AuditRecord, 'decision'> {
  switch (outcome.status) {
    case 'ok':
      return { decision: 'allow', reason: call.verdict?.reason ?? '', result: resultPreview(outcome.result), ...reached(call) };
    case 'denied':
      // Refused before it ran: nothing ran, but a person's refusal is kept. Refused while running (the address guard): all it reached.
      return { decision: 'deny', reason: outcome.reason, ...(call.cleared ? reached(call) : { ...NOTHING_RAN, ...(call.approval ? { approval: call.approval } : {}) }) };
    case 'error':
      // A call that failed before it was cleared (unknown tool, bad arguments, broken chain) never ran.
      return { decision: call.cleared ? 'allow' : 'deny', ...(call.cleared ? {} : { reason: outcome.error.message }), error: outcome.error, ...reached(call) };
  }
}
