import { mkdtemp, lstat, rm, rmdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../errors.js';
import type { WorkTree } from './git-work-tree.js';

/**
 * Putting a checkpoint's files back into the work tree. Only the work tree's files change: HEAD,
 * the branches and the user's index stay as they are (the checkout uses an index of its own), so
 * afterwards `git status` shows the restored files as changes against HEAD, as after any edit.
 */

export interface RestorePlan {
  /** Files that differ from the checkpoint or were deleted since: written back from it. */
  write: string[];
  /** Files created since the checkpoint (not ignored ones: those are in neither tree): removed. */
  remove: string[];
  /** Nested repositories and submodules, which a checkpoint records only as a commit id: left alone. */
  leftAlone: string[];
}

const GITLINK = '160000';

/** What restoring the checkpoint tree `target` over the work tree snapshot `current` would change. */
export async function planRestore(wt: WorkTree, current: string, target: string): Promise<RestorePlan> {
  const out = (await wt.git(['diff-tree', '-r', '-z', '--no-renames', current, target, '--', ...wt.excludes], { maxOutputBytes: 64 * 1024 * 1024 })).stdout;
  const plan: RestorePlan = { write: [], remove: [], leftAlone: [] };
  const fields = out.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const meta = fields[i] as string;
    const file = fields[i + 1] as string;
    if (!meta.startsWith(':')) continue;
    const [fromMode, toMode, , , status] = meta.slice(1).split(' ');
    if (fromMode === GITLINK || toMode === GITLINK) plan.leftAlone.push(file);
    else if (status === 'D') plan.remove.push(file);
    else plan.write.push(file);
  }
  return plan;
}

/** Carries out `plan`: removals first (a file may have become a folder, or the other way), then writes. */
export async function applyRestore(wt: WorkTree, checkpoint: string, plan: RestorePlan): Promise<void> {
  for (const file of plan.remove) {
    const full = path.join(wt.top, file);
    const info = await lstat(full).catch(() => undefined);
    if (info === undefined || info.isDirectory()) continue;
    await unlink(full);
    await pruneEmptyParents(wt.top, path.dirname(full));
  }
  if (plan.write.length === 0) return;
  const dir = await mkdtemp(path.join(tmpdir(), 'kiwi-restore-'));
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    await wt.git(['read-tree', `${checkpoint}^{tree}`], { extraEnv: env });
    const r = await wt.git(['checkout-index', '--force', '-z', '--stdin'], { extraEnv: env, stdin: `${plan.write.join('\0')}\0`, okCodes: [1, 128] });
    if (r.code !== 0) {
      throw new KiwiError('TOOL_FAILED', `some files could not be written back: ${r.stderr.trim().split('\n').slice(0, 3).join(' / ')}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Folders emptied by removals go too, up to (not including) the work tree's top. */
async function pruneEmptyParents(top: string, dir: string): Promise<void> {
  for (let d = dir; d.startsWith(top + path.sep); d = path.dirname(d)) {
    const removed = await rmdir(d).then(() => true, () => false);
    if (!removed) return;
  }
}
