import { afterAll, beforeAll } from 'vitest';
import { openGatewayDatabase } from '../../src/kernel/gateway-database.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import type { PostgresServer } from './postgres-server.js';
import { postgresDatabase } from './run-resources.js';

/**
 * A database of the run's Postgres with the gateway's own migrated connections to it
 * (openGatewayDatabase), opened before the calling file's tests and closed after them.
 */
export function gatewayDatabaseForFile(): { readonly db: SqlDb; readonly url: string } {
  let server: PostgresServer | undefined;
  let db: SqlDb | undefined;
  beforeAll(async () => {
    server = await postgresDatabase();
    db = await openGatewayDatabase(server.url);
  });
  afterAll(async () => {
    await db?.close();
    await server?.stop();
  });
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the gateway database is opened in beforeAll: use it inside a test');
    return value;
  };
  return {
    get db() {
      return opened(db);
    },
    get url() {
      return opened(server).url;
    },
  };
}
