import { KiwiError } from '../base/errors.js';
import { lookupLink, resolveChain } from '../executor/chain.js';
import type { ExecutionPlan } from '../executor/plan-types.js';
import { planCall, planDynamicMcp } from '../executor/plan.js';
import { validateArgs } from '../executor/validate-args.js';
import { checkPath } from '../policy/path-check.js';
import { contextChain, type PermissionContext } from '../policy/permission-context.js';
import { checkMcpPathArgs } from '../policy/mcp-path-args.js';
import { checkToolName } from '../registry/tool-name.js';
import type { Tool } from '../registry/types.js';
import type { AuthorizeDeps, Grant, Planned } from './authorization.js';
import { createdToolPlan } from './created-tool.js';
import type { ToolCall } from './tool-call.js';

/**
 * How a call of a tool would run: the tool it names (an MCP server's own tool by `server.tool`),
 * its arguments validated and its paths resolved in the call's context (the plan runs on the
 * paths that were checked, so a later symlink swap cannot redirect it), and the plan. Nothing is
 * thrown: where it stops, the reason or error is kept for authorize to report in its turn.
 */
export async function planTool(call: ToolCall, ctx: PermissionContext, deps: AuthorizeDeps): Promise<Planned> {
  const id = call.target.tool;
  const name = checkToolName(id);
  if (!name.ok) return { stopped: { before: 'tags', reason: `tool name \`${id}\` is not valid: ${name.reason}` } };
  let target: Target;
  try {
    target = findTarget(deps.tools, id);
  } catch (error) {
    return { stopped: { before: 'tags', error } };
  }
  const grant: Grant = target.dynamic ? { by: 'mcp_tools', id, server: id.slice(0, id.indexOf('.')) } : { by: 'tools', id: target.tool.id };
  const found = { grant, tool: target.tool, note: createdNote(target.tool) };
  try {
    return { ...found, ...(await planTarget(call, target, ctx, deps)) };
  } catch (error) {
    return { ...found, stopped: { before: 'checks', error } };
  }
}

type Target = { dynamic: false; tool: Tool } | { dynamic: true; tool: Tool; remote: string };

async function planTarget(call: ToolCall, target: Target, ctx: PermissionContext, deps: AuthorizeDeps): Promise<Pick<Planned, 'args' | 'plan' | 'stopped'>> {
  let args: Record<string, unknown>;
  let plan: ExecutionPlan;
  if (target.dynamic) {
    const paths = await checkMcpPathArgs(ctx, call.target.tool, dynamicArgs(call.target.args), call.run?.signal);
    if (!paths.allowed) return { stopped: { before: 'checks', reason: paths.reason } };
    args = paths.args;
    plan = planDynamicMcp(target.tool, resolveChain(deps.tools, target.tool.id), target.remote, args, deps.plan);
  } else {
    args = validateArgs(target.tool, call.target.args);
    for (const p of target.tool.parameters) {
      if (p.format !== 'path' || typeof args[p.name] !== 'string') continue;
      const checked = await checkPath(ctx, args[p.name] as string, p.access ?? 'read');
      if (!checked.allowed) return { args, stopped: { before: 'checks', reason: `argument \`${p.name}\`: ${checked.reason}` } };
      args = { ...args, [p.name]: checked.resolved };
    }
    let planContext = deps.plan;
    if (target.tool.source.created !== undefined) {
      const created = createdToolPlan(target.tool, ctx, deps.plan);
      if (!created.allowed) return { args, stopped: { before: 'checks', reason: created.reason } };
      planContext = created.plan;
    }
    plan = planCall(resolveChain(deps.tools, target.tool.id), args, planContext);
  }
  // The sandbox hides the secrets this call may not read, as the path check does for its arguments.
  if (plan.kind === 'subprocess') plan = { ...plan, allowSecrets: contextChain(ctx).map((c) => c.rules.fsSecrets) };
  return { args, plan };
}

/** A call of an agent's creation names whose it runs, in its allow reason (so in the audit log). */
function createdNote(tool: Tool): string {
  const created = tool.source.created;
  if (created === undefined) return '';
  return `; ${tool.id}@${tool.version} was created by an agent of ${created.owner === undefined ? 'an unknown client' : `client ${created.owner}`}`;
}

function findTarget(tools: ReadonlyMap<string, Tool>, id: string): Target {
  const tool = tools.get(id);
  if (tool) {
    if (tool.type === 'primitive' || tool.type === 'runtime') {
      throw new KiwiError('INVALID_INPUT', `\`${id}\` is a ${tool.type}: it executes other tools and cannot be called directly`);
    }
    return { dynamic: false, tool };
  }
  const dot = id.indexOf('.');
  const server = dot > 0 ? lookupLink(tools, id.slice(0, dot)) : undefined;
  if (server?.type === 'mcp_server') return { dynamic: true, tool: server, remote: id.slice(dot + 1) };
  throw new KiwiError('TOOL_NOT_FOUND', `no tool \`${id}\`${suggest(tools, id)}; run \`kiwi tools list\` to see what there is`);
}

function dynamicArgs(raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new KiwiError('INVALID_INPUT', 'arguments must be a JSON object like {"name": value}');
  return raw as Record<string, unknown>;
}

function suggest(tools: ReadonlyMap<string, Tool>, id: string): string {
  const lower = id.toLowerCase();
  const close = [...tools.keys()].filter((k) => k.toLowerCase().includes(lower) || lower.includes(k.toLowerCase())).slice(0, 3);
  return close.length ? ` (did you mean ${close.map((c) => `\`${c}\``).join(', ')}?)` : '';
}
