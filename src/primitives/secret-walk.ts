import { lstatSync, readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { literalParts } from '../policy/glob-literal.js';
import { matchesAny } from '../policy/permission-context.js';
import { secretKind } from '../policy/secret-paths.js';

/**
 * Finds the secret locations of a project (secret-paths.ts: `.env*`, `.git`, keys, the gateway's
 * own logs, index and state) that exist on disk, for the sandbox to mask.
 *
 * A secret entry is reported whole and not entered (a folder is masked with everything in it),
 * unless `allow_secret_paths` reaches into it: an entry every allow list matches stays readable
 * and is entered only when the lists do not plainly cover all of it; a denied folder is entered
 * only along the literal folder of an allow glob (`.git/config` enters `.git`). Dependency folders
 * are skipped: their `.pem` files are CA bundles the tools need (certifi), not the user's keys.
 *
 * The walk is bounded (depth, entries); where a bound stops it, what was found is still masked and
 * `truncated` says so. A secret folder entered for a grant that the bound cuts short is masked
 * whole again: the grant fails closed.
 */

export interface SecretEntry {
  /** Absolute path, as found under the root (not realpath'd: it may be a symlink). */
  path: string;
  dir: boolean;
}

export interface SecretWalk {
  entries: SecretEntry[];
  /** Every folder read, with its mtime: adding, removing or renaming an entry in one changes it. */
  folders: Map<string, bigint>;
  truncated: boolean;
}

export interface WalkLimits {
  maxDepth: number;
  maxEntries: number;
}

export const DEFAULT_WALK_LIMITS: WalkLimits = { maxDepth: 12, maxEntries: 50_000 };

/** Folders of installed dependencies, never walked. */
const SKIPPED = new Set(['node_modules', 'site-packages', 'dist-packages', '__pycache__']);
/** Names that a glob covering a whole folder matches and a narrower one does not. */
const PROBES = ['kiwi-probe', 'kiwi-probe/kiwi-probe'];

/**
 * `allow` holds one list of `allow_secret_paths` globs per context of the call's chain; a secret
 * is readable only when every list matches it, as in the policy's path check.
 */
export function walkSecrets(root: string, allow: readonly (readonly string[])[], limits: WalkLimits = DEFAULT_WALK_LIMITS): SecretWalk {
  const walk: SecretWalk = { entries: [], folders: new Map(), truncated: false };
  let budget = limits.maxEntries;
  const allowed = (rel: string) => allow.length > 0 && allow.every((globs) => matchesAny(globs, rel));
  const covered = (rel: string) => PROBES.every((p) => allowed(`${rel}/${p}`));
  const bases = allow.flatMap((globs) => globs.map((g) => literalParts(g).join('/'))).filter((b) => b !== '');
  const leadsInto = (rel: string) => bases.some((b) => b.startsWith(`${rel}/`));

  /** Reads one folder; false when the entry budget ran out. */
  const visit = (dir: string, rel: string, depth: number, inSecret: boolean): boolean => {
    if (depth > limits.maxDepth) {
      walk.truncated = true;
      return !inSecret;
    }
    let children: Dirent[];
    try {
      walk.folders.set(dir, lstatSync(dir, { bigint: true }).mtimeNs);
      children = readdirSync(dir, { withFileTypes: true });
    } catch {
      return true; // gone or unreadable since it was listed: nothing there to mask
    }
    for (const child of children) {
      if (--budget < 0) {
        walk.truncated = true;
        return false;
      }
      const full = path.join(dir, child.name);
      const childRel = rel === '' ? child.name : `${rel}/${child.name}`;
      const folder = child.isDirectory();
      if (inSecret || secretKind(childRel) !== undefined) {
        const open = allowed(childRel);
        if (folder && ((open && !covered(childRel)) || (!open && leadsInto(childRel)))) {
          const mark = walk.entries.length;
          if (!visit(full, childRel, depth + 1, true)) {
            // Cut short inside: mask the folder whole rather than leave part of it unmasked.
            walk.entries.length = mark;
            walk.entries.push({ path: full, dir: true });
            if (budget < 0) return false;
          }
        } else if (!open) {
          walk.entries.push({ path: full, dir: folder });
        }
      } else if (folder && !SKIPPED.has(child.name)) {
        if (!visit(full, childRel, depth + 1, false)) return false;
      }
    }
    return true;
  };
  visit(root, '', 0, false);
  return walk;
}

/** Whether any folder the walk read has changed since (its mtime, or it is gone). */
export function walkIsStale(walk: SecretWalk): boolean {
  for (const [dir, mtime] of walk.folders) {
    try {
      if (lstatSync(dir, { bigint: true }).mtimeNs !== mtime) return true;
    } catch {
      return true;
    }
  }
  return false;
}
