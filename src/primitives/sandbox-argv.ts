import { readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { realPathOf } from '../base/real-path.js';

/** The programs the sandbox runs around the tool, by absolute path so the tool's PATH cannot change them. */
export interface SandboxHost {
  bwrap: string;
  helpers: { bash: string; sh: string; unshare: string; setpriv: string; prlimit: string };
  /** The unix-socket seccomp filter's file (unix-socket-filter.ts); absent where this machine has none. */
  unixSocketFilter?: string;
}

export interface ArgvLimits {
  processes: number;
  memoryBytes: number;
  cpuSeconds?: number;
  /** Size of the private /tmp, and of /dev/shm beside it. */
  tmpBytes: number;
}

export interface ArgvGrant {
  writePaths: string[];
  network: boolean;
}

/** The kernel refuses a pid_max below 301 (RESERVED_PIDS + 1). */
const MIN_PID_MAX = 301;
/** A fixed script: the limit and the command come in as positional parameters, never spliced into the text. */
const SET_PID_MAX = 'echo "$1" 2>/dev/null >/proc/sys/kernel/pid_max; shift; exec "$@"';
/**
 * Runs on the host, before bwrap: closes every descriptor but 0-2 that the gateway inherited
 * without close-on-exec (a supervisor's socket, a shell's `exec 5>file`: bwrap passes them all
 * through), then hands bwrap the socket filter as descriptor 3. Node cannot close a child's
 * descriptors between fork and exec, and dash's redirections stop at 9, hence bash. Nothing but
 * the script runs here: `-p` ignores BASH_ENV and functions exported in the tool's environment, and
 * `--norc` the ~/.bashrc that bash otherwise runs when its stdin is a socket (libuv's stdio pipes are).
 */
const CLOSE_INHERITED = 'for f in /proc/self/fd/*; do n=${f##*/}; case $n in *[!0-9]*|""|0|1|2) continue;; esac; eval "exec $n>&-"; done';
const BASH_FLAGS = ['--norc', '--noprofile', '-p', '-c'];
const EXEC_WITH_FILTER = `${CLOSE_INHERITED}; exec "$@" 3<"$0"`;
const EXEC_PLAIN = `${CLOSE_INHERITED}; exec "$@"`;

/**
 * The argv for one call: the tool's own `argv`, run as is inside. `readable` lists folders the
 * private /tmp would hide that must stay readable (the cwd, the project, the gateway's install).
 */
export function sandboxArgv(host: SandboxHost, limits: ArgvLimits, argv: string[], cwd: string, grant: ArgvGrant, readable: string[], timeoutMs: number | null, masks: string[]): string[] {
  const { helpers } = host;
  const out = host.unixSocketFilter
    ? [helpers.bash, ...BASH_FLAGS, EXEC_WITH_FILTER, host.unixSocketFilter, host.bwrap, '--seccomp', '3']
    : [helpers.bash, ...BASH_FLAGS, EXEC_PLAIN, 'kiwi-sandbox', host.bwrap];
  out.push('--die-with-parent', '--new-session', '--unshare-user', '--uid', '0', '--gid', '0', '--cap-add', 'ALL');
  out.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (!grant.network) out.push('--unshare-net');
  // memory_mb caps address space, not tmpfs pages, which live outside any process: each tmpfs the
  // tool can write gets its own cap. /dev is bwrap's tmpfs with /dev/shm a plain folder in it, so
  // /dev/shm gets a capped tmpfs of its own and /dev goes read-only (its device nodes still work).
  const size = String(limits.tmpBytes);
  out.push('--ro-bind', '/', '/', '--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm', '--remount-ro', '/dev', '--proc', '/proc', '--size', size, '--tmpfs', '/tmp');
  // The private /tmp hides a project (or the gateway's own install, its node_modules) that lives under /tmp; show them again, read-only
  // (a folder that is gone, the gateway's install in a test, is simply not bound).
  for (const dir of new Set([...readable, cwd].map(realPathOf))) {
    if (dir !== undefined && (dir === '/tmp' || dir.startsWith('/tmp/'))) out.push('--ro-bind', dir, dir);
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

