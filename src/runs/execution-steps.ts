import type { ChatExecution } from '../kernel/chat-journal.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { EventDraft } from '../kernel/types.js';
import { uuidv7 } from '../kernel/uuidv7.js';
import { redactedValue } from '../audit/cap-audit-value.js';
import { redactSecrets } from '../audit/redact-secrets.js';

/**
 * The steps of an execution the gateway runs itself (a chat, an MCP call): each call it makes is
 * `intent.accepted` with what was asked and `step.created`, then `step.completed` with the
 * result or `step.failed` (a policy denial says `denied: true`).
 *
 * The step's row keeps its arguments, result and error redacted with the audit log's rules, as
 * the journal keeps every event (kernel/chat-journal.ts): the call runs from the gateway's own
 * memory, never from these rows, so the kernel need not keep a client key or a `.env` value a
 * call carried or returned, and approvers and readers of the execution never see one. An
 * approval's `arguments_digest` is taken over these stored arguments, by the approver (`kiwi
 * approvals`, the console) and by the kernel's check alike, so a grant still matches its step;
 * a digest of the real arguments would let whoever sees it confirm a guessed secret, which the
 * audit log's hashes (taken after redaction too) never allow.
 */
export interface ExecutionSteps {
  /** Returns the step's id. */
  open(call: { tool: string; arguments: unknown }, details: Record<string, unknown>): string;
  /** `proxyCallId`: the tool proxy's id of the call (its audit record's), so a reader can find how the proxy ran it. */
  settle(stepId: string, status: 'ok' | 'denied' | 'error', text: string, proxyCallId?: string): void;
  /** The kernel itself wrote how this step ended (an approval denied): nothing more is written for it. */
  settledElsewhere(stepId: string): void;
  /** A `step.cancelled` for each step still open, to go before the execution's end. */
  cancelOpen(): EventDraft[];
}

interface OpenStep {
  id: string;
  toolId: string;
  arguments: string;
  deadline: string;
}

export function executionSteps(execution: ChatExecution, stepDeadlineMs: number): ExecutionSteps {
  const open = new Map<string, OpenStep>();
  return {
    open(call, details) {
      const args = redactedValue(call.arguments ?? {});
      const step = { id: uuidv7(), toolId: call.tool, arguments: JSON.stringify(args), deadline: new Date(Date.now() + stepDeadlineMs).toISOString() };
      open.set(step.id, step);
      execution.record(
        [
          { type: 'intent.accepted', payload: { intent_type: 'invoke_tool', details: { tool_id: call.tool, arguments: args, ...details } } },
          { type: 'step.created', stepId: step.id, payload: { tool_id: call.tool, tool_version: 0, arguments: args, max_attempts: 1, attempt: 1, deadline: step.deadline } },
        ],
        { ...step, status: 'running' },
      );
      return step.id;
    },
    settle(stepId, status, given, proxyCallId) {
      const text = redactSecrets(given);
      const step = open.get(stepId);
      if (step === undefined) return;
      open.delete(stepId);
      const completedAt = new Date().toISOString();
      const audited = proxyCallId === undefined ? {} : { call_id: proxyCallId };
      if (status === 'ok') {
        execution.record([{ type: 'step.completed', stepId, payload: { result: text, ...audited } }], { ...step, status: 'succeeded', result: JSON.stringify(text), completedAt });
        return;
      }
      const payload = { error: text, retryable: false, ...(status === 'denied' ? { denied: true } : {}), ...audited };
      execution.record([{ type: 'step.failed', stepId, payload }], { ...step, status: 'failed', error: text, completedAt });
    },
    settledElsewhere(stepId) {
      open.delete(stepId);
    },
    cancelOpen() {
      const drafts = [...open.values()].map((s) => ({ type: 'step.cancelled', stepId: s.id, payload: { reason: 'execution cancelled' } }));
      open.clear();
      return drafts;
    },
  };
}

/** A call's outcome as its step's result or error. */
export function outcomeText(outcome: CallOutcome): string {
  if (outcome.status === 'ok') return outcome.result.text;
  if (outcome.status === 'denied') return `denied: ${outcome.reason}`;
  return `${outcome.error.code}: ${outcome.error.message}`;
}
