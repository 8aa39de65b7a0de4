import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { DEFAULT_CONTAINER_LIMITS } from '../policy/isolation-choice.js';
import { DEFAULT_CHILD_PATH } from './child-env.js';
import { containerArgv, type ContainerHost } from './container-argv.js';
import { buildContainerImage, CONTAINER_IMAGE, hostLayout, imageExists } from './container-image.js';
import { containerSeccompProfile, readPodmanProfile, writeContainerSeccompProfile } from './container-seccomp.js';
import { findExecutable, PROBE_TIMEOUT_MS } from './sandbox-probe.js';

/**
 * Decides whether containers run here: finds podman and runc by absolute path (in the given PATH,
 * then the standard folders), builds the image when podman lacks it, and runs `true` in a container
 * with every flag a call gets — podman installed but unable to start one (no cgroup controller, a
 * refused runtime, hard limits below the ulimits, a seccomp profile it cannot load) must read as
 * "no containers", not fail each call.
 */

export type ContainerProbe = { ok: true; host: ContainerHost } | { ok: false; reason: string };

export const INSTALL_HINT = 'install podman and runc (apt-get install podman runc)';

export interface ContainerProbeOptions {
  /** The podman executable: a path, or a name looked up in `path` and then the standard folders; default `podman`. */
  podman?: string;
  /** The OCI runtime, likewise; default `runc`. */
  runtime?: string;
  path?: string;
  image?: string;
  /** Told when the image has to be built first, so a first call's wait is explained. */
  onBuild?: (message: string) => void;
  /** Told when containers run without the unix-socket rules (no table for this architecture). */
  warn?: (message: string) => void;
  /** Where podman's default seccomp profile is looked for; default PODMAN_SECCOMP_PROFILES. */
  seccompProfiles?: readonly string[];
  timeoutMs?: number;
}

export async function probeContainers(options: ContainerProbeOptions = {}): Promise<ContainerProbe> {
  const searched = [options.path, DEFAULT_CHILD_PATH].filter(Boolean).join(':');
  const podman = findExecutable(options.podman ?? 'podman', options.path);
  if (podman === undefined) return { ok: false, reason: `${options.podman ?? 'podman'} was not found in ${searched}; ${INSTALL_HINT}` };
  const runtime = findExecutable(options.runtime ?? 'runc', options.path);
  if (runtime === undefined) return { ok: false, reason: `the OCI runtime ${options.runtime ?? 'runc'} was not found in ${searched}; ${INSTALL_HINT}` };
  const image = options.image ?? CONTAINER_IMAGE;
  try {
    if (!(await imageExists(podman, image))) {
      options.onBuild?.(`building the container image ${image} from this machine's own files (once; nothing is downloaded)`);
      await buildContainerImage(podman, image);
    }
  } catch (error) {
    return { ok: false, reason: `the container image ${image} could not be built (${(error as Error).message}); try \`kiwi containers build\`` };
  }
  const base = readPodmanProfile(options.seccompProfiles);
  if (!base.ok) return { ok: false, reason: base.reason };
  const profile = containerSeccompProfile(base.profile);
  if (profile === undefined) options.warn?.(`containers: no seccomp rules for ${process.arch}; container tools can connect to unix sockets in their folders`);
  const seccomp = profile === undefined ? {} : { seccompProfile: writeContainerSeccompProfile(profile) };
  const host: ContainerHost = { podman, runtime, image, systemMounts: hostLayout().mounts, ...seccomp };
  const timeoutMs = options.timeoutMs ?? PROBE_TIMEOUT_MS;
  const argv = containerArgv(host, {
    name: `kiwi-probe-${randomBytes(6).toString('hex')}`,
    argv: ['true'],
    cwd: '/',
    envNames: [],
    childPath: DEFAULT_CHILD_PATH,
    network: false,
    limits: DEFAULT_CONTAINER_LIMITS,
    tmpMb: 1,
    mounts: [],
    masks: [],
    emptyFile: '/dev/null',
    user: `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
    timeoutSeconds: Math.ceil(timeoutMs / 1000),
  });
  return new Promise((resolve) => {
    execFile(argv[0] as string, argv.slice(1), { timeout: timeoutMs }, (error, _stdout, stderr) => {
      if (error === null) return resolve({ ok: true, host });
      const first = stderr.trim().split('\n')[0] ?? '';
      const why = (error as { killed?: boolean }).killed === true ? `did not start a test container within ${timeoutMs / 1000} s` : `failed to start a test container: ${first || error.message}`;
      resolve({ ok: false, reason: `${podman} ${why}` });
    });
  });
}
