import { createHash } from 'node:crypto';
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { describeError, isKiwiError } from '../base/errors.js';
import { createGit, type Git, type GitOptions } from './git-command.js';

/**
 * The git work tree a project lives in, and the checkpoint ref that belongs to it.
 *
 * One ref per work tree, not per session: `kiwi checkpoints list` is then one `git log` of one
 * linear history (newest first, across every CLI run, gateway and MCP session), "unchanged since
 * the last checkpoint" is one comparison with its tip, and sessions do not pile up refs (each
 * `kiwi run` is a session of its own). Linked work trees (`git worktree add`) share the refs of
 * the main one, so each gets its own ref: `refs/kiwi/checkpoints/main` for the main work tree,
 * `refs/kiwi/checkpoints/worktrees/<id>` for the others. Nothing under refs/heads, refs/tags or
 * refs/stash is ever written, and `git gc` keeps every checkpoint because a ref reaches it.
 */

export const CHECKPOINT_REF_PREFIX = 'refs/kiwi/checkpoints';

export interface WorkTree {
  /** The work tree's top folder (real path); every git command runs there. */
  top: string;
  /** This work tree's own git folder: the checkpoints' index cache lives there. */
  gitDir: string;
  ref: string;
  /**
   * What every checkpoint leaves out, relative to `top`: the gateway's own generated state (audit
   * logs, kernel state, vectors, threads) of this project. Snapshotting them would make every call
   * look like a change, and a restore must never rewrite the audit trail or a database in use.
   */
  generated: string[];
  /** `generated` as exclude pathspecs, for commands that compare trees. */
  excludes: string[];
  git: Git;
}

export type WorkTreeLookup = { found: true; tree: WorkTree } | { found: false; reason: string };

/** Generated state under the project's `.ai/` (DESIGN §3: not committed by users). */
const GENERATED = ['.ai/logs', '.ai/state', '.ai/vectors', '.ai/threads'];

/**
 * Finds the git work tree that holds `root`. A folder with no `.git` in it or above it is answered
 * without starting git, so projects outside git (most test projects) pay nothing.
 */
export async function findWorkTree(root: string, options: Omit<GitOptions, 'cwd'>): Promise<WorkTreeLookup> {
  if (!(await hasDotGitAbove(root))) return { found: false, reason: `${root} is not in a git work tree` };
  const probe = createGit({ ...options, cwd: root });
  let out: string;
  try {
    const r = await probe(['rev-parse', '--is-inside-work-tree', '--absolute-git-dir', '--git-common-dir', '--show-toplevel'], { okCodes: [128] });
    if (r.code !== 0) {
      const said = r.stderr.trim().split('\n')[0] ?? '';
      return { found: false, reason: /not a git repository/i.test(said) ? `${root} is not in a git work tree` : `git cannot use ${root}: ${said}` };
    }
    out = r.stdout;
  } catch (error) {
    if (isKiwiError(error, 'SPAWN_FAILED')) return { found: false, reason: 'git is not installed (not found on PATH)' };
    return { found: false, reason: `git cannot use ${root}: ${describeError(error)}` };
  }
  const [inside, gitDir, commonDir, top] = out.split('\n');
  if (inside !== 'true' || !gitDir || !commonDir || !top) return { found: false, reason: `${root} is not in a git work tree (a bare repository or a .git folder)` };
  const realTop = await realpath(top);
  const main = (await realpath(path.resolve(root, commonDir))) === (await realpath(gitDir));
  const prefix = path.relative(realTop, root).split(path.sep).join('/');
  const generated = GENERATED.map((p) => (prefix === '' ? p : `${prefix}/${p}`));
  return {
    found: true,
    tree: {
      top: realTop,
      gitDir,
      ref: `${CHECKPOINT_REF_PREFIX}/${main ? 'main' : `worktrees/${refSafe(path.basename(gitDir))}`}`,
      generated,
      excludes: excludePathspecs(generated),
      git: createGit({ ...options, cwd: realTop }),
    },
  };
}

export function excludePathspecs(paths: readonly string[]): string[] {
  return paths.map((p) => `:(exclude,literal)${p}`);
}

async function hasDotGitAbove(start: string): Promise<boolean> {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (await lstat(path.join(dir, '.git')).then(() => true, () => false)) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

/** A worktree id as one ref component; an odd one is replaced by its hash rather than rejected. */
function refSafe(id: string): string {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(id) && !id.endsWith('.lock') && !id.includes('..') ? id : createHash('sha256').update(id).digest('hex').slice(0, 16);
}
