import { readdirSync } from 'node:fs';
import path from 'node:path';
import { processAlive } from '../../src/base/process-alive.js';

/**
 * The paths in `dir` whose names match `pattern`, its first group the pid of the process that
 * made them, where that process no longer runs: what a killed or interrupted test run left.
 */
export function abandonedEntries(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir)
    .filter((entry) => {
      const owner = Number(pattern.exec(entry)?.[1]);
      return Number.isInteger(owner) && !processAlive(owner);
    })
    .map((entry) => path.join(dir, entry));
}
