import type { SqlQueryable } from '../store/sql/sql-db.js';
import { quotaExceeded, type KernelLimits } from './kernel-limits.js';

/**
 * What one client keeps of the executions it made through /v0, ended ones too (issue 39: one
 * client created and cancelled 1,203 executions, 302 of them with 250 KB inputs, and grew the
 * database from 57 MB to 360 MB in 66 s; a cancelled one no longer counts as live, and was kept
 * for the 30 days of retention). Before a new one is written, the client's oldest ended
 * executions are deleted (with their events, steps and labels) until the new one fits in
 * `maxExecutionsPerClient` and `maxInputBytesPerClient`: history is given up, oldest first,
 * rather than refusing a client that ends what it makes. Only when its executions not ended
 * fill the share alone is the create refused. The counts are kernel_client_kept's row, which a
 * trigger keeps (kernel-migrations.ts 18). Runs under the client's quota lock (executions.ts).
 */

/** Ended executions looked at, and deleted, by one statement. */
const BATCH = 500;

/** Makes room for one more execution of `client` with an input of `inputBytes`; returns how many it deleted. Throws QUOTA_EXCEEDED when only executions not ended are left over the share. */
export async function makeRoomInShare(tx: SqlQueryable, limits: Pick<KernelLimits, 'maxExecutionsPerClient' | 'maxInputBytesPerClient'>, client: string, inputBytes: number): Promise<number> {
  const [kept] = await tx.query<{ executions: number; input_bytes: number }>('select executions, input_bytes::double precision as input_bytes from kernel_client_kept where client = $1', [client]);
  let executions = (kept?.executions ?? 0) + 1;
  let bytes = (kept?.input_bytes ?? 0) + inputBytes;
  const over = (): boolean => executions > limits.maxExecutionsPerClient || bytes > limits.maxInputBytesPerClient;
  let deleted = 0;
  while (over()) {
    const oldest = await tx.query<{ id: string; bytes: number }>(
      "select id, octet_length(input) as bytes from kernel_executions where client = $1 and origin = 'api' and status in ('completed', 'failed', 'cancelled') order by updated_at, id limit $2",
      [client, BATCH],
    );
    const gone: string[] = [];
    for (const row of oldest) {
      if (!over()) break;
      gone.push(row.id);
      executions--;
      bytes -= Number(row.bytes);
    }
    if (gone.length > 0) await tx.query('delete from kernel_executions where id in (select value from json_array_elements_text($1::json))', [JSON.stringify(gone)]);
    deleted += gone.length;
    if (oldest.length < BATCH) break;
  }
  if (executions > limits.maxExecutionsPerClient) {
    throw quotaExceeded('maxExecutionsPerClient', client, `keeps ${executions - 1} executions not ended, the most it may keep`, 'wait for some to end, or cancel those it no longer needs (its oldest ended ones make room by themselves)');
  }
  if (bytes > limits.maxInputBytesPerClient) {
    throw quotaExceeded(
      'maxInputBytesPerClient',
      client,
      `would keep ${bytes} bytes of inputs in executions not ended, over the ${limits.maxInputBytesPerClient} it may keep`,
      'wait for some to end, cancel those it no longer needs, or send smaller inputs',
    );
  }
  return deleted;
}
