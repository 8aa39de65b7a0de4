import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from './path-check.js';

/**
 * `realBase/…segments` made where missing, one folder at a time, each existing one followed to its
 * real path first: a symlink on the way that leads outside `realBase` is reported before anything
 * is made through it (a `mkdir -p` would have made folders outside first). Symlinks that stay
 * inside are followed. `realBase` must be a real path.
 */
export type FolderInside = { ok: true; dir: string } | { ok: false; outside: string };

export async function folderInside(realBase: string, segments: readonly string[]): Promise<FolderInside> {
  let dir = realBase;
  for (const segment of segments) {
    const next = path.join(dir, segment);
    const real = await realpath(next).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      await mkdir(next).catch((made: NodeJS.ErrnoException) => {
        if (made.code !== 'EEXIST') throw made;
      });
      return realpath(next);
    });
    if (!isInside(real, realBase)) return { ok: false, outside: real };
    dir = real;
  }
  return { ok: true, dir };
}
