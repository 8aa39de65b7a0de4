import type { SqlDb } from '../store/sql/sql-db.js';
import type { AgentConnection, AgentHub } from './agent-hub.js';
import { appendEvents } from './event-log.js';
import { lockExecution, setExecutionStatus } from './execution-rows.js';
import { cancelOpenSteps, stepHistory } from './steps.js';
import { uuidv7 } from './uuidv7.js';

/**
 * Agents (§6.1, §8.2, §8.3, §10): executions assigned to connected agents round-robin, one
 * session per assignment, and what a dropped connection leaves behind. Every change is one
 * transaction under the execution's row lock; the agent hears of it only after the commit.
 */

export interface Agents {
  /** A stream opened: it is registered (replacing one of the same agent and consumer), then the agent's pending executions are assigned. */
  connect(connection: AgentConnection): Promise<void>;
  /** A stream ended: its running executions go back to pending and are assigned again. */
  disconnect(connection: AgentConnection): Promise<void>;
  /** Assigns a pending execution to one of its agent's connections, if one is open. */
  assign(executionId: string): Promise<void>;
  /** Pushes an event to the connection holding `sessionId`, if this instance holds it; false otherwise. */
  push(sessionId: string, event: string, data: unknown): Promise<boolean>;
  /** Whether this instance holds a connection of `agentId`. */
  connected(agentId: string): boolean;
}

export interface AgentsDeps {
  db: SqlDb;
  hub: AgentHub;
  /** This kernel instance: the owner of the sessions of its connections. */
  instanceId: string;
  now: () => Date;
}

interface SessionRow extends Record<string, unknown> {
  id: string;
  execution_id: string;
  agent_id: string;
  consumer_id: string;
  owner: string;
  client: string;
}

export function createAgents({ db, hub, instanceId, now }: AgentsDeps): Agents {
  async function assign(executionId: string): Promise<void> {
    const [target] = await db.query<{ agent_id: string }>('select agent_id from kernel_executions where id = $1', [executionId]);
    if (target === undefined || !hub.connected(target.agent_id)) return;
    const at = now();
    const sessionId = uuidv7(at.getTime());
    const assigned = await db.transaction(async (tx) => {
      const row = await lockExecution(tx, executionId);
      if (row === undefined || row.status !== 'pending') return undefined;
      const [existing] = await tx.query('select id from kernel_sessions where execution_id = $1', [executionId]);
      if (existing !== undefined) return undefined;
      // The turn goes only to an assignment that happens: a connect and a create that race to
      // assign one execution must not use up two turns between them (§8.2, round-robin).
      const connection = hub.next(row.agent_id);
      if (connection === undefined) return undefined;
      await tx.query('insert into kernel_sessions (id, execution_id, agent_id, consumer_id, owner, created_at, client) values ($1, $2, $3, $4, $5, $6, $7)', [sessionId, executionId, row.agent_id, connection.consumerId, instanceId, at.toISOString(), connection.client]);
      await setExecutionStatus(tx, executionId, 'running', at);
      await appendEvents(tx, executionId, [{ type: 'execution.started', payload: { session_id: sessionId, consumer_id: connection.consumerId } }], {}, at);
      return { row, connection, history: await stepHistory(tx, executionId) };
    });
    if (assigned === undefined) return;
    const labels = JSON.parse(assigned.row.labels) as Record<string, string>;
    const sent = assigned.connection.channel.send('execution.assigned', {
      execution_id: executionId,
      session_id: sessionId,
      agent_id: assigned.row.agent_id,
      input: JSON.parse(assigned.row.input) as unknown,
      ...(Object.keys(labels).length === 0 ? {} : { labels }),
      ...(assigned.history.length === 0 ? {} : { history: assigned.history }),
    });
    if (!sent) await reset(executionId, sessionId, 'send_failed');
  }

  /** The execution of `sessionId` back to pending (§8.2, §8.3): its session and open steps gone, the story in its log. */
  async function reset(executionId: string, sessionId: string, reason: 'send_failed' | 'agent_disconnect'): Promise<void> {
    const at = now();
    const again = await db.transaction(async (tx) => {
      const row = await lockExecution(tx, executionId);
      await tx.query('delete from kernel_sessions where id = $1', [sessionId]);
      // A blocked execution waits on without its session; a finished one has nothing to reset.
      if (row === undefined || row.status !== 'running') return false;
      if (reason === 'agent_disconnect') {
        await appendEvents(tx, executionId, [{ type: 'agent.timeout', payload: { session_id: sessionId } }], {}, at);
        await cancelOpenSteps(tx, executionId, 'agent disconnected', at);
      }
      await setExecutionStatus(tx, executionId, 'pending', at);
      await appendEvents(tx, executionId, [{ type: 'execution.reset', payload: { reason, from_status: 'running' } }], {}, at);
      return true;
    });
    if (again) await assign(executionId);
  }

  async function dropSessions(connection: AgentConnection): Promise<void> {
    const sessions = await db.query<SessionRow>('select * from kernel_sessions where owner = $1 and agent_id = $2 and consumer_id = $3 and client = $4', [instanceId, connection.agentId, connection.consumerId, connection.client]);
    for (const session of sessions) await reset(session.execution_id, session.id, 'agent_disconnect');
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

    connected: (agentId) => hub.connected(agentId),

    async push(sessionId, event, data) {
      const [session] = await db.query<SessionRow>('select * from kernel_sessions where id = $1', [sessionId]);
      if (session === undefined || session.owner !== instanceId) return false;
      return hub.get(session.agent_id, session.client, session.consumer_id)?.channel.send(event, data) ?? false;
    },
  };
}
