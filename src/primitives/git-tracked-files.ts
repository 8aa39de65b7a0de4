import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_CHILD_PATH } from './child-env.js';

/**
 * Which of a project's masked files git already holds: tracked, and whether the work tree's copy
 * still matches the index (clean) or not (changed).
 *
 * Why the sandbox asks: a masked file reads as empty and a masked folder as empty, so `git status`
 * run by a tool that may read `.git` (the git tools, by `sandbox.secrets`) reported every tracked
 * `.npmrc` as modified and every tracked file under `.ai/config` as deleted, on a clean tree. Such
 * a tool reads the same bytes from `.git`'s objects anyway (`git show HEAD:.npmrc`), so the mask
 * hides nothing from it: the sandbox leaves a clean tracked file visible to it (inside a masked
 * folder too), and keeps masking it for every tool that cannot read `.git` (which cannot run git
 * either). A changed file stays masked, as an empty file, so git still calls it modified: its new
 * content is in no object.
 *
 * One `git ls-files` per change: the answer is kept while the index and every file it named keep
 * their stat (a new tracked file changes the index). git runs with the standard PATH, no
 * configuration that runs programs (`core.fsmonitor`), and no GIT_* variables from the gateway.
 */
export interface TrackedFiles {
  /** Absolute paths whose work-tree copy matches the index. */
  clean: ReadonlySet<string>;
  /** Absolute paths changed or removed since they were staged. */
  changed: ReadonlySet<string>;
}

/** The tracked files among `paths` (files, or folders for every file under them). */
export type TrackedFilesOf = (root: string, paths: readonly string[]) => TrackedFiles;

const GIT_TIMEOUT_MS = 10_000;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const NONE: TrackedFiles = { clean: new Set(), changed: new Set() };

export function createTrackedFiles(): TrackedFilesOf {
  const cache = new Map<string, { stamp: string; files: TrackedFiles }>();
  const stampFor = (root: string, paths: readonly string[], files: TrackedFiles) => stampOf([path.join(root, '.git', 'index'), ...paths, ...files.clean, ...files.changed]);
  return (root, paths) => {
    if (paths.length === 0) return NONE;
    const key = JSON.stringify([root, paths]);
    const cached = cache.get(key);
    if (cached !== undefined && cached.stamp === stampFor(root, paths, cached.files)) return cached.files;
    const files = ask(root, paths);
    cache.set(key, { stamp: stampFor(root, paths, files), files });
    return files;
  };
}

function ask(root: string, paths: readonly string[]): TrackedFiles {
  let out: string;
  try {
    // -t tags each line: H tracked, C changed in the work tree, R removed; -c and -m list a changed file twice.
    out = execFileSync('git', ['-C', root, '-c', 'core.fsmonitor=false', 'ls-files', '-z', '-t', '-c', '-m', '--', ...paths.map((p) => path.relative(root, p))], {
      env: { PATH: DEFAULT_CHILD_PATH, LANG: 'C' },
      encoding: 'utf8',
      timeout: GIT_TIMEOUT_MS,
      maxBuffer: MAX_OUTPUT_BYTES,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    // No git, not a repository, or one git refuses (another owner): nothing is known tracked, all stay masked.
    return NONE;
  }
  const tracked = new Set<string>();
  const changed = new Set<string>();
  for (const line of out.split('\0')) {
    const tag = line.slice(0, 2);
    if (line.length <= 2) continue;
    const file = path.join(root, line.slice(2));
    if (tag === 'H ') tracked.add(file);
    else if (tag === 'C ' || tag === 'R ') changed.add(file);
  }
  return { clean: new Set([...tracked].filter((f) => !changed.has(f))), changed };
}

function stampOf(files: readonly string[]): string {
  return files
    .map((f) => {
      try {
        const st = statSync(f, { bigint: true });
        return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      } catch {
        return '-';
      }
    })
    .join('|');
}
