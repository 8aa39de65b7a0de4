import { abortableDelay } from '../base/abort.js';
import { processAlive } from '../base/process-alive.js';
import { removeStaleLock, tryLockFile } from './lock-file.js';

/**
 * A lock file that waits (lock-file.ts): while its owner runs, others wait, polling every
 * `pollMs`, and one left by a process that is gone is taken over. For work that several
 * processes may start at once on one folder but only one may do at a time, such as building the
 * search index (gateways started together on one project).
 */

/** Polls a lock file without a pid may stay so before it is taken over. */
const BLANK_POLLS = 20;

export async function waitForLock(file: string, options: { pollMs?: number; signal?: AbortSignal; onWait?: (owner: number) => void } = {}): Promise<() => Promise<void>> {
  let told = false;
  let blank = 0;
  for (;;) {
    const taken = await tryLockFile(file);
    if (taken.ok) return taken.unlock;
    const { owner } = taken;
    // A file without a pid is one being written this instant, or one whose writer died at once: give it a moment.
    const waiting = Number.isNaN(owner) ? ++blank < BLANK_POLLS : processAlive(owner);
    if (!waiting) {
      await removeStaleLock(file);
      blank = 0;
      continue;
    }
    if (!told && !Number.isNaN(owner)) {
      told = true;
      options.onWait?.(owner);
    }
    if (!(await abortableDelay(options.pollMs ?? 100, options.signal))) throw options.signal?.reason;
  }
}
