import { open, readFile, unlink } from 'node:fs/promises';
import { KiwiError } from '../../errors.js';
import { processAlive } from '../../process-alive.js';

/**
 * One process at a time on an embedded database: PGlite has no server to arbitrate, and two
 * processes writing one data directory corrupt it. The lock is a file holding the owner's pid,
 * created exclusively; one left by a process that is gone is taken over.
 */
export async function lockDir(file: string, what: string): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return async () => {
        await unlink(file).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
      if (processAlive(owner)) {
        throw new KiwiError('CONFLICT', `${what} is in use by process ${owner}${owner === process.pid ? ' (this one)' : ''}: stop that gateway first, or set DATABASE_URL to share a Postgres server between gateways`);
      }
      await unlink(file).catch(() => undefined);
    }
  }
  throw new KiwiError('CONFLICT', `${what}: could not take its lock file ${file}`);
}
