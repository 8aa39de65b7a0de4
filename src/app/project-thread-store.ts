import { databaseUrlOf, openGatewayDatabase } from '../kernel/gateway-database.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { fileThreadStore } from '../threads/file-thread-store.js';
import { sqlThreadStore } from '../threads/sql-thread-store.js';
import type { ThreadStore } from '../threads/thread-store.js';

/**
 * A project's threads: in the Postgres gateways share when there is one (DATABASE_URL), so any
 * replica lists, follows and resumes a thread another started, else under its `.ai/threads/`.
 * `holdMs` is how long a process that stopped renewing (it died) keeps its threads from others:
 * kernel.instance_timeout_ms, the time after which a silent gateway is taken for gone.
 */
export function projectThreadStore(root: string, database: SqlDb | undefined, options: { holdMs: number }): ThreadStore {
  return database === undefined ? fileThreadStore(root) : sqlThreadStore(database, { holdMs: options.holdMs });
}

/** For a command that reads threads without a gateway (`kiwi threads list`, anneal): its own connection when DATABASE_URL is set, closed by `close`. */
export async function openProjectThreadStore(root: string, env: Readonly<Record<string, string | undefined>>): Promise<{ store: ThreadStore; close(): Promise<void> }> {
  const url = databaseUrlOf(env);
  if (url === undefined) return { store: fileThreadStore(root), close: async () => undefined };
  const database = await openGatewayDatabase(url, { maxConnections: 1 });
  return { store: sqlThreadStore(database), close: () => database.close() };
}
