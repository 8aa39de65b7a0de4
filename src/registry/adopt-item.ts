import type { ProposedItem } from './item-proposal.js';
import type { Directive, Registry } from './types.js';

/**
 * The registry as the files now are once a new item or version is written (a creation, an
 * annealing): it runs from then on in this process, as it would after a restart. Other processes
 * load the registry when they start, so they run it from their next start (docs/creating-items.md).
 */
export function adoptItem(registry: Registry, landed: ProposedItem): void {
  if (landed.kind === 'tool') registry.tools.set(landed.item.id, landed.item);
  else if (landed.kind === 'knowledge') registry.knowledge.set(landed.item.id, landed.item);
  else adoptDirective(registry, landed.item);
}

/** A directive's new version runs; the one it replaces stays loadable by its version. */
export function adoptDirective(registry: Registry, next: Directive): void {
  const running = registry.directives.get(next.name);
  registry.directives.set(next.name, next);
  if (running === undefined) return;
  const older = registry.olderDirectives ?? (registry.olderDirectives = new Map());
  older.set(next.name, [running, ...(older.get(next.name) ?? [])]);
}
