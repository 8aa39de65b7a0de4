import { argumentsDigest } from '../base/arguments-digest.js';
import { KiwiError } from '../base/errors.js';
import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';
import type { Agents } from './agents.js';
import { appendEvents, type EventLinks } from './event-log.js';
import { blockExecution, lockExecution, setExecutionStatus, type ExecutionRow } from './execution-rows.js';
import type { Runners } from './runners.js';
import type { StepRow } from './steps.js';
import { TERMINAL_STATUSES, type KernelEvent } from './types.js';

/**
 * Signals (§12.1) and approvals (§12.2). A signal is recorded, stays pending until a `wait` of
 * its type consumes it, resumes an execution blocked on it, and reaches the agent. The signal
 * `step.approve` with `{step_id, approved, reason?}` answers a call that waits for approval.
 * Who may send which is clients/access.ts's (nobody answers their own call). A grant is bound
 * to the call it was asked for: its execution and step, and, when the answer names them
 * (`kiwi approvals grant` does), its `tool_id` and `arguments_digest` (arguments-digest.ts); a
 * grant after the step's deadline, under another version of the kernel policy than the one that
 * asked, or naming another call, is refused and nothing runs.
 */

export interface Signals {
  /**
   * Throws NOT_FOUND, CONFLICT (ended), INVALID_INPUT (no type; an approval for another step).
   * `sender`: the client key that sent it; an approval of a gateway chat's call records it.
   */
  send(executionId: string, input: { signalType: unknown; payload: unknown; sender?: string }): Promise<void>;
  /** Inside a `wait` intent's transaction: consumes a pending signal of `signalType` (and returns its payload), or blocks on it. */
  wait(tx: SqlQueryable, row: ExecutionRow, signalType: string, links: EventLinks, at: Date): Promise<{ consumed?: { payload: unknown } }>;
}

export interface SignalsDeps {
  db: SqlDb;
  /** The version of the kernel policy in force (kernel-policy-file.ts); a grant of a step asked under another is refused. */
  policyVersion?: () => string | undefined;
  agents: Agents;
  runners: Runners;
  now: () => Date;
  stepTimeoutMs: number;
}

const MAX_TYPE_CHARS = 256;
/** §17.18: the agent starts listening for a signal only after it has read the `wait` answer. */
const REPUSH_DELAY_MS = 75;

export function createSignals(deps: SignalsDeps): Signals {
  const { db, agents, now } = deps;

  async function resume(tx: SqlQueryable, executionId: string, reason: string, links: EventLinks, at: Date): Promise<KernelEvent[]> {
    await setExecutionStatus(tx, executionId, 'running', at);
    return appendEvents(tx, executionId, [{ type: 'execution.resumed', payload: { reason } }], links, at);
  }

  /** §12.2: the answer to the step that waits for approval. */
  async function approve(tx: SqlQueryable, row: ExecutionRow, payload: unknown, links: EventLinks, at: Date): Promise<{ stepId: string; approved: boolean; job?: string }> {
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new KiwiError('INVALID_INPUT', 'a step.approve signal needs a payload {"step_id", "approved", "reason"?}');
    const p = payload as Record<string, unknown>;
    const stepId = p['step_id'];
    if (typeof stepId !== 'string' || stepId !== row.block_ref) throw new KiwiError('INVALID_INPUT', `step.approve names step ${JSON.stringify(stepId)}, but execution ${row.id} waits for approval of step ${row.block_ref ?? '(none)'}`);
    const approved = p['approved'] === true;
    const [step] = await tx.query<StepRow>('select * from kernel_steps where id = $1', [stepId]);
    if (step === undefined) throw new KiwiError('NOT_FOUND', `not found: step ${stepId}`);
    if (approved) checkGrant(step, p, at, deps.policyVersion?.());
    if (approved) {
      const deadline = new Date(at.getTime() + deps.stepTimeoutMs).toISOString();
      // A remote step becomes a job for a runner; a local one only gets its deadline renewed.
      const job = step.remote ? await deps.runners.enqueue(tx, { id: stepId, executionId: row.id, toolId: step.tool_id, arguments: JSON.parse(step.arguments) as unknown, attempt: step.attempt, deadline }, at) : undefined;
      await tx.query(`update kernel_steps set deadline = $2${step.remote ? ", status = 'dispatched'" : ''} where id = $1`, [stepId, deadline]);
      await appendEvents(tx, row.id, [{ type: 'step.dispatched', stepId, payload: { runner_id: '', job_id: job ?? '', deadline } }], links, at);
      await resume(tx, row.id, 'approval granted', links, at);
      return { stepId, approved, ...(job === undefined ? {} : { job }) };
    } else {
      const reason = typeof p['reason'] === 'string' && p['reason'] !== '' ? p['reason'] : 'approval denied by human';
      await tx.query("update kernel_steps set status = 'failed', error = $2, completed_at = $3 where id = $1", [stepId, reason, at.toISOString()]);
      await appendEvents(tx, row.id, [{ type: 'step.failed', stepId, payload: { error: reason, retryable: false } }], links, at);
      await resume(tx, row.id, 'approval denied', links, at);
    }
    return { stepId, approved };
  }

  return {
    async send(executionId, input) {
      const signalType = input.signalType;
      if (typeof signalType !== 'string' || signalType === '') throw new KiwiError('INVALID_INPUT', 'signal_type is required');
      if (signalType.length > MAX_TYPE_CHARS) throw new KiwiError('INVALID_INPUT', `signal_type is longer than ${MAX_TYPE_CHARS} characters`);
      const given = input.payload ?? null;
      const at = now();
      // The signal is recorded even when the approval it carries is refused (§12.2): that refusal is raised after the commit.
      const outcome = await db.transaction(async (tx) => {
        const row = await lockExecution(tx, executionId);
        if (row === undefined) throw new KiwiError('NOT_FOUND', `not found: execution ${executionId}`);
        if (TERMINAL_STATUSES.has(row.status)) throw new KiwiError('CONFLICT', `execution is in terminal state: execution ${executionId} is ${row.status}`);
        const chatApproval = row.origin === 'chat' && signalType === 'step.approve' && input.sender !== undefined;
        // Agents' signals are recorded as sent (§12.1); a chat's approval also says who answered, for its audit.
        const payload = chatApproval ? withDecider(given, input.sender as string) : given;
        const [received] = await appendEvents(tx, executionId, [{ type: 'signal.received', payload: { signal_type: signalType, payload } }], {}, at);
        const links = { causationId: (received as KernelEvent).id, correlationId: (received as KernelEvent).correlationId };
        let approval: { stepId: string; approved: boolean; job?: string } | undefined;
        let refused: unknown;
        if (row.status === 'blocked' && row.block_reason === 'signal' && row.block_ref === signalType) {
          await resume(tx, executionId, `signal received: ${signalType}`, links, at);
        } else {
          await tx.query('insert into kernel_signals (id, execution_id, signal_type, payload, created_at) values ($1, $2, $3, $4, $5)', [(received as KernelEvent).id, executionId, signalType, JSON.stringify(payload), at.toISOString()]);
          if (row.status === 'blocked' && row.block_reason === 'approval' && signalType === 'step.approve') {
            approval = await approve(tx, row, payload, links, at).catch((error: unknown) => {
              refused = error;
              return undefined;
            });
            // The approval consumed it: it is no longer pending.
            if (approval !== undefined) await tx.query('delete from kernel_signals where id = $1', [(received as KernelEvent).id]);
          }
        }
        const [session] = await tx.query<{ id: string }>('select id from kernel_sessions where execution_id = $1', [executionId]);
        return { session: session?.id, approval, refused };
      });
      if (outcome.refused !== undefined) throw outcome.refused;
      if (outcome.approval?.job !== undefined) await deps.runners.dispatchQueued(outcome.approval.job);
      if (outcome.session === undefined) return;
      if (outcome.approval !== undefined) {
        await agents.push(outcome.session, 'approval.resolved', { execution_id: executionId, step_id: outcome.approval.stepId, approved: outcome.approval.approved, session_id: outcome.session });
      }
      await agents.push(outcome.session, 'signal.received', { execution_id: executionId, signal_type: signalType, payload: given });
    },

    async wait(tx, row, signalType, links, at) {
      const [pending] = await tx.query<{ id: string; payload: string }>('select id, payload from kernel_signals where execution_id = $1 and signal_type = $2 order by created_at, id limit 1', [row.id, signalType]);
      if (pending === undefined) {
        await blockExecution(tx, row.id, 'signal', signalType, at);
        await appendEvents(tx, row.id, [{ type: 'execution.blocked', payload: { reason: 'signal', ref: signalType } }], links, at);
        return {};
      }
      await tx.query('delete from kernel_signals where id = $1', [pending.id]);
      await appendEvents(tx, row.id, [{ type: 'execution.resumed', payload: { reason: `signal received: ${signalType}` } }], links, at);
      return { consumed: { payload: JSON.parse(pending.payload) as unknown } };
    },
  };
}

/** After the `wait` answer has gone out, the signal that satisfied it goes to the agent again (§12.1, §17.2). */
export function repushSignal(agents: Agents, sessionId: string, data: Record<string, unknown>): void {
  setTimeout(() => void agents.push(sessionId, 'signal.received', data).catch(() => undefined), REPUSH_DELAY_MS).unref();
}

/**
 * `decided_by` [diff]: the client key that sent the answer, with the name the sender gave
 * (`kiwi approvals grant --as NAME`) beside it, so the record never rests on a claim alone.
 */
function withDecider(payload: unknown, sender: string): unknown {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  const given = (payload as Record<string, unknown>)['decided_by'];
  const named = typeof given === 'string' && given !== '' && given !== sender ? `${given.slice(0, 64)} (key ${sender})` : sender;
  return { ...payload, decided_by: named };
}

/** A grant must answer the call as it was asked, under the policy that asked, before its deadline. */
function checkGrant(step: StepRow, answer: Record<string, unknown>, at: Date, policyVersion: string | undefined): void {
  const tool = answer['tool_id'];
  if (tool !== undefined && tool !== step.tool_id) throw new KiwiError('INVALID_INPUT', `the grant names tool ${JSON.stringify(String(tool).slice(0, 80))}, but step ${step.id} calls ${step.tool_id}; nothing was run`);
  const digest = answer['arguments_digest'];
  if (digest !== undefined && digest !== argumentsDigest(JSON.parse(step.arguments))) {
    throw new KiwiError('INVALID_INPUT', `the grant was given for other arguments than step ${step.id} has (arguments_digest differs); nothing was run: look at the call again (kiwi approvals list) and answer that`);
  }
  if (Date.parse(step.deadline) <= at.getTime()) throw new KiwiError('CONFLICT', `the approval of step ${step.id} expired at ${step.deadline}; nothing was run`);
  if (step.policy_version !== null && policyVersion !== undefined && step.policy_version !== policyVersion) {
    throw new KiwiError('CONFLICT', `the kernel policy changed since step ${step.id} asked for approval (${step.policy_version}, now ${policyVersion}); nothing was run: deny it, and let the agent ask again under the policy in force`);
  }
}
