import type { SqlDb } from '../store/sql/sql-db.js';
import type { KernelLimits } from './kernel-limits.js';

/**
 * What the kernel forgets, on the watcher's beat (reaper.ts): the schemas of runners silent (no
 * stream, no publish) for `idleRunnerSchemasMs`, the records of runners silent for
 * `retentionMs`, and executions ended `retentionMs` ago, whose events, steps, labels, sessions,
 * signals and jobs go with them (on delete cascade), and audit records written `retentionMs` ago
 * (a shared server's audit log: audit/sql-audit-log.ts). Executions and records go in batches, each its own
 * statement, and at most `maxBatches` a pass: one pass never holds locks for long, and a backlog
 * (the first pass after retention was lowered) is worked off over the next beats.
 */

export interface Retention {
  /** One pass; what it deleted. */
  sweep(at: Date): Promise<{ executions: number; runners: number; schemaRunners: number; auditRecords: number }>;
}

export interface RetentionDeps {
  db: SqlDb;
  limits: Pick<KernelLimits, 'idleRunnerSchemasMs' | 'retentionMs'>;
  /** The runners with a stream open on this instance: seen now, so neither they nor their schemas go. */
  connectedRunners: () => string[];
  /** Executions deleted by one statement (default 500). */
  batchSize?: number;
  /** Batches in one pass (default 20). */
  maxBatches?: number;
}

export function createRetention(deps: RetentionDeps): Retention {
  const { db, limits } = deps;
  const batchSize = deps.batchSize ?? 500;
  const maxBatches = deps.maxBatches ?? 20;
  return {
    async sweep(at) {
      const stamp = at.toISOString();
      // Every instance notes its own streams on each beat, so a runner connected to another
      // gateway on a shared server stays seen (the beat is far shorter than any expiry).
      const connected = deps.connectedRunners();
      if (connected.length > 0) await db.query('update kernel_runners set seen_at = $1 where id in (select value from json_array_elements_text($2::json))', [stamp, JSON.stringify(connected)]);
      const idleSince = new Date(at.getTime() - limits.idleRunnerSchemasMs).toISOString();
      const schemaRunners = await db.query<{ runner_id: string }>('delete from kernel_runner_tools where runner_id in (select id from kernel_runners where seen_at < $1) returning runner_id', [idleSince]);
      const cutoff = new Date(at.getTime() - limits.retentionMs).toISOString();
      const runners = await db.query('delete from kernel_runners where seen_at < $1 returning id', [cutoff]);
      const inBatches = async (sql: string): Promise<number> => {
        let deleted = 0;
        for (let batch = 0; batch < maxBatches; batch++) {
          const rows = await db.query(sql, [cutoff, batchSize]);
          deleted += rows.length;
          if (rows.length < batchSize) break;
        }
        return deleted;
      };
      const executions = await inBatches("delete from kernel_executions where id in (select id from kernel_executions where status in ('completed', 'failed', 'cancelled') and updated_at < $1 order by updated_at limit $2) returning id");
      const auditRecords = await inBatches('delete from audit_records where id in (select id from audit_records where at < $1 order by id limit $2) returning id');
      return { executions, runners: runners.length, schemaRunners: new Set(schemaRunners.map((r) => r.runner_id)).size, auditRecords };
    },
  };
}
