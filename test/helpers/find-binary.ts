import { existsSync } from 'node:fs';
import path from 'node:path';

/** A program the tests start (a server from a Debian package): on the PATH, or in `dirs`, where Debian puts it. */
export function findBinary(name: string, dirs: string[]): string | undefined {
  for (const dir of [...(process.env['PATH'] ?? '').split(path.delimiter), ...dirs]) {
    if (dir !== '' && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}
