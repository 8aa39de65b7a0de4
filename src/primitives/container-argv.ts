import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import type { ContainerLimits } from '../policy/isolation-choice.js';

/** The programs that run a container, by absolute path so a tool's PATH cannot change them. */
export interface ContainerHost {
  podman: string;
  /** The OCI runtime: runc, as crun refuses hosts with hybrid cgroups (v1 controllers beside a v2 mount). */
  runtime: string;
  image: string;
  /** The host's /usr and any other program folders, read-only (container-image.ts). */
  systemMounts: readonly ContainerMount[];
  /** The seccomp profile's file (container-seccomp.ts); absent where this machine has none, and podman's default applies. */
  seccompProfile?: string;
}

export interface ContainerMount {
  /** An absolute real path on the host, mounted at the same path inside so the call's paths mean the same there. */
  path: string;
  writable: boolean;
}

export interface ContainerSpec {
  /** `kiwi-<random>`: how a timeout finds the container to remove it. */
  name: string;
  argv: string[];
  cwd: string;
  /** Names of the tool's variables; podman reads their values from its own environment, so no secret lands in a process list. */
  envNames: string[];
  /** PATH inside, which is not a secret and must not be podman's own. */
  childPath: string;
  network: boolean;
  limits: ContainerLimits;
  tmpMb: number;
  mounts: ContainerMount[];
  /** Secrets inside the mounts: folders get an empty read-only tmpfs, files `emptyFile`. */
  masks: Array<{ path: string; dir: boolean }>;
  emptyFile: string;
  /** The gateway's uid:gid: what the tool writes belongs to the gateway's user, as under the sandbox. */
  user: string;
  /** Podman's own kill timer, a backstop for a gateway that dies mid-call; the caller's timer comes first. */
  timeoutSeconds: number;
}

/**
 * `podman run` for one call. Everything is a separate argv element; the only text podman parses
 * itself are the mount specs, where `:` and `,` separate fields, so paths holding either are
 * refused rather than quoted.
 */
export function containerArgv(host: ContainerHost, spec: ContainerSpec): string[] {
  const { limits } = spec;
  const out = [host.podman, 'run', '--rm', '--interactive', '--pull=never', '--name', spec.name, '--runtime', host.runtime];
  out.push('--network', spec.network ? 'bridge' : 'none');
  // A grant of /tmp itself (a project there) is its /tmp; any other grant lies over the private one.
  const granted = spec.mounts.filter((m) => !host.systemMounts.some((sys) => sys.path === m.path));
  const privateTmp = granted.some((m) => m.path === '/tmp') ? [] : ['--tmpfs', `/tmp:rw,nosuid,nodev,size=${spec.tmpMb}m,mode=1777`];
  out.push('--read-only', '--read-only-tmpfs=false', ...privateTmp);
  out.push('--user', spec.user, '--cap-drop', 'all', '--security-opt', 'no-new-privileges');
  if (host.seccompProfile !== undefined) out.push('--security-opt', `seccomp=${host.seccompProfile}`);
  // Podman's own defaults for these exceed the hard limits of many hosts, and `run` then fails.
  out.push('--ulimit', `nofile=${limits.openFiles}:${limits.openFiles}`, '--ulimit', `nproc=${limits.processes}:${limits.processes}`);
  out.push('--pids-limit', String(limits.processes), '--cpus', String(limits.cpus));
  // Swap equal to memory: no swap on top, so the limit is the limit.
  out.push('--memory', `${limits.memoryMb}m`, '--memory-swap', `${limits.memoryMb}m`);
  out.push('--timeout', String(spec.timeoutSeconds), '--log-driver', 'none');
  for (const mount of [...host.systemMounts, ...granted]) out.push('--volume', `${mountPath(mount.path)}:${mount.path}:${mount.writable ? 'rw' : 'ro'}`);
  // notmpcopyup: podman would otherwise fill the tmpfs with what it masks. A mask's `shown` files
  // are not bound back: the tmpfs is read-only from the start, with no room for their mount points.
  // A container tool that reads `.git` sees those files deleted (docs/sandbox.md).
  for (const mask of spec.masks) {
    out.push(...(mask.dir ? ['--tmpfs', `${mountPath(mask.path)}:ro,size=4k,notmpcopyup`] : ['--volume', `${mountPath(spec.emptyFile)}:${mask.path}:ro`]));
  }
  out.push('--workdir', mountPath(spec.cwd), '--env', `PATH=${spec.childPath}`);
  for (const name of spec.envNames) if (name !== 'PATH') out.push('--env', name);
  out.push(host.image, ...spec.argv);
  return out;
}

function mountPath(p: string): string {
  if (!path.isAbsolute(p) || /[:,\n\0]/u.test(p)) {
    throw new KiwiError('INVALID_INPUT', `cannot mount ${JSON.stringify(p)} into a container: podman needs an absolute path without ':' or ','; rename the folder or run the tool at isolation standard`);
  }
  return p;
}
