import type { SqlDb } from '../store/sql/sql-db.js';
import type { Agents } from './agents.js';
import { appendEvents } from './event-log.js';
import { lockExecution, setExecutionStatus } from './execution-rows.js';
import { cancelOpenSteps, openSteps } from './steps.js';
import { TERMINAL_STATUSES } from './types.js';

/**
 * The kernel's watcher (§8.2, §8.3, §11.3, §16), every `intervalMs` (30 s, as Rebuno's): a step
 * past its deadline fails its execution; an execution past its maximum duration fails; a blocked
 * execution whose agent has gone back to pending; a pending one whose agent is connected is
 * assigned. Each execution is settled in its own transaction, under its lock. Last, what has
 * been kept long enough is forgotten (kernel-retention.ts).
 */

export interface Reaper {
  /** One pass over everything overdue; what `start` runs on its beat. */
  sweep(): Promise<void>;
  start(): void;
  /** Stops the beat; resolves once a pass under way has finished. */
  stop(): Promise<void>;
}

export interface ReaperDeps {
  db: SqlDb;
  agents: Agents;
  now: () => Date;
  intervalMs?: number;
  /** Default 1 h. */
  executionTimeoutMs?: number;
  /** What instances gone silent held, recovered first (instances.ts). */
  recoverDead?: (at: Date) => Promise<void>;
  /** Deletes what has been kept long enough (kernel-retention.ts), last. */
  retain?: (at: Date) => Promise<unknown>;
  /** Told when a pass fails (the next one tries again). */
  onError?: (error: unknown) => void;
}

/** The watcher's beat: 30 s, or the instance timeout when shorter, so a dead gateway's work is taken over within twice that. */
export const reaperBeatMs = (instanceTimeoutMs: number): number => Math.min(30_000, instanceTimeoutMs);

export function createReaper(deps: ReaperDeps): Reaper {
  const { db, agents, now } = deps;
  const executionTimeoutMs = deps.executionTimeoutMs ?? 60 * 60_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function timeOutSteps(at: Date): Promise<void> {
    const overdue = await db.query<{ execution_id: string }>(
      "select distinct s.execution_id from kernel_steps s join kernel_executions e on e.id = s.execution_id where s.status in ('pending', 'dispatched', 'running') and s.deadline < $1 and e.status in ('pending', 'running')",
      [at.toISOString()],
    );
    for (const { execution_id: id } of overdue) {
      await db.transaction(async (tx) => {
        const row = await lockExecution(tx, id);
        if (row === undefined || TERMINAL_STATUSES.has(row.status) || row.status === 'blocked') return;
        const open = await openSteps(tx, id);
        const late = open.find((s) => s.deadline < at.toISOString());
        if (late === undefined) return;
        await tx.query("update kernel_steps set status = 'timed_out', error = 'step timed out', completed_at = $2 where id = $1", [late.id, at.toISOString()]);
        const [timedOut] = await appendEvents(tx, id, [{ type: 'step.timed_out', stepId: late.id, payload: {} }], {}, at);
        const links = { causationId: timedOut?.id ?? '', correlationId: timedOut?.correlationId ?? '' };
        await cancelOpenSteps(tx, id, 'sibling step timed out', at, links);
        await setExecutionStatus(tx, id, 'failed', at);
        await appendEvents(tx, id, [{ type: 'execution.failed', payload: { error: 'step timed out' } }], links, at);
      });
    }
  }

  async function timeOutExecutions(at: Date): Promise<void> {
    const cutoff = new Date(at.getTime() - executionTimeoutMs).toISOString();
    const old = await db.query<{ id: string }>("select id from kernel_executions where status in ('pending', 'running', 'blocked') and created_at < $1", [cutoff]);
    for (const { id } of old) {
      await db.transaction(async (tx) => {
        const row = await lockExecution(tx, id);
        if (row === undefined || TERMINAL_STATUSES.has(row.status)) return;
        await cancelOpenSteps(tx, id, 'execution timed out', at);
        await setExecutionStatus(tx, id, 'failed', at);
        await appendEvents(tx, id, [{ type: 'execution.failed', payload: { error: 'execution exceeded maximum duration' } }], {}, at);
      });
    }
  }

  /** §8.3: a blocked execution whose session went with its agent, and no connection of that agent is left here. */
  async function recoverBlocked(at: Date): Promise<void> {
    const orphans = await db.query<{ id: string; agent_id: string }>(
      "select e.id, e.agent_id from kernel_executions e where e.status = 'blocked' and e.origin = 'api' and not exists (select 1 from kernel_sessions s where s.execution_id = e.id)",
    );
    for (const { id, agent_id: agentId } of orphans) {
      if (agents.connected(agentId)) continue;
      await db.transaction(async (tx) => {
        const row = await lockExecution(tx, id);
        if (row?.status !== 'blocked') return;
        await cancelOpenSteps(tx, id, 'agent disconnected', at);
        await setExecutionStatus(tx, id, 'pending', at);
        await appendEvents(tx, id, [{ type: 'agent.timeout', payload: { session_id: '' } }, { type: 'execution.reset', payload: { reason: 'recovery', from_status: 'blocked' } }], {}, at);
      });
    }
  }

  async function assignWaiting(): Promise<void> {
    const pending = await db.query<{ id: string; agent_id: string }>(
      "select e.id, e.agent_id from kernel_executions e where e.status = 'pending' and not exists (select 1 from kernel_sessions s where s.execution_id = e.id) order by e.created_at, e.id",
    );
    for (const { id, agent_id: agentId } of pending) if (agents.connected(agentId)) await agents.assign(id);
  }

  async function sweep(): Promise<void> {
    const at = now();
    await deps.recoverDead?.(at);
    await timeOutSteps(at);
    await timeOutExecutions(at);
    await recoverBlocked(at);
    await assignWaiting();
    await deps.retain?.(at);
  }

  // One pass at a time: a beat that comes while one runs joins it.
  const pass = (): Promise<void> => (running ??= sweep().finally(() => (running = undefined)));
  return {
    sweep: pass,
    start() {
      timer ??= setInterval(() => void pass().catch((error: unknown) => deps.onError?.(error)), deps.intervalMs ?? 30_000);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}
