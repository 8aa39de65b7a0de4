import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { isInside } from '../policy/path-check.js';
import { matchesAny } from '../policy/permission-context.js';
import { createTrackedFiles } from './git-tracked-files.js';
import { sharedTempFile } from './shared-temp-file.js';
import { DEFAULT_WALK_LIMITS, walkIsStale, walkSecrets, type SecretWalk, type WalkLimits } from './secret-walk.js';
import { realPathOf } from '../base/real-path.js';

/**
 * What the sandbox hides from a tool that `--ro-bind / /` would otherwise show: the project's
 * secret locations (secret-walk.ts), the well-known secrets in home folders, other users' homes
 * and a few system files. Folders are masked with an empty read-only tmpfs, files with an empty
 * read-only file, so a tool that reads them gets an empty folder or an empty file instead of an
 * error it might not expect (`/dev/null` would not do: bwrap's binds are `nodev`, so opening it
 * there fails with EACCES).
 *
 * Why secret entries in the gateway's and the tool's home, not the whole home: tools run
 * interpreters from there (python is /root/.pyenv on our machines; nvm, ~/.local/bin, cargo and
 * rustup too) and the user tier's tools live in ~/.ai/tools, so an empty home breaks them, and
 * re-binding "the interpreter's folder" would have to guess which folders a runtime reads.
 * Other users' homes hold nothing a tool of this user runs, so they are masked whole — unless the
 * project, the call's folder, the command or a PATH folder lies in one.
 *
 * The project's `.ai/` is the gateway's: its threads (other clients' transcripts), logs, state,
 * index, policy and configuration. A tool sees `.ai/tools` (tool scripts run from there) and the
 * entries its call is granted — named by the policy's `filesystem.read`/`write` globs
 * (`.ai/notes/**`) or by every `allow_secret_paths` list — and an empty folder for every other.
 */

/** Relative to a home folder. Files and folders alike; only those present are masked. */
const HOME_SECRETS: readonly string[] = [
  '.ssh', '.gnupg', '.aws', '.azure', '.kube', '.config/gcloud', '.config/gh', '.config/hub', '.config/git/credentials',
  '.docker/config.json', '.config/containers/auth.json', '.netrc', '.npmrc', '.yarnrc', '.yarnrc.yml', '.pypirc', '.pgpass',
  '.git-credentials', '.cargo/credentials', '.cargo/credentials.toml', '.m2/settings.xml', '.gradle/gradle.properties',
  '.terraform.d/credentials.tfrc.json', '.vault-token', '.password-store', '.local/share/keyrings', '.claude/.credentials.json',
  '.env', '.ai/logs', '.ai/state', '.ai/vectors', '.ai/threads',
  '.bash_history', '.zsh_history', '.sh_history', '.history', '.python_history', '.node_repl_history', '.psql_history',
  '.mysql_history', '.sqlite_history', '.rediscli_history', '.lesshst', '.viminfo', '.local/share/fish/fish_history',
];

/** Outside homes; root-owned, so a gateway run as root would otherwise show them to its tools. */
const SYSTEM_SECRETS: readonly string[] = ['/etc/shadow', '/etc/shadow-', '/etc/gshadow', '/etc/gshadow-', '/run/secrets'];
const SSH_HOST_KEYS = '/etc/ssh';
const HOME_ROOTS = ['/home'];
/** More homes than this under /home are not enumerated one by one. */
const MAX_HOMES = 256;

export interface MaskRequest {
  /**
   * The project whose secret locations are masked, the allow lists of the call's contexts, and the
   * policy's read and write globs (`named`), which keep the `.ai/` entries they name visible.
   */
  project?: { root: string; allow: readonly (readonly string[])[]; named?: readonly string[] };
  /** The tool's HOME, besides the gateway user's. */
  home?: string;
  /** Paths that must stay visible: the cwd, the project, the command, the PATH folders. */
  keep: readonly string[];
}

export interface SecretMasks {
  /** The bwrap arguments that mask everything `request` asks to hide; to be placed after the binds. */
  args(request: MaskRequest): string[];
  /** The same as paths, parents first and none inside a masked folder, with the empty file to mount over files (a container's masks). */
  targets(request: MaskRequest): { masks: MaskTarget[]; emptyFile: string };
}

export interface MaskTarget {
  path: string;
  dir: boolean;
  /**
   * Files inside a masked folder shown again to a tool that reads `.git`: tracked and clean ones as
   * they are (git holds their bytes), changed ones as an empty file, so that git sees no phantom
   * deletion (git-tracked-files.ts).
   */
  shown?: { path: string; empty: boolean }[];
}

export interface SecretMasksOptions {
  limits?: WalkLimits;
  /** Told once per project when its walk hit a bound. */
  warn?: (message: string) => void;
}

/**
 * Masks with a cache of each project's walk, kept while no folder it read has changed (one lstat
 * per folder instead of a readdir per folder on every spawn).
 */
export function createSecretMasks(options: SecretMasksOptions = {}): SecretMasks {
  const limits = options.limits ?? DEFAULT_WALK_LIMITS;
  const walks = new Map<string, SecretWalk>();
  let empty: string | undefined;
  const warned = new Set<string>();
  const trackedFiles = createTrackedFiles();

  function projectEntries(root: string, allow: readonly (readonly string[])[]) {
    const key = JSON.stringify([root, allow]);
    let walk = walks.get(key);
    if (walk === undefined || walkIsStale(walk)) {
      walk = walkSecrets(root, allow, limits);
      walks.set(key, walk);
      if (walk.truncated && !warned.has(root)) {
        warned.add(root);
        (options.warn ?? console.warn)(`sandbox: the search for secret files in ${root} stopped at ${limits.maxEntries} entries or ${limits.maxDepth} folders deep; secrets beyond that are not masked from subprocess tools`);
      }
    }
    return walk.entries;
  }

  /** What to mask, and the project's real root when the tool reads its `.git` (and so its tracked files). */
  function wantedPaths(request: MaskRequest): { wanted: string[]; readsGitOf?: string } {
    const wanted: string[] = [];
    const { project } = request;
    let readsGitOf: string | undefined;
    if (project) {
      const entries = projectEntries(project.root, project.allow);
      const gitDirs = gitDirsOf(project);
      const dotGit = path.join(project.root, '.git');
      // A tool that reads all of .git reads tracked files from it too: only files git does not hold unchanged stay masked (git-tracked-files.ts).
      const readsGit = gitDirs.length === 0 && existsSync(dotGit) && !entries.some((e) => isInside(e.path, dotGit));
      const files = readsGit ? entries.filter((e) => !e.dir).map((e) => e.path) : [];
      const { clean } = trackedFiles(project.root, files);
      wanted.push(...entries.map((e) => e.path).filter((p) => !clean.has(p)), ...gitDirs, ...gatewayEntries(project));
      if (readsGit) readsGitOf = realPathOf(project.root);
    }
    const own = new Set([userInfo().homedir, ...(request.home ? [request.home] : [])].filter((h) => path.isAbsolute(h)));
    for (const home of own) wanted.push(...HOME_SECRETS.map((entry) => path.join(home, entry)));
    const others = [...otherHomes(own)];
    const keep = request.keep.map(realPathOf).filter((k): k is string => k !== undefined);
    for (const home of others) {
      const realHome = realPathOf(home);
      if (realHome === undefined) continue;
      if (keep.some((k) => isInside(k, realHome) || isInside(realHome, k))) wanted.push(...HOME_SECRETS.map((entry) => path.join(home, entry)));
      else wanted.push(home);
    }
    wanted.push(...SYSTEM_SECRETS, ...sshHostKeys());
    return readsGitOf === undefined ? { wanted } : { wanted, readsGitOf };
  }

  /** The masks, with the tracked files inside the project's masked folders shown again to a tool that reads `.git`. */
  function plan(request: MaskRequest): MaskTarget[] {
    const { wanted, readsGitOf: root } = wantedPaths(request);
    const masks = maskTargets(wanted);
    if (root === undefined) return masks;
    const folders = masks.filter((m) => m.dir && m.path !== root && isInside(m.path, root));
    const { clean, changed } = trackedFiles(root, folders.map((m) => m.path));
    // Regular files only: a bind follows a symlink, so a tracked link would show what it points at (a masked file, another home).
    const shown = [...[...clean].map((f) => ({ path: f, empty: false })), ...[...changed].map((f) => ({ path: f, empty: true }))].filter((s) => isRegularFile(s.path)).sort((a, b) => a.path.localeCompare(b.path));
    for (const folder of folders) {
      const inside = shown.filter((s) => isInside(s.path, folder.path));
      if (inside.length > 0) folder.shown = inside;
    }
    return masks;
  }

  return {
    args(request) {
      empty ??= emptyFile();
      const file = empty;
      // The tmpfs is made read-only after the files shown in it are bound: bwrap makes their mount points.
      return plan(request).flatMap((t) => (t.dir ? ['--tmpfs', t.path, ...(t.shown ?? []).flatMap((s) => ['--ro-bind', s.empty ? file : s.path, s.path]), '--remount-ro', t.path] : ['--ro-bind', file, t.path]));
    },
    targets(request) {
      empty ??= emptyFile();
      return { masks: plan(request), emptyFile: empty };
    },
  };
}

/**
 * The paths to mount over: each one that exists, by its real path (a mount follows symlinks, and
 * the type of what it masks decides the mount), parents before children, and none inside another
 * masked folder (its mount point would be gone).
 */
function maskTargets(paths: readonly string[]): MaskTarget[] {
  const found = new Map<string, boolean>();
  for (const p of paths) {
    const target = realPathOf(p);
    if (target === undefined || target === '/' || found.has(target)) continue;
    try {
      const st = statSync(target);
      if (st.isDirectory()) found.set(target, true);
      else if (st.isFile()) found.set(target, false);
      // Sockets, fifos and devices are not mountable as files; none of the secret names are one.
    } catch {
      // vanished between the walk and now
    }
  }
  const sorted = [...found].sort(([a], [b]) => a.length - b.length);
  const dirs: string[] = [];
  const out: MaskTarget[] = [];
  for (const [target, dir] of sorted) {
    if (dirs.some((d) => isInside(target, d))) continue;
    if (dir) dirs.push(target);
    out.push({ path: target, dir });
  }
  return out;
}

/** The entries of the project's `.ai/` a tool does not get: all but `tools` and what the call's grants name. */
function gatewayEntries(project: NonNullable<MaskRequest['project']>): string[] {
  const dir = path.join(project.root, '.ai');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  // A glob reaches an entry when it matches it or something inside it.
  const reaches = (globs: readonly string[], rel: string) => matchesAny(globs, rel) || matchesAny(globs, `${rel}/kiwi-probe`);
  const granted = (rel: string) => reaches(project.named ?? [], rel) || (project.allow.length > 0 && project.allow.every((globs) => reaches(globs, rel)));
  return names.filter((name) => name !== 'tools' && !granted(`.ai/${name}`)).map((name) => path.join(dir, name));
}

/** A `.git` file (a worktree, a submodule) points at the real git folder, outside the project: mask that one too. */
function gitDirsOf(project: MaskRequest['project']): string[] {
  if (project === undefined) return [];
  const dotGit = path.join(project.root, '.git');
  try {
    if (!lstatSync(dotGit).isFile()) return [];
    // The folder it names follows the grant of `.git` itself.
    if (project.allow.length > 0 && project.allow.every((globs) => matchesAny(globs, '.git'))) return [];
    const line = /^gitdir:\s*(.+)$/mu.exec(readFileSync(dotGit, 'utf8').slice(0, 4096));
    if (!line?.[1]) return [];
    const gitDir = path.resolve(project.root, line[1].trim());
    const out = [gitDir];
    try {
      out.push(path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim()));
    } catch {
      // a plain `git init --separate-git-dir` has no commondir
    }
    return out;
  } catch {
    return [];
  }
}

/** An empty read-only file of ours to bind over secret files (see shared-temp-file.ts). */
function emptyFile(): string {
  return sharedTempFile(`kiwi-sandbox-empty-${userInfo().uid}`, '');
}

function* otherHomes(own: ReadonlySet<string>): Iterable<string> {
  const ownReal = new Set([...own].map(realPathOf));
  if (!ownReal.has('/root')) yield '/root';
  for (const dir of HOME_ROOTS) {
    let names: string[];
    try {
      names = readdirSync(dir).slice(0, MAX_HOMES);
    } catch {
      continue;
    }
    for (const name of names) {
      const home = path.join(dir, name);
      if (!ownReal.has(realPathOf(home))) yield home;
    }
  }
}

function sshHostKeys(): string[] {
  try {
    return readdirSync(SSH_HOST_KEYS).filter((n) => /^ssh_host_.*_key$/u.test(n)).map((n) => path.join(SSH_HOST_KEYS, n));
  } catch {
    return [];
  }
}

/** A regular file, not a link to one (lstat: the link itself). */
function isRegularFile(p: string): boolean {
  try {
    return lstatSync(p).isFile();
  } catch {
    return false;
  }
}
