import { createDataFence } from '../base/data-fence.js';
import { KiwiError } from '../base/errors.js';
import { childContext, type PermissionContext } from '../policy/permission-context.js';
import type { Directive, Knowledge, Tool } from '../registry/types.js';

/**
 * A thread started from an environment (`.ai/environments/`): the directive at the version it was
 * saved with, its inputs' defaults under the ones given, the model tier, and the tools and
 * knowledge it was given up front. Its listed tools are described in its first message, so the
 * agent does not search for them, and they are all it may call (narrower than the directive, never
 * wider); its knowledge is in its first message too, fenced as data.
 */
export interface ThreadEnvironment {
  name: string;
  directive: Directive;
  inputs: Record<string, unknown>;
  /** Empty: the directive's own tools, not narrowed. */
  tools: Tool[];
  knowledge: Knowledge[];
  modelTier?: string;
  model?: string;
}

/** Loads an environment by name, its items checked against their pins (the app reads the files). */
export type EnvironmentSource = (name: string) => Promise<ThreadEnvironment>;

/** `directive`: the one the caller named, which must be the environment's. */
export async function loadThreadEnvironment(source: EnvironmentSource | undefined, name: string, directive: string): Promise<ThreadEnvironment> {
  if (source === undefined) throw new KiwiError('INVALID_INPUT', `environment ${name}: environments are not read here; run it with \`kiwi env run ${name}\` or on the gateway`);
  const env = await source(name);
  if (env.directive.name !== directive) throw new KiwiError('INVALID_INPUT', `environment ${name} runs the directive ${env.directive.name}, not ${directive}`);
  return env;
}

/** The caller's rights narrowed to the environment's tools, when it lists any. */
export function environmentContext(env: ThreadEnvironment, base: PermissionContext): PermissionContext {
  if (env.tools.length === 0) return base;
  return childContext(base, { ...base.rules, tools: env.tools.map((t) => t.id) }, `environment ${env.name}`);
}

/** The caller's start within the environment: its rights narrowed to the environment's tools, its model unless one was asked. */
export function inEnvironment<T extends { context?: PermissionContext; model?: string; tier?: string }>(env: ThreadEnvironment, start: T, policy: PermissionContext): T {
  const asked = start.model !== undefined || start.tier !== undefined;
  const model = asked ? {} : { ...(env.model ? { model: env.model } : {}), ...(env.modelTier ? { tier: env.modelTier } : {}) };
  return { ...start, ...model, context: environmentContext(env, start.context ?? policy) };
}

/** What the thread's first message says of its environment. */
export function environmentBrief(env: ThreadEnvironment): string {
  const lines = [`This run starts from the environment "${env.name}".`];
  if (env.tools.length > 0) {
    lines.push('These tools are at hand; write intents for them directly, no search is needed:');
    for (const t of env.tools) {
      const params = t.parameters.map((p) => `${p.name}${p.required ? '' : '?'}: ${p.type}`).join(', ');
      lines.push(`- ${t.id}(${params}): ${t.description}`);
    }
  }
  if (env.knowledge.length > 0) {
    const fence = createDataFence(env.knowledge.map((k) => k.body));
    lines.push(`This knowledge is given for the run. ${fence.notice}`);
    for (const k of env.knowledge) lines.push(`${k.id} (${k.title}):`, fence.wrap(k.body));
  }
  return lines.join('\n');
}
