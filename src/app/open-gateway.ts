import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { createGatewayApp, type GatewayApp } from '../http/server/app.js';
import { createClientAuth, keyCaller, type ClientAuth } from '../clients/client-auth.js';
import { isLoopbackHost } from '../clients/loopback.js';
import { KEY_FILE, readKeyFile, type KeyStore } from '../clients/key-store.js';
import { TERMINAL_STATUSES } from '../kernel/types.js';
import type { AdminKeys } from '../http/admin/admin-keys.js';
import type { AdminCatalog } from '../http/admin/admin-tools.js';
import { createMcpRoute } from '../http/mcp/mcp-route.js';
import { logInternalError } from '../http/server/log-internal-error.js';
import { createRequestGuard } from '../http/server/request-guard.js';
import { openProject, type Project, type ProjectOptions } from '../project/open-project.js';
import type { ThreadPort } from '../proxy/tool-call.js';
import { KiwiError } from '../base/errors.js';
import { openProjectResolverRuntime, type IndexProgress, type ResolverRuntime } from '../resolver/resolver-runtime.js';
import { createResolutionCounts } from '../resolver/resolution-counts.js';
import { catalogActionWords } from '../resolver/split-steps.js';
import { clientPolicyFile } from '../policy/client-policy-file.js';
import type { Tool } from '../registry/types.js';
import { createGatewayThreads, type GatewayThreads } from './gateway-threads.js';
import { createGatewayPipelines, type GatewayPipelines } from './gateway-pipelines.js';
import { pipelineJournal } from '../runs/pipeline-execution.js';
import { threadJournal } from '../runs/thread-execution.js';
import { openGatewayKernel } from './gateway-kernel.js';
import { gatewayMetricFamilies, type GatewayMetrics } from './gateway-metrics.js';
import { createApprovalWaits } from '../mcp-server/approval-waits.js';
import { kernelOutcome } from '../mcp-server/execution-outcome.js';
import { mcpRecorder } from '../mcp-server/mcp-execution.js';
import { createToolMenu } from '../loop/tool-menu.js';
import { openGatewayBudgets, type GatewayBudgets } from './gateway-budgets.js';
import { usagePrices } from './usage-prices.js';
import { loadGatewayConfig, type GatewayConfig } from './gateway-config.js';
import { openRunPrefetch, type RunPrefetch } from '../runs/run-prefetch.js';
import { chatRuns } from '../runs/chat-run.js';
import type { RunLoop } from '../loop/loop-types.js';
import { createUpstreams, type Upstreams } from './upstreams.js';
import { routeResolverFallback } from './resolver-fallback.js';
import { openSharedState } from '../shared-state/shared-state.js';
import { tracingFromEnv } from './tracing-env.js';
import { createRunningCalls, type RunningCall } from '../proxy/running-calls.js';
import { createGatewayStopping } from './gateway-stopping.js';
import { openStateBackends } from './state-backends.js';
import { failoverLog } from './upstreams.js';

export interface GatewayOptions extends Omit<ProjectOptions, 'source' | 'threads'> {
  /** The address it will listen on (default: the config's host). Only on loopback may it serve without client keys. */
  host?: string;
  /** Progress and notes for people (stderr in the CLI). */
  log?: (line: string) => void;
  /** Told what the search index embeds before the gateway answers (a first start embeds every tool). */
  indexProgress?: IndexProgress;
  signal?: AbortSignal;
  /**
   * Nothing serves its /v0 (a CLI command runs it in-process), so no person can answer an
   * approval: a thread's call that needs one is refused at once instead of waiting for nobody.
   * Its threads are not kernel executions, and the kernel's database is left to a gateway that
   * serves the project (it admits one process).
   */
  unattended?: boolean;
}

/** Everything `kiwi serve` runs, wired once: the HTTP app and what it needs, closed together. */
export interface Gateway {
  app: GatewayApp;
  config: GatewayConfig;
  project: Project;
  runtime: ResolverRuntime;
  upstreams: Upstreams;
  prefetch: RunPrefetch;
  runLoop: RunLoop;
  /** Directives run as threads. */
  threads: GatewayThreads;
  /** Pipelines of directives, each stage a thread. */
  pipelines: GatewayPipelines;
  /** Who may call: client keys, or the open local mode. */
  auth: ClientAuth;
  /** What clients used and what running requests hold, when the config has budgets or prices. */
  budgets: GatewayBudgets | undefined;
  /** Where rate limits and running requests are counted: "this process", or the Redis replicas share. */
  sharedStateWhere: string;
  /** Where the audit log is written: the project's folder, or the Postgres replicas share. */
  auditWhere: string;
  /** Where traces go (OTLP/HTTP), or undefined when they are off. */
  tracesEndpoint: string | undefined;
  /**
   * Ends the kernel's streams (agents', runners', execution events): at shutdown, before the
   * requests in flight get their grace period, which a stream that never ends would only use up.
   */
  endStreams(): void;
  /**
   * When the shutdown's grace period (`graceMs`) is over: aborts the chats and tool calls still
   * running with `gatewayStopping`, and resolves once what it cut has ended (gateway-stopping.ts).
   */
  cancelRunning(graceMs: number): Promise<{ calls: RunningCall[]; chats: number }>;
  /** Aborts every request still running (their upstream calls and tools), ends the streams, then closes the rest. */
  close(): Promise<void>;
}

/**
 * Opens a project as a gateway: its registry and tool proxy, the resolver with an up-to-date
 * index, the upstream LLMs from `.ai/config/gateway.yaml`, the agent loop, the MCP server.
 */
export async function openGateway(options: GatewayOptions): Promise<Gateway> {
  // Threads call tools through the proxy, and the proxy runs thread tools as threads: the proxy's
  // port reaches the thread runtime made below, once it exists (no call runs before it does).
  let threadRuntime: GatewayThreads | undefined;
  const runtimeOfThreads = (): GatewayThreads => {
    if (threadRuntime === undefined) throw new KiwiError('INTERNAL', 'a thread was asked for before the gateway finished opening');
    return threadRuntime;
  };
  const port: ThreadPort = { spawn: (plan, call) => runtimeOfThreads().port.spawn(plan, call), background: (plan, call) => runtimeOfThreads().port.background(plan, call) };
  // Spans over OTLP when the OTEL_* variables say where (tracing-env.ts); nothing otherwise.
  const traced = tracingFromEnv(options.env);
  const { tracing } = traced;
  // Off, nothing is wrapped at all: tracing must cost nothing then.
  const tracingOn = traced.endpoint === undefined ? {} : { tracing };
  const opened: { close(): Promise<void> }[] = [traced];
  // Every call through the proxy, so that a stopping gateway can name and cancel what still runs.
  const running = createRunningCalls();
  try {
    // Rate limits, concurrency caps and the loop detector: in Redis when replicas share them (REDIS_URL), else here.
    const shared = await openSharedState({ redisUrl: options.env['REDIS_URL'], prefix: options.env['KIWI_REDIS_PREFIX'], ...(options.log ? { log: options.log } : {}) });
    opened.unshift(shared);
    // Keys, the budgets' ledger, audit records and threads in the Postgres that replicas share (DATABASE_URL), else in files.
    const state = await openStateBackends(await realpath(path.resolve(options.projectDir)), options.env);
    opened.unshift(state);
    const { database, auditLog } = state;
    const openAudit = auditLog === undefined ? {} : { openAudit: (session: string) => auditLog(session, options.log) };
    const project = await openProject({ ...options, source: 'gateway', threads: port, buckets: shared.buckets, loops: shared.loops, running, ...openAudit, ...tracingOn });
    opened.unshift(project);
    const config = await loadGatewayConfig(path.join(project.root, '.ai', 'config', 'gateway.yaml'), { env: options.env, root: project.root });
    const upstreams = createUpstreams(config, { http: project.http, demoTurnsFile: path.join(project.root, '.ai', 'demo', 'agent-turns.yaml'), sharedCache: shared.cache, ...(options.log ? { log: options.log, onFailover: failoverLog(options.log) } : {}) });
    opened.unshift(upstreams);
    // The two slow opens at once: the embedder loads in a worker thread while PGlite starts on
    // this one (each about a second).
    const [runtime, kernel] = await openBoth(
      openProjectResolverRuntime({
        root: project.root,
        tools: project.registry.tools.values(),
        directives: project.registry.directives.values(),
        knowledge: project.registry.knowledge.values(),
        env: options.env,
        fallbackModel: routeResolverFallback({ config, upstreams, ...tracingOn, ...(options.log ? { log: options.log } : {}) }),
        ...(options.log ? { log: options.log } : {}),
      }),
      openGatewayKernel({ root: project.root, env: options.env, limits: config.kernelLimits, events: shared.kernelEvents, onDemand: options.unattended === true, ...tracingOn, ...(options.log ? { log: options.log } : {}) }),
    );
    opened.unshift(kernel, runtime);
    await runtime.sync({ ...(options.indexProgress ? { progress: options.indexProgress } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    const prefetch = await openRunPrefetch({ config: config.prefetch, project, runtime, ...(options.log ? { log: options.log } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    opened.unshift(prefetch);
    const startedAt = Date.now();
    const menu = createToolMenu({ retrieve: (text, o) => runtime.resolver.retrieve(text, o), tools: project.registry.tools }, { size: config.toolMenu });
    const toolOf = (id: string): Tool | undefined => project.registry.tools.get(id);
    const steps = { actionWords: catalogActionWords(runtime.tools.values()) };

    const stopping = createGatewayStopping({ running, ...(options.log ? { log: options.log } : {}) });
    const budgets = await openGatewayBudgets({ config, state, shared, ...(options.log ? { log: options.log } : {}) });
    if (budgets !== undefined) opened.unshift(budgets);
    const resolutions = createResolutionCounts();
    // Each chat: its upstream, budget, run scope, prefetch and loop (runs/chat-run.ts).
    const runLoop = chatRuns({
      route: (model) => upstreams.route(model),
      track: (what, signal) => stopping.start(what, signal),
      limits: config.limits,
      ...(config.recordChats ? { journal: kernel.journal } : {}),
      kernel: kernel.kernel,
      events: shared.kernelEvents,
      ...(budgets ? { budgets } : {}),
      priceOf: usagePrices(config, upstreams),
      prices: config.budgets.prices,
      waitForWrites: database !== undefined,
      runtime,
      policy: project.policy,
      tools: project.registry.tools,
      proxy: project.proxy,
      prefetch,
      menu,
      steps,
      resolutions,
      ...tracingOn,
      ...(options.log ? { log: options.log } : {}),
    });

    const host = options.host ?? config.host;
    const keyStore = state.keys();
    const auth = createClientAuth({ root: project.root, store: keyStore, policy: project.policy, openWithoutKeys: isLoopbackHost(host) });
    if (database !== undefined) await warnUnreadKeyFile(project.root, options.log);
    const guard = createRequestGuard({ allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins, mcpOrigins: config.mcp.allowedOrigins, auth, maxConcurrentPerClient: config.maxConcurrentPerClient, slots: shared.slots });
    const record = config.recordChats ? { record: mcpRecorder(kernel.journal, { call: (call) => project.proxy.call(call), stepDeadlineMs: config.limits.maxDurationMs, kernel: kernel.kernel, events: shared.kernelEvents, ...(budgets ? { budgets } : {}) }) } : {};
    const store = state.threads({ holdMs: config.kernelLimits.instanceTimeoutMs });
    const threads = createGatewayThreads({ project, runtime, upstreams, config, toolOf, steps, budgets, store, ...(config.recordChats && options.unattended !== true ? { journal: threadJournal(kernel.journal, { kernel: kernel.kernel, events: shared.kernelEvents }) } : {}) });
    threadRuntime = threads;
    // Recorded as executions wherever threads are: a pipeline run on `kiwi serve` can be cancelled through /v0.
    const pipelines = createGatewayPipelines({ project, threads, kernel: kernel.kernel, ...(config.recordChats && options.unattended !== true ? { journal: pipelineJournal(kernel.journal, { stepDeadlineMs: config.limits.maxDurationMs, kernel: kernel.kernel }) } : {}) });
    // A client of MCP 2026-07-28 is handed its approval waits back as input_required; a round on another replica reads the kernel.
    const waits = config.recordChats ? createApprovalWaits({ outcome: kernelOutcome({ kernel: kernel.kernel, events: shared.kernelEvents }) }) : undefined;
    if (waits) opened.unshift({ close: async () => waits.close() });
    // A thread another replica runs is cancelled through its execution (labelled with the thread's id).
    const cancelElsewhere = async (id: string): Promise<boolean> => {
      const k = await kernel.kernel();
      const live = (await k.executions.list({ labels: { thread: id }, limit: 10 })).executions.find((e) => !TERMINAL_STATUSES.has(e.status));
      if (live === undefined) return false;
      await k.executions.cancel(live.id);
      return true;
    };
    const metaThreads = config.recordChats ? { ...threads, cancelElsewhere } : threads;
    const metaDeps = { project, resolver: runtime.resolver, steps, threads: metaThreads, pipelines, ...record, ...(waits ? { waits } : {}) };
    const mcp = createMcpRoute(metaDeps, { allowedOrigins: config.mcp.allowedOrigins, allowedHosts: config.allowedHosts, maxBodyBytes: config.maxBodyBytes, callerOf: guard.callerOf, directory: shared.mcpSessions });
    opened.unshift(mcp);
    const metrics = (): GatewayMetrics => ({ uptime_s: Math.round((Date.now() - startedAt) / 1000), prefetch: prefetch.counters.snapshot(), resolution: resolutions.snapshot(), fallback: resolutions.fallback(), transitions: prefetch.transitions.stats() });
    const streams = new AbortController();
    const app = createGatewayApp({
      runLoop,
      kernel: kernel.kernel,
      streamsEnd: streams.signal,
      kernelEvents: shared.kernelEvents,
      ...tracingOn,
      models: () => upstreams.models(),
      health: () => ({ session: project.session, tools: runtime.toolCount, embedder: runtime.embedderId, upstreams: config.upstreams.map((u) => u.name) }),
      metrics,
      metricFamilies: () => gatewayMetricFamilies(metrics()),
      admin: {
        kernel: kernel.kernel,
        keys: adminKeys(project.root, keyStore, auth),
        counters: () => ({ ...metrics(), upstreams: config.upstreams.map((u) => u.name), upstream_health: upstreams.health() }),
        // Where the project's audit log is written: the shared table with DATABASE_URL, else its files.
        audit: state.auditQuery(),
        threads: store,
        usage: {
          ...(budgets === undefined ? {} : { budgets: { usage: budgets.usage, config: config.budgets, ledgerWhere: budgets.ledgerWhere } }),
          holdsWhere: shared.where,
          keyClients: async () => (await keyStore.read()).keys.filter((k) => k.revoked === undefined).map((k) => k.client),
        },
        catalog: adminCatalog(project, keyStore),
        // The resolver itself, not a request's prefetching one: trying an intent must leave no prediction behind.
        playground: { resolve: (text, o) => runtime.resolver.resolve(text, o), steps, gates: runtime.gates },
      },
      // Sessions are signed with the key's hash, and with this secret when the deployment sets one (docs/console.md).
      console: { auth, sessionSecret: options.env['KIWI_SESSION_SECRET'] ?? '' },
      mcp: (c) => mcp.handle(c),
      guard,
      ...(options.log ? { onError: logInternalError(options.log) } : {}),
      limits: { maxBodyBytes: config.maxBodyBytes },
    });
    return {
      app,
      config,
      project,
      runtime,
      upstreams,
      prefetch,
      runLoop,
      threads,
      pipelines,
      auth,
      budgets,
      sharedStateWhere: shared.where,
      auditWhere: state.where.audit,
      tracesEndpoint: traced.endpoint,
      endStreams: () => streams.abort(),
      cancelRunning: (graceMs) => stopping.cancelRunning(graceMs),
      async close() {
        streams.abort();
        stopping.abortAll();
        await pipelines.close(); // before their stages' threads: a run cancelled first starts no stage after them
        await threads.close(); // their ends are written while the proxy still runs
        await closeAll(opened);
      },
    };
  } catch (error) {
    await closeAll(opened);
    throw error;
  }
}

/** The keys as the admin API changes them: the gateway's own store, a policy file checked before a key names it. */
function adminKeys(root: string, store: KeyStore, auth: Pick<ClientAuth, 'changed'>): AdminKeys {
  return {
    where: store.where,
    list: async () => (await store.read()).keys,
    async create(client, grants) {
      const policy = grants.policy === undefined ? undefined : await clientPolicyFile(root, path.resolve(root, grants.policy), client);
      const made = await store.create(client, { ...grants, ...(policy === undefined ? {} : { policy }) });
      auth.changed();
      return made;
    },
    async revoke(id) {
      const { keys } = await store.read();
      if (!keys.some((k) => k.id === id)) throw new KiwiError('NOT_FOUND', `not found: key ${id.slice(0, 80)}`);
      // The store revokes by id or by client name: a client named like this id would lose its keys too.
      if (keys.some((k) => k.client === id)) throw new KiwiError('CONFLICT', `a client is also named ${id}; revoke this key with \`kiwi keys revoke\` after renaming that client`);
      const revoked = await store.revoke(id);
      auth.changed();
      return revoked;
    },
  };
}

/** The catalog and policy as the admin API reads them; a key's caller made as the request guard makes it. */
function adminCatalog(project: Project, store: KeyStore): AdminCatalog {
  return {
    tools: project.registry.tools,
    policy: project.policy,
    async key(id) {
      const record = (await store.read()).keys.find((k) => k.id === id);
      return record === undefined ? undefined : { record, served: await keyCaller(record, { root: project.root, policy: project.policy }) };
    },
  };
}

/** With DATABASE_URL the keys are in Postgres: keys left in the project's file would silently stop working. */
async function warnUnreadKeyFile(root: string, log: ((line: string) => void) | undefined): Promise<void> {
  const file = path.join(root, KEY_FILE);
  const { keys } = await readKeyFile(file).catch(() => ({ keys: [] }));
  if (keys.length > 0) log?.(`keys: DATABASE_URL is set, so client keys are read from Postgres; the ${keys.length} in ${file} are not read (create them again with \`kiwi keys create\` and DATABASE_URL set)`);
}

/** Both opened, or neither: when one fails, the other is closed once it has opened. */
async function openBoth<A extends { close(): Promise<void> }, B extends { close(): Promise<void> }>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === 'fulfilled' && second.status === 'fulfilled') return [first.value, second.value];
  for (const settled of [first, second]) if (settled.status === 'fulfilled') await settled.value.close().catch(() => undefined);
  throw first.status === 'rejected' ? first.reason : (second as PromiseRejectedResult).reason;
}

/** In order (newest first), each awaited, none skipped when one fails. */
async function closeAll(items: { close(): Promise<void> }[]): Promise<void> {
  for (const item of items) await item.close().catch(() => undefined);
}
