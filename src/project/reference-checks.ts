import { didYouMeanSuffix } from '../base/did-you-mean.js';
import { placeholders } from '../executor/substitute.js';
import type { HookAction } from '../hooks/hook-types.js';
import type { Directive, Tool } from '../registry/types.js';

/**
 * What `kiwi tools validate` checks across files, where each file alone is valid: a name that
 * points at nothing fails at run time otherwise, far from where it was written — a `{pth}` in a
 * tool's args when its call runs, a hook's directive when its event fires.
 */

/** Placeholders every script tool's templates may use besides its parameters (executor/plan.ts). */
const BUILT_IN_PLACEHOLDERS = ['script', 'args_json'];
/** Tools whose templates are filled from their own call's arguments; a runtime's are filled from the tool it runs. */
const FILLED_FROM_OWN_CALL = new Set<Tool['type']>(['script', 'api']);

/** A `{name}` in a script's or an API tool's config that is neither its parameter nor a built-in. */
export function templateProblems(tools: Iterable<Tool>): string[] {
  const out: string[] = [];
  for (const tool of tools) {
    if (!FILLED_FROM_OWN_CALL.has(tool.type)) continue;
    const known = [...tool.parameters.map((p) => p.name), ...BUILT_IN_PLACEHOLDERS];
    for (const [where, template] of stringsOf(tool.config, 'config')) {
      for (const name of placeholders(template)) {
        if (known.includes(name)) continue;
        out.push(`${tool.source.path}: ${where} uses {${name}}, which is not a parameter of ${tool.id}${didYouMeanSuffix(name, known)}; name a parameter, or write {{${name}}} for literal braces`);
      }
    }
  }
  return out;
}

/** A hook, in the policy (`file`) or a directive, whose `directive:` names no directive there is. */
export function hookDirectiveProblems(policyHooks: readonly { file: string; line: number; action: HookAction }[], directives: ReadonlyMap<string, Directive>): string[] {
  const names = [...directives.keys()];
  const hooks = [...policyHooks, ...[...directives.values()].flatMap((d) => (d.hooks ?? []).map((h) => ({ file: d.source.path, line: h.line, action: h.action })))];
  return hooks.flatMap(({ file, line, action }) =>
    action.kind === 'directive' && !directives.has(action.name) ? [`${file}:${line}: the hook's directive "${action.name}" is not in .ai/directives/${didYouMeanSuffix(action.name, names)}; add it, or fix the name`] : [],
  );
}

/** Every string in a config value, with where it is (`config.args[1]`). */
function* stringsOf(value: unknown, where: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [where, value];
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* stringsOf(v, `${where}[${i}]`);
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) yield* stringsOf(v, `${where}.${k}`);
}
