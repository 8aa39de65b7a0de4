import { once } from 'node:events';
import { openGateway } from '../open-gateway.js';
import { listen } from '../../http/server/listen.js';
import { KiwiError } from '../../base/errors.js';
import { isLoopbackHost } from '../../clients/loopback.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { SERVE_HELP } from './serve-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { createIndexProgress } from '../../cli/index-progress.js';
import { describeAccess, describeFallbackModel, describeGatewayConfig, describeUnavailable } from './serve-banner.js';
import { describeCallGate } from '../../resolver/call-gate-summary.js';
import { invalidItemLines } from '../../registry/invalid-items.js';
import { kiwiCommand } from '../../cli/kiwi-command.js';
import { watchUpstreams } from '../upstreams.js';

/** How often `kiwi serve` checks its upstreams after the check at start. */
const UPSTREAM_CHECK_MS = 30_000;

/** `kiwi serve` (what `npm start` runs): the gateway on HTTP until SIGINT/SIGTERM. */
export async function serveCommand(ctx: CliContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, SERVE_HELP);
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65_535)) throw new UsageError(`--port must be a whole number from 0 to 65535, got ${values.port}`);

  const log = (line: string): void => ctx.io.err(`kiwi: ${line}`);
  const options = projectOptions(ctx, values);
  const gateway = await openGateway({ ...options, log, indexProgress: createIndexProgress(ctx.io), ...(values.host ? { host: values.host } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
  try {
    const { config, project, runtime } = gateway;
    const host = values.host ?? config.host;
    const access = await gateway.auth.mode();
    if (access.mode === 'closed' && !isLoopbackHost(host)) {
      throw new KiwiError('INVALID_INPUT', `refusing to listen on ${host} without client keys: anyone who can reach that address could run this project's tools. Create a key with \`kiwi keys create NAME\` (clients send it as \`Authorization: Bearer KEY\` or \`x-api-key: KEY\`), or listen on 127.0.0.1`);
    }
    const listener = await listen((request, env) => gateway.app.fetch(request, env), { host, port: port ?? config.port, ...config.listen });
    const { registry } = project;
    ctx.io.out(`Kiwi Gateway listening on ${listener.url}`);
    ctx.io.out(`console: ${listener.url}/ui (${access.mode === 'open' ? 'no login on this machine' : 'log in with an admin or approver key'}); admin API: ${listener.url}/admin/v1`);
    ctx.io.out(`project ${project.root}: ${runtime.toolCount} resolvable ${runtime.toolCount === 1 ? 'tool' : 'tools'} (${registry.tools.size} in all, ${registry.errors.length} invalid${registry.warnings.length > 0 ? `, ${registry.warnings.length} warnings: run \`kiwi tools validate\`` : ''}), ${registry.directives.size} directives, ${registry.knowledge.size} knowledge entries; ${project.policy.label}`);
    for (const line of invalidItemLines(registry.errors)) ctx.io.out(line);
    ctx.io.out(`resolver: ${runtime.embedderId}; audit log ${gateway.auditWhere} (session ${project.session})`);
    ctx.io.out(describeCallGate(runtime.gates, runtime.targets, describeFallbackModel(runtime)));
    ctx.io.out(describeGatewayConfig(config, listener.url));
    ctx.io.out(describeAccess(access, config.allowedHosts, host));
    ctx.io.out(
      gateway.sharedStateWhere === 'this process'
        ? 'limits: rate limits and running requests counted in this process (set REDIS_URL to share them between replicas: docs/replicas.md)'
        : `limits: rate limits and running requests shared with other replicas through ${gateway.sharedStateWhere}`,
    );
    if (gateway.tracesEndpoint !== undefined) ctx.io.out(`traces: OpenTelemetry spans sent over OTLP/HTTP to ${gateway.tracesEndpoint} (the OTEL_* variables: docs/observability.md)`);
    const p = config.prefetch;
    ctx.io.out(
      p.enabled
        ? `prefetch: on (snapshots searched with ${gateway.prefetch.snapshots.embedderId}; cache ${p.ttlMs / 1000} s, speculative runs of read-only tools ${p.speculate ? 'on' : 'off'}; transitions learned from ${gateway.prefetch.transitions.stats().observations} calls) — \`kiwi stats\` shows hits`
        : 'prefetch: off (prefetch.enabled in .ai/config/gateway.yaml)',
    );
    const checkpoints = await project.checkpoints.status();
    ctx.io.out(
      checkpoints.on
        ? `checkpoints: on (before each state-changing call, ${checkpoints.top} is committed to ${checkpoints.ref}; \`kiwi checkpoints list\`)`
        : `checkpoints: off (${checkpoints.reason})`,
    );
    ctx.io.out(`endpoints: POST /v1/chat/completions, POST /v1/messages, POST /v1/responses, GET /v1/models, GET /healthz, GET /metrics (JSON; Prometheus text on Accept: text/plain), /mcp (MCP Streamable HTTP), /v0 (the kernel's API)`);
    const key = access.mode === 'open' ? '' : ' --key KEY';
    const kiwi = kiwiCommand({ script: process.argv[1] ?? '', cwd: ctx.cwd, path: ctx.env['PATH'] });
    ctx.io.out(`try: ${kiwi} chat --url ${listener.url}${key} "MESSAGE" (with no model configured, the offline demo model answers: docs/getting-started.md)`);
    const graceMs = config.shutdownGraceMs;
    ctx.io.out(`Ctrl-C or SIGTERM stops it (requests in flight get ${graceMs / 1000} s to finish, limits.shutdown_grace_ms; then they are cancelled, and so recorded).`);
    // Each upstream's model list is asked now, after the listen (bounded by the list's own
    // timeout): one that is down is told here, not at the first chat that needs it.
    void gateway.upstreams.check((down) => ctx.io.out(describeUnavailable(down, config.upstreams.find((u) => u.name === down.name)?.models ?? [])));
    // Then every half minute, telling each change (a request that failed over finds one too).
    const unwatch = watchUpstreams(gateway.upstreams, UPSTREAM_CHECK_MS, log);
    if (ctx.signal && !ctx.signal.aborted) await once(ctx.signal, 'abort');
    unwatch();
    ctx.io.err(`kiwi: shutting down: no new requests; those running get ${graceMs / 1000} s to finish…`);
    gateway.endStreams();
    // When the grace period is over, what still runs is cancelled (each call logged and audited
    // as cancelled, each streamed chat told why) before the connections are cut.
    const cancelRunning = async (): Promise<void> => {
      const { calls, chats } = await gateway.cancelRunning(graceMs);
      if (calls.length + chats > 0) log(`stopping: cancelled ${calls.length} tool ${calls.length === 1 ? 'call' : 'calls'} and ${chats} ${chats === 1 ? 'chat' : 'chats'} that were still running`);
    };
    await listener.close(graceMs, cancelRunning);
    // Calls no connection waits for (a background thread's) are cut here, named too.
    await cancelRunning();
    return 0;
  } finally {
    await gateway.close();
  }
}
