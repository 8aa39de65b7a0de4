import { buildContainerImage, CONTAINER_IMAGE } from '../../primitives/container-image.js';
import { INSTALL_HINT, probeContainers } from '../../primitives/container-probe.js';
import { findExecutable } from '../../primitives/sandbox-probe.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { CONTAINERS_HELP } from './containers-help.js';

const USAGE = CONTAINERS_HELP.usage;

/**
 * The container image of `sandboxed` and `restricted` tools: `build` makes it (again) from this
 * machine's own files, `check` runs the probe the gateway runs before its first container call.
 */
export async function containersCommand(ctx: CliContext): Promise<number> {
  const { positionals } = parseFlags(ctx.argv, CONTAINERS_HELP);
  const [action, ...rest] = positionals;
  if (rest.length > 0 || (action !== 'build' && action !== 'check')) throw new UsageError(`usage: ${USAGE}`);
  const searchPath = ctx.env.PATH;
  if (action === 'build') {
    const podman = findExecutable('podman', searchPath);
    if (podman === undefined) {
      ctx.io.err(`podman was not found; ${INSTALL_HINT}`);
      return 1;
    }
    ctx.io.out(`building ${CONTAINER_IMAGE} from this machine's own files (nothing is downloaded)…`);
    await buildContainerImage(podman, CONTAINER_IMAGE, ctx.signal);
    ctx.io.out(`built ${CONTAINER_IMAGE}`);
    return 0;
  }
  const probe = await probeContainers({ ...(searchPath ? { path: searchPath } : {}), onBuild: (m) => ctx.io.out(m) });
  if (!probe.ok) {
    ctx.io.err(`containers do not run here: ${probe.reason}`);
    return 1;
  }
  ctx.io.out(`containers run here: ${probe.host.podman} with ${probe.host.runtime}, image ${probe.host.image}`);
  return 0;
}
