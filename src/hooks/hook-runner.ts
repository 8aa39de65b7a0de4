import type { DirectiveHook, HookAction } from './hook-types.js';
import { createConditionCompiler, type CompiledCondition, type ConditionCompiler } from './condition.js';
import { withEventDefaults, type HookEvent } from './hook-event.js';
import { fillTemplate } from './template.js';

/**
 * Hooks evaluated on an event (before a call, after it, on a denial, an error, a limit, an
 * approval: `event.name` tells which), in the order they were loaded. What they decide comes
 * back as one verdict: the first denial, whether a person must approve, the audit notes, the
 * directives to run with their inputs filled. A hook whose condition or inputs fail fails
 * closed: the call is denied, saying which hook and why. Every event has `event.code` and
 * `event.detail` (empty when there is none); any other field a condition reads must be there.
 */

export interface LoadedHook {
  /** The file it came from, as shown to people. */
  file: string;
  line: number;
  condition: CompiledCondition;
  action: HookAction;
}

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
}

/** A directive's hooks compiled (their conditions were checked when the directive loaded). */
export function loadDirectiveHooks(file: string, hooks: readonly DirectiveHook[], compiler: ConditionCompiler = createConditionCompiler()): LoadedHook[] {
  return hooks.map((h) => ({ file, line: h.line, condition: compiler.compileCondition(h.when, { file, line: h.line }), action: h.action }));
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
      continue;
    }
    if (!result.matched) continue;
    const action = hook.action;
    switch (action.kind) {
      case 'deny':
        verdict.deny ??= `${action.reason} (hook at ${hook.file}:${hook.line})`;
        break;
      case 'require_approval':
        verdict.approval ??= `a hook asks a person to approve it (${hook.file}:${hook.line})`;
        break;
      case 'annotate':
        verdict.annotations.push(action.text);
        break;
      case 'webhook':
        verdict.webhooks.push({ url: action.url, hook: `${hook.file}:${hook.line}` });
        break;
      case 'directive': {
        const inputs: Record<string, string> = {};
        let failed = false;
        for (const [name, template] of Object.entries(action.inputs)) {
          const filled = fillTemplate(template, event);
          if (!filled.ok) {
            failClosed(hook, `input ${name}: ${filled.reason}`);
            failed = true;
            break;
          }
          inputs[name] = filled.text;
        }
        if (!failed) verdict.directives.push({ name: action.name, inputs });
        break;
      }
    }
  }
  return verdict;
}
