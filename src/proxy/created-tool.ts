import { envNamesIn } from '../executor/substitute.js';
import { HARMLESS_ENV, type PlanContext } from '../executor/plan.js';
import { createdEnvGrant } from '../policy/created-items.js';
import type { PermissionContext } from '../policy/permission-context.js';
import { createdMcpToolProblem } from '../registry/item-proposal.js';
import type { Tool } from '../registry/types.js';

/**
 * How a tool an agent created is planned. What an agent writes is the agent's, not the project
 * author's: its `${NAME}` templates and `env_allowlist` reach only the variables the policy grants
 * created items by name (`created_items.env`), the child gets no others, and every host it names
 * passes the SSRF guard. A created MCP tool only names a tool of a server a person configured, so
 * its server runs as configured; it may not change the server's URL, command or environment.
 */
export function createdToolPlan(tool: Tool, ctx: PermissionContext, plan: PlanContext): { allowed: true; plan: PlanContext } | { allowed: false; reason: string } {
  const refused = (why: string) => ({ allowed: false as const, reason: `tool ${tool.id} was created by an agent${tool.source.created?.owner ? ` of client ${tool.source.created.owner}` : ''}: ${why}` });
  if (tool.type === 'mcp_tool') {
    const problem = createdMcpToolProblem(tool);
    return problem === undefined ? { allowed: true, plan } : refused(problem);
  }
  const granted = createdEnvGrant(ctx);
  const allowlist = tool.config['env_allowlist'];
  const asked = [...envNamesIn(tool.config), ...(Array.isArray(allowlist) ? allowlist.filter((n): n is string => typeof n === 'string') : [])];
  const ungranted = [...new Set(asked.filter((name) => !granted.has(name)))];
  if (ungranted.length > 0) {
    return refused(`it asks for the gateway's environment variable${ungranted.length > 1 ? 's' : ''} ${ungranted.slice(0, 5).join(', ')}, which the policy does not grant created items; a person may list ${ungranted.length > 1 ? 'them' : 'it'} in \`created_items.env\` of .ai/config/policy.yaml`);
  }
  return { allowed: true, plan: { ...plan, env: createdToolEnv(plan.env, granted), agentWritten: true } };
}

/** The gateway's environment as a created tool sees it: the harmless variables and the granted ones. */
function createdToolEnv(env: PlanContext['env'], granted: ReadonlySet<string>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of [...HARMLESS_ENV, ...granted]) if (env[name] !== undefined) out[name] = env[name];
  return out;
}
