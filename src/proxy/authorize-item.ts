/**
 * Calls that name a directive or a knowledge entry instead of a tool (`item` on the call, as the
 * resolver sets it). A directive becomes a thread plan, granted like a thread tool (its name in the
 * policy's `tools`) and run by the gateway's thread runtime with the caller's rights narrowed by
 * its own; a knowledge entry is read: it runs nothing, so it needs no grant, but its reads pass
 * the proxy's other stages (rate limit, hooks, audit) like any call.
 */
import type { CallItem } from '../audit/audit-record.js';
import { KiwiError } from '../base/errors.js';
import type { ToolResult } from '../contracts/tool-result.js';
import { checkTool, type PermissionContext } from '../policy/permission-context.js';
import { creationTool, directiveTool, knowledgeFields, knowledgeTool, ROLLBACK_TOOL, rollbackTool } from '../registry/item-tools.js';
import { checkToolName } from '../registry/tool-name.js';
import type { Knowledge, Tool } from '../registry/types.js';
import { checkInputs } from '../registry/directive-input-values.js';
import { isPlainObject } from '../base/plain-object.js';
import type { Authorization, AuthorizeDeps } from './authorization.js';
import { authorizeCreation } from './authorize-creation.js';
import { callContext } from './call-context.js';
import type { ToolCall } from './tool-call.js';

/** The item a call names, seen as a tool (for hooks, approvals and checkpoints); undefined when there is none. */
export function itemTool(call: Pick<ToolCall, 'tool' | 'item'>, deps: Pick<AuthorizeDeps, 'items'>): Tool | undefined {
  if (call.item === 'checkpoint') return rollbackTool();
  if (call.item === 'creation') return creationTool();
  if (call.item === 'directive') {
    const directive = deps.items?.directives.get(call.tool);
    return directive && directiveTool(directive);
  }
  const entry = call.item === 'knowledge' ? deps.items?.knowledge.get(call.tool) : undefined;
  return entry && knowledgeTool(entry);
}

export async function authorizeItem(call: ToolCall & { item: CallItem }, deps: AuthorizeDeps): Promise<Authorization> {
  const ctx = callContext(deps.context, call.context);
  if (call.item === 'checkpoint') return authorizeRollback(call, ctx);
  if (call.item === 'creation') return authorizeCreation(call, ctx, deps, new Date());
  const name = checkToolName(call.tool);
  if (!name.ok) return { allowed: false, reason: `${call.item} name \`${call.tool}\` is not valid: ${name.reason}` };
  if (call.args !== undefined && call.args !== null && !isPlainObject(call.args)) {
    throw new KiwiError('INVALID_INPUT', `the inputs of ${call.item} ${call.tool} must be a JSON object like {"name": value}`);
  }
  const given = (call.args ?? {}) as Record<string, unknown>;

  if (call.item === 'directive') {
    const directive = deps.items?.directives.get(call.tool);
    if (directive === undefined) throw new KiwiError('TOOL_NOT_FOUND', `no directive \`${call.tool}\`${known(deps.items?.directives)}`);
    const grant = checkTool(ctx, directive.name);
    if (!grant.allowed) return grant;
    const inputs = checkInputs(directive, given);
    return { allowed: true, plan: { kind: 'thread', directive: directive.name, inputs }, args: inputs, reason: `allowed by ${ctx.label}` };
  }

  const entry = deps.items?.knowledge.get(call.tool);
  if (entry === undefined) throw new KiwiError('TOOL_NOT_FOUND', `no knowledge entry \`${call.tool}\`${known(deps.items?.knowledge)}`);
  if (Object.keys(given).length > 0) throw new KiwiError('INVALID_INPUT', `knowledge entry ${entry.id} takes no arguments; call it with {}`);
  return { allowed: true, plan: { kind: 'read', result: knowledgeResult(entry) }, args: {}, reason: `a knowledge entry: read-only, allowed to every caller (${ctx.label})` };
}

/**
 * A rollback is granted like a tool named ROLLBACK_TOOL in the policy's `tools` (default deny), so
 * `approvals.tools` and hooks can name it too; whose checkpoint it is, is checked where it is
 * restored (checkpointer.ts).
 */
function authorizeRollback(call: ToolCall, ctx: PermissionContext): Authorization {
  if (call.tool !== ROLLBACK_TOOL) throw new KiwiError('INVALID_INPUT', `a checkpoint is restored by the tool ${ROLLBACK_TOOL}, not \`${call.tool.slice(0, 80)}\``);
  const args = isPlainObject(call.args) ? call.args : {};
  const checkpoint = args['checkpoint'];
  if (typeof checkpoint !== 'string' || Object.keys(args).length !== 1) throw new KiwiError('INVALID_INPUT', 'a rollback takes one argument, {"checkpoint": ID}, the id `kiwi checkpoints list` or a call\'s checkpoint shows');
  const grant = checkTool(ctx, ROLLBACK_TOOL);
  if (!grant.allowed) return { ...grant, reason: `${grant.reason}; add ${ROLLBACK_TOOL} to the policy's tools to let clients restore their own checkpoints` };
  return { allowed: true, plan: { kind: 'rollback', checkpoint }, args: { checkpoint }, reason: `allowed by ${ctx.label}` };
}

/** The entry as an agent reads it: its title, then its body; the fields as data. */
function knowledgeResult(entry: Knowledge): ToolResult {
  return { text: `# ${entry.title}\n\n${entry.body.replace(/^\n+/, '')}`, data: knowledgeFields(entry), isError: false };
}

function known(items: ReadonlyMap<string, unknown> | undefined): string {
  const ids = [...(items?.keys() ?? [])].slice(0, 10);
  return ids.length === 0 ? ' (there are none)' : `; there are ${ids.map((id) => `\`${id}\``).join(', ')}`;
}
