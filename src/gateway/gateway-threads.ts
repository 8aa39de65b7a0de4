import type { Project } from '../project.js';
import type { ResolverRuntime } from '../resolver-runtime.js';
import { runThread, type ThreadOutcome, type ThreadStart } from '../threads/run-thread.js';
import type { AgentLoopDeps } from './agent-loop.js';
import type { GatewayBudgets } from './gateway-budgets.js';
import type { GatewayConfig } from './gateway-config.js';
import { tierModelOf } from './tier-model.js';
import type { Upstreams } from './upstreams.js';

/** Directives run as threads on the gateway's own pieces: its tool proxy, resolver, upstreams and limits. */
export interface GatewayThreads {
  run(start: ThreadStart): Promise<ThreadOutcome>;
}

export function createGatewayThreads(deps: {
  project: Project;
  runtime: ResolverRuntime;
  upstreams: Upstreams;
  config: GatewayConfig;
  describeTool: NonNullable<AgentLoopDeps['describeTool']>;
  steps: NonNullable<AgentLoopDeps['steps']>;
  budgets: GatewayBudgets | undefined;
}): GatewayThreads {
  const { project, runtime, upstreams, config, budgets } = deps;
  const tierModel = tierModelOf(config);
  const run = (start: ThreadStart): Promise<ThreadOutcome> =>
    runThread(
      {
        root: project.root,
        directives: project.registry.directives,
        tools: project.registry.tools,
        policy: project.policy,
        call: (call) => project.proxy.call(call),
        help: (caller, signal) => project.proxy.help(caller, signal),
        resolve: (intent, o) => runtime.resolver.resolve(intent, o),
        route: (model) => upstreams.route(model),
        tierModel,
        limits: config.limits,
        ...(budgets ? { admit: ({ client, route, directive }) => budgets.admit({ client, model: route.model, free: budgets.isFree(route.upstream), directive }) } : {}),
        describeTool: deps.describeTool,
        steps: deps.steps,
      },
      start,
    );
  // Thread tools (`tool_type: thread`, a directive tool, anything on llm_runtime) spawn through the proxy, as the caller.
  project.proxy.useThreads(async (plan, call) => {
    const outcome = await run({
      directive: plan.directive,
      inputs: plan.inputs,
      client: call.client,
      ...(call.context ? { context: call.context } : {}),
      ...(call.thread ? { parent: { id: call.thread.id, depth: call.thread.depth } } : {}),
      ...(plan.tier ? { tier: plan.tier } : {}),
      ...(call.signal ? { signal: call.signal } : {}),
    });
    const body = { thread: outcome.id, status: outcome.status, steps_taken: outcome.steps_taken, result: outcome.result, ...(outcome.limit ? { limit: outcome.limit } : {}) };
    return { text: JSON.stringify(body, null, 2), data: body, isError: outcome.status !== 'completed' };
  });
  return { run };
}
