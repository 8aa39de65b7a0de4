import type { Migration } from '../store/sql/migrate.js';
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
 * trigger keeps (CLIENT_SHARE_MIGRATION below, kernel migration 18). Runs under the client's quota lock (executions.ts).
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

/** Kernel migration 18 (kernel-migrations.ts lists it): the counts makeRoomInShare reads, kept by a trigger. */
export const CLIENT_SHARE_MIGRATION: Migration = {
  version: 18,
  name: 'what each client keeps',
  statements: [
    // The executions each client made through /v0 (ended ones too) and the bytes of their
    // inputs, kept by the trigger below on every insert and delete (however a row goes: a
    // create, the retention sweep, a prune), so a create checks its client's share in one row
    // (kernel-limits.ts, issue 39: 1,203 created and cancelled executions grew the database 300 MB).
    `create table kernel_client_kept (
      client text primary key,
      executions integer not null,
      input_bytes bigint not null
    )`,
    `insert into kernel_client_kept (client, executions, input_bytes)
      select client, count(*), coalesce(sum(octet_length(input)), 0) from kernel_executions where origin = 'api' group by client`,
    // octet_length of text reads the stored size: a large input is not read back to count it.
    `create function kernel_client_kept_count() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        if new.origin = 'api' then
          insert into kernel_client_kept as k (client, executions, input_bytes) values (new.client, 1, octet_length(new.input))
            on conflict (client) do update set executions = k.executions + 1, input_bytes = k.input_bytes + excluded.input_bytes;
        end if;
        return new;
      end if;
      if old.origin = 'api' then
        update kernel_client_kept set executions = executions - 1, input_bytes = input_bytes - octet_length(old.input) where client = old.client;
      end if;
      return old;
    end
    $$`,
    'create trigger kernel_executions_kept after insert or delete on kernel_executions for each row execute function kernel_client_kept_count()',
    // A client's ended executions, oldest first: the first to go when it is over its share.
    "create index kernel_executions_client_ended on kernel_executions (client, updated_at, id) where origin = 'api' and status in ('completed', 'failed', 'cancelled')",
  ],
};
