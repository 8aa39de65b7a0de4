import { randomBytes } from 'node:crypto';
import { copyFile, lstat, rename, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { describeError, isKiwiError } from '../base/errors.js';
import { secretKind } from '../policy/secret-paths.js';
import type { GitRun } from './git-command.js';
import { excludePathspecs, type WorkTree } from './git-work-tree.js';

/**
 * A git tree of the work tree as it is now: the tracked files and the untracked files that are not
 * ignored, as `git add -A` sees them, written without touching the user's index, HEAD or branches.
 *
 * The index used is the checkpoints' own: a copy of `<git dir>/kiwi-checkpoint-index`, reset to
 * HEAD with `git read-tree -m HEAD` (which keeps the cached file stats of entries whose content
 * matches), then `git add -A`. The result is exactly "HEAD, then add -A", and because the stats are
 * kept, an unchanged work tree is not read again: git compares stats, not contents. Each snapshot
 * works on its own copy and renames it back, so two processes never share an index file.
 *
 * Less the secret paths every tool is denied (src/policy/secret-paths.ts: `.env`, keys, git
 * credentials…), tracked or not: a checkpoint is kept by a ref, so whatever it stores stays
 * readable (`git show refs/kiwi/checkpoints/main:.env`) after the file is gone, even after HEAD's
 * history is purged of it. They are taken out of the index before `git add`, and never named to
 * it, so their contents are never even hashed into .git/objects; a restore leaves them as they are.
 */

export interface SnapshotLimits {
  /** A changed or untracked file larger than this skips the snapshot (it would be copied into .git). */
  maxFileBytes: number;
  /** Changed and untracked files together larger than this skip it too. */
  maxTotalBytes: number;
  /** What the whole checkpoint may take; named in the message when it runs over. */
  timeoutMs: number;
}

export type TreeSnapshot = { ok: true; tree: string } | { ok: false; reason: string };

export const INDEX_CACHE = 'kiwi-checkpoint-index';
/** `git ls-files` of every changed path; past this the snapshot is skipped as too large. */
const MAX_LIST_BYTES = 16 * 1024 * 1024;
/** `git ls-files` of every path in the index, searched for secrets. */
const MAX_INDEX_LIST_BYTES = 64 * 1024 * 1024;

/** `deadline` (epoch ms) is when the whole checkpoint must be done; each git command gets what is left. */
export async function snapshotTree(wt: WorkTree, limits: SnapshotLimits, deadline: number): Promise<TreeSnapshot> {
  const tooLong = `it took over ${limits.timeoutMs} ms (checkpoints.timeout_ms)`;
  const cache = path.join(wt.gitDir, INDEX_CACHE);
  const index = `${cache}.${randomBytes(6).toString('hex')}.tmp`;
  const run = (args: string[], extra: GitRun = {}) => {
    const left = deadline - Date.now();
    if (left <= 0) throw new SnapshotSkipped(tooLong);
    return wt.git(args, { ...extra, extraEnv: { GIT_INDEX_FILE: index }, timeoutMs: left });
  };
  try {
    await seedFromCache(cache, index);
    const seeded = await run(['read-tree', '-m', 'HEAD'], { okCodes: [128] });
    // An unborn branch (no commit yet): start from nothing.
    if (seeded.code !== 0) await run(['read-tree', '--empty']);
    // Secrets committed in HEAD leave the checkpoint's index; from here on they are untracked to it, as the others.
    const tracked = secretsIn((await run(['ls-files', '-z'], { maxOutputBytes: MAX_INDEX_LIST_BYTES })).stdout);
    if (tracked.length > 0) await run(['update-index', '--force-remove', '-z', '--stdin'], { stdin: `${tracked.join('\0')}\0` });
    const pathspec = ['--', ':/', ...wt.excludes];
    // `git add` refuses an exclude pathspec that names an ignored folder, so those are left to
    // .gitignore. Asked as folders (trailing "/"), so the answer does not depend on whether the
    // folder exists yet: the audit log may create it while this runs. Both only read.
    const [changed, asked] = await Promise.all([
      run(['ls-files', '-z', '--modified', '--others', '--exclude-standard', ...pathspec], { maxOutputBytes: MAX_LIST_BYTES }),
      run(['check-ignore', '-z', '--stdin'], { stdin: wt.generated.map((p) => `${p}/\0`).join(''), okCodes: [1] }),
    ]);
    const secrets = new Set(secretsIn(changed.stdout));
    await checkSizes(wt.top, changed.stdout, limits, secrets);
    const ignored = new Set(asked.stdout.split('\0').map((p) => p.replace(/\/$/, '')));
    await run(['add', '-A', '--', ':/', ...excludePathspecs(wt.generated.filter((p) => !ignored.has(p))), ...excludePathspecs([...secrets])]);
    const tree = (await run(['write-tree'])).stdout.trim();
    await rename(index, cache).catch(() => undefined);
    return { ok: true, tree };
  } catch (error) {
    if (error instanceof SnapshotSkipped) return { ok: false, reason: error.message };
    if (isKiwiError(error, 'TOOL_TIMEOUT')) return { ok: false, reason: tooLong };
    if (isKiwiError(error, 'OUTPUT_TOO_LARGE')) return { ok: false, reason: 'too many files changed' };
    if (isKiwiError(error, 'TOOL_CANCELLED')) throw error;
    return { ok: false, reason: describeError(error).split('\n')[0] ?? 'git failed' };
  } finally {
    await rm(index, { force: true }).catch(() => undefined);
    await rm(`${index}.lock`, { force: true }).catch(() => undefined);
  }
}

/** A reason not to snapshot that is a limit, not a failure. */
class SnapshotSkipped extends Error {}

/**
 * The copy keeps the cache's mtime: git trusts a cached stat only for files older than the index
 * file, and a copy stamped "now" would make a file changed just before it look clean.
 */
async function seedFromCache(cache: string, index: string): Promise<void> {
  const info = await stat(cache).catch(() => undefined);
  if (!info?.isFile()) return;
  try {
    await copyFile(cache, index);
    await utimes(index, info.atime, info.mtime);
  } catch {
    await rm(index, { force: true }).catch(() => undefined);
  }
}

/** The secret paths among git's NUL-separated list of paths (relative to the work tree's top). */
function secretsIn(list: string): string[] {
  return list.split('\0').filter((name) => name !== '' && secretKind(name) !== undefined);
}

async function checkSizes(top: string, list: string, limits: SnapshotLimits, left: ReadonlySet<string>): Promise<void> {
  let total = 0;
  for (const name of new Set(list.split('\0'))) {
    if (name === '' || left.has(name)) continue;
    const info = await lstat(path.join(top, name)).catch(() => undefined);
    // Deleted files, symlinks and nested repositories cost nothing to record.
    if (!info?.isFile()) continue;
    if (info.size > limits.maxFileBytes) {
      throw new SnapshotSkipped(`${name} is ${mib(info.size)}, over the ${mib(limits.maxFileBytes)} a checkpoint copies per file (checkpoints.max_file_bytes); add it to .gitignore or raise the limit`);
    }
    total += info.size;
    if (total > limits.maxTotalBytes) {
      throw new SnapshotSkipped(`the changed and untracked files add up to over ${mib(limits.maxTotalBytes)} (checkpoints.max_total_bytes); add large outputs to .gitignore or raise the limit`);
    }
  }
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${bytes} bytes`;
}
