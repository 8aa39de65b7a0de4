import { DEMO_MODEL_ID } from '../llm/demo-provider.js';
import type { Project } from '../project.js';
import type { ResolverRuntime } from '../resolver-runtime.js';
import { runThread, type ThreadOutcome, type ThreadStart } from '../threads/run-thread.js';
import type { AgentLoopDeps } from './agent-loop.js';
import type { GatewayBudgets } from './gateway-budgets.js';
import type { GatewayConfig } from './gateway-config.js';
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
  // With no real upstream, every tier runs on the offline demo model, as every chat does.
  const unmapped = config.upstreams.every((u) => u.kind === 'demo') ? DEMO_MODEL_ID : undefined;
  return {
    run: (start) =>
      runThread(
        {
          root: project.root,
          directives: project.registry.directives,
          tools: project.registry.tools,
          policy: project.policy,
          call: (call) => project.proxy.call(call),
          resolve: (intent, o) => runtime.resolver.resolve(intent, o),
          route: (model) => upstreams.route(model),
          tierModel: (tier) => (tier === undefined ? undefined : config.modelTiers[tier]) ?? config.modelTiers['default'] ?? unmapped,
          limits: config.limits,
          ...(budgets ? { admit: ({ client, route, directive }) => budgets.admit({ client, model: route.model, free: budgets.isFree(route.upstream), directive }) } : {}),
          describeTool: deps.describeTool,
          steps: deps.steps,
        },
        start,
      ),
  };
}
