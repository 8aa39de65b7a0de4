import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { createdQuotaBytes } from '../policy/created-items.js';
import { isolationRefusal, toIsolationPolicy } from '../policy/isolation-policy.js';
import { checkChain, deny, type Decision, type PermissionContext } from '../policy/permission-context.js';
import { CREATE_TOOL, proposeItem } from '../registry/item-proposal.js';
import { successionProblem, type Proposer } from '../registry/item-succession.js';
import type { Tool } from '../registry/types.js';
import type { Authorization, AuthorizeDeps } from './authorization.js';
import type { ToolCall } from './tool-call.js';

/**
 * A creation (MCP `execute action=create`): the proposal is checked and signed first, so a person
 * is never asked about one that could not land; then a client the policy grants CREATE_TOOL (in
 * its `tools`, by that exact name) creates at once, and any other waits for a person's approval —
 * refused when there is no one to ask. The landing checks the registry again (land-item.ts): it may have changed.
 */
export function authorizeCreation(call: ToolCall, ctx: PermissionContext, deps: Pick<AuthorizeDeps, 'tools' | 'items' | 'plan'>, now: Date): Authorization {
  if (call.tool !== CREATE_TOOL) throw new KiwiError('INVALID_INPUT', `an item is created by the tool ${CREATE_TOOL}, not \`${call.tool.slice(0, 80)}\``);
  const proposal = proposeItem(call.args, now);
  const known = { tools: deps.tools, directives: deps.items?.directives ?? new Map(), knowledge: deps.items?.knowledge ?? new Map() };
  const problem = successionProblem(proposal, known, path.join(deps.plan.root, '.ai'), proposer(call));
  if (problem !== undefined) throw new KiwiError('CONFLICT', problem);
  if (proposal.parsed.kind === 'tool') {
    const below = belowFloor(proposal.parsed.item, ctx);
    if (below !== undefined) return { allowed: false, reason: below };
  }
  const args = { item_type: proposal.kind, item_id: proposal.id, version: proposal.version, tier: proposal.tier, files: Object.fromEntries(proposal.files.map((f) => [f.name, f.text])) };
  const grant = namedGrant(ctx);
  const what = `${proposal.kind} ${proposal.id}@${proposal.version}`;
  const plan = { kind: 'create' as const, proposal, quotaBytes: createdQuotaBytes(ctx) };
  if (grant.allowed) return { allowed: true, plan, args, reason: `allowed by ${ctx.label}` };
  return {
    allowed: true,
    plan,
    args,
    reason: `allowed once a person approves (${grant.reason})`,
    approval: `an agent proposes ${what} in the ${proposal.tier} tier; the policy does not grant this client ${CREATE_TOOL}, so a person decides`,
  };
}

/** Who proposes: the call's client, and whether its key is an admin's (who may version another client's creation). */
export function proposer(call: ToolCall): Proposer {
  return { client: call.client, admin: call.roles?.includes('admin') ?? false };
}

/** A created tool that states a level below the policy's floor would be refused at every call: refused now instead. */
function belowFloor(tool: Tool, ctx: PermissionContext): string | undefined {
  if (tool.isolation === undefined) return undefined;
  let root = ctx;
  while (root.parent !== undefined) root = root.parent;
  return isolationRefusal(root.isolation ?? toIsolationPolicy(undefined), tool.id, tool.isolation, root.label);
}

/**
 * Creation adds code that runs, so it is granted only where every policy of the chain names
 * CREATE_TOOL itself: a glob written for tools (`"*"`) does not grant it.
 */
function namedGrant(ctx: PermissionContext): Decision {
  return checkChain(ctx, (c) => (c.rules.tools.includes(CREATE_TOOL) ? { allowed: true } : deny(c, `\`${CREATE_TOOL}\` is not named in \`tools\` (a glob does not grant it)`)));
}
