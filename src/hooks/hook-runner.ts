import type { DirectiveHook, HookAction, SteerDecision } from './hook-types.js';
import { createConditionCompiler, type CompiledCondition, type ConditionCompiler } from './condition.js';
import { withEventDefaults, type HookEvent } from './hook-event.js';
import { fillTemplate } from './template.js';

/**
 * Hooks evaluated on an event (before a call, after it, on a denial, an error, a limit, an
 * approval: `event.name` tells which), in the order they were loaded. The first hook whose
 * condition matches is the one that acts; the hooks after it act too only when it says
 * `fallthrough`. What they decide comes back as one verdict: the denial, whether a person must
 * approve, the audit notes, the directives to run with their inputs filled, the steering. A hook
 * whose condition or inputs fail fails closed: the call is denied, saying which hook and why,
 * and it counts as the match (it might have been one). Every event has `event.code` and
 * `event.detail` (empty when there is none); any other field a condition reads must be there.
 */

export interface LoadedHook {
  /** The file it came from, as shown to people. */
  file: string;
  line: number;
  condition: CompiledCondition;
  action: HookAction;
  /** The hooks after it act too when it matches. */
  fallthrough?: boolean;
}

/** How the hook that matched steers the call: a decision of its own, or a directive's thread whose answer decides. */
export type HookSteer =
  | { kind: 'decision'; hook: string; decision: SteerDecision; reason?: string; max?: number }
  | { kind: 'directive'; hook: string; name: string; inputs: Record<string, string>; timeoutMs: number; retries: number };

export interface HookVerdict {
  /** Why the call must not run (a deny action, or a hook that failed). */
  deny?: string;
  /** Hooks that failed (their condition or inputs), each saying which and why. */
  failures: string[];
  /** Why a person must approve it first. */
  approval?: string;
  /** Notes for the audit record. */
  annotations: string[];
  /** Directives to run, their inputs filled from the event. */
  directives: { name: string; inputs: Record<string, string> }[];
  /** Addresses to POST the event to, with the hook that asked (`file:line`). */
  webhooks: { url: string; hook: string }[];
  /** The first steering hook that acted. */
  steer?: HookSteer;
}

/** A directive's hooks compiled (their conditions were checked when the directive loaded). */
export function loadDirectiveHooks(file: string, hooks: readonly DirectiveHook[], compiler: ConditionCompiler = createConditionCompiler()): LoadedHook[] {
  return hooks.map((h) => ({ file, line: h.line, condition: compiler.compileCondition(h.when, { file, line: h.line }), action: h.action, ...(h.fallthrough ? { fallthrough: true } : {}) }));
}

export function runHooks(hooks: readonly LoadedHook[], given: HookEvent): HookVerdict {
  const event = withEventDefaults(given);
  const verdict: HookVerdict = { failures: [], annotations: [], directives: [], webhooks: [] };
  const failClosed = (hook: LoadedHook, reason: string): void => {
    const failure = `hook at ${hook.file}:${hook.line} failed, so the call is refused: ${reason}`;
    verdict.failures.push(failure);
    verdict.deny ??= failure;
  };
  for (const hook of hooks) {
    const result = hook.condition.evaluate(event);
    if (!result.ok) {
      failClosed(hook, result.reason);
      break;
    }
    if (!result.matched) continue;
    act(hook, event, verdict, failClosed);
    if (hook.fallthrough !== true) break;
  }
  return verdict;
}

function act(hook: LoadedHook, event: HookEvent, verdict: HookVerdict, failClosed: (hook: LoadedHook, reason: string) => void): void {
  const action = hook.action;
  const where = `${hook.file}:${hook.line}`;
  switch (action.kind) {
    case 'deny':
      verdict.deny ??= `${action.reason} (hook at ${where})`;
      return;
    case 'require_approval':
      verdict.approval ??= `a hook asks a person to approve it (${where})`;
      return;
    case 'annotate':
      verdict.annotations.push(action.text);
      return;
    case 'webhook':
      verdict.webhooks.push({ url: action.url, hook: where });
      return;
    case 'steer':
      verdict.steer ??= { kind: 'decision', hook: where, decision: action.decision, ...(action.reason === undefined ? {} : { reason: action.reason }), ...(action.max === undefined ? {} : { max: action.max }) };
      return;
    case 'directive': {
      const inputs: Record<string, string> = {};
      for (const [name, template] of Object.entries(action.inputs)) {
        const filled = fillTemplate(template, event);
        if (!filled.ok) return failClosed(hook, `input ${name}: ${filled.reason}`);
        inputs[name] = filled.text;
      }
      if (action.steer === undefined) verdict.directives.push({ name: action.name, inputs });
      else verdict.steer ??= { kind: 'directive', hook: where, name: action.name, inputs, ...action.steer };
      return;
    }
  }
}
