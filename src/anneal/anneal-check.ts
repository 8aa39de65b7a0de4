import { compareVersions } from '../registry/directive-version.js';
import type { Directive, DirectiveLimits, PermissionTag } from '../registry/types.js';
import type { DirectiveHook } from '../hooks/hook-types.js';

/**
 * What an annealed directive must keep: its name, a version higher than the one it improves, and
 * no more rights or budget than it had. Every `<permissions>` tag must be one the old version
 * has (tags may be dropped, never added, even a narrower-looking glob: containment of globs is
 * not decided here), every limit the old one sets must still be set and no higher, and the hooks
 * and the model tier stay as they were (a hook can deny; dropping one would widen what runs).
 */

/** Why `next` may not replace `old`; empty when it may. */
export function annealProblems(old: Directive, next: Directive): string[] {
  const problems: string[] = [];
  if (next.name !== old.name) problems.push(`its name is ${JSON.stringify(next.name)}, not ${JSON.stringify(old.name)}: an improved version keeps the name`);
  const order = compareVersions(next.version, old.version);
  if (order === undefined) problems.push(`its version ${JSON.stringify(next.version)} is not numbers like 1.0.1, so it cannot be ordered after ${old.version}`);
  else if (order <= 0) problems.push(`its version ${next.version} is not higher than ${old.version}: an improved version must be newer`);
  const had = new Set(old.permissions.map(tagKey));
  const added = next.permissions.filter((t) => !had.has(tagKey(t)));
  if (added.length > 0) problems.push(`it adds permissions ${added.map(tagText).join(', ')}; annealing may keep or drop permissions, never add one`);
  problems.push(...limitProblems(old.limits, next.limits));
  if (hooksKey(next.hooks) !== hooksKey(old.hooks)) problems.push('its <hooks> differ from the old version; annealing never changes hooks (a hook can deny a call)');
  if ((next.modelTier ?? '') !== (old.modelTier ?? '')) problems.push(`its model tier is ${JSON.stringify(next.modelTier ?? '(none)')}, not ${JSON.stringify(old.modelTier ?? '(none)')}; annealing never changes the model`);
  return problems;
}

/** The permission tags `next` dropped, as written. */
export function droppedPermissions(old: Directive, next: Directive): string[] {
  const kept = new Set(next.permissions.map(tagKey));
  return old.permissions.filter((t) => !kept.has(tagKey(t))).map(tagText);
}

function limitProblems(old: DirectiveLimits, next: DirectiveLimits): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(old) as (keyof DirectiveLimits)[]) {
    const was = old[name];
    const now = next[name];
    if (was === undefined) continue;
    if (now === undefined) problems.push(`it drops the limit ${name}="${was}"; annealing never removes a limit`);
    else if (now > was) problems.push(`it raises the limit ${name} from ${was} to ${now}; annealing never raises a limit`);
  }
  return problems;
}

/** `tool` and `mcp` targets may be written as `id` or `action`: the target is whichever is given. */
function tagKey(tag: PermissionTag): string {
  return `${tag.kind}\u0000${tag.resource}\u0000${tag.path ?? tag.id ?? tag.action ?? ''}`;
}

function tagText(tag: PermissionTag): string {
  const target = tag.path !== undefined ? ` path="${tag.path}"` : tag.id !== undefined ? ` id="${tag.id}"` : tag.action !== undefined ? ` action="${tag.action}"` : '';
  return `<${tag.kind} resource="${tag.resource}"${target}/>`;
}

function hooksKey(hooks: readonly DirectiveHook[] | undefined): string {
  return JSON.stringify((hooks ?? []).map((h) => [h.when.trim(), h.action, h.fallthrough === true]));
}
