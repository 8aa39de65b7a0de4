import { hostname } from 'node:os';
import path from 'node:path';
import { LOCAL_CALLER } from '../../clients/client-auth.js';
import { openProject, type Project } from '../../project/open-project.js';
import { createRemoteRunner, type RunnerEvent } from '../../runner/remote-runner.js';
import { runnerCapabilities } from '../../runner/runner-capabilities.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { clientKey } from '../../cli/gateway-address.js';
import { createKernelClient } from '../../cli/kernel-client.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { RUNNER_HELP } from './runner-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = RUNNER_HELP.usage;
const KEY_FROM = '--key or KIWI_KERNEL_KEY';
const MAX_CONCURRENCY = 32;
const RUNNER_ID = /^[A-Za-z0-9_.:@-]{1,200}$/;
/** Tools named in the start line; the rest are counted. */
const SHOWN_TOOLS = 12;

/**
 * `kiwi runner`: this project's tools, offered to a kernel somewhere else as a runner (§7): the
 * kernel sends the remote calls of its agents here, and each runs through this project's tool
 * proxy — its policy, rate limits and audit — as the local client, the identity `kiwi run` has
 * on this machine. The kernel does not say which of its clients asked (§7.1), so no remote
 * client's rights apply here: what this machine's `.ai/config/policy.yaml` allows is what its
 * runner runs, and --tools can only narrow that.
 *
 * Job lines and connection news go to stderr; with --json, the ready line, one line per job and
 * the stop line are JSON on stdout. Runs until Ctrl-C or SIGTERM, then unregisters; exit 1 when
 * the kernel cannot be reached at the start or refuses the runner.
 */
export async function runnerCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, RUNNER_HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected ${JSON.stringify(positionals[0]?.slice(0, 40))}; usage: ${USAGE}`);
  if (values.kernel === undefined) throw new UsageError(`give the kernel's address, e.g. --kernel http://127.0.0.1:8787 (a gateway that \`kiwi serve\` runs); usage: ${USAGE}`);
  const connections = concurrency(values.concurrency);
  const only = toolGlobs(values.tools);
  const runnerIdFlag = values['runner-id'];
  if (runnerIdFlag !== undefined && !RUNNER_ID.test(runnerIdFlag)) {
    throw new UsageError(`--runner-id must be 1 to 200 letters, digits or _ . : @ -, got ${JSON.stringify(runnerIdFlag.slice(0, 40))}`);
  }
  const options = projectOptions(ctx, values);
  const kernel = createKernelClient(values.kernel, clientKey(values.key ?? ctx.env['KIWI_KERNEL_KEY'], KEY_FROM), undefined, { urlFlag: '--kernel', keyFrom: KEY_FROM });
  let project: Project | undefined;
  try {
    project = await openProject({ ...options, source: 'runner' });
    const runnerId = runnerIdFlag ?? defaultRunnerId(project.root);
    const { offered, allowed, withheld, unmatched } = runnerCapabilities(project.registry.tools, project.policy, LOCAL_CALLER, only);
    if (allowed.length === 0) {
      throw new UsageError(`runner ${runnerId} has no tools to offer: the policy lets it run none of the ${withheld.length} tools of ${project.root}; list the ones it may run under \`tools:\` in .ai/config/policy.yaml`);
    }
    if (offered.length === 0) throw new UsageError(`--tools matches none of the ${allowed.length} tools the policy lets this runner run: ${listed(allowed)}`);
    for (const glob of unmatched) ctx.io.err(`kiwi runner: warning: --tools ${glob} matches none of the tools the policy lets this runner run`);
    const origin = new URL(values.kernel).origin;
    const more = withheld.length > 0 ? `; ${withheld.length} more that the policy does not let it run are not offered` : '';
    ctx.io.err(`kiwi runner: runner ${runnerId} offers ${offered.length} tool${offered.length === 1 ? '' : 's'} of ${project.root} to ${origin}: ${listed(offered)}${more}`);
    const print = printer(ctx, values.json === true, runnerId, origin, offered);
    const runner = createRemoteRunner({ kernel, proxy: project.proxy, tools: project.registry.tools, caller: LOCAL_CALLER, onEvent: print }, { runnerId, capabilities: offered, connections });
    await runner.run(ctx.signal ?? new AbortController().signal);
    if (values.json) ctx.io.out(JSON.stringify({ event: 'stopped', runner_id: runnerId }));
    ctx.io.err(`kiwi runner: stopped; runner ${runnerId} unregistered`);
    return 0;
  } finally {
    await Promise.allSettled([project?.close(), kernel.close()]);
  }
}

/** Prints what the runner says: news on stderr, and with --json the ready, job and stop lines on stdout. */
function printer(ctx: CliContext, json: boolean, runnerId: string, origin: string, tools: string[]): (event: RunnerEvent) => void {
  return (event) => {
    switch (event.type) {
      case 'ready':
        if (json) ctx.io.out(JSON.stringify({ event: 'ready', runner_id: runnerId, kernel: origin, consumers: event.consumers, tools }));
        ctx.io.err(`kiwi runner: connected (${event.consumers.length} connection${event.consumers.length === 1 ? '' : 's'}); waiting for jobs, Ctrl-C stops`);
        return;
      case 'connected':
        if (event.again) ctx.io.err(`kiwi runner: reconnected (${event.consumer})`);
        return;
      case 'dropped':
        ctx.io.err(`kiwi runner: the stream of ${event.consumer} dropped (${event.reason}); reconnecting in ${(event.retryInMs / 1000).toFixed(1)} s`);
        return;
      case 'warning':
        ctx.io.err(`kiwi runner: warning: ${event.message}`);
        return;
      case 'job': {
        if (json) {
          const { type: _type, execution, step, ...rest } = event;
          ctx.io.out(JSON.stringify({ event: 'job', ...rest, execution_id: execution, step_id: step }));
          return;
        }
        const said = event.status === 'denied' ? event.error?.replace(/^denied: /, '') : event.error;
        const error = said === undefined ? '' : `: ${said.split('\n')[0]?.slice(0, 300)}`;
        ctx.io.err(`kiwi runner: ${event.tool} ${event.status}${event.retryable ? ' (retryable)' : ''} ${event.ms} ms${error}`);
        return;
      }
    }
  };
}

/** This machine and project, e.g. `build-box-shop`: the same every start, so the kernel's events name a runner people know. */
function defaultRunnerId(root: string): string {
  return `${hostname()}-${path.basename(root)}`.replace(/[^A-Za-z0-9_.:@-]+/g, '-').slice(0, 200);
}

function concurrency(raw: string | undefined): number {
  if (raw === undefined) return 1;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_CONCURRENCY) {
    throw new UsageError(`--concurrency must be a whole number from 1 to ${MAX_CONCURRENCY} (jobs run at once, one per connection), got ${JSON.stringify(raw.slice(0, 40))}`);
  }
  return Number(raw);
}

function toolGlobs(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const globs = raw
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g !== '');
  if (globs.length === 0) throw new UsageError('--tools needs tool ids or globs, comma-separated, e.g. --tools "git_*,read_file"');
  return globs;
}

function listed(tools: string[]): string {
  const shown = tools.slice(0, SHOWN_TOOLS).join(', ');
  return tools.length > SHOWN_TOOLS ? `${shown} and ${tools.length - SHOWN_TOOLS} more` : shown;
}
