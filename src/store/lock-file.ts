import { open, readFile, unlink } from 'node:fs/promises';

/**
 * One try at a lock file: made exclusively with this process's pid in it, or, when it is there,
 * the pid it holds (NaN when it holds none: being written this instant, or its writer died at
 * once). Two policies use it: sql/dir-lock.ts refuses while the owner runs, wait-lock.ts waits.
 */
export async function tryLockFile(file: string): Promise<{ ok: true; unlock(): Promise<void> } | { ok: false; owner: number }> {
  try {
    const handle = await open(file, 'wx', 0o600);
    await handle.writeFile(String(process.pid));
    await handle.close();
    return { ok: true, unlock: () => unlink(file).catch(() => undefined) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return { ok: false, owner: Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10) };
}

/** Removes a lock file whose owner is gone, so the next try can take it. */
export async function removeStaleLock(file: string): Promise<void> {
  await unlink(file).catch(() => undefined);
}
