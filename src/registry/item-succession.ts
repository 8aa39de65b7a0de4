/**
 * Whether a proposed item may land where it asks to: as a new id, or as a new version of an item
 * an agent of the same client created before in the same tier. An item a person wrote (anywhere
 * outside a `created/` folder) is changed by a person; another client's creation by that client or
 * an admin; an id that means something else already (a tool named like a directive) would be
 * shadowed, and so would an MCP server's tool (an id in the server's namespace, `server.tool`); a
 * version must be higher than the one that runs.
 */
import path from 'node:path';
import { compareVersions } from './directive-version.js';
import type { Proposal } from './item-proposal.js';
import type { Directive, Knowledge, SourceRef, Tool } from './types.js';

export interface KnownItems {
  tools: ReadonlyMap<string, Tool>;
  directives: ReadonlyMap<string, Directive>;
  knowledge: ReadonlyMap<string, Knowledge>;
}

/** Who proposes: a client, and whether its key may act on other clients' items. */
export interface Proposer {
  client: string;
  admin: boolean;
}

/** Why the proposal cannot land, or undefined when it can. `aiDir` is the project's `.ai` (real path). */
export function successionProblem(proposal: Proposal, known: KnownItems, aiDir: string, by: Proposer): string | undefined {
  const { kind, id } = proposal;
  const server = namespaceServer(known.tools, id);
  if (server !== undefined) return `${id} is in the namespace of MCP server ${server.id} (${shown(server.source.path, aiDir)}): ids that start with "${server.id}." are that server's tools, so choose an id without the prefix`;
  const others = (['tool', 'directive', 'knowledge'] as const).filter((k) => k !== kind && mapOf(known, k).has(id));
  if (others.length > 0) return `${id} is already the id of a ${others.join(' and a ')}; an id means one thing, so choose another`;
  const existing = mapOf(known, kind).get(id);
  if (existing === undefined) return undefined;
  const where = shown(existing.source.path, aiDir);
  if (existing.source.tier !== proposal.tier) {
    return `${kind} ${id} is in the ${existing.source.tier} tier (${where}), which ${proposal.tier === 'registry' ? 'comes before the registry tier, so a version there would never run' : 'is not where this creation goes'}; create it in the ${existing.source.tier === 'user' ? 'user tier by hand' : `${existing.source.tier} tier (parameters.tier)`}, or choose another id`;
  }
  const created = existing.source.created;
  if (created === undefined) {
    return `${kind} ${id} was written by a person (${where}); agents add versions only to the items agents created (under .ai/${proposal.folder.split('/')[0]}/created/), so ask a person to change it or choose another id`;
  }
  if (created.owner !== by.client && !by.admin) {
    const whose = created.owner === undefined ? 'no known client (it was created before owners were kept), so only an admin adds versions to it' : `client ${created.owner}, whose agent created it; only that client or an admin adds versions`;
    return `${kind} ${id} (${where}) belongs to ${whose} — choose another id`;
  }
  const order = compareVersions(proposal.version, existing.version);
  if (order === undefined || order <= 0) return `${kind} ${id} is at version ${existing.version}; a new version must be higher (e.g. ${bump(existing.version)})`;
  return undefined;
}

function mapOf(known: KnownItems, kind: Proposal['kind']): ReadonlyMap<string, { version: string; source: SourceRef }> {
  return kind === 'tool' ? known.tools : kind === 'directive' ? known.directives : known.knowledge;
}

/** The MCP server whose namespace `id` is in (`server.tool`), if any. */
export function namespaceServer(tools: ReadonlyMap<string, Tool>, id: string): Tool | undefined {
  for (let dot = id.indexOf('.'); dot > 0; dot = id.indexOf('.', dot + 1)) {
    const server = tools.get(id.slice(0, dot));
    if (server?.type === 'mcp_server') return server;
  }
  return undefined;
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
