import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { KiwiError } from '../errors.js';
import { literalParts } from '../policy/glob-literal.js';
import { isInside } from '../policy/path-check.js';
import { createSecretMasks } from './sandbox-masks.js';
import { DEFAULT_CHILD_PATH } from './subprocess.js';

/**
 * The sandbox for subprocess tools and stdio MCP servers: bubblewrap (`bwrap`) around the command,
 * `prlimit` inside.
 *
 * The filesystem is `--ro-bind / /` (everything the tool needs to run — /usr, the node and
 * python installs, the project's .git — stays readable without a list of system folders to keep
 * in step with each distribution), then a writable `--bind` for each granted folder, a private
 * `/tmp`, a fresh `/dev` and `/proc`; over all of it, secrets are masked (sandbox-masks.ts: the
 * project's secret locations unless the call's policy allows them, the secrets in home folders,
 * other users' homes). The tool gets its own user, pid, ipc, uts and cgroup
 * namespaces and, unless granted, its own empty network namespace (no loopback either).
 * Limits: processes, address space and CPU time through `prlimit` (util-linux).
 *
 * RLIMIT_NPROC alone does not stop a fork bomb when the gateway runs as root: the kernel exempts
 * processes whose real user is root, and the user namespace maps the sandbox user back to the
 * gateway's user. So the sandbox starts as root of its own user namespace, sets the pid
 * namespace's `kernel.pid_max` (per pid namespace since Linux 6.14; on older kernels the write
 * fails and RLIMIT_NPROC is the limit, which binds for a non-root gateway), opens a nested pid
 * namespace (`unshare`) and drops every capability with `setpriv --no-new-privs` before running
 * the tool. Without capabilities the tool cannot remount the read-only binds, and what it writes
 * to pid_max only touches its own nested namespace, which the outer one still caps.
 */

export type SandboxMode = 'auto' | 'require' | 'off';

export interface SandboxLimits {
  /** RLIMIT_NPROC inside the sandbox. */
  processes: number;
  /** RLIMIT_AS, bytes. */
  memoryBytes: number;
  /** RLIMIT_CPU, seconds, for each call of a subprocess tool (never a long-lived MCP server); when absent, derived from the call's timeout. */
  cpuSeconds?: number;
}

export interface SandboxSettings {
  mode: SandboxMode;
  /** Path of the bwrap executable; default `bwrap` on PATH. */
  bwrap?: string;
  limits?: Partial<SandboxLimits>;
  /** Where "unsandboxed" warnings go; default console.warn. */
  warn?: (message: string) => void;
}

/** What one call may do inside the sandbox. */
export interface SandboxGrant {
  /** Absolute folders, or files a write glob names, the tool may write (each must exist; it is realpath'd). */
  writePaths: string[];
  network: boolean;
  /** Folders to keep readable even under the private /tmp (the project root, when it lives there); the cwd always is. */
  readPaths?: string[];
  /**
   * The project whose secret locations (secret-paths.ts) are masked, and the call's
   * `allow_secret_paths` lists, one per context of its chain: a secret stays readable only where
   * every list names it. Home and system secrets are masked with or without it.
   */
  secrets?: { root: string; allow: readonly (readonly string[])[] };
}

/** A resolved sandbox: `wrap` turns a call's argv into the sandboxed argv, or returns it unchanged when running unsandboxed. */
export interface Sandbox {
  readonly active: boolean;
  /**
   * `env` is the tool's complete environment: its HOME's secrets are masked, its PATH kept visible.
   * `timeoutMs` is the call's time limit, which the CPU-time limit defaults to; null for a process
   * that lives as long as its owner keeps it (a stdio MCP server): it gets no CPU-time limit, which
   * would end it after its share of work however idle it is between calls.
   */
  wrap(argv: string[], cwd: string, grant: SandboxGrant, timeoutMs: number | null, env: Readonly<Record<string, string>>): string[];
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { processes: 256, memoryBytes: 8 * 1024 ** 3 };
export const UNSANDBOXED_WARNING = 'subprocess tools and stdio MCP servers run unsandboxed: install bubblewrap (apt-get install bubblewrap) or set sandbox: off to silence this';
/** The kernel refuses a pid_max below 301 (RESERVED_PIDS + 1). */
const MIN_PID_MAX = 301;
/** A fixed script: the limit and the command come in as positional parameters, never spliced into the text. */
const SET_PID_MAX = 'echo "$1" 2>/dev/null >/proc/sys/kernel/pid_max; shift; exec "$@"';

/** The util-linux and shell programs the sandbox runs before the tool, by absolute path so the tool's PATH cannot change them. */
interface Helpers {
  sh: string;
  unshare: string;
  setpriv: string;
  prlimit: string;
}

type Probe = { ok: true; helpers: Helpers } | { ok: false; reason: string };

const probes = new Map<string, Promise<Probe>>();

/** Whether the sandbox runs here with this bwrap; asked once per path and cached. */
export async function detectBwrap(bwrap = 'bwrap'): Promise<boolean> {
  return (await probeSandbox(bwrap)).ok;
}

/**
 * Finds the helpers, then runs `sh -c 'exit 0'` through the whole sandbox once: `bwrap --version`
 * alone would pass where user namespaces are disabled (a sysctl, or AppArmor on Ubuntu 24.04).
 */
function probeSandbox(bwrap: string): Promise<Probe> {
  let probe = probes.get(bwrap);
  if (probe === undefined) {
    probe = new Promise<Probe>((resolve) => {
      const found: Partial<Helpers> = {};
      for (const name of ['sh', 'unshare', 'setpriv', 'prlimit'] as const) {
        const file = DEFAULT_CHILD_PATH.split(':').map((dir) => path.join(dir, name)).find((f) => existsSync(f));
        if (file === undefined) return resolve({ ok: false, reason: `${name} was not found in ${DEFAULT_CHILD_PATH} (install util-linux)` });
        found[name] = file;
      }
      const helpers = found as Helpers;
      // With the home and system masks, so a kernel that refuses them fails here and not on every call.
      const masks = createSecretMasks().args({ keep: [] });
      const argv = sandboxArgv(bwrap, helpers, DEFAULT_SANDBOX_LIMITS, [helpers.sh, '-c', 'exit 0'], '/', { writePaths: [], network: false }, 5000, masks);
      execFile(argv[0] as string, argv.slice(1), { timeout: 5000 }, (error, _stdout, stderr) => {
        if (error === null) return resolve({ ok: true, helpers });
        const code = (error as NodeJS.ErrnoException).code;
        resolve({ ok: false, reason: code === 'ENOENT' ? `${bwrap} was not found` : `${bwrap} failed: ${stderr.trim().split('\n')[0] || error.message}` });
      });
    });
    probes.set(bwrap, probe);
  }
  return probe;
}

/** Resolves the settings into a sandbox: probes bwrap, refuses under `require` without it, warns under `auto` without it. */
export async function openSandbox(settings: SandboxSettings): Promise<Sandbox> {
  const bwrap = settings.bwrap ?? 'bwrap';
  const limits = checkLimits({ ...DEFAULT_SANDBOX_LIMITS, ...settings.limits });
  if (settings.mode === 'off') return UNSANDBOXED;
  const probe = await probeSandbox(bwrap);
  if (probe.ok) {
    const masks = createSecretMasks(settings.warn ? { warn: settings.warn } : {});
    return {
      active: true,
      wrap: (argv, cwd, grant, timeoutMs, env) => {
        const keep = [cwd, ...(grant.readPaths ?? []), ...(argv[0]?.startsWith('/') ? [argv[0]] : []), ...(env.PATH ?? '').split(':').filter((d) => d.startsWith('/'))];
        const hidden = masks.args({ keep, ...(env.HOME ? { home: env.HOME } : {}), ...(grant.secrets ? { project: grant.secrets } : {}) });
        return sandboxArgv(bwrap, probe.helpers, limits, argv, cwd, grant, timeoutMs, hidden);
      },
    };
  }
  if (settings.mode === 'require') return refusing(bwrap, probe.reason);
  (settings.warn ?? console.warn)(`${UNSANDBOXED_WARNING} (${probe.reason})`);
  return UNSANDBOXED;
}

const UNSANDBOXED: Sandbox = { active: false, wrap: (argv) => argv };

function refusing(bwrap: string, reason: string): Sandbox {
  return {
    active: false,
    wrap: () => {
      throw new KiwiError('SPAWN_FAILED', `sandbox: require is set but the sandbox does not run here (${reason}), so subprocess tools and stdio MCP servers are refused; install bubblewrap (apt-get install bubblewrap) or change the sandbox setting`, {
        details: { sandbox: 'unavailable', bwrap, reason },
      });
    },
  };
}

function checkLimits(limits: SandboxLimits): SandboxLimits {
  const positiveInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v > 0;
  if (!positiveInt(limits.processes)) throw new KiwiError('INVALID_INPUT', `sandbox limit processes must be a positive integer, got ${String(limits.processes)}`);
  if (!positiveInt(limits.memoryBytes)) throw new KiwiError('INVALID_INPUT', `sandbox limit memory must be a positive integer of bytes, got ${String(limits.memoryBytes)}`);
  if (limits.cpuSeconds !== undefined && !positiveInt(limits.cpuSeconds)) throw new KiwiError('INVALID_INPUT', `sandbox limit cpu_seconds must be a positive integer, got ${String(limits.cpuSeconds)}`);
  return limits;
}

/** The bwrap + prlimit argv for one call; `argv` is the tool's own argv, run as is inside. */
function sandboxArgv(bwrap: string, helpers: Helpers, limits: SandboxLimits, argv: string[], cwd: string, grant: SandboxGrant, timeoutMs: number | null, masks: string[]): string[] {
  const out = [bwrap, '--die-with-parent', '--new-session', '--unshare-user', '--uid', '0', '--gid', '0', '--cap-add', 'ALL'];
  out.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (!grant.network) out.push('--unshare-net');
  out.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
  // The private /tmp hides a project that lives under /tmp; show it and the call's folder again, read-only.
  for (const dir of [...(grant.readPaths ?? []), cwd].map((d) => realpathSync(d))) {
    if (dir === '/tmp' || dir.startsWith('/tmp/')) out.push('--ro-bind', dir, dir);
  }
  const writable = grant.writePaths.map((dir) => {
    if (!path.isAbsolute(dir)) throw new KiwiError('INVALID_INPUT', `sandbox write path ${JSON.stringify(dir)} must be absolute`);
    return realpathSync(dir);
  });
  // A grant is a whole folder, but the policy's globs never match dot entries unless they name
  // them: `.git`, `.env`, `.ai` (the policy itself) inside a granted folder stay read-only.
  // Each grant's dot entries are bound right after it, and a grant after every grant that holds
  // it (shorter paths first), so `.ai/notes` granted under a granted root lies over the root's
  // read-only `.ai` rather than under it.
  for (const real of [...writable].sort((a, b) => a.length - b.length)) {
    out.push('--bind', real, real);
    // A glob that names an existing file grants that file alone: it has no entries to keep read-only.
    if (!statSync(real).isDirectory()) continue;
    // A symlink is skipped: what it points to outside the grants is read-only already.
    for (const entry of readdirSync(real, { withFileTypes: true })) {
      const inside = path.join(real, entry.name);
      if (entry.name.startsWith('.') && !entry.isSymbolicLink() && !writable.includes(inside)) out.push('--ro-bind', inside, inside);
    }
  }
  // Last, so a mask lies over the binds above it (a `.env` in a granted folder is hidden, not writable).
  out.push(...masks);
  // The cpu limit is a backstop for busy loops in a call; the wall-clock timeout stays the primary limit.
  const cpu = timeoutMs === null ? [] : [`--cpu=${limits.cpuSeconds ?? Math.max(1, Math.ceil(timeoutMs / 1000))}`];
  const pidMax = Math.max(MIN_PID_MAX, limits.processes + 1);
  out.push('--chdir', cwd, '--', helpers.sh, '-c', SET_PID_MAX, 'kiwi-sandbox', String(pidMax));
  // The tool runs in a nested pid namespace: it could write its own pid_max (it is root of the
  // user namespace, if without capabilities), but every ancestor's pid_max still caps it.
  out.push(helpers.unshare, '--pid', '--fork', '--kill-child', '--mount-proc');
  out.push(helpers.setpriv, '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--');
  out.push(helpers.prlimit, `--nproc=${limits.processes}`, `--as=${limits.memoryBytes}`, ...cpu, '--', ...argv);
  return out;
}

/**
 * The folders a set of write globs (relative to `root`) can touch: the literal folder prefix of
 * each glob (`src/**` → `src/`; `**\/*.md` → the whole project), or the file itself when a glob
 * names one that exists. Binds are per folder, so the sandbox is as wide as the policy's widest
 * glob folder; the policy's own path check stays the precise one. A folder that does not exist
 * yet is created (the policy grants writing in it), never replaced by its parent: `.ai/notes/**`
 * must not make `.ai`, the policy's own folder, writable. Folders whose real path leaves the
 * project are dropped, and nothing is created through them.
 */
export function writeFoldersOf(root: string, globs: string[]): string[] {
  const realRoot = realpathSync(root);
  const folders = new Set<string>();
  for (const glob of globs) {
    const segments = glob.split('/').length;
    const prefix = literalParts(glob);
    const literal = prefix.slice(0, segments - 1);
    const named = prefix.length === segments ? path.join(root, ...prefix) : undefined;
    // A glob that names an existing file or folder binds it; one that names a file to be made binds its folder.
    const dir = named !== undefined && existsSync(named) ? named : path.join(root, ...literal);
    let existing = dir;
    while (!existsSync(existing)) existing = path.dirname(existing);
    // A symlinked folder must not carry the grant out of the project, nor be created through.
    if (!isInside(realpathSync(existing), realRoot)) continue;
    if (existing !== dir) mkdirSync(dir, { recursive: true });
    const real = realpathSync(dir);
    if (isInside(real, realRoot)) folders.add(real);
  }
  return [...folders];
}
