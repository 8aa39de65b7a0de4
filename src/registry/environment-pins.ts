import { createHash } from 'node:crypto';
import { canonicalJson } from '../base/canonical-json.js';
import { KiwiError } from '../base/errors.js';
import type { EnvironmentFile, ItemPin } from './environment-file.js';
import type { Directive, Knowledge, Registry, Tool } from './types.js';

/**
 * What an environment names, pinned when it is saved and checked when it runs: an item runs only
 * as it was saved. A directive whose newer version was written since (an annealed one) still runs
 * at the pinned version while that file is there; any other change refuses the run, naming each
 * item that changed and how to take the change (`kiwi env save NAME --force`).
 */

export interface PinnedItems {
  directive: Directive;
  tools: Tool[];
  knowledge: Knowledge[];
}

/** What an item says, without where it was read from or when it was signed: moving or re-signing a file changes nothing. */
export function itemDigest(item: Directive | Tool | Knowledge): string {
  const { source: _source, signature: _signature, ...said } = item;
  return `sha256:${createHash('sha256').update(canonicalJson(said)).digest('hex')}`;
}

export function pinOf(item: Directive | Tool | Knowledge): ItemPin {
  return { version: item.version, digest: itemDigest(item) };
}

/** The items an environment names, as they are now; NOT_FOUND naming what is missing. */
export function currentItems(registry: Registry, names: { directive: string; tools: readonly string[]; knowledge: readonly string[] }): PinnedItems {
  const missing: string[] = [];
  const find = <T>(map: ReadonlyMap<string, T>, kind: string, id: string): T | undefined => {
    const item = map.get(id);
    if (item === undefined) missing.push(`${kind} ${id}`);
    return item;
  };
  const directive = find(registry.directives, 'directive', names.directive);
  const tools = names.tools.map((id) => find(registry.tools, 'tool', id));
  const knowledge = names.knowledge.map((id) => find(registry.knowledge, 'knowledge', id));
  if (directive === undefined || missing.length > 0) throw new KiwiError('NOT_FOUND', `there is no ${missing.join(', no ')}; \`kiwi directives list\` and \`kiwi tools list\` show what there is`);
  return { directive, tools: tools as Tool[], knowledge: knowledge as Knowledge[] };
}

/** The items as the environment pinned them; CONFLICT listing every one that changed since it was saved. */
export function pinnedItems(registry: Registry, env: EnvironmentFile): PinnedItems {
  const changed: string[] = [];
  const check = <T extends Directive | Tool | Knowledge>(kind: string, id: string, pin: ItemPin, found: T | undefined): T | undefined => {
    if (found === undefined) changed.push(`${kind} ${id} is gone`);
    else if (itemDigest(found) !== pin.digest) changed.push(`${kind} ${id} ${pin.version === found.version ? `changed without a new version (${pin.version})` : `is now ${found.version}, not ${pin.version}`}`);
    return found;
  };
  const directive = check('directive', env.directive.name, env.directive, directiveAt(registry, env.directive.name, env.directive.version));
  const tools = env.tools.map((t) => check('tool', t.id, t, registry.tools.get(t.id)));
  const knowledge = env.knowledge.map((k) => check('knowledge', k.id, k, registry.knowledge.get(k.id)));
  if (changed.length > 0) {
    throw new KiwiError('CONFLICT', `environment ${env.name} was saved${env.savedAt ? ` at ${env.savedAt}` : ''} with what has changed since: ${changed.join('; ')}. Review the change, then \`kiwi env save ${env.name} --force\` with the same options to take it`);
  }
  return { directive: directive as Directive, tools: tools as Tool[], knowledge: knowledge as Knowledge[] };
}

/** The directive at `version`: the newest, or an older file of it that is still there. */
function directiveAt(registry: Registry, name: string, version: string): Directive | undefined {
  const newest = registry.directives.get(name);
  if (newest === undefined || newest.version === version) return newest;
  return registry.olderDirectives?.get(name)?.find((d) => d.version === version) ?? newest;
}
