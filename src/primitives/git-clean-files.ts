import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_CHILD_PATH } from './child-env.js';

/**
 * Which of a project's secret-looking files git already holds unchanged (tracked, and the work
 * tree's copy matches the index).
 *
 * Why the sandbox asks: a masked file reads as empty, so `git status` run by a tool that may read
 * `.git` (the git tools, by `sandbox.secrets`) reports every tracked `.npmrc` or `.env.example` as
 * modified on a clean tree. Such a tool reads the same bytes from `.git`'s objects anyway
 * (`git show HEAD:.npmrc`), so the mask hides nothing from it; the sandbox leaves these files
 * unmasked for it, and keeps masking them for every tool that cannot read `.git` (which cannot run
 * git either). A file changed since it was staged stays masked: its new content is in no object.
 *
 * One `git ls-files` per change: the answer is kept while the index and every file asked about
 * keep their stat. git runs with the standard PATH, no configuration that runs programs
 * (`core.fsmonitor`), and no GIT_* variables from the gateway.
 */
export type CleanTrackedFiles = (root: string, files: readonly string[]) => ReadonlySet<string>;

const GIT_TIMEOUT_MS = 10_000;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

export function createCleanTrackedFiles(): CleanTrackedFiles {
  const cache = new Map<string, { stamp: string; clean: ReadonlySet<string> }>();
  return (root, files) => {
    if (files.length === 0) return new Set();
    const key = JSON.stringify([root, files]);
    const stamp = stampOf([path.join(root, '.git', 'index'), ...files]);
    const cached = cache.get(key);
    if (cached?.stamp === stamp) return cached.clean;
    const clean = ask(root, files);
    cache.set(key, { stamp, clean });
    return clean;
  };
}

function ask(root: string, files: readonly string[]): ReadonlySet<string> {
  const rels = files.map((f) => path.relative(root, f));
  let out: string;
  try {
    // -t tags each line: H tracked, C changed in the work tree, R removed; -c and -m list a changed file twice.
    out = execFileSync('git', ['-C', root, '-c', 'core.fsmonitor=false', 'ls-files', '-z', '-t', '-c', '-m', '--', ...rels], {
      env: { PATH: DEFAULT_CHILD_PATH, LANG: 'C' },
      encoding: 'utf8',
      timeout: GIT_TIMEOUT_MS,
      maxBuffer: MAX_OUTPUT_BYTES,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    // No git, not a repository, or one git refuses (another owner): nothing is known clean, all stay masked.
    return new Set();
  }
  const tracked = new Set<string>();
  const changed = new Set<string>();
  for (const line of out.split('\0')) {
    const tag = line.slice(0, 2);
    const rel = line.slice(2);
    if (tag === 'H ') tracked.add(rel);
    else if (tag === 'C ' || tag === 'R ') changed.add(rel);
  }
  return new Set(files.filter((_, i) => tracked.has(rels[i] as string) && !changed.has(rels[i] as string)));
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
