import { KiwiError } from '../errors.js';
import type { SqlDb, SqlQueryable } from '../store/sql/sql-db.js';
import type { AgentConnection, AgentHub } from './agent-hub.js';
import { appendEvents } from './event-log.js';
import { TERMINAL_STATUSES, type EventDraft, type ExecutionStatus, type KernelEvent } from './types.js';
import { uuidv7 } from './uuidv7.js';

/**
 * Agents (§6, §8.2, §8.3, §9, §10): executions assigned to connected agents round-robin, one
 * session per assignment, the intents that end an execution, and what a dropped connection
 * leaves behind. Every change is one transaction under the execution's row lock; events are
 * pushed to the agent only after it committed (and after the HTTP answer, where the spec asks).
 */

export interface IntentInput {
  executionId: unknown;
  sessionId: unknown;
  intent: unknown;
}

export interface IntentResult {
  accepted: boolean;
  stepId?: string;
  error?: string;
}

export interface Agents {
  /** A stream opened: it is registered (replacing one of the same agent and consumer), then the agent's pending executions are assigned. */
  connect(connection: AgentConnection): Promise<void>;
  /** A stream ended: its running executions go back to pending and are assigned again. */
  disconnect(connection: AgentConnection): Promise<void>;
  /** Assigns a pending execution to one of its agent's connections, if one is open. */
  assign(executionId: string): Promise<void>;
  intent(input: IntentInput): Promise<IntentResult>;
}

interface Row extends Record<string, unknown> {
  id: string;
  status: ExecutionStatus;
  agent_id: string;
  input: string;
  labels: string;
}

interface SessionRow extends Record<string, unknown> {
  id: string;
  execution_id: string;
  agent_id: string;
  consumer_id: string;
}

const MAX_ERROR_CHARS = 4096;

export function createAgents(db: SqlDb, hub: AgentHub, options: { instanceId?: string; now?: () => Date } = {}): Agents {
  const instanceId = options.instanceId ?? uuidv7();
  const now = options.now ?? (() => new Date());

  async function lock(tx: SqlQueryable, executionId: string): Promise<Row | undefined> {
    const [row] = await tx.query<Row>('select id, status, agent_id, input, labels from kernel_executions where id = $1 for update', [executionId]);
    return row;
  }

  async function setStatus(tx: SqlQueryable, executionId: string, status: ExecutionStatus, at: Date, output?: string): Promise<void> {
    await tx.query(`update kernel_executions set status = $2, updated_at = $3${output === undefined ? '' : ', output = $4'} where id = $1`, output === undefined ? [executionId, status, at.toISOString()] : [executionId, status, at.toISOString(), output]);
  }

  async function assign(executionId: string): Promise<void> {
    const [target] = await db.query<{ agent_id: string }>('select agent_id from kernel_executions where id = $1', [executionId]);
    const connection = target === undefined ? undefined : hub.next(target.agent_id);
    if (connection === undefined) return;
    const at = now();
    const sessionId = uuidv7(at.getTime());
    const assigned = await db.transaction(async (tx) => {
      const row = await lock(tx, executionId);
      if (row === undefined || row.status !== 'pending') return undefined;
      const [existing] = await tx.query('select id from kernel_sessions where execution_id = $1', [executionId]);
      if (existing !== undefined) return undefined;
      await tx.query('insert into kernel_sessions (id, execution_id, agent_id, consumer_id, owner, created_at) values ($1, $2, $3, $4, $5, $6)', [sessionId, executionId, row.agent_id, connection.consumerId, instanceId, at.toISOString()]);
      await setStatus(tx, executionId, 'running', at);
      await appendEvents(tx, executionId, [{ type: 'execution.started', payload: { session_id: sessionId, consumer_id: connection.consumerId } }], {}, at);
      return row;
    });
    if (assigned === undefined) return;
    const labels = JSON.parse(assigned.labels) as Record<string, string>;
    const sent = connection.channel.send('execution.assigned', {
      execution_id: executionId,
      session_id: sessionId,
      agent_id: assigned.agent_id,
      input: JSON.parse(assigned.input) as unknown,
      ...(Object.keys(labels).length === 0 ? {} : { labels }),
    });
    if (!sent) await reset(executionId, sessionId, 'send_failed');
  }

  /** The execution of `sessionId` back to pending (§8.3): its session gone, the story in its log. */
  async function reset(executionId: string, sessionId: string, reason: 'send_failed' | 'agent_disconnect'): Promise<void> {
    const at = now();
    const again = await db.transaction(async (tx) => {
      const row = await lock(tx, executionId);
      await tx.query('delete from kernel_sessions where id = $1', [sessionId]);
      if (row === undefined || row.status !== 'running') return false;
      const events: EventDraft[] = reason === 'agent_disconnect' ? [{ type: 'agent.timeout', payload: { session_id: sessionId } }] : [];
      events.push({ type: 'execution.reset', payload: { reason, from_status: 'running' } });
      await setStatus(tx, executionId, 'pending', at);
      await appendEvents(tx, executionId, events, {}, at);
      return true;
    });
    if (again) await assign(executionId);
  }

  async function ownSessions(connection: AgentConnection): Promise<SessionRow[]> {
    return db.query<SessionRow>('select id, execution_id, agent_id, consumer_id from kernel_sessions where owner = $1 and agent_id = $2 and consumer_id = $3', [instanceId, connection.agentId, connection.consumerId]);
  }

  async function dropSessions(connection: AgentConnection): Promise<void> {
    for (const session of await ownSessions(connection)) await reset(session.execution_id, session.id, 'agent_disconnect');
  }

  return {
    async connect(connection) {
      const replaced = hub.add(connection);
      if (replaced !== undefined) {
        // The SDK reconnects with the same consumer id: what the old stream held is lost with it.
        replaced.channel.close();
        await dropSessions(replaced);
      }
      const pending = await db.query<{ id: string }>(
        "select e.id from kernel_executions e where e.agent_id = $1 and e.status = 'pending' and not exists (select 1 from kernel_sessions s where s.execution_id = e.id) order by e.created_at, e.id",
        [connection.agentId],
      );
      for (const { id } of pending) await assign(id);
    },

    async disconnect(connection) {
      if (hub.remove(connection)) await dropSessions(connection);
    },

    assign,

    async intent(input) {
      const executionId = requiredString(input.executionId, 'execution_id');
      const sessionId = requiredString(input.sessionId, 'session_id');
      const at = now();
      return db.transaction(async (tx) => {
        const [session] = await tx.query<SessionRow>('select id, execution_id from kernel_sessions where id = $1', [sessionId]);
        if (session === undefined) throw new KiwiError('UNAUTHORIZED', `session not found: session ${sessionId}`);
        if (session.execution_id !== executionId) throw new KiwiError('INVALID_INPUT', `session ${sessionId} belongs to another execution, not ${executionId}`);
        const row = await lock(tx, executionId);
        if (row === undefined) throw new KiwiError('NOT_FOUND', `not found: execution ${executionId}`);
        if (TERMINAL_STATUSES.has(row.status)) throw new KiwiError('CONFLICT', `execution is in terminal state: execution ${executionId} is ${row.status}`);
        if (row.status === 'blocked') throw new KiwiError('CONFLICT', `execution is blocked: execution ${executionId} is blocked pending approval`);
        const intent = readIntent(input.intent);
        const accepted = await appendEvents(tx, executionId, [{ type: 'intent.accepted', payload: { intent_type: intent.type, details: intent.details } }], {}, at);
        const links = { causationId: (accepted[0] as KernelEvent).id, correlationId: (accepted[0] as KernelEvent).correlationId };
        if (intent.type === 'complete') {
          await setStatus(tx, executionId, 'completed', at, intent.output === null ? undefined : JSON.stringify(intent.output));
          await appendEvents(tx, executionId, [{ type: 'execution.completed', payload: { output: intent.output } }], links, at);
        } else {
          await setStatus(tx, executionId, 'failed', at);
          await appendEvents(tx, executionId, [{ type: 'execution.failed', payload: { error: intent.error } }], links, at);
        }
        return { accepted: true };
      });
    },
  };
}

type Intent = { type: 'complete'; output: unknown; details: Record<string, unknown> } | { type: 'fail'; error: string; details: Record<string, unknown> };

/** §6.2: the intents this kernel serves so far. */
function readIntent(value: unknown): Intent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new KiwiError('INVALID_INPUT', 'intent is required: an object with a type');
  const intent = value as Record<string, unknown>;
  const type = intent['type'];
  if (type === 'complete') {
    const output = intent['output'] ?? null;
    return { type, output, details: output === null ? {} : { output } };
  }
  if (type === 'fail') {
    const error = intent['error'];
    if (typeof error !== 'string' || error === '') throw new KiwiError('INVALID_INPUT', 'intent.error is required for fail');
    if (error.length > MAX_ERROR_CHARS) throw new KiwiError('INVALID_INPUT', `intent.error is longer than ${MAX_ERROR_CHARS} characters`);
    return { type, error, details: { error } };
  }
  if (type === 'invoke_tool' || type === 'wait') throw new KiwiError('INVALID_INPUT', `intent type ${type} is not served by this kernel yet: it ends executions (complete, fail) and does not run tools or wait for signals`);
  throw new KiwiError('INVALID_INPUT', `unknown intent type ${typeof type === 'string' ? type.slice(0, 100) : String(type)}`);
}

function requiredString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new KiwiError('INVALID_INPUT', `${name} is required`);
  return value;
}
