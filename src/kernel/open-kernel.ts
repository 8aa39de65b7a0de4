import path from 'node:path';
import { migrate } from '../store/sql/migrate.js';
import { openPgliteDb } from '../store/sql/pglite-db.js';
import { openPostgresDb } from '../store/sql/postgres-db.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { createExecutions, type Executions } from './executions.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';

/** The kernel's state: embedded PGlite under `.ai/state/kernel/` by default, a Postgres server when DATABASE_URL is set. */
export interface Kernel {
  executions: Executions;
  /** Where its state lives, for messages: a folder, or the server's URL without password. */
  readonly store: string;
  /** True while the database answers (GET /v0/ready). */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

export const KERNEL_STATE_DIR = path.join('.ai', 'state', 'kernel');

export interface OpenKernelOptions {
  /** The project root: PGlite's data goes under it. */
  root: string;
  /** `postgres://…`; absent: embedded PGlite. */
  databaseUrl?: string;
  /** In memory instead of on disk (tests). */
  inMemory?: boolean;
}

export async function openKernel(options: OpenKernelOptions): Promise<Kernel> {
  const dir = path.join(options.root, KERNEL_STATE_DIR);
  const db: SqlDb = options.databaseUrl !== undefined ? await openPostgresDb(options.databaseUrl) : await openPgliteDb(options.inMemory ? undefined : dir);
  try {
    await migrate(db, KERNEL_MIGRATIONS);
  } catch (error) {
    await db.close();
    throw error;
  }
  return {
    executions: createExecutions(db),
    store: db.kind === 'pglite' ? (options.inMemory ? 'memory' : dir) : 'DATABASE_URL',
    async ready() {
      try {
        await db.query('select 1');
        return true;
      } catch {
        return false;
      }
    },
    close: () => db.close(),
  };
}
