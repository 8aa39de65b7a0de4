import { KiwiError } from '../base/errors.js';
import { lookupLink, resolveChain } from '../executor/chain.js';
import type { ExecutionPlan } from '../executor/plan-types.js';
import { planCall, planDynamicMcp } from '../executor/plan.js';
import { validateArgs } from '../executor/validate-args.js';
import { checkCommand } from '../policy/command-check.js';
import { checkPath } from '../policy/path-check.js';
import { checkMcpTool, checkTool, contextChain, type Decision, type PermissionContext } from '../policy/permission-context.js';
import { checkMcpPathArgs } from '../policy/mcp-path-args.js';
import { toolsTagRefusal } from '../registry/directive-tools.js';
import { checkToolName } from '../registry/tool-name.js';
import type { Tool } from '../registry/types.js';
import type { McpServerSpec } from '../mcp-client/client-pool.js';
import { authorizeItem } from './authorize-item.js';
import type { Authorization, AuthorizeDeps } from './authorization.js';
import { callContext } from './call-context.js';
import { createdToolPlan } from './created-tool.js';
import type { ToolCall } from './tool-call.js';

/**
 * Every check of the policy a call must pass before it may run, in order: the name, the tool
 * grant, the arguments, then what the plan would touch (paths, executables, MCP tools).
 * Throws KiwiError for malformed calls; returns a denial for calls the policy refuses.
 */
export async function authorize(call: ToolCall, deps: AuthorizeDeps): Promise<Authorization> {
  if (call.item !== undefined) {
    const unnamed = toolsTagRefusal(call.directive, call.tool);
    return unnamed === undefined ? authorizeItem({ ...call, item: call.item }, deps) : deny(unnamed);
  }
  const ctx = callContext(deps.context, call.context);
  const name = checkToolName(call.tool);
  if (!name.ok) return deny(`tool name \`${call.tool}\` is not valid: ${name.reason}`);

  const target = findTarget(deps.tools, call.tool);
  const unnamed = toolsTagRefusal(call.directive, call.tool, target.dynamic ? call.tool.slice(0, call.tool.indexOf('.')) : undefined);
  if (unnamed !== undefined) return deny(unnamed);
  const grant = target.dynamic ? checkMcpTool(ctx, call.tool) : checkTool(ctx, target.tool.id);
  if (!grant.allowed) return grant;

  let args: Record<string, unknown>;
  let plan: ExecutionPlan;
  if (target.dynamic) {
    const paths = await checkMcpPathArgs(ctx, call.tool, dynamicArgs(call.args), call.signal);
    if (!paths.allowed) return paths;
    args = paths.args;
    plan = planDynamicMcp(target.tool, resolveChain(deps.tools, target.tool.id), target.remote, args, deps.plan);
  } else {
    args = validateArgs(target.tool, call.args);
    for (const p of target.tool.parameters) {
      if (p.format !== 'path' || typeof args[p.name] !== 'string') continue;
      const checked = await checkPath(ctx, args[p.name] as string, p.access ?? 'read');
      if (!checked.allowed) return { ...deny(`argument \`${p.name}\`: ${checked.reason}`), args };
      // Run on the path that was checked, so a later symlink swap cannot redirect the call.
      args = { ...args, [p.name]: checked.resolved };
    }
    let planContext = deps.plan;
    if (target.tool.source.created !== undefined) {
      const created = createdToolPlan(target.tool, ctx, deps.plan);
      if (!created.allowed) return { ...created, args };
      planContext = created.plan;
    }
    plan = planCall(resolveChain(deps.tools, target.tool.id), args, planContext);
  }

  const planCheck = checkPlan(ctx, plan, target.tool);
  if (!planCheck.allowed) return { ...planCheck, args };
  // The sandbox hides the secrets this call may not read, as the path check does for its arguments.
  if (plan.kind === 'subprocess') plan = { ...plan, allowSecrets: contextChain(ctx).map((c) => c.rules.fsSecrets) };
  return { allowed: true, plan, args, reason: `allowed by ${ctx.label}${createdNote(target.tool)}` };
}

/** A call of an agent's creation names whose it runs, in its allow reason (so in the audit log). */
function createdNote(tool: Tool): string {
  const created = tool.source.created;
  if (created === undefined) return '';
  return `; ${tool.id}@${tool.version} was created by an agent of ${created.owner === undefined ? 'an unknown client' : `client ${created.owner}`}`;
}

/** Whether an MCP server may be started (its command) for listing its tools. */
export function authorizeServer(id: string, ctx: PermissionContext, deps: Pick<AuthorizeDeps, 'tools' | 'plan'>): { allowed: true; spec: McpServerSpec } | { allowed: false; reason: string } {
  const server = deps.tools.get(id);
  if (server?.type !== 'mcp_server') throw new KiwiError('TOOL_NOT_FOUND', `no MCP server \`${id}\` in the registry`);
  const plan = planDynamicMcp(server, resolveChain(deps.tools, id), '*', {}, deps.plan);
  if (plan.server.transport === 'stdio') {
    const check = checkCommand(ctx, [plan.server.command, ...plan.server.args]);
    if (!check.allowed) return check;
  }
  return { allowed: true, spec: plan.server };
}

type Target = { dynamic: false; tool: Tool } | { dynamic: true; tool: Tool; remote: string };

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

function checkPlan(ctx: PermissionContext, plan: ExecutionPlan, tool: Tool): Decision {
  if (plan.kind === 'subprocess') {
    for (const { index, param } of plan.fromParams) {
      const value = plan.argv[index] ?? '';
      const spec = tool.parameters.find((p) => p.name === param);
      if (value.startsWith('-') && !spec?.allowFlags) {
        return deny(`argument \`${param}\` starts with "-" and would be read as an option (\`${value.slice(0, 40)}\`); options cannot come from arguments of this tool`);
      }
    }
    return checkCommand(ctx, plan.argv);
  }
  if (plan.kind === 'mcp') {
    const qualified = `${plan.server.name}.${plan.tool}`;
    const grant = checkMcpTool(ctx, qualified);
    if (!grant.allowed) return grant;
    if (plan.server.transport === 'stdio') return checkCommand(ctx, [plan.server.command, ...plan.server.args]);
  }
  return { allowed: true };
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

function deny(reason: string): { allowed: false; reason: string } {
  return { allowed: false, reason };
}
