/**
 * Whether a proposed item may land where it asks to: as a new id, or as a new version of an item
 * an agent created before in the same tier. An item a person wrote (anywhere outside a `created/`
 * folder) is changed by a person; an id that means something else already (a tool named like a
 * directive) would be shadowed; a version must be higher than the one that runs.
 */
import path from 'node:path';
import { compareVersions } from './directive-version.js';
import type { Proposal } from './item-proposal.js';
import type { Directive, Knowledge, Tool } from './types.js';

export interface KnownItems {
  tools: ReadonlyMap<string, Tool>;
  directives: ReadonlyMap<string, Directive>;
  knowledge: ReadonlyMap<string, Knowledge>;
}

/** The registry tier's versions are written under `.ai/tools/.registry/<id>@<version>-<digest>/` (materialize-tier.ts). */
const TIER_CACHE = ['tools', '.registry'];

/** Why the proposal cannot land, or undefined when it can. `aiDir` is the project's `.ai` (real path). */
export function successionProblem(proposal: Proposal, known: KnownItems, aiDir: string): string | undefined {
  const { kind, id } = proposal;
  const others = (['tool', 'directive', 'knowledge'] as const).filter((k) => k !== kind && mapOf(known, k).has(id));
  if (others.length > 0) return `${id} is already the id of a ${others.join(' and a ')}; an id means one thing, so choose another`;
  const existing = mapOf(known, kind).get(id);
  if (existing === undefined) return undefined;
  const where = shown(existing.source.path, aiDir);
  if (existing.source.tier !== proposal.tier) {
    return `${kind} ${id} is in the ${existing.source.tier} tier (${where}), which ${proposal.tier === 'registry' ? 'comes before the registry tier, so a version there would never run' : 'is not where this creation goes'}; create it in the ${existing.source.tier === 'user' ? 'user tier by hand' : `${existing.source.tier} tier (parameters.tier)`}, or choose another id`;
  }
  if (!createdByAgent(existing.source.path, proposal, aiDir)) {
    return `${kind} ${id} was written by a person (${where}); agents add versions only to the items agents created (under .ai/${proposal.folder.split('/')[0]}/created/), so ask a person to change it or choose another id`;
  }
  const order = compareVersions(proposal.version, existing.version);
  if (order === undefined || order <= 0) return `${kind} ${id} is at version ${existing.version}; a new version must be higher (e.g. ${bump(existing.version)})`;
  return undefined;
}

function mapOf(known: KnownItems, kind: Proposal['kind']): ReadonlyMap<string, { version: string; source: { path: string; tier: string } }> {
  return kind === 'tool' ? known.tools : kind === 'directive' ? known.directives : known.knowledge;
}

/** Inside `<section>/created/` of `.ai/`, or of the registry tier's copy of a version. */
function createdByAgent(file: string, proposal: Proposal, aiDir: string): boolean {
  const parts = path.relative(aiDir, file).split(path.sep);
  const rest = parts[0] === TIER_CACHE[0] && parts[1] === TIER_CACHE[1] ? parts.slice(3) : parts;
  const [section] = proposal.folder.split('/');
  return rest[0] === section && rest[1] === 'created' && !parts.includes('..');
}

function shown(file: string, aiDir: string): string {
  const relative = path.relative(aiDir, file);
  return relative.startsWith('..') ? file : path.join('.ai', relative);
}

function bump(version: string): string {
  const parts = version.split('.').map(Number);
  if (parts.some((n) => !Number.isSafeInteger(n))) return '1.0.0';
  parts[parts.length - 1] = (parts.at(-1) ?? 0) + 1;
  return parts.join('.');
}
