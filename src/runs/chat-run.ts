import type { Budgets } from '../budgets/budget-meter.js';
import type { PriceTable } from '../budgets/prices.js';
import { countingBudget } from '../budgets/counting-budget.js';
import { requestCap } from '../budgets/request-cap.js';
import { createUsageTally, type PriceOf } from '../budgets/usage-summary.js';
import type { Tracing } from '../contracts/tracing.js';
import { intentInstructions } from '../intent/intent-scanner.js';
import type { ChatJournal } from '../kernel/chat-journal.js';
import type { Route } from '../llm/types.js';
import { runAgentLoop, type AgentLoopDeps } from '../loop/agent-loop.js';
import { withLimitHooks } from '../loop/limit-hooks.js';
import type { LoopLimits } from '../loop/loop-limits.js';
import type { RunLoop } from '../loop/loop-types.js';
import type { ToolMenu } from '../loop/tool-menu.js';
import { checkTool, type PermissionContext } from '../policy/permission-context.js';
import { callContext } from '../proxy/call-context.js';
import type { ToolProxy } from '../proxy/tool-proxy.js';
import { candidateRights } from '../proxy/tool-rights.js';
import type { Tool } from '../registry/types.js';
import { countingResolve, type ResolutionCounts } from '../resolver/resolution-counts.js';
import type { ResolverRuntime } from '../resolver/resolver-runtime.js';
import type { Candidate } from '../resolver/types.js';
import type { ChatApprovalDeps } from './chat-approvals.js';
import { afterWrites, chatInput, chatLabels, recordChat } from './chat-execution.js';
import { requestFallback } from './request-fallback.js';
import type { RunPrefetch } from './run-prefetch.js';
import { openRunScope } from './run-scope.js';
import { tracedProvider, tracedResolve } from './traced-loop.js';

export interface ChatRunDeps {
  /** Throws UNKNOWN_MODEL for a model no upstream serves. */
  route(model: string): Route;
  /** Tracks the chat for a stopping gateway: its signal follows the client's and the gateway's stop. */
  track(what: string, clientSignal: AbortSignal | undefined): { controller: AbortController; end(): void };
  limits: LoopLimits;
  /** Where chats are recorded as kernel executions (`record_chats`); absent, none is. */
  journal?: ChatJournal;
  kernel: ChatApprovalDeps['kernel'];
  events?: ChatApprovalDeps['events'];
  budgets?: Pick<Budgets, 'admit'> & { isFree(upstream: string): boolean };
  priceOf: PriceOf;
  prices: PriceTable;
  /** When replicas share a database: the answer ends only once its charges and events are written, so any replica reads them. */
  waitForWrites: boolean;
  runtime: Pick<ResolverRuntime, 'fallback' | 'requestFallback'>;
  policy: PermissionContext;
  tools: ReadonlyMap<string, Tool>;
  proxy: Pick<ToolProxy, 'limitReached'>;
  prefetch: RunPrefetch;
  menu: ToolMenu;
  steps: AgentLoopDeps['steps'];
  resolutions: ResolutionCounts;
  /** Spans around the chat, its upstream turns and its resolutions; absent, none (and nothing is wrapped). */
  tracing?: Tracing;
  log?: (line: string) => void;
}

/**
 * The gateway's chats: for each request, the upstream its model routes to, its admission to the
 * client's budget (refused, 429, before it is recorded or anything goes upstream; admitted, it
 * holds its cap until it ends), its run scope (the kernel execution, approvals on its steps, a
 * signal that a kernel cancel or a stopping gateway aborts), the fallback model charged to it,
 * prefetch, and the agent loop with the limit hooks around it.
 */
export function chatRuns(deps: ChatRunDeps): RunLoop {
  const { tracing } = deps;
  const toolOf = (id: string): Tool | undefined => deps.tools.get(id);
  return (request, run) => {
    const route = deps.route(request.model);
    const inFlight = deps.track(`chat${run.endpoint === undefined ? '' : ` on ${run.endpoint}`} for model ${request.model} (client ${run.caller.client})`, run.signal);
    const summary = { request, mode: run.mode, client: run.caller.client, ...(run.endpoint === undefined ? {} : { endpoint: run.endpoint }) };
    const chat = (async function* tracked() {
      try {
        const budgets = deps.budgets;
        const meter = await budgets?.admit({ client: run.caller.client, model: route.model, free: budgets.isFree(route.upstream), cap: requestCap(request, deps.limits, intentInstructions()) });
        const scope = openRunScope(
          { ...(deps.journal ? { journal: deps.journal } : {}), kernel: deps.kernel, ...(deps.events ? { events: deps.events } : {}) },
          { client: run.caller.client, input: chatInput(summary), labels: chatLabels(summary), stepDeadlineMs: deps.limits.maxDurationMs, signal: inFlight.controller.signal, ...(meter ? { meter } : {}) },
        );
        try {
          const usage = createUsageTally(deps.priceOf);
          const rights = callContext(deps.policy, run.caller.context);
          // Where the rules stop short, a model is asked: resolver.yaml's, or this request's own (request-fallback.ts), charged to this client.
          const fallback = requestFallback({
            ...(deps.runtime.fallback ? { named: deps.runtime.fallback } : {}),
            ...(deps.runtime.requestFallback ? { own: deps.runtime.requestFallback } : {}),
            route,
            prices: deps.prices,
            ...(tracing ? { tracing } : {}),
            charge: (used, model) => meter?.chargeSide(used, model),
          });
          // A knowledge entry needs no grant (it is read, never run); anything else, the caller's policy.
          const mayCall = (c: Candidate): boolean => c.item === 'knowledge' || checkTool(rights, c.tool).allowed;
          const resolveWith = { mayCall, ...(fallback ? { fallback } : {}) };
          const forRequest = deps.prefetch.forRequest({ mode: run.mode, caller: run.caller, conversation: run.conversation, maxToolCalls: deps.limits.maxToolCalls, resolveWith });
          const recorded = scope.recorded;
          const loop = runAgentLoop(
            {
              provider: tracing === undefined ? route.provider : tracedProvider(route.provider, tracing, route.upstream),
              ...forRequest,
              resolve: countingResolve(tracing === undefined ? forRequest.resolve : tracedResolve(forRequest.resolve, tracing), deps.resolutions),
              budget: countingBudget(meter, (used) => usage.add(route.model, used)),
              toolOf,
              mayRun: candidateRights(deps.policy, run.caller, deps.tools),
              steps: deps.steps,
              menu: (text, signal) => deps.menu(text, { scope: run.caller.client, allowed: (id) => checkTool(rights, id).allowed }, signal),
              plainWords: fallback ? 'model' : 'asked-back',
              limits: deps.limits,
              ...(recorded ? { approve: recorded.approvals.approve } : {}),
            },
            { ...request, model: route.model },
            { mode: run.mode, signal: scope.signal },
          );
          const caller = { caller: { session: run.conversation, client: run.caller.client, source: 'gateway' as const, ...(run.caller.context ? { context: run.caller.context } : {}) } };
          const hooked = withLimitHooks(loop, (code, detail) => deps.proxy.limitReached(caller, code, detail), deps.log);
          const told = recorded === undefined ? hooked : recordChat(hooked, recorded.execution, { mode: run.mode, cancelled: scope.cancelled, steps: recorded.steps, usage, approvals: recorded.approvals });
          yield* deps.waitForWrites ? afterWrites(told, () => Promise.all([meter?.written(), recorded?.execution.written()])) : told;
        } finally {
          // Every way out (finish, failure, client abort, a consumer that stopped): the loop has
          // charged what it used by now, so what the request held is released.
          await scope.release();
        }
      } finally {
        inFlight.end();
      }
    })();
    return tracing === undefined ? chat : tracing.spanIterable('kiwi.chat', { 'kiwi.client': run.caller.client, 'kiwi.mode': run.mode, 'gen_ai.request.model': request.model }, chat);
  };
}
