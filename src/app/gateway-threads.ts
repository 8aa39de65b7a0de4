import type { ThreadPlan } from '../executor/plan-types.js';
import type { Project } from '../project/open-project.js';
import type { ThreadPort, ToolCall } from '../proxy/tool-call.js';
import type { ResolverRuntime } from '../resolver/resolver-runtime.js';
import { KiwiError } from '../base/errors.js';
import { resumeThread, runThread, threadOutcomeBody, type ThreadDeps, type ThreadOutcome, type ThreadResume, type ThreadStart } from '../threads/run-thread.js';
import type { ThreadStore } from '../threads/thread-store.js';
import type { AgentLoopDeps } from '../loop/agent-loop.js';
import type { GatewayBudgets } from './gateway-budgets.js';
import type { GatewayConfig } from './gateway-config.js';
import { annealOnFailure } from '../anneal/anneal-on-failure.js';
import { adoptDirective } from '../registry/adopt-item.js';
import { annealDirective } from '../anneal/anneal-directive.js';
import { projectEnvironments } from './project-environments.js';
import { tierModelOf } from './tier-model.js';
import { usagePrices } from './usage-prices.js';
import type { Upstreams } from './upstreams.js';

/** Directives run as threads on the gateway's own pieces: its tool proxy, resolver, upstreams and limits. */
export interface GatewayThreads {
  run(start: ThreadStart): Promise<ThreadOutcome>;
  resume(resume: ThreadResume): Promise<ThreadOutcome>;
  /** Where their transcripts are: `.ai/threads/`, or the Postgres replicas share. */
  store: ThreadStore;
  /**
   * Starts one that runs on after the caller is answered (MCP's async mode, hooks): answers its
   * id once its first line is written, or throws why it could not start. It ends on its own, when
   * `cancel`led, or when the gateway closes.
   */
  background(job: { start: ThreadStart } | { resume: ThreadResume }): Promise<string>;
  /** Where the tool proxy runs thread tools and the hooks' directives, as the calling client. */
  port: ThreadPort;
  /** Cancels a thread this gateway runs (in the background or for a caller that waits); false when it runs none of that id. */
  cancel(id: string): boolean;
  /** Cancels every thread this gateway runs and waits for their ends to be written. */
  close(): Promise<void>;
}

/** Background threads at once: more are refused, so a hook that fires on every call cannot start threads without bound. */
const MAX_BACKGROUND = 16;

export function createGatewayThreads(deps: {
  project: Project;
  runtime: ResolverRuntime;
  upstreams: Upstreams;
  config: GatewayConfig;
  toolOf: NonNullable<AgentLoopDeps['toolOf']>;
  steps: NonNullable<AgentLoopDeps['steps']>;
  budgets: GatewayBudgets | undefined;
  store: ThreadStore;
  /** Each run as a kernel execution (when the gateway records chats): its calls can wait for a person. */
  journal?: ThreadDeps['journal'];
}): GatewayThreads {
  const { project, runtime, upstreams, config, budgets } = deps;
  const threadDeps: ThreadDeps = {
    root: project.root,
    store: deps.store,
    directives: project.registry.directives,
    tools: project.registry.tools,
    policy: project.policy,
    call: (call) => project.proxy.call(call),
    help: (caller, signal) => project.proxy.help(caller, signal),
    resolve: (intent, o) => runtime.resolver.resolve(intent, o),
    route: (model) => upstreams.route(model),
    tierModel: tierModelOf(config),
    limits: config.limits,
    ...(budgets ? { admit: ({ client, route, directive, cap }) => budgets.admit({ client, model: route.model, free: budgets.isFree(route.upstream), directive, cap }) } : {}),
    toolOf: deps.toolOf,
    steps: deps.steps,
    ...(deps.journal ? { journal: deps.journal } : {}),
    environments: projectEnvironments(project.root, project.registry),
    priceOf: usagePrices(config, upstreams),
  };
  // Every thread this gateway runs, by id, from its first line to its end: `cancel` and `close` reach each.
  const running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  const tracked = (job: { start: ThreadStart } | { resume: ThreadResume }, signal: AbortSignal | undefined): Promise<ThreadOutcome> => {
    const controller = new AbortController();
    const both = signal === undefined ? controller.signal : AbortSignal.any([signal, controller.signal]);
    const given = 'start' in job ? job.start.onStart : job.resume.onStart;
    let id: string | undefined;
    const entry = { controller, done: Promise.resolve() as Promise<unknown> };
    const onStart = (started: string): void => {
      id = started;
      running.set(started, entry);
      given?.(started);
    };
    const outcome = ('start' in job ? runThread(threadDeps, { ...job.start, signal: both, onStart }) : resumeThread(threadDeps, { ...job.resume, signal: both, onStart })).finally(() => {
      if (id !== undefined) running.delete(id);
    });
    entry.done = outcome.catch(() => undefined);
    return outcome;
  };
  const run = annealOnFailure((start: ThreadStart): Promise<ThreadOutcome> => tracked({ start }, start.signal), {
    rules: project.policy.annealing,
    ...(threadDeps.priceOf ? { priceOf: threadDeps.priceOf } : {}),
    async anneal(name, thread, signal) {
      const annealed = await annealDirective({ threads: deps.store, registry: project.registry, route: threadDeps.route, tierModel: threadDeps.tierModel }, { name, thread, ...(signal ? { signal } : {}) });
      adoptDirective(project.registry, annealed.directive);
      return annealed;
    },
  });
  const resume = (r: ThreadResume): Promise<ThreadOutcome> => tracked({ resume: r }, r.signal);

  // Counted from the request on, not from the first line: starts that are still being admitted count too.
  let inBackground = 0;
  const background: GatewayThreads['background'] = (job) => {
    if (inBackground >= MAX_BACKGROUND) return Promise.reject(new KiwiError('RATE_LIMITED', `${MAX_BACKGROUND} threads already run in the background; wait for one to end (\`kiwi threads list\`)`));
    inBackground++;
    return new Promise<string>((started, refused) => {
      // Not the caller's signal: the thread outlives the request that started it.
      const withStart = 'start' in job ? { start: { ...job.start, onStart: started } } : { resume: { ...job.resume, onStart: started } };
      tracked(withStart, undefined)
        .then(undefined, refused) // thrown before its first line: it never began (after it, a no-op)
        .finally(() => inBackground--);
    });
  };

  // Thread tools (`tool_type: thread`, a directive tool, anything on llm_runtime) spawn through
  // the proxy, as the caller (`port`); a hook's directive starts in the background, as the call's caller.
  const asCaller = (plan: ThreadPlan, call: ToolCall): ThreadStart => ({
    directive: plan.directive,
    inputs: plan.inputs,
    client: call.caller.client,
    ...(call.caller.context ? { context: call.caller.context } : {}),
    ...(call.run?.thread ? { parent: { id: call.run.thread.id, depth: call.run.thread.depth } } : {}),
    ...(plan.tier ? { tier: plan.tier } : {}),
  });
  return {
    run,
    resume,
    store: deps.store,
    background,
    port: {
      async spawn(plan, call) {
        const signal = call.run?.signal;
        const outcome = await run({ ...asCaller(plan, call), ...(signal ? { signal } : {}) });
        call.run?.thread?.onChildUsage?.(outcome.usage);
        const body = threadOutcomeBody(outcome);
        return { text: JSON.stringify(body, null, 2), data: body, isError: outcome.status !== 'completed' };
      },
      background: (plan, call) => background({ start: asCaller(plan, call) }),
    },
    cancel(id) {
      const thread = running.get(id);
      thread?.controller.abort(new KiwiError('TOOL_CANCELLED', `thread ${id} was cancelled`));
      return thread !== undefined;
    },
    async close() {
      const all = [...running.values()];
      for (const t of all) t.controller.abort(new KiwiError('TOOL_CANCELLED', 'the gateway is shutting down'));
      await Promise.allSettled(all.map((t) => t.done));
    },
  };
}
