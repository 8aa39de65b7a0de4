import { LOCAL_CLIENT } from '../clients/client-auth.js';
import { KiwiError } from '../errors.js';
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
        // The client whose chat waits must not answer for the person: an agent holding a key could
        // approve itself. Without keys (loopback: one person's machine) they answer their own chats.
        if (chatApproval && input.sender !== LOCAL_CLIENT && chatClient(row) === input.sender) {
          throw new KiwiError('POLICY_DENIED', `client ${input.sender} made this chat, so it cannot answer its approvals; answer with another client key (kiwi keys create NAME)`);
        }
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

function chatClient(row: ExecutionRow): string | undefined {
  return (JSON.parse(row.labels) as Record<string, string>)['client'];
}
