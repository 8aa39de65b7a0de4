import { mkdtemp, lstat, rm, rmdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { takeCheckpoint, type CheckpointMeta } from './checkpoint-store.js';
import type { WorkTree } from './git-work-tree.js';
import { snapshotTree, type SnapshotLimits } from './snapshot-tree.js';

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

export interface RestoreOutcome {
  checkpoint: string;
  dryRun: boolean;
  plan: RestorePlan;
  /** The checkpoint of the work tree as it was just before: restoring it undoes this restore. */
  undo?: string;
}

/**
 * Restores checkpoint `target` (a full id from resolveCheckpoint), as `kiwi checkpoints restore`
 * and MCP `execute action=rollback` both do: first the work tree as it is is checkpointed under
 * `before`, so the restore can itself be undone; a dry run only plans.
 */
export async function restoreCheckpoint(wt: WorkTree, target: string, limits: SnapshotLimits, options: { dryRun: boolean; before: CheckpointMeta }): Promise<RestoreOutcome> {
  const targetTree = (await wt.git(['rev-parse', `${target}^{tree}`])).stdout.trim();
  if (options.dryRun) return { checkpoint: target, dryRun: true, plan: await planRestore(wt, await currentTree(wt, limits), targetTree) };
  const before = await takeCheckpoint(wt, options.before, limits);
  if (before.status === 'skipped') throw new KiwiError('CONFLICT', `cannot checkpoint the work tree as it is now (${before.reason}), so the restore could not be undone; nothing was changed`);
  const plan = await planRestore(wt, before.tree, targetTree);
  await applyRestore(wt, target, plan);
  return { checkpoint: target, dryRun: false, plan, undo: before.id };
}

/** The work tree as it is now, as a tree (written into git's objects, on no ref). */
export async function currentTree(wt: WorkTree, limits: SnapshotLimits): Promise<string> {
  const snap = await snapshotTree(wt, limits, Date.now() + limits.timeoutMs);
  if (!snap.ok) throw new KiwiError('CONFLICT', `cannot read the work tree as it is now: ${snap.reason}`);
  return snap.tree;
}

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
