/**
 * What a caller may do with a tool, decided as the tool proxy decides a call of it before its
 * arguments are seen (authorize.ts, plan-item.ts, approval.ts) and as a chat's tool menu
 * filters tools: chats and tool calls need the client role, the tool must be granted in the
 * project's policy narrowed by the key's own, and a call may have to wait for a person. What the
 * arguments decide (paths, commands, MCP tools), hooks and rate limits are per call: not here.
 */
import { clientUseRefusal } from '../clients/access.js';
import type { Caller } from '../policy/caller.js';
import { checkTool, type PermissionContext } from '../policy/permission-context.js';
import type { ItemKind } from '../registry/item-tools.js';
import type { Tool } from '../registry/types.js';
import { approvalReason } from './approval.js';
import { callContext } from './call-context.js';

export interface ToolRight {
  allowed: boolean;
  /** Why, in the proxy's words: `allowed by …`, or the denial (`denied by …: …`). */
  reason: string;
  /** Allowed, but every call waits for a person's answer first: why. */
  approval?: string;
}

/** A tool of the catalog, or what a resolution names: a directive or a knowledge entry has its `item`. */
export interface RightTarget {
  id: string;
  item?: ItemKind;
  /** The tool's manifest, when it is one (its type and `requires_approval` count). */
  tool?: Tool;
}

/**
 * The caller's rights over tools. `policy` is the project's, the root of every call's context:
 * its `approvals` apply to every caller, the key's policy file only narrows its grants.
 */
export function toolRights(policy: PermissionContext, caller: Caller): (target: RightTarget) => ToolRight {
  const refusal = clientUseRefusal(caller);
  const rights = callContext(policy, caller.context);
  return (target) => {
    if (refusal !== undefined) return { allowed: false, reason: refusal };
    if (target.item === 'knowledge') return { allowed: true, reason: `a knowledge entry: read-only, allowed to every caller (${rights.label})` };
    const type = target.tool?.type;
    if (type === 'primitive' || type === 'runtime') return { allowed: false, reason: `\`${target.id}\` is a ${type}: it executes other tools and cannot be called directly` };
    const grant = checkTool(rights, target.id);
    if (!grant.allowed) return grant;
    const approval = approvalReason(target.tool, target.id, policy.approvals, undefined);
    return { allowed: true, reason: `allowed by ${rights.label}`, ...(approval === undefined ? {} : { approval }) };
  };
}

/** Whether the caller may run a resolution's candidate (a tool by id, or an item of its kind): what an ask-back may offer it. */
export function candidateRights(policy: PermissionContext, caller: Caller, tools: ReadonlyMap<string, Tool>): (candidate: { tool: string; item?: ItemKind }) => boolean {
  const right = toolRights(policy, caller);
  return (c) => {
    const tool = c.item === undefined ? tools.get(c.tool) : undefined;
    return right({ id: c.tool, ...(c.item === undefined ? {} : { item: c.item }), ...(tool === undefined ? {} : { tool }) }).allowed;
  };
}
