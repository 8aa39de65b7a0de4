import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { sandboxArgv, type SandboxHost } from './sandbox-argv.js';
import { createSecretMasks } from './sandbox-masks.js';
import { DEFAULT_CHILD_PATH } from './child-env.js';
import { unixSocketFilter, writeUnixSocketFilter } from './unix-socket-filter.js';

/**
 * Decides once, at start, whether the sandbox runs here: finds bwrap and the helpers by absolute
 * path, then runs `sh -c 'exit 0'` through the whole sandbox (`bwrap --version` alone would pass
 * where user namespaces are disabled, by a sysctl or AppArmor on Ubuntu 24.04).
 *
 * What made an earlier version report "bwrap was not found" with /usr/bin/bwrap installed: bwrap
 * was looked up on the gateway's own PATH (a service manager's, an IDE's or a version manager's
 * PATH can lack /usr/bin) while the helpers were looked up in the standard folders; a probe that
 * took more than 5 s on a loaded machine (the gateway starts right after `npm run build`) counted
 * as failed; and a failed probe was cached for the life of the process, so one slow or failed try
 * left every later project unsandboxed. Now both are looked up in the given PATH and then the
 * standard folders, the probe has a minute, and only a pass is kept: a probe that failed or ran out
 * of time is run again at the next start, while a bwrap that passed is not asked again by this
 * process (each project a gateway opens asked it, one more child of a large process each time).
 * Should it stop working later, its calls fail to start: closed, never unsandboxed.
 */

/** A probe that runs no tool: only bwrap setting up the namespaces and mounts. Generous, as a slow machine must not read as "no sandbox". */
export const PROBE_TIMEOUT_MS = 60_000;

export type Probe = { ok: true; host: SandboxHost; warnings: string[] } | { ok: false; reason: string };

/**
 * The absolute path of `name`: as given when it holds a '/', else the first executable file of
 * that name in `searchPath`, then in DEFAULT_CHILD_PATH.
 */
export function findExecutable(name: string, searchPath = ''): string | undefined {
  if (name.includes('/')) return isExecutable(name) ? path.resolve(name) : undefined;
  const dirs = [...searchPath.split(':'), ...DEFAULT_CHILD_PATH.split(':')].filter((d) => path.isAbsolute(d));
  return [...new Set(dirs)].map((d) => path.join(d, name)).find(isExecutable);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The probes that passed in this process, by bwrap's absolute path. */
const passed = new Map<string, Probe>();

export async function probeSandbox(bwrap: string, searchPath: string | undefined, timeoutMs = PROBE_TIMEOUT_MS): Promise<Probe> {
  const bwrapPath = findExecutable(bwrap, searchPath);
  if (bwrapPath === undefined) {
    const where = bwrap.includes('/') ? '' : ` in ${[searchPath, DEFAULT_CHILD_PATH].filter(Boolean).join(':')}`;
    return { ok: false, reason: `${bwrap} was not found${where}` };
  }
  const known = passed.get(bwrapPath);
  if (known !== undefined) return known;
  const probe = await runProbe(bwrapPath, timeoutMs);
  if (probe.ok) passed.set(bwrapPath, probe);
  return probe;
}

function runProbe(bwrapPath: string, timeoutMs: number): Promise<Probe> {
  return new Promise<Probe>((resolve) => {
    // bash, not sh: closing inherited descriptors above 9 needs it (dash's redirections stop at 9).
    const helpers: Partial<SandboxHost['helpers']> = {};
    for (const name of ['bash', 'sh', 'unshare', 'setpriv', 'prlimit'] as const) {
      const file = findExecutable(name, '');
      if (file === undefined) return resolve({ ok: false, reason: `${name} was not found in ${DEFAULT_CHILD_PATH} (install ${name === 'bash' || name === 'sh' ? name : 'util-linux'})` });
      helpers[name] = file;
    }
    const warnings: string[] = [];
    const filter = unixSocketFilter();
    if (filter === undefined) warnings.push(`sandbox: no unix-socket filter for ${process.arch}; subprocess tools can connect to the host's unix sockets (docker, databases)`);
    const host: SandboxHost = { bwrap: bwrapPath, helpers: helpers as SandboxHost['helpers'], ...(filter ? { unixSocketFilter: writeUnixSocketFilter(filter) } : {}) };
    // With the home and system masks, a size-capped /tmp and the socket filter, so a bwrap that refuses any of them fails here, not on every call.
    const masks = createSecretMasks().args({ keep: [] });
    const limits = { processes: 256, memoryBytes: 8 * 1024 ** 3, tmpBytes: 1024 * 1024 };
    const argv = sandboxArgv(host, limits, [helpers.sh as string, '-c', 'exit 0'], '/', { writePaths: [], network: false }, [], timeoutMs, masks);
    execFile(argv[0] as string, argv.slice(1), { timeout: timeoutMs, env: {} }, (error, _stdout, stderr) => {
      if (error === null) return resolve({ ok: true, host, warnings });
      const e = error as NodeJS.ErrnoException & { killed?: boolean };
      const first = stderr.trim().split('\n')[0] ?? '';
      if (e.killed === true) return resolve({ ok: false, reason: `${bwrapPath} did not finish a test run within ${timeoutMs / 1000} s` });
      // --size came with bubblewrap 0.7 (2022); Ubuntu 22.04 ships 0.6.
      const hint = /--size/u.test(first) ? ' (bubblewrap 0.7 or later is needed to cap /tmp)' : '';
      resolve({ ok: false, reason: `${bwrapPath} failed: ${first || e.message}${hint}` });
    });
  });
}
