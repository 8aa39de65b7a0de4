import type { SqlDb } from '../store/sql/sql-db.js';
import { appendEvents } from './event-log.js';
import { lockExecution, setExecutionStatus } from './execution-rows.js';
import { cancelOpenSteps } from './steps.js';

/**
 * Kernel instances on one database. Each says it is alive every `heartbeatMs(deadAfterMs)`; one
 * silent for `deadAfterMs` (kernel.instance_timeout_ms) has gone (killed, or cut off from the database), and the watcher of any other
 * recovers what it held, as a restart does (§16): the executions its agents held go back to
 * pending to be assigned again, its open steps cancelled; the chats it ran fail.
 */

/** The longest wait between heartbeats; shorter when `deadAfterMs` is short (a quarter of it). */
export const HEARTBEAT_MS = 10_000;

export interface Instances {
  /** Says this instance is alive, now and every `intervalMs` (0: once). */
  start(intervalMs: number): Promise<void>;
  /** Recovers what instances silent for too long held, and forgets them. */
  recoverDead(at: Date): Promise<void>;
  /** Stops the heartbeat and forgets this instance. */
  stop(): Promise<void>;
}

/** Several heartbeats fit in `deadAfterMs`: a busy instance is not taken for dead. */
export const heartbeatMs = (deadAfterMs: number): number => Math.min(HEARTBEAT_MS, Math.floor(deadAfterMs / 4));

export function createInstances(db: SqlDb, instanceId: string, now: () => Date, deadAfterMs: number): Instances {
  let timer: NodeJS.Timeout | undefined;
  const beat = async (): Promise<void> => {
    const at = now().toISOString();
    await db.query('insert into kernel_instances (id, started_at, heartbeat_at) values ($1, $2, $2) on conflict (id) do update set heartbeat_at = excluded.heartbeat_at', [instanceId, at]);
  };
  return {
    async start(intervalMs) {
      await beat();
      if (intervalMs > 0) {
        timer = setInterval(() => void beat().catch(() => undefined), intervalMs);
        timer.unref();
      }
    },
    async recoverDead(at) {
      const cutoff = new Date(at.getTime() - deadAfterMs).toISOString();
      const dead = await db.query<{ id: string }>('select id from kernel_instances where heartbeat_at < $1 and id <> $2', [cutoff, instanceId]);
      for (const { id } of dead) {
        await recoverExecutions(db, at, id);
        await db.query('delete from kernel_instances where id = $1', [id]);
      }
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await db.query('delete from kernel_instances where id = $1', [instanceId]);
    },
  };
}

/**
 * The running and blocked executions an instance held (all of them when `owner` is undefined:
 * an embedded database, whose only instance is gone at start): agents' ones back to pending,
 * chats failed, and its sessions forgotten.
 */
export async function recoverExecutions(db: SqlDb, at: Date, owner?: string): Promise<void> {
  const held = await db.query<{ id: string }>(
    owner === undefined
      ? "select id from kernel_executions where status in ('running', 'blocked')"
      : "select e.id from kernel_executions e where e.status in ('running', 'blocked') and (e.owner = $1 or exists (select 1 from kernel_sessions s where s.execution_id = e.id and s.owner = $1))",
    owner === undefined ? [] : [owner],
  );
  for (const { id } of held) {
    await db.transaction(async (tx) => {
      const row = await lockExecution(tx, id);
      if (row === undefined || (row.status !== 'running' && row.status !== 'blocked')) return;
      await tx.query('delete from kernel_sessions where execution_id = $1', [id]);
      if (row.origin === 'chat') {
        await cancelOpenSteps(tx, id, 'gateway stopped', at);
        await setExecutionStatus(tx, id, 'failed', at);
        await appendEvents(tx, id, [{ type: 'execution.failed', payload: { error: 'the gateway stopped before the chat ended' } }], {}, at);
        return;
      }
      await cancelOpenSteps(tx, id, 'agent disconnected', at);
      await setExecutionStatus(tx, id, 'pending', at);
      await appendEvents(tx, id, [{ type: 'execution.reset', payload: { reason: 'recovery', from_status: row.status } }], {}, at);
    });
  }
  if (owner === undefined) await db.query('delete from kernel_sessions');
}
