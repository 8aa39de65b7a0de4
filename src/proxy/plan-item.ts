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
import type { PermissionContext } from '../policy/permission-context.js';
import { creationTool, directiveTool, knowledgeFields, knowledgeTool, ROLLBACK_TOOL, rollbackTool } from '../registry/item-tools.js';
import { checkToolName } from '../registry/tool-name.js';
import type { Knowledge, Tool } from '../registry/types.js';
import { checkInputs } from '../registry/directive-input-values.js';
import { isPlainObject } from '../base/plain-object.js';
import type { AuthorizeDeps, Planned } from './authorization.js';
import { planCreation } from './plan-creation.js';
import type { CallTarget, ToolCall } from './tool-call.js';

/** The item a call names, seen as a tool (for hooks, approvals and checkpoints); undefined when there is none. */
export function itemTool(target: Pick<CallTarget, 'tool' | 'item'>, deps: Pick<AuthorizeDeps, 'items'>): Tool | undefined {
  if (target.item === 'checkpoint') return rollbackTool();
  if (target.item === 'creation') return creationTool();
  if (target.item === 'directive') {
    const directive = deps.items?.directives.get(target.tool);
    return directive && directiveTool(directive);
  }
  const entry = target.item === 'knowledge' ? deps.items?.knowledge.get(target.tool) : undefined;
  return entry && knowledgeTool(entry);
}

/**
 * How a call of an item would run, as planTool does for a tool. Whatever is wrong with the call
 * is reported before its grant is judged (`before: 'grant'`), but for a directive's inputs, checked
 * once the caller may run it.
 */
export function planItem(call: ToolCall & { target: { item: CallItem } }, ctx: PermissionContext, deps: AuthorizeDeps): Planned {
  try {
    return planNamed(call, ctx, deps);
  } catch (error) {
    return { stopped: { before: 'grant', error } };
  }
}

function planNamed(call: ToolCall & { target: { item: CallItem } }, ctx: PermissionContext, deps: AuthorizeDeps): Planned {
  const { tool, item, args: raw } = call.target;
  if (item === 'checkpoint') return planRollback(call);
  if (item === 'creation') return planCreation(call, ctx, deps, new Date());
  const name = checkToolName(tool);
  if (!name.ok) return { stopped: { before: 'grant', reason: `${item} name \`${tool}\` is not valid: ${name.reason}` } };
  if (raw !== undefined && raw !== null && !isPlainObject(raw)) {
    throw new KiwiError('INVALID_INPUT', `the inputs of ${item} ${tool} must be a JSON object like {"name": value}`);
  }
  const given = (raw ?? {}) as Record<string, unknown>;

  if (item === 'directive') {
    const directive = deps.items?.directives.get(tool);
    if (directive === undefined) throw new KiwiError('TOOL_NOT_FOUND', `no directive \`${tool}\`${known(deps.items?.directives)}`);
    const grant = { by: 'tools' as const, id: directive.name };
    try {
      const inputs = checkInputs(directive, given);
      return { grant, plan: { kind: 'thread', directive: directive.name, inputs }, args: inputs };
    } catch (error) {
      return { grant, stopped: { before: 'checks', error } };
    }
  }

  const entry = deps.items?.knowledge.get(tool);
  if (entry === undefined) throw new KiwiError('TOOL_NOT_FOUND', `no knowledge entry \`${tool}\`${known(deps.items?.knowledge)}`);
  if (Object.keys(given).length > 0) throw new KiwiError('INVALID_INPUT', `knowledge entry ${entry.id} takes no arguments; call it with {}`);
  return { grant: { by: 'everyone' }, plan: { kind: 'read', result: knowledgeResult(entry) }, args: {} };
}

/**
 * A rollback is granted like a tool named ROLLBACK_TOOL in the policy's `tools` (default deny), so
 * `approvals.tools` and hooks can name it too; whose checkpoint it is, is checked where it is
 * restored (checkpointer.ts).
 */
function planRollback(call: ToolCall): Planned {
  const { tool, args: raw } = call.target;
  if (tool !== ROLLBACK_TOOL) throw new KiwiError('INVALID_INPUT', `a checkpoint is restored by the tool ${ROLLBACK_TOOL}, not \`${tool.slice(0, 80)}\``);
  const args = isPlainObject(raw) ? raw : {};
  const checkpoint = args['checkpoint'];
  if (typeof checkpoint !== 'string' || Object.keys(args).length !== 1) throw new KiwiError('INVALID_INPUT', 'a rollback takes one argument, {"checkpoint": ID}, the id `kiwi checkpoints list` or a call\'s checkpoint shows');
  const grant = { by: 'tools' as const, id: ROLLBACK_TOOL, hint: `add ${ROLLBACK_TOOL} to the policy's tools to let clients restore their own checkpoints` };
  return { grant, plan: { kind: 'rollback', checkpoint }, args: { checkpoint } };
}

/** The entry as an agent reads it: its title, then its body; the fields as data. */
function knowledgeResult(entry: Knowledge): ToolResult {
  return { text: `# ${entry.title}\n\n${entry.body.replace(/^\n+/, '')}`, data: knowledgeFields(entry), isError: false };
}

function known(items: ReadonlyMap<string, unknown> | undefined): string {
  const ids = [...(items?.keys() ?? [])].slice(0, 10);
  return ids.length === 0 ? ' (there are none)' : `; there are ${ids.map((id) => `\`${id}\``).join(', ')}`;
}
