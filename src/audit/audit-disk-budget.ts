import { rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describeError } from '../base/errors.js';
import { auditDateFolder, isMissing, listAuditFiles, listDateFolders } from './audit-files.js';

export interface AuditDiskBudgetOptions {
  /** The audit root: every session's date folders, this process's and others'. */
  dir: string;
  maxTotalBytes: number;
  /**
   * Most bytes one scan grants. Writers in other processes do not see this one's bytes until they
   * scan, so together they overshoot the cap by at most this much each.
   */
  grantBytes: number;
  /** After a scan that found no room, how long appends are dropped before the next scan. */
  retryMs: number;
  now: () => Date;
  warn: (message: string) => void;
}

export interface AuditDiskBudgetStats {
  scans: number;
  prunedFiles: number;
  prunedBytes: number;
  /** Records could not be written because the folder was at its cap. */
  full: boolean;
}

export interface AuditDiskBudget {
  /**
   * Whether `bytes` more may be written. Free while the last grant lasts; when it runs out, the
   * folder is measured and, if it is at its cap, the oldest finished days' files are deleted.
   */
  take(bytes: number): Promise<boolean>;
  stats(): AuditDiskBudgetStats;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Keeps the whole audit folder under `maxTotalBytes`. A full disk stops every writer on the
 * machine, the gateway's own records included, so the cap holds no matter what; the question is
 * which records give way. The oldest ones do, a file at a time, from days before yesterday only:
 * those are finished (no call in flight can still write there) and the likeliest to have been
 * read or shipped already, while today's trail of an attack in progress is the one that matters.
 * Flooding can therefore push old days out but cannot erase today's calls; when today and
 * yesterday alone fill the cap, new records are dropped instead. Both are reported through `warn`.
 */
export function createAuditDiskBudget(options: AuditDiskBudgetOptions): AuditDiskBudget {
  const { dir, maxTotalBytes, grantBytes, retryMs, now, warn } = options;
  let granted = 0;
  let retryAt = -Infinity;
  const counts: AuditDiskBudgetStats = { scans: 0, prunedFiles: 0, prunedBytes: 0, full: false };

  async function take(bytes: number): Promise<boolean> {
    if (bytes <= granted) {
      granted -= bytes;
      return true;
    }
    const time = now().getTime();
    if (time < retryAt) return false;
    await rescan(bytes, time);
    if (bytes <= granted) {
      granted -= bytes;
      if (counts.full) warn(`the audit folder ${dir} has room again; records are written again`);
      counts.full = false;
      return true;
    }
    retryAt = time + retryMs;
    if (!counts.full) {
      warn(
        `the audit folder ${dir} is at its cap of ${maxTotalBytes} bytes and today's and yesterday's files alone fill it: ` +
          'new audit records are dropped; free space there or raise the audit log\'s maxTotalBytes',
      );
    }
    counts.full = true;
    return false;
  }

  async function rescan(bytes: number, time: number): Promise<void> {
    counts.scans += 1;
    const files = await measure();
    let total = files.reduce((sum, file) => sum + file.size, 0);
    const want = Math.max(grantBytes, bytes);
    const finishedBefore = auditDateFolder(new Date(time - DAY_MS));
    const pruned = { files: 0, bytes: 0, days: new Set<string>() };
    for (const file of files) {
      if (total + want <= maxTotalBytes || file.day >= finishedBefore) break;
      await unlink(file.path).catch((error: unknown) => {
        if (!isMissing(error)) warn(`could not delete the old audit file ${file.path}: ${describeError(error)}`);
      });
      total -= file.size;
      pruned.files += 1;
      pruned.bytes += file.size;
      pruned.days.add(file.day);
    }
    // Only succeeds for a day left empty.
    for (const day of pruned.days) await rmdir(join(dir, day)).catch(() => undefined);
    if (pruned.files > 0) {
      counts.prunedFiles += pruned.files;
      counts.prunedBytes += pruned.bytes;
      warn(
        `the audit folder ${dir} reached its cap of ${maxTotalBytes} bytes: deleted its ${pruned.files} oldest file(s) ` +
          `(${pruned.bytes} bytes, days ${[...pruned.days].join(', ')}); archive old days elsewhere to keep them`,
      );
    }
    granted = Math.max(0, Math.min(want, maxTotalBytes - total));
  }

  /** Every audit file with its size, oldest day first, each day's oldest-written first. */
  async function measure(): Promise<{ path: string; day: string; size: number }[]> {
    const files: { path: string; day: string; size: number }[] = [];
    for (const day of await listDateFolders(dir)) {
      const inDay: { path: string; day: string; size: number; mtime: number }[] = [];
      for (const { name } of await listAuditFiles(join(dir, day))) {
        const path = join(dir, day, name);
        const found = await stat(path).catch(() => undefined); // deleted since it was listed
        if (found?.isFile()) inDay.push({ path, day, size: found.size, mtime: found.mtimeMs });
      }
      files.push(...inDay.sort((a, b) => a.mtime - b.mtime));
    }
    return files;
  }

  return { take, stats: () => ({ ...counts }) };
}
