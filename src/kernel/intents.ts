import { checkExecution, seesExecution, type OwnedExecution } from '../clients/access.js';
import { KiwiError } from '../base/errors.js';
import type { Caller } from '../policy/caller.js';
import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';
import type { Agents } from './agents.js';
import { appendEvents } from './event-log.js';
import { blockExecution, setExecutionStatus, type ExecutionRow } from './execution-rows.js';
import type { IntentDecision, KernelMetrics } from './kernel-metrics.js';
import { evaluatePolicy, type KernelPolicy, type RuleRateLimiter } from './kernel-policy.js';
import type { Runners } from './runners.js';
import { repushSignal, type Signals } from './signals.js';
import { countSteps, isFinalStep, openSteps, type StepRow } from './steps.js';
import { TERMINAL_STATUSES, type EventDraft, type KernelEvent } from './types.js';
import { uuidv7 } from './uuidv7.js';

/**
 * What an agent asks of the kernel (§6.2, §6.3, §9): run a tool, finish, fail; and the outcome
 * of a tool it ran itself. Each request is checked (its session, the execution's state, the
 * payload, the policy for tools) and applied in one transaction under the execution's lock;
 * pushes to the agent follow the answer.
 */

export interface IntentInput {
  /** Who sends it: a key that serves the execution's agent, whose client holds the session. */
  actor: Caller;
  executionId: unknown;
  sessionId: unknown;
  intent: unknown;
}

export interface IntentResult {
  accepted: boolean;
  stepId?: string;
  error?: string;
  pendingApproval?: true;
}

export interface StepResultInput {
  actor: Caller;
  executionId: unknown;
  sessionId: unknown;
  stepId: unknown;
  success: unknown;
  data?: unknown;
  error?: unknown;
}

export interface Intents {
  submit(input: IntentInput): Promise<IntentResult>;
  /** A local step's outcome; pushes `tool.result` to the agent once it is stored. */
  stepResult(input: StepResultInput): Promise<void>;
}

export interface IntentsDeps {
  db: SqlDb;
  agents: Agents;
  runners: Runners;
  signals: Signals;
  policy: () => KernelPolicy;
  limiter: RuleRateLimiter;
  metrics?: Pick<KernelMetrics, 'intent' | 'policyEvaluated' | 'stepFinished'>;
  now: () => Date;
  /** A step's deadline when its rule sets none (§11.3); default 5 min. */
  stepTimeoutMs?: number;
}

const MAX_ID_CHARS = 256;
const MAX_ERROR_CHARS = 4096;

type FinishIntent = Extract<Intent, { type: 'complete' | 'fail' }>;

/** An intent's outcome with what the metrics call its decision. */
interface Decided<T> {
  decision: IntentDecision;
  result: T;
}

type Intent =
  | { type: 'invoke_tool'; toolId: string; arguments: unknown; idempotencyKey?: string; remote: boolean }
  | { type: 'complete'; output: unknown }
  | { type: 'fail'; error: string }
  | { type: 'wait'; signalType: string };

export function createIntents(deps: IntentsDeps): Intents {
  const { db, now } = deps;
  const stepTimeoutMs = deps.stepTimeoutMs ?? 5 * 60_000;

  /**
   * §9 steps 1–2: the actor serves the execution's agent, the session is this execution's and
   * held by the actor's client, and the execution takes intents. A session of another client is
   * not found, as an unknown one is: session ids are credentials.
   */
  async function admit(tx: SqlQueryable, executionId: string, sessionId: string, actor: Caller): Promise<ExecutionRow> {
    // One round trip on the path every intent takes: the execution, locked, and whose the session is.
    const [found] = await tx.query<ExecutionRow & { session_execution: string | null; session_client: string | null }>(
      'select e.*, s.execution_id as session_execution, s.client as session_client from kernel_executions e left join kernel_sessions s on s.id = $2 where e.id = $1 for update of e',
      [executionId, sessionId],
    );
    // One the actor may not see is answered as an unknown one, in the same order of checks.
    const row = found !== undefined && seesExecution(actor, owned(found)) ? found : undefined;
    if (row !== undefined) checkExecution(actor, 'act', owned(row));
    const session = row === undefined ? (await tx.query<{ execution_id: string; client: string }>('select execution_id, client from kernel_sessions where id = $1', [sessionId]))[0] : row.session_execution === null ? undefined : { execution_id: row.session_execution, client: row.session_client };
    if (session === undefined || session.client !== actor.client) throw new KiwiError('UNAUTHORIZED', `session not found: session ${sessionId}`);
    if (session.execution_id !== executionId) throw new KiwiError('INVALID_INPUT', `session ${sessionId} belongs to another execution, not ${executionId}`);
    if (row === undefined) throw new KiwiError('NOT_FOUND', `not found: execution ${executionId}`);
    return row;
  }

  async function invoke(tx: SqlQueryable, row: ExecutionRow, intent: Extract<Intent, { type: 'invoke_tool' }>, at: Date): Promise<Decided<IntentResult | { accepted: true; stepId: string; job: string }>> {
    const details = { tool_id: intent.toolId, ...(intent.arguments === undefined ? {} : { arguments: intent.arguments }), ...(intent.idempotencyKey === undefined ? {} : { idempotency_key: intent.idempotencyKey }) };
    const policy = deps.policy();
    const policyInput = {
      toolId: intent.toolId,
      agentId: row.agent_id,
      labels: JSON.parse(row.labels) as Record<string, string>,
      arguments: intent.arguments ?? null,
      // Counted only for a policy that asks (min_step_count): it costs a query per call.
      stepCount: policy.rules.some((r) => r.when.minStepCount !== undefined) ? await countSteps(tx, row.id) : 0,
      durationMs: at.getTime() - Date.parse(row.created_at),
      at,
    };
    const started = performance.now();
    const verdict = evaluatePolicy(policy, policyInput);
    deps.metrics?.policyEvaluated('tool.invoke', (performance.now() - started) / 1000);
    const deny = async (decision: 'denied' | 'rate_limited', reason: string): Promise<Decided<IntentResult>> => {
      await appendEvents(tx, row.id, [{ type: 'intent.denied', payload: { intent_type: 'invoke_tool', ...details, reason, rule_id: verdict.ruleId } }], {}, at);
      return { decision, result: { accepted: false, error: `${reason} (rule: ${verdict.ruleId})` } };
    };
    if (verdict.decision === 'deny') return deny('denied', `policy denied: ${verdict.reason}`);
    const stepId = uuidv7(at.getTime());
    // A remote step may be tried three times, a local one once (§11.2).
    const maxAttempts = intent.remote ? 3 : 1;
    const insertStep = async (timeoutMs: number, policyVersion: string | null = null): Promise<{ deadline: string; created: EventDraft }> => {
      const deadline = new Date(at.getTime() + timeoutMs).toISOString();
      await tx.query(
        "insert into kernel_steps (id, execution_id, tool_id, arguments, remote, status, attempt, max_attempts, deadline, created_at, policy_version) values ($1, $2, $3, $4, $5, 'pending', 1, $6, $7, $8, $9)",
        [stepId, row.id, intent.toolId, JSON.stringify(intent.arguments ?? null), intent.remote, maxAttempts, deadline, at.toISOString(), policyVersion],
      );
      return { deadline, created: { type: 'step.created', stepId, payload: { tool_id: intent.toolId, tool_version: 0, arguments: intent.arguments ?? null, max_attempts: maxAttempts, attempt: 1, deadline } } };
    };
    if (verdict.decision === 'require_approval') {
      // §12.2: no intent.accepted; the step waits, and the execution with it, for a person's answer.
      const { created } = await insertStep(stepTimeoutMs, policy.version ?? null);
      await blockExecution(tx, row.id, 'approval', stepId, at);
      const blocked = { reason: 'approval', ref: stepId, tool_id: intent.toolId, ...(intent.arguments === undefined || intent.arguments === null ? {} : { arguments: intent.arguments }), ...(intent.remote ? { remote: true } : {}) };
      await appendEvents(
        tx,
        row.id,
        [
          created,
          { type: 'step.approval_required', stepId, payload: { tool_id: intent.toolId, arguments: intent.arguments ?? null, remote: intent.remote, reason: verdict.reason } },
          { type: 'execution.blocked', payload: blocked },
        ],
        {},
        at,
      );
      return { decision: 'pending_approval', result: { accepted: true, stepId, pendingApproval: true } };
    }
    if (verdict.rateLimit !== undefined && !deps.limiter.admit(`${row.agent_id}\u0000${intent.toolId}`, verdict.rateLimit, at.getTime())) {
      return deny('rate_limited', `rate limit exceeded: max ${verdict.rateLimit.max} per ${verdict.rateLimit.window}`);
    }
    const { deadline, created } = await insertStep(verdict.timeoutMs ?? stepTimeoutMs);
    const accepted: EventDraft = { type: 'intent.accepted', payload: { intent_type: 'invoke_tool', details } };
    if (!intent.remote) {
      await appendEvents(tx, row.id, [accepted, created], {}, at);
      return { decision: 'accepted', result: { accepted: true, stepId } };
    }
    const job = await deps.runners.enqueue(tx, { id: stepId, executionId: row.id, toolId: intent.toolId, arguments: intent.arguments ?? null, attempt: 1, deadline }, at);
    await tx.query("update kernel_steps set status = 'dispatched' where id = $1", [stepId]);
    await appendEvents(tx, row.id, [accepted, created, { type: 'step.dispatched', stepId, payload: { runner_id: '', job_id: job, deadline } }], {}, at);
    return { decision: 'accepted', result: { accepted: true, stepId, job } };
  }

  /** §9: a wait met by a pending signal goes on running, and that signal reaches the agent again after the answer. */
  async function wait(tx: SqlQueryable, row: ExecutionRow, signalType: string, at: Date): Promise<IntentResult | { repush: Record<string, unknown> }> {
    const accepted = await appendEvents(tx, row.id, [{ type: 'intent.accepted', payload: { intent_type: 'wait', details: { signal_type: signalType } } }], {}, at);
    const { consumed } = await deps.signals.wait(tx, row, signalType, linksOf(accepted), at);
    return consumed === undefined ? { accepted: true } : { repush: { execution_id: row.id, signal_type: signalType, payload: consumed.payload } };
  }

  /** Complete or fail; with steps still open, the refusal to give after the commit. */
  async function finish(tx: SqlQueryable, row: ExecutionRow, intent: FinishIntent, at: Date): Promise<IntentResult | { conflict: string }> {
    const details = intent.type === 'complete' ? (intent.output === null ? {} : { output: intent.output }) : { error: intent.error };
    // Kept even when the open steps below refuse the intent (§9 step 5).
    const accepted = await appendEvents(tx, row.id, [{ type: 'intent.accepted', payload: { intent_type: intent.type, details } }], {}, at);
    if ((await openSteps(tx, row.id)).length > 0) return { conflict: `conflict: cannot ${intent.type} with active steps in progress` };
    if (intent.type === 'complete') {
      await setExecutionStatus(tx, row.id, 'completed', at, intent.output === null ? undefined : JSON.stringify(intent.output));
      await appendEvents(tx, row.id, [{ type: 'execution.completed', payload: { output: intent.output } }], linksOf(accepted), at);
    } else {
      await setExecutionStatus(tx, row.id, 'failed', at);
      await appendEvents(tx, row.id, [{ type: 'execution.failed', payload: { error: intent.error } }], linksOf(accepted), at);
    }
    return { accepted: true };
  }

  return {
    async submit(input) {
      const executionId = requiredString(input.executionId, 'execution_id');
      const sessionId = requiredString(input.sessionId, 'session_id');
      const at = now();
      const { type, decision, result } = await db.transaction(async (tx) => {
        const row = await admit(tx, executionId, sessionId, input.actor);
        if (TERMINAL_STATUSES.has(row.status)) throw new KiwiError('CONFLICT', `execution is in terminal state: execution ${executionId} is ${row.status}`);
        if (row.status === 'blocked') throw new KiwiError('CONFLICT', `execution is blocked: execution ${executionId} is blocked pending approval`);
        const intent = readIntent(input.intent);
        // A wait or a finish is accepted once it got here (its intent.accepted is written, §9 step 5).
        const decided: Decided<IntentResult | { accepted: true; stepId: string; job: string } | { repush: Record<string, unknown> } | { conflict: string }> =
          intent.type === 'invoke_tool' ? await invoke(tx, row, intent, at) : { decision: 'accepted', result: intent.type === 'wait' ? await wait(tx, row, intent.signalType, at) : await finish(tx, row, intent, at) };
        return { type: intent.type, ...decided };
      });
      deps.metrics?.intent(type, decision);
      if ('conflict' in result) throw new KiwiError('CONFLICT', result.conflict);
      if ('repush' in result) {
        repushSignal(deps.agents, sessionId, result.repush);
        return { accepted: true };
      }
      if ('job' in result) {
        // The answer goes out before the job does (§9): the agent waits for tool.result only once it has its step id.
        setImmediate(() => void deps.runners.dispatchQueued(result.job).catch(() => undefined));
        return { accepted: true, stepId: result.stepId };
      }
      return result;
    },

    async stepResult(input) {
      const { executionId, sessionId, stepId } = input;
      if (typeof executionId !== 'string' || executionId === '' || typeof sessionId !== 'string' || sessionId === '' || typeof stepId !== 'string' || stepId === '') {
        throw new KiwiError('INVALID_INPUT', 'execution_id, session_id, and step_id are required');
      }
      const at = now();
      const outcome = await db.transaction(async (tx) => {
        await admit(tx, executionId, sessionId, input.actor);
        const [step] = await tx.query<StepRow>('select * from kernel_steps where id = $1 and execution_id = $2', [stepId, executionId]);
        if (step === undefined) throw new KiwiError('NOT_FOUND', `not found: step ${stepId}`);
        // A remote step's outcome is its runner's to report (runners.ts), not the agent's.
        if (step.remote) throw new KiwiError('CONFLICT', `step ${stepId} runs on a runner, which reports its result`);
        if (isFinalStep(step.status)) throw new KiwiError('CONFLICT', 'step already resolved');
        if (input.success === true) {
          const data = input.data ?? null;
          await tx.query("update kernel_steps set status = 'succeeded', result = $2, completed_at = $3 where id = $1", [stepId, JSON.stringify(data), at.toISOString()]);
          await appendEvents(tx, executionId, [{ type: 'step.completed', stepId, payload: { result: data } }], {}, at);
          return { push: { execution_id: executionId, step_id: stepId, status: 'succeeded', result: data }, step };
        }
        const error = typeof input.error === 'string' && input.error !== '' ? input.error.slice(0, MAX_ERROR_CHARS) : 'the tool failed';
        await tx.query("update kernel_steps set status = 'failed', error = $2, completed_at = $3 where id = $1", [stepId, error, at.toISOString()]);
        await appendEvents(tx, executionId, [{ type: 'step.failed', stepId, payload: { error, retryable: false } }], {}, at);
        return { push: { execution_id: executionId, step_id: stepId, status: 'failed', error }, step };
      });
      deps.metrics?.stepFinished(outcome.step.tool_id, (at.getTime() - Date.parse(outcome.step.created_at)) / 1000);
      await deps.agents.push(sessionId, 'tool.result', outcome.push);
    },
  };
}

function linksOf(events: KernelEvent[]): { causationId: string; correlationId: string } {
  const last = events.at(-1) as KernelEvent;
  return { causationId: last.id, correlationId: last.correlationId };
}

/** §6.2. */
function readIntent(value: unknown): Intent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new KiwiError('INVALID_INPUT', 'intent is required: an object with a type');
  const intent = value as Record<string, unknown>;
  const type = intent['type'];
  if (type === 'invoke_tool') {
    const toolId = intent['tool_id'];
    if (typeof toolId !== 'string' || toolId === '') throw new KiwiError('INVALID_INPUT', 'intent.tool_id is required for invoke_tool');
    if (toolId.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `intent.tool_id is longer than ${MAX_ID_CHARS} characters`);
    const key = intent['idempotency_key'];
    if (key !== undefined && typeof key !== 'string') throw new KiwiError('INVALID_INPUT', 'intent.idempotency_key must be a string');
    return { type, toolId, arguments: intent['arguments'], ...(key === undefined ? {} : { idempotencyKey: key }), remote: intent['remote'] === true };
  }
  if (type === 'complete') return { type, output: intent['output'] ?? null };
  if (type === 'fail') {
    const error = intent['error'];
    if (typeof error !== 'string' || error === '') throw new KiwiError('INVALID_INPUT', 'intent.error is required for fail');
    if (error.length > MAX_ERROR_CHARS) throw new KiwiError('INVALID_INPUT', `intent.error is longer than ${MAX_ERROR_CHARS} characters`);
    return { type, error };
  }
  if (type === 'wait') {
    const signalType = intent['signal_type'];
    if (typeof signalType !== 'string' || signalType === '') throw new KiwiError('INVALID_INPUT', 'intent.signal_type is required for wait');
    if (signalType.length > MAX_ID_CHARS) throw new KiwiError('INVALID_INPUT', `intent.signal_type is longer than ${MAX_ID_CHARS} characters`);
    return { type, signalType };
  }
  throw new KiwiError('INVALID_INPUT', `unknown intent type ${typeof type === 'string' ? type.slice(0, 100) : String(type)}`);
}

function requiredString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new KiwiError('INVALID_INPUT', `${name} is required`);
  return value;
}

function owned(row: ExecutionRow): OwnedExecution {
  return { id: row.id, client: row.client, agentId: row.agent_id };
}
