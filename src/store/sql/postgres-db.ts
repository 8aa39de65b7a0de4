import pg from 'pg';
import { KiwiError } from '../../base/errors.js';
import type { SqlDb, SqlQueryable, SqlValue } from './sql-db.js';

/**
 * A Postgres server (`DATABASE_URL`), through a small pool of `pg` connections. Values go as
 * parameters; column types come back as `pg` reads them (text, integers, booleans).
 */
export async function openPostgresDb(url: string, options: { maxConnections?: number } = {}): Promise<SqlDb> {
  const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10, connectionTimeoutMillis: 10_000 });
  // An idle connection the server drops must not take the process with it.
  pool.on('error', () => undefined);
  try {
    await pool.query('select 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new KiwiError('INVALID_INPUT', `cannot connect to the Postgres of DATABASE_URL (${shownUrl(url)}): ${(error as Error).message}; check that the server runs and the URL's user, password and database`);
  }
  const queryable = (q: Pick<pg.Pool | pg.PoolClient, 'query'>): SqlQueryable => ({
    async query<Row extends Record<string, unknown>>(sql: string, params: readonly SqlValue[] = []) {
      return (await q.query<Row>(sql, [...params])).rows;
    },
  });
  return {
    kind: 'postgres',
    ...queryable(pool),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await fn(queryable(client));
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}

/** The URL without its password, for messages. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.href;
  } catch {
    return '(not a URL)';
  }
}
