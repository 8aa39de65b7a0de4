import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isKiwiError, KiwiError } from '../base/errors.js';
import type { ContainerLimits } from '../policy/isolation-choice.js';
import { isInside } from '../policy/path-check.js';
import { DEFAULT_CHILD_PATH } from './child-env.js';
import { containerArgv, type ContainerMount } from './container-argv.js';
import { INSTALL_HINT, probeContainers, type ContainerProbe, type ContainerProbeOptions } from './container-probe.js';
import { createSecretMasks, type MaskRequest } from './sandbox-masks.js';
import { runSubprocess, type SubprocessRequest, type SubprocessResult } from './subprocess.js';

/**
 * The container executor: runs a subprocess call's argv inside `podman run --rm` (container-argv.ts)
 * for tools at isolation `sandboxed` and `restricted`. The container sees the host's /usr
 * read-only, the granted folders as granted, a private /tmp, and nothing else of the host; the
 * project's secrets inside the granted folders are masked as in the sandbox (sandbox-masks.ts), and
 * podman's seccomp profile gets the sandbox's rules against unix sockets (container-seccomp.ts).
 *
 * Podman is probed on the first call that needs it and the answer kept for the runner's life (one
 * per opened project): a gateway whose tools never ask for a container never starts podman. Where
 * containers do not run, such a call is refused with the reason — never run at a lower level.
 */

export interface ContainerGrant {
  network: boolean;
  /** Folders the policy lets tools read (read-only) and write (read-write); real paths. */
  readPaths: string[];
  writePaths: string[];
  limits: ContainerLimits;
  /** As in SandboxGrant: the project whose secret locations are masked inside the mounts. */
  secrets?: MaskRequest['project'];
}

export interface ContainerRunner {
  /** The probe's answer, asked once. */
  availability(): Promise<ContainerProbe>;
  run(req: SubprocessRequest, grant: ContainerGrant): Promise<SubprocessResult>;
}

export interface ContainerRunnerOptions extends ContainerProbeOptions {
  /** Size of the private /tmp in MB; default 64. */
  tmpMb?: number;
  warn?: (message: string) => void;
}

/** Names podman reads for itself: a tool's environment must not steer the program that confines it. */
const PODMAN_OWN_ENV = /^(CONTAINERS_|PODMAN_|BUILDAH_|XDG_|DOCKER_|REGISTRY_AUTH_FILE$|CONTAINER_HOST$|STORAGE_)/u;
/** Exit codes podman itself answers with (`podman run` docs): its own failure, a command that cannot run, one not found. */
const PODMAN_FAILED = 125;
const NOT_EXECUTABLE = 126;
const NOT_FOUND = 127;
const SIGKILLED = 137;
/** Podman's own timer fires this long after ours: ours reports, podman's is for a gateway that died. */
const BACKSTOP_SECONDS = 5;

export function createContainerRunner(options: ContainerRunnerOptions = {}): ContainerRunner {
  const warn = options.warn ?? console.warn;
  let probe: Promise<ContainerProbe> | undefined;
  const masks = createSecretMasks({ warn });
  const availability = () => (probe ??= probeContainers({ onBuild: warn, ...options, warn }));

  return {
    availability,
    async run(req, grant) {
      const found = await availability();
      const tool = req.argv[0] ?? '';
      if (!found.ok) {
        throw new KiwiError('SPAWN_FAILED', `${tool} is refused: its isolation level runs it in a container, and containers do not run here (${found.reason}); ${INSTALL_HINT}, or lower the tool's isolation if the policy allows it`, {
          details: { isolation: 'unavailable', reason: found.reason },
        });
      }
      const badName = Object.keys(req.env).find((n) => PODMAN_OWN_ENV.test(n));
      if (badName !== undefined) throw new KiwiError('INVALID_INPUT', `${tool}: the variable ${badName} would configure podman itself, so a container tool may not set it; remove it from the tool's env or env_allowlist`);
      const name = `kiwi-${randomBytes(8).toString('hex')}`;
      const mounts = mountsFor(req, grant);
      const { masks: all, emptyFile } = masks.targets({ keep: mounts.map((m) => m.path), ...(grant.secrets ? { project: grant.secrets } : {}) });
      const argv = containerArgv(found.host, {
        name,
        argv: req.argv,
        cwd: req.cwd,
        envNames: Object.keys(req.env),
        childPath: req.env['PATH'] ?? DEFAULT_CHILD_PATH,
        network: grant.network,
        limits: grant.limits,
        tmpMb: options.tmpMb ?? 64,
        mounts,
        masks: all.filter((m) => mounts.some((mount) => isInside(m.path, mount.path))),
        emptyFile,
        user: `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
        timeoutSeconds: Math.ceil(req.timeoutMs / 1000) + BACKSTOP_SECONDS,
      });
      let result: SubprocessResult;
      // podman's own working folder, not the call's (the tool's is --workdir): conmon writes an
      // `oom` file into it when the kernel kills the container, which in the project a checkpoint
      // would commit.
      const own = await mkdtemp(path.join(tmpdir(), 'kiwi-podman-'));
      try {
        const { sandbox: _unused, ...plain } = req;
        // Podman's own PATH is the standard one: its network helpers run iptables from /usr/sbin. The tool's PATH goes in by --env.
        result = await runSubprocess({ ...plain, cwd: own, argv, env: { ...req.env, PATH: DEFAULT_CHILD_PATH } });
      } catch (error) {
        // Ending `podman run` does not end the container (conmon keeps it): remove it by name.
        await removeContainer(found.host.podman, name);
        throw retold(error, tool, name);
      } finally {
        await rm(own, { recursive: true, force: true });
      }
      return checkExit(result, tool, grant.limits, name);
    },
  };
}

/**
 * The granted folders, then the cwd and the folders of the files the argv names inside the project
 * (the script; a path argument, which the policy checked already), read-only, where no grant
 * covers them: a tool runs from its folder and reads what its call was allowed to name.
 */
function mountsFor(req: SubprocessRequest, grant: ContainerGrant): ContainerMount[] {
  const mounts: ContainerMount[] = [...grant.writePaths.map((p) => ({ path: p, writable: true })), ...grant.readPaths.map((p) => ({ path: p, writable: false }))];
  const covered = (p: string) => mounts.some((m) => isInside(p, m.path));
  const root = grant.secrets?.root;
  const scripts = root === undefined ? [] : req.argv.slice(1).filter((a) => path.isAbsolute(a) && isInside(a, root)).map((a) => path.dirname(a));
  for (const dir of [req.cwd, ...scripts]) if (!covered(dir)) mounts.push({ path: dir, writable: false });
  return mounts;
}

function retold(error: unknown, tool: string, name: string): unknown {
  if (!isKiwiError(error)) return error;
  const what = error.code === 'TOOL_TIMEOUT' ? 'did not finish in time' : error.code === 'TOOL_CANCELLED' ? 'was cancelled' : error.code === 'OUTPUT_TOO_LARGE' ? 'wrote too much output' : 'failed';
  return new KiwiError(error.code, `${tool} (in container ${name}) ${what}; the container was removed. ${error.message.replace(/^\S+ /u, '')}`, { cause: error, details: { ...error.details, container: name } });
}

function checkExit(result: SubprocessResult, tool: string, limits: ContainerLimits, container: string): SubprocessResult {
  const said = result.stderr.trim().split('\n').at(-1) ?? '';
  const details = { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode, container };
  if (result.exitCode === SIGKILLED) {
    throw new KiwiError('TOOL_FAILED', `${tool} was killed in its container (SIGKILL), most likely for going over its memory limit of ${limits.memoryMb} MB; raise config.container.memory_mb in the tool (within the policy's isolation.container.memory_mb) or make it use less`, { details });
  }
  if (result.exitCode === NOT_FOUND || result.exitCode === NOT_EXECUTABLE) {
    throw new KiwiError('SPAWN_FAILED', `${tool} could not be started in its container (${said}); a container sees only the host's /usr and the granted folders, so give a program under /usr or in the project`, { details });
  }
  if (result.exitCode === PODMAN_FAILED) throw new KiwiError('SPAWN_FAILED', `podman could not run ${tool} in a container: ${said}`, { details });
  return result;
}

function removeContainer(podman: string, name: string): Promise<void> {
  return new Promise((resolve) => execFile(podman, ['rm', '--force', '--ignore', '--time', '0', name], { timeout: 30_000 }, () => resolve()));
}
