import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrate } from '../store/sql/migrate.js';
import { sqlRegistryTier, type RegistryTier } from '../store/registry-tier/sql-registry-tier.js';
import { renewStamp } from '../store/registry-tier/tier-selection.js';
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
const EMBEDDED_STAMP_FILE = path.join('.ai', 'state', 'registry.stamp');

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
  const url = serverUrl(options.env);
  if (url !== undefined) {
    const { openGatewayDatabase } = await import('./gateway-database.js');
    const db = await openGatewayDatabase(url, { maxConnections: 1 });
    return { tier: sqlRegistryTier(db, 'the registry tier of DATABASE_URL'), close: () => db.close() };
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
  const tier = sqlRegistryTier(db, `the registry tier in ${dir}`);
  const stamp = path.join(options.userDir, EMBEDDED_STAMP_FILE);
  const push: RegistryTier['push'] = async (version, pushedBy, pushOptions) => {
    const outcome = await tier.push(version, pushedBy, pushOptions);
    if (outcome.status === 'added') await renewStamp(stamp);
    return outcome;
  };
  return { tier: { ...tier, push }, close: () => db.close() };
}

/** The stamp every push to the embedded tier renews (tier-selection.ts); undefined when the tier is a server's, or there is none. */
export function embeddedTierStamp(options: Pick<RegistryTierDatabaseOptions, 'env' | 'userDir'>): string | undefined {
  if (serverUrl(options.env) !== undefined || !existsSync(path.join(options.userDir, EMBEDDED_REGISTRY_DIR, 'PG_VERSION'))) return undefined;
  return path.join(options.userDir, EMBEDDED_STAMP_FILE);
}

/** `DATABASE_URL`, read as gateway-database.ts reads it (unset or empty is none), without loading `pg` for it. */
function serverUrl(env: RegistryTierDatabaseOptions['env']): string | undefined {
  const url = env['DATABASE_URL'];
  return url === undefined || url === '' ? undefined : url;
}
