import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { createdQuotaBytes } from '../policy/created-items.js';
import { isolationRefusal, toIsolationPolicy } from '../policy/isolation-policy.js';
import type { PermissionContext } from '../policy/permission-context.js';
import { CREATE_TOOL, proposeItem } from '../registry/item-proposal.js';
import { successionProblem, type Proposer } from '../registry/item-succession.js';
import type { Tool } from '../registry/types.js';
import type { AuthorizeDeps, Planned } from './authorization.js';
import type { ToolCall } from './tool-call.js';

/**
 * A creation (MCP `execute action=create`): the proposal is checked and signed first, so a person
 * is never asked about one that could not land; authorize then lets a client the policy grants
 * CREATE_TOOL (in its `tools`, by that exact name) create at once, and has any other wait for a
 * person's approval — refused when there is no one to ask. The landing checks the registry again
 * (land-item.ts): it may have changed.
 */
export function planCreation(call: ToolCall, ctx: PermissionContext, deps: Pick<AuthorizeDeps, 'tools' | 'items' | 'plan'>, now: Date): Planned {
  const { tool, args: raw } = call.target;
  if (tool !== CREATE_TOOL) throw new KiwiError('INVALID_INPUT', `an item is created by the tool ${CREATE_TOOL}, not \`${tool.slice(0, 80)}\``);
  const proposal = proposeItem(raw, now);
  const known = { tools: deps.tools, directives: deps.items?.directives ?? new Map(), knowledge: deps.items?.knowledge ?? new Map() };
  const problem = successionProblem(proposal, known, path.join(deps.plan.root, '.ai'), proposer(call));
  if (problem !== undefined) throw new KiwiError('CONFLICT', problem);
  if (proposal.parsed.kind === 'tool') {
    const below = belowFloor(proposal.parsed.item, ctx);
    if (below !== undefined) return { stopped: { before: 'grant', reason: below } };
  }
  const args = { item_type: proposal.kind, item_id: proposal.id, version: proposal.version, tier: proposal.tier, files: Object.fromEntries(proposal.files.map((f) => [f.name, f.text])) };
  const grant = { by: 'creation' as const, what: `${proposal.kind} ${proposal.id}@${proposal.version}`, tier: proposal.tier };
  return { grant, plan: { kind: 'create', proposal, quotaBytes: createdQuotaBytes(ctx) }, args };
}

/** Who proposes: the call's client, and whether its key is an admin's (who may version another client's creation). */
export function proposer(call: ToolCall): Proposer {
  return { client: call.caller.client, admin: call.caller.roles?.includes('admin') ?? false };
}

/** A created tool that states a level below the policy's floor would be refused at every call: refused now instead. */
function belowFloor(tool: Tool, ctx: PermissionContext): string | undefined {
  if (tool.isolation === undefined) return undefined;
  let root = ctx;
  while (root.parent !== undefined) root = root.parent;
  return isolationRefusal(root.isolation ?? toIsolationPolicy(undefined), tool.id, tool.isolation, root.label);
}
