import { KiwiError } from '../../base/errors.js';
import { processAlive } from '../../base/process-alive.js';
import { removeStaleLock, tryLockFile } from '../lock-file.js';

/**
 * One process at a time on an embedded database: PGlite has no server to arbitrate, and two
 * processes writing one data directory corrupt it. The lock is a file holding the owner's pid,
 * created exclusively; one left by a process that is gone is taken over.
 */
export async function lockDir(file: string, what: string): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const taken = await tryLockFile(file);
    if (taken.ok) return taken.unlock;
    if (processAlive(taken.owner)) {
      throw new KiwiError('CONFLICT', `${what} is in use by process ${taken.owner}${taken.owner === process.pid ? ' (this one)' : ''}: stop that gateway first, or set DATABASE_URL to share a Postgres server between gateways`);
    }
    await removeStaleLock(file);
  }
  throw new KiwiError('CONFLICT', `${what}: could not take its lock file ${file}`);
}
