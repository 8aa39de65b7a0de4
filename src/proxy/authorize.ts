import { KiwiError } from '../base/errors.js';
import { resolveChain } from '../executor/chain.js';
import type { ExecutionPlan } from '../executor/plan-types.js';
import { planDynamicMcp } from '../executor/plan.js';
import { checkCommand } from '../policy/command-check.js';
import { checkChain, checkMcpTool, checkTool, deny, type Decision, type PermissionContext } from '../policy/permission-context.js';
import { CREATE_TOOL } from '../registry/item-proposal.js';
import { toolsTagRefusal } from '../registry/directive-tools.js';
import type { Tool } from '../registry/types.js';
import type { McpServerSpec } from '../mcp-client/client-pool.js';
import type { AuthorizeDeps, Grant, Planned, Verdict } from './authorization.js';
import type { ToolCall } from './tool-call.js';

/**
 * The policy's judgment of a planned call (plan-tool.ts, plan-item.ts), in the order a caller
 * meets its checks: the directive's `<tools>`, the grant, then what the plan would touch
 * (executables, MCP tools). Where planning stopped, its reason is the refusal and its error is
 * thrown (a malformed call), each at the place of the check it stands for: a call the policy does
 * not grant is refused as such, whatever is wrong with its arguments.
 */
export function authorize(call: ToolCall, planned: Planned, ctx: PermissionContext): Verdict {
  const { stopped } = planned;
  if (stopped?.before === 'tags') return report(stopped);
  const unnamed = toolsTagRefusal(call.run?.directive, call.target.tool, planned.grant?.by === 'mcp_tools' ? planned.grant.server : undefined);
  if (unnamed !== undefined) return { allowed: false, reason: unnamed };
  if (stopped?.before === 'grant' || planned.grant === undefined) return report(stopped);
  const grant = judgeGrant(planned.grant, ctx);
  if (!grant.allowed) return grant;
  const args = planned.args;
  if (stopped !== undefined || planned.plan === undefined || args === undefined) return { ...report(stopped), ...(args ? { args } : {}) };
  const plan = planned.plan;
  if (planned.tool !== undefined && (plan.kind === 'subprocess' || plan.kind === 'mcp')) {
    const checked = checkPlan(ctx, plan, planned.tool);
    if (!checked.allowed) return { ...checked, args };
  }
  return { allowed: true, args, reason: `${grant.reason}${planned.note ?? ''}`, ...(grant.approval === undefined ? {} : { approval: grant.approval }) };
}

/** A refusal planning found, or the error of a malformed call, thrown. */
function report(stopped: Planned['stopped']): { allowed: false; reason: string } {
  if (stopped === undefined) throw new KiwiError('INTERNAL', 'a call reached authorize with neither a plan nor the reason it has none');
  if ('error' in stopped) throw stopped.error;
  return { allowed: false, reason: stopped.reason };
}

type Granted = { allowed: true; reason: string; approval?: string } | { allowed: false; reason: string };

function judgeGrant(grant: Grant, ctx: PermissionContext): Granted {
  const allowed = { allowed: true as const, reason: `allowed by ${ctx.label}` };
  switch (grant.by) {
    case 'everyone':
      return { allowed: true, reason: `a knowledge entry: read-only, allowed to every caller (${ctx.label})` };
    case 'mcp_tools': {
      const decision = checkMcpTool(ctx, grant.id);
      return decision.allowed ? allowed : decision;
    }
    case 'tools': {
      const decision = checkTool(ctx, grant.id);
      if (decision.allowed) return allowed;
      return grant.hint === undefined ? decision : { ...decision, reason: `${decision.reason}; ${grant.hint}` };
    }
    case 'creation': {
      const named = namedGrant(ctx);
      if (named.allowed) return allowed;
      return {
        allowed: true,
        reason: `allowed once a person approves (${named.reason})`,
        approval: `an agent proposes ${grant.what} in the ${grant.tier} tier; the policy does not grant this client ${CREATE_TOOL}, so a person decides`,
      };
    }
  }
}

/**
 * Creation adds code that runs, so it is granted only where every policy of the chain names
 * CREATE_TOOL itself: a glob written for tools (`"*"`) does not grant it.
 */
function namedGrant(ctx: PermissionContext): Decision {
  return checkChain(ctx, (c) => (c.rules.tools.includes(CREATE_TOOL) ? { allowed: true } : deny(c, `\`${CREATE_TOOL}\` is not named in \`tools\` (a glob does not grant it)`)));
}

function checkPlan(ctx: PermissionContext, plan: ExecutionPlan, tool: Tool): Decision {
  if (plan.kind === 'subprocess') {
    for (const { index, param } of plan.fromParams) {
      const value = plan.argv[index] ?? '';
      const spec = tool.parameters.find((p) => p.name === param);
      if (value.startsWith('-') && !spec?.allowFlags) {
        return { allowed: false, reason: `argument \`${param}\` starts with "-" and would be read as an option (\`${value.slice(0, 40)}\`); options cannot come from arguments of this tool` };
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
