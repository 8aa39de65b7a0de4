import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrate } from '../store/sql/migrate.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import { sqlRegistryTier, type RegistryTier } from '../store/registry-tier/sql-registry-tier.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';

/**
 * The database the registry tier lives in: the Postgres of `DATABASE_URL` when it is set (every
 * gateway and machine on it shares the tier), else an embedded PGlite in the user's
 * `~/.ai/state/registry` (shared by the user's projects on this machine). Opened for a push, a
 * pull or one load of the registry and closed after: the embedded one admits one process at a time.
 */
export interface OpenedRegistryTier {
  tier: RegistryTier;
  close(): Promise<void>;
}

export const EMBEDDED_REGISTRY_DIR = path.join('.ai', 'state', 'registry');

export interface RegistryTierDatabaseOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** The folder that holds the user's `.ai`. */
  userDir: string;
  /** Make the embedded database when there is none yet (a push); otherwise there is no tier to read. */
  create: boolean;
}

/**
 * The database drivers are imported only when a tier is there to open: every `kiwi run` loads the
 * registry, and most projects have no tier.
 */
export async function openRegistryTierDatabase(options: RegistryTierDatabaseOptions): Promise<OpenedRegistryTier | undefined> {
  const url = options.env['DATABASE_URL'];
  if (url !== undefined && url !== '') {
    const { openGatewayDatabase } = await import('./gateway-database.js');
    return opened(await openGatewayDatabase(url, { maxConnections: 1 }), 'the registry tier of DATABASE_URL');
  }
  const dir = path.join(options.userDir, EMBEDDED_REGISTRY_DIR);
  if (!options.create && !existsSync(path.join(dir, 'PG_VERSION'))) return undefined;
  const { openPgliteDb } = await import('../store/sql/pglite-db.js');
  const db = await openPgliteDb(dir);
  try {
    await migrate(db, KERNEL_MIGRATIONS);
  } catch (error) {
    await db.close();
    throw error;
  }
  return opened(db, `the registry tier in ${dir}`);
}

function opened(db: SqlDb, where: string): OpenedRegistryTier {
  return { tier: sqlRegistryTier(db, where), close: () => db.close() };
}
