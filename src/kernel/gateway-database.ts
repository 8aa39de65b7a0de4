import { migrate } from '../store/sql/migrate.js';
import { openPostgresDb } from '../store/sql/postgres-db.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';

/**
 * A few connections of their own to the Postgres of `DATABASE_URL`, migrated, for what gateways
 * share there besides the kernel's executions: the budgets' ledger and the client keys. Fails
 * with the URL (password hidden) and what to check when the server cannot be reached.
 */
export async function openGatewayDatabase(url: string, options: { maxConnections?: number } = {}): Promise<SqlDb> {
  const db = await openPostgresDb(url, { maxConnections: options.maxConnections ?? 3 });
  try {
    await migrate(db, KERNEL_MIGRATIONS);
    return db;
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** `DATABASE_URL` as gateways read it: unset or empty is no database. */
export function databaseUrlOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const url = env['DATABASE_URL'];
  return url === undefined || url === '' ? undefined : url;
}
