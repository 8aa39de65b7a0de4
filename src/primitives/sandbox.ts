import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KiwiError } from '../base/errors.js';
import { literalParts } from '../policy/glob-literal.js';
import { isInside } from '../policy/path-check.js';
import type { SandboxChoice, SandboxLimits } from '../policy/sandbox-choice.js';
import { sandboxArgv } from './sandbox-argv.js';
import { createSecretMasks } from './sandbox-masks.js';
import { probeSandbox } from './sandbox-probe.js';

/**
 * The sandbox for subprocess tools and stdio MCP servers: bubblewrap (`bwrap`) around the command,
 * `prlimit` inside.
 *
 * The filesystem is `--ro-bind / /` (everything the tool needs to run — /usr, the node and
 * python installs, the project's .git — stays readable without a list of system folders to keep
 * in step with each distribution), then a writable `--bind` for each granted folder, a private
 * size-capped `/tmp` and `/dev/shm`, a fresh read-only `/dev` and `/proc`; over all of it, secrets
 * are masked (sandbox-masks.ts: the project's secret locations and the gateway's own `.ai/` folders
 * unless the call's policy allows them, the secrets in home folders, other users' homes). The tool
 * gets its own user, pid, ipc, uts and cgroup namespaces and, unless granted, its own empty
 * network namespace (no loopback either); it cannot open unix sockets (unix-socket-filter.ts) and
 * inherits no descriptor but its stdio (sandbox-argv.ts).
 * Limits: processes, address space and CPU time through `prlimit` (util-linux), /tmp by size.
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

export interface SandboxSettings extends SandboxChoice {
  /** Where "unsandboxed" warnings go; default console.warn. */
  warn?: (message: string) => void;
  /** The gateway's PATH, searched for bwrap before the standard folders (DEFAULT_CHILD_PATH). */
  path?: string;
  /** The gateway's own install (its node_modules, the MCP servers it ships), kept readable; default the folder above src/ or dist/. */
  installRoot?: string;
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
  secrets?: { root: string; allow: readonly (readonly string[])[]; named?: readonly string[] };
}

/** A resolved sandbox: `wrap` turns a call's argv into the sandboxed argv, or returns it unchanged when running unsandboxed. */
export interface Sandbox {
  readonly active: boolean;
  /** Why tools run unsandboxed (`active` false): `sandbox: off`, or what the probe at start found. */
  readonly reason?: string;
  /**
   * `env` is the tool's complete environment: its HOME's secrets are masked, its PATH kept visible.
   * `timeoutMs` is the call's time limit, which the CPU-time limit defaults to; null for a process
   * that lives as long as its owner keeps it (a stdio MCP server): it gets no CPU-time limit, which
   * would end it after its share of work however idle it is between calls.
   */
  wrap(argv: string[], cwd: string, grant: SandboxGrant, timeoutMs: number | null, env: Readonly<Record<string, string>>): string[];
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { processes: 256, memoryBytes: 8 * 1024 ** 3, tmpBytes: 256 * 1024 ** 2 };
export const UNSANDBOXED_WARNING = 'subprocess tools and stdio MCP servers run unsandboxed: install bubblewrap (apt-get install bubblewrap) or set sandbox: off to silence this';
/** The gateway's own install, whose node_modules its MCP servers run from: src/primitives/ or dist/primitives/ → the package root. */
export const GATEWAY_INSTALL_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** Whether the sandbox runs here with this bwrap (a test's question; the gateway asks openSandbox). */
export async function detectBwrap(bwrap = 'bwrap'): Promise<boolean> {
  return (await probeSandbox(bwrap, undefined)).ok;
}

/** Resolves the settings into a sandbox: probes bwrap, refuses under `require` without it, warns under `auto` without it. */
export async function openSandbox(settings: SandboxSettings): Promise<Sandbox> {
  const bwrap = settings.bwrap ?? 'bwrap';
  const limits = checkLimits({ ...DEFAULT_SANDBOX_LIMITS, ...settings.limits });
  if (settings.mode === 'off') return { ...UNSANDBOXED, reason: 'sandbox: off in the policy' };
  const warn = settings.warn ?? console.warn;
  const probe = await probeSandbox(bwrap, settings.path);
  if (probe.ok) {
    probe.warnings.forEach((w) => warn(w));
    const masks = createSecretMasks(settings.warn ? { warn: settings.warn } : {});
    const installRoot = settings.installRoot ?? GATEWAY_INSTALL_ROOT;
    return {
      active: true,
      wrap: (argv, cwd, grant, timeoutMs, env) => {
        const readable = [...(grant.readPaths ?? []), installRoot];
        const keep = [cwd, ...readable, ...(argv[0]?.startsWith('/') ? [argv[0]] : []), ...(env.PATH ?? '').split(':').filter((d) => d.startsWith('/'))];
        const hidden = masks.args({ keep, ...(env.HOME ? { home: env.HOME } : {}), ...(grant.secrets ? { project: grant.secrets } : {}) });
        return sandboxArgv(probe.host, limits, argv, cwd, grant, readable, timeoutMs, hidden);
      },
    };
  }
  if (settings.mode === 'require') return refusing(bwrap, probe.reason);
  warn(`${UNSANDBOXED_WARNING} (${probe.reason})`);
  return { ...UNSANDBOXED, reason: probe.reason };
}

const UNSANDBOXED: Sandbox = { active: false, wrap: (argv) => argv };

function refusing(bwrap: string, reason: string): Sandbox {
  return {
    active: false,
    reason: `sandbox: require is set, and the sandbox does not run here (${reason})`,
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
  if (!positiveInt(limits.tmpBytes)) throw new KiwiError('INVALID_INPUT', `sandbox limit tmp must be a positive integer of bytes, got ${String(limits.tmpBytes)}`);
  return limits;
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

/**
 * The folders a set of read globs can read, as writeFoldersOf finds them but creating nothing: a
 * folder that does not exist is not granted. Real paths inside the project only.
 */
export function readFoldersOf(root: string, globs: string[]): string[] {
  const realRoot = realpathSync(root);
  const folders = new Set<string>();
  for (const glob of globs) {
    const prefix = literalParts(glob);
    const literal = prefix.slice(0, glob.split('/').length - 1);
    const named = path.join(root, ...prefix);
    const dir = prefix.length === glob.split('/').length && existsSync(named) ? named : path.join(root, ...literal);
    if (!existsSync(dir)) continue;
    const real = realpathSync(dir);
    if (isInside(real, realRoot)) folders.add(real);
  }
  return [...folders];
}
