import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { migrate } from '../store/sql/migrate.js';
import { sqlRegistryTier, type RegistryTier } from '../store/registry-tier/sql-registry-tier.js';
import { KERNEL_MIGRATIONS } from './kernel-migrations.js';

/**
 * The database the registry tier lives in: the Postgres of `DATABASE_URL` when it is set (every
 * gateway and machine on it shares the tier), else an embedded PGlite in the user's
 * `~/.ai/state/registry` (shared by the user's projects on this machine). Opened for a push, a
 * pull, a pin or a load of versions a project pins for the first time, and closed after: the
 * embedded one admits one process at a time, so an opener waits for the one before it.
 */
export interface OpenedRegistryTier {
  tier: RegistryTier;
  close(): Promise<void>;
}

export const EMBEDDED_REGISTRY_DIR = path.join('.ai', 'state', 'registry');

/** How long an opener waits for another process's push, pull or load of the embedded tier. */
const EMBEDDED_WAIT_MS = 60_000;

export interface RegistryTierDatabaseOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** The folder that holds the user's `.ai`. */
  userDir: string;
  /** Make the embedded database when there is none yet (a push); otherwise there is no tier to read. */
  create: boolean;
  /** Told once when another process has the embedded tier open and this one waits for it. */
  onWait?: (owner: number) => void;
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
  let holder: number | undefined;
  const onWait = (owner: number): void => {
    holder = owner;
    options.onWait?.(owner);
  };
  const db = await openPgliteDb(dir, { wait: { signal: AbortSignal.timeout(EMBEDDED_WAIT_MS), onWait } }).catch((error: unknown) => {
    if ((error as Error).name !== 'TimeoutError') throw error;
    throw new KiwiError('CONFLICT', `the registry tier in ${dir} is still in use by process ${holder ?? '?'} after ${EMBEDDED_WAIT_MS / 1000} s; let that push or pull finish, or stop that process`);
  });
  try {
    await migrate(db, KERNEL_MIGRATIONS);
  } catch (error) {
    await db.close();
    throw error;
  }
  return { tier: sqlRegistryTier(db, `the registry tier in ${dir}`), close: () => db.close() };
}

/**
 * Which tier a project's saved selection was read from (tier-selection.ts), without the
 * `DATABASE_URL` itself, which may hold a password: the selection file lives in the project.
 */
export function registryTierKey(options: Pick<RegistryTierDatabaseOptions, 'env' | 'userDir'>): string {
  const url = serverUrl(options.env);
  const where = url === undefined ? `embedded:${path.resolve(options.userDir, EMBEDDED_REGISTRY_DIR)}` : `server:${url}`;
  return createHash('sha256').update(where).digest('hex');
}

/** `DATABASE_URL`, read as gateway-database.ts reads it (unset or empty is none), without loading `pg` for it. */
function serverUrl(env: RegistryTierDatabaseOptions['env']): string | undefined {
  const url = env['DATABASE_URL'];
  return url === undefined || url === '' ? undefined : url;
}
