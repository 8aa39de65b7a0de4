import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { isKiwiError, KiwiError } from '../errors.js';
import { runAgentLoop, type AgentLoopDeps } from '../gateway/agent-loop.js';
import type { LoopLimits } from '../gateway/loop-types.js';
import { loadDirectiveHooks } from '../hooks/hook-runner.js';
import type { BudgetMeter, DirectiveRun } from '../budgets/budget-meter.js';
import { directiveBudgetLimits } from '../budgets/directive-limits.js';
import type { ChatProvider } from '../llm/types.js';
import { directiveContext } from '../policy/directive-permissions.js';
import { checkTool, type PermissionContext } from '../policy/permission-context.js';
import { helpReplyText } from '../proxy/help-signal.js';
import type { CallOutcome, ToolCall, ToolProxy } from '../proxy/tool-proxy.js';
import type { Directive, Tool } from '../registry/types.js';
import { createFailureTally } from './failure-class.js';
import { checkInputs, threadMessages } from './thread-inputs.js';
import { createThreadWriter, type ThreadHeader, type ThreadRecord, type ThreadStatus } from './thread-store.js';

/**
 * A directive run as a thread: the gateway's own agent loop with the directive as the system
 * prompt, only the tools its `<permissions>` declare (intersected with the caller's rights, never
 * wider: a call outside them is denied by the proxy and shown to the agent), its `<limits>` over
 * the gateway's, its hooks on every call, and the model its `<model tier>` maps to. Everything it
 * does is written to `.ai/threads/<id>.jsonl` as it happens; its calls are audited under the
 * thread's id.
 */

export interface ThreadDeps {
  root: string;
  directives: ReadonlyMap<string, Directive>;
  tools: ReadonlyMap<string, Tool>;
  /** The project's policy: a thread's rights are the directive's within it (and within the caller's). */
  policy: PermissionContext;
  call(call: ToolCall): Promise<CallOutcome>;
  /** The tool proxy's help signals (audited, hooks fired); absent, `help stuck: …` resolves like any intent. */
  help?: ToolProxy['help'];
  resolve: AgentLoopDeps['resolve'];
  /** The provider, upstream and upstream model id for a model name (throws UNKNOWN_MODEL). */
  route(model: string): { provider: ChatProvider; model: string; upstream: string };
  /**
   * The run's budget (the gateway's budgets, when it has any): the directive's `<limits>` and the
   * client's, charged per turn and tool call. Throws BUDGET_EXCEEDED when one is already spent.
   */
  admit?: (run: { client: string; route: { model: string; upstream: string }; directive: DirectiveRun }) => Promise<BudgetMeter>;
  /** The model a directive's tier maps to; undefined: the tier is not mapped. */
  tierModel(tier: string | undefined): string | undefined;
  /** The gateway's limits; a directive's `<limits>` replace the ones it sets. */
  limits: LoopLimits;
  describeTool?: AgentLoopDeps['describeTool'];
  steps?: AgentLoopDeps['steps'];
  /** How deep spawned threads may nest (default 3). */
  maxDepth?: number;
}

export interface ThreadStart {
  directive: string;
  inputs?: Record<string, unknown>;
  /** Who asked: the thread's calls are rate-limited and audited as this client's. */
  client: string;
  /** The caller's own narrower rights, if any: the thread gets the intersection. */
  context?: PermissionContext;
  /** The thread that spawns this one. */
  parent?: { id: string; depth: number };
  /** Overrides the tier's model. */
  model?: string;
  /** Overrides the directive's `<model tier>` (a thread tool's `config.model_tier`). */
  tier?: string;
  signal?: AbortSignal;
  /** Each record as it is written (`kiwi directives run` prints them). */
  onRecord?: (record: ThreadRecord) => void;
}

export interface ThreadOutcome {
  id: string;
  status: ThreadStatus;
  steps_taken: number;
  /** The agent's last turn. */
  result: string;
  /** The limit that ended it, when one did. */
  limit?: string;
  /** Why it failed (failure-class.ts): absent when it succeeded. */
  failure?: string;
  /** Its calls are in the audit log under this session. */
  audit: { session: string };
}

const DEFAULT_MAX_DEPTH = 3;

export async function runThread(deps: ThreadDeps, start: ThreadStart): Promise<ThreadOutcome> {
  const directive = deps.directives.get(start.directive);
  if (directive === undefined) {
    const known = [...deps.directives.keys()];
    throw new KiwiError('NOT_FOUND', `no directive ${JSON.stringify(start.directive)}; the directives are ${known.length === 0 ? '(none)' : known.join(', ')}`);
  }
  const depth = (start.parent?.depth ?? 0) + 1;
  const maxDepth = deps.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (depth > maxDepth) throw new KiwiError('POLICY_DENIED', `thread ${start.parent?.id} may not spawn ${directive.name}: threads nest at most ${maxDepth} deep`);
  const inputs = checkInputs(directive, start.inputs ?? {});
  const tier = start.tier ?? directive.modelTier;
  const model = start.model ?? deps.tierModel(tier);
  if (model === undefined) {
    throw new KiwiError('INVALID_INPUT', `directive ${directive.name} asks for the model tier ${JSON.stringify(tier)}, which .ai/config/gateway.yaml does not map; add model_tiers: { ${tier ?? 'balanced'}: MODEL }, or pass --model`);
  }
  const route = deps.route(model);
  const { context } = directiveContext(start.context ?? deps.policy, directive.name, directive.permissions);
  const allowed = [...deps.tools.keys()].filter((id) => checkTool(context, id).allowed).sort();
  // Hooks name their file as people read it: relative to the project when it is in it.
  const relative = path.relative(deps.root, directive.source.path);
  const hooks = loadDirectiveHooks(relative === '' || relative.startsWith('..') ? directive.source.path : relative, directive.hooks ?? []);
  const limits = threadLimits(deps.limits, directive);
  const directiveScope = { name: directive.name, hooks, limits: { ...(directive.limits.turns === undefined ? {} : { turns: directive.limits.turns }), ...(directive.limits.tokens === undefined ? {} : { tokens: directive.limits.tokens }) } };

  const id = randomUUID();
  // Refused before anything is written when a budget is already spent.
  const meter = await deps.admit?.({ client: start.client, route, directive: { directive: directive.name, run: id, limits: directiveBudgetLimits(directive.limits), startedAt: Date.now() } });
  const header: ThreadHeader = { type: 'thread', id, directive: directive.name, version: directive.version, inputs, model, client: start.client, ...(start.parent ? { parent: start.parent.id } : {}), depth, started_at: new Date().toISOString() };
  const writer = createThreadWriter(deps.root, header);
  const tally = createFailureTally();
  const record = (r: ThreadRecord): void => {
    writer.append(r);
    tally.observe(r);
    start.onRecord?.(r);
  };

  let spawned = 0;
  // Called by the tool proxy just before this thread spawns one: past `<limits spawns>` the spawn is refused.
  const onSpawn = (): void => {
    const most = directive.limits.spawns;
    if (most !== undefined && spawned >= most) throw new KiwiError('POLICY_DENIED', `directive ${directive.name} may spawn at most ${most} thread(s) (<limits spawns>); this one would be number ${spawned + 1}`);
    spawned++;
    meter?.countSpawn();
  };
  let steps = 0;
  let turn = 1;
  let text = '';
  let last = '';
  const endTurn = (): void => {
    if (text.trim() === '') return;
    record({ type: 'turn', turn, text });
    last = text;
    text = '';
  };
  const end = (status: ThreadStatus, extra: { limit?: string; error?: string; code?: string } = {}, given?: string): ThreadOutcome => {
    endTurn();
    const result = given ?? last;
    const failure = tally.classify({ status, ...extra });
    record({ type: 'end', status, result, steps_taken: steps, ...extra, ...(failure ? { failure } : {}), ended_at: new Date().toISOString() });
    writer.close();
    return { id, status, steps_taken: steps, result, ...(extra.limit ? { limit: extra.limit } : {}), ...(failure ? { failure } : {}), audit: { session: id } };
  };
  const caller = { session: id, client: start.client, source: 'thread' as const, context, directive: directiveScope, thread: { id, depth, onSpawn } };
  const signalHelp = deps.help;

  try {
    const loop = runAgentLoop(
      {
        provider: route.provider,
        resolve: deps.resolve,
        call: (c) => {
          meter?.countToolCall();
          return deps.call({ ...c, ...caller });
        },
        // Audited and hooked like a call; an escalation ends the thread with its message (below).
        ...(signalHelp
          ? {
              help: async (given, signal) => {
                const outcome = await signalHelp({ ...caller, signal }, given);
                return { text: helpReplyText(given.action, outcome, 'thread'), ...(outcome.checkpoint ? { checkpoint: outcome.checkpoint } : {}), ...(given.action === 'escalate' ? { stop: 'not run: the agent escalated (help escalate) before this intent, so the thread ended' } : {}) };
              },
            }
          : {}),
        limits,
        ...(meter ? { budget: meter } : {}),
        ...(deps.describeTool ? { describeTool: deps.describeTool } : {}),
        ...(deps.steps ? { steps: deps.steps } : {}),
      },
      { model: route.model, messages: threadMessages(directive, inputs, allowed) },
      { mode: 'execute', ...(start.signal ? { signal: start.signal } : {}) },
    );
    for await (const event of loop) {
      switch (event.type) {
        case 'text':
          text += event.text;
          break;
        case 'turn':
          endTurn();
          turn = event.turn;
          break;
        case 'call':
          endTurn(); // the text that led to the call comes before it
          record({ type: 'call', call_id: event.callId, tool: event.call.tool, arguments: event.call.arguments });
          break;
        case 'result':
          steps++;
          record({ type: 'result', call_id: event.callId, tool: event.tool, status: event.status, ...(event.isError && event.status === 'ok' ? { is_error: true } : {}), text: event.text });
          break;
        case 'unresolved':
          endTurn();
          record({ type: 'unresolved', intent: event.intent, reason: event.reason });
          break;
        case 'approval':
          record({ type: 'approval', tool: event.tool, step_id: event.stepId, reason: event.reason });
          break;
        case 'help':
          endTurn();
          record({ type: 'help', action: event.action, message: event.message, ...(event.checkpoint ? { checkpoint: event.checkpoint } : {}) });
          if (event.action === 'escalate') return end('escalated', {}, event.message);
          break;
        case 'finish':
          return end('completed', event.limit ? { limit: event.limit } : {});
        default:
          break;
      }
    }
    return end('failed', { error: 'the agent loop ended without finishing' });
  } catch (error) {
    const cancelled = start.signal?.aborted === true || (isKiwiError(error) && error.code === 'TOOL_CANCELLED');
    return end(cancelled ? 'cancelled' : 'failed', { error: error instanceof Error ? error.message : String(error), ...(isKiwiError(error) ? { code: error.code } : {}) });
  }
}

/** The directive's `<limits>` over the gateway's: turns, tokens and duration it sets replace those. */
function threadLimits(base: LoopLimits, directive: Directive): LoopLimits {
  const l = directive.limits;
  return {
    ...base,
    ...(l.turns === undefined ? {} : { maxTurns: l.turns }),
    ...(l.tokens === undefined ? {} : { maxTokens: l.tokens }),
    ...(l.duration === undefined ? {} : { maxDurationMs: Math.max(1000, Math.round(l.duration * 1000)) }),
  };
}
