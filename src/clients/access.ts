/**
 * Who may do what to which object: the one place every edge asks (/v0, the chat and MCP routes,
 * the CLI through them). Every execution, step, session, approval and runner belongs to the
 * client of the key that made it, and a key's roles say what it may do:
 *
 * - `client`: makes executions (chats, MCP calls, /v0) and reads, signals and cancels its own;
 * - `agent`: serves the executions of the agent ids its key names: reads them, acts in their
 *   sessions, and alone sees their session and consumer ids;
 * - `runner`: serves the tools its key names, under runner ids its client registered;
 * - `approver`: reads every client's executions, to see what a call will do, and answers their
 *   approvals (in the admin API and the console: those two areas alone);
 * - `admin`: everything, the admin API's keys, usage, policies, audit, threads and tools included.
 *
 * Nobody answers an approval of their own (their client's execution, or one whose agent they
 * serve), admins included. Another client's object is NOT_FOUND (404), never FORBIDDEN, so that
 * an id tells nothing; a missing role on a visible object is FORBIDDEN, saying which role. A
 * keyless loopback gateway has one caller, the local operator, with every role, who answers
 * their own approvals: it is one person's machine.
 */
import { KiwiError } from '../base/errors.js';
import type { Caller, Role } from '../policy/caller.js';

/** The client of a keyless loopback gateway, the CLI and stdio MCP. No key may be made for it. */
export const LOCAL_CLIENT = 'local';

export type ExecutionAction = 'read' | 'act' | 'signal' | 'cancel' | 'approve';

/** What access needs to know of an execution. */
export interface OwnedExecution {
  id: string;
  /** The client that made it. */
  client: string;
  agentId: string;
}

/** Which executions a caller may list: all, or those of its own client and of the agent ids it serves. */
export type ExecutionScope = { all: true } | { all: false; client?: string; agents: readonly string[] };

export function hasRole(caller: Caller, role: Role): boolean {
  return (caller.roles ?? ['client']).includes(role);
}

/** `names` are exact ids or prefixes ending in `*`. */
export function inScope(names: readonly string[] | undefined, id: string): boolean {
  return (names ?? []).some((n) => (n.endsWith('*') ? id.startsWith(n.slice(0, -1)) : n === id));
}

export function servesAgent(caller: Caller, agentId: string): boolean {
  return hasRole(caller, 'admin') || (hasRole(caller, 'agent') && inScope(caller.agents, agentId));
}

export function servesTool(caller: Caller, toolId: string): boolean {
  return hasRole(caller, 'admin') || (hasRole(caller, 'runner') && inScope(caller.tools, toolId));
}

/**
 * Whether a thread or an MCP session made by `owner` is the caller's to follow, resume, cancel
 * or use: its own client's only (an MCP session id, like an agent's, is a credential).
 */
export function ownedBy(caller: Caller, owner: string): boolean {
  return caller.client === owner;
}

/** Whether session and consumer ids of `agentId`'s executions may reach the caller. */
export const seesSessions = servesAgent;

export function executionScope(caller: Caller): ExecutionScope {
  if (hasRole(caller, 'admin') || hasRole(caller, 'approver')) return { all: true };
  return { all: false, ...(hasRole(caller, 'client') ? { client: caller.client } : {}), agents: hasRole(caller, 'agent') ? (caller.agents ?? []) : [] };
}

/**
 * Chats (/v1), MCP and the tools behind them are a client's: a key that only serves agents or
 * tools, or answers approvals, cannot chat or run tools. Undefined when it may, else why not.
 */
export function clientUseRefusal(caller: Caller): string | undefined {
  if (hasRole(caller, 'client') || hasRole(caller, 'admin')) return undefined;
  return `the key of client ${caller.client} has the roles ${(caller.roles ?? []).join(', ')}, and chats, MCP and tool calls need the client role (\`kiwi keys create NAME --role client\`)`;
}

/** Whether the caller may see the execution at all; one it may not is, to it, one that does not exist. */
export function seesExecution(caller: Caller, e: OwnedExecution): boolean {
  return hasRole(caller, 'admin') || hasRole(caller, 'approver') || (hasRole(caller, 'client') && e.client === caller.client) || servesAgent(caller, e.agentId);
}

/** Throws NOT_FOUND when the caller may not see the execution, POLICY_DENIED when it sees it but may not do this. */
export function checkExecution(caller: Caller, action: ExecutionAction, e: OwnedExecution): void {
  const own = hasRole(caller, 'client') && e.client === caller.client;
  const admin = hasRole(caller, 'admin');
  if (!seesExecution(caller, e)) throw executionNotFound(e.id);
  switch (action) {
    case 'read':
      return;
    case 'act':
      if (!servesAgent(caller, e.agentId)) throw denied(`only a key that serves agent ${e.agentId} acts in execution ${e.id}; make one with \`kiwi keys create NAME --role agent --agent ${e.agentId}\``);
      return;
    case 'signal':
    case 'cancel':
      if (!(own || admin)) throw denied(`only the client that made execution ${e.id} (or an admin) may ${action === 'cancel' ? 'cancel it' : 'signal it'}`);
      return;
    case 'approve':
      if (!(admin || hasRole(caller, 'approver'))) throw denied(`answering an approval needs a key with the approver role (\`kiwi keys create NAME --role approver\`)`);
      // Its own: its client made the execution, or its key is the agent's (an admin key is not, unless it also has the agent role).
      if (caller.client !== LOCAL_CLIENT && (e.client === caller.client || (hasRole(caller, 'agent') && inScope(caller.agents, e.agentId)))) {
        throw denied(`client ${caller.client} made execution ${e.id} or serves its agent, so it cannot answer its approvals; a person answers with an approver key of another client`);
      }
      return;
  }
}

/**
 * A runner id: a new one is registered to the caller's client; one of another client is
 * NOT_FOUND. `owner` is the registered runner's client, undefined when it is new.
 */
export function checkRunner(caller: Caller, runnerId: string, owner: string | undefined): void {
  if (!hasRole(caller, 'runner') && !hasRole(caller, 'admin')) throw denied(`serving tools needs a key with the runner role (\`kiwi keys create NAME --role runner --tool TOOL_ID\`)`);
  if (owner !== undefined && owner !== caller.client && !hasRole(caller, 'admin')) throw new KiwiError('NOT_FOUND', `not found: runner ${runnerId}`);
}

/** The tools a runner says it serves must all be the key's. */
export function checkServes(caller: Caller, toolIds: Iterable<string>): void {
  const outside = [...toolIds].filter((t) => !servesTool(caller, t));
  if (outside.length > 0) {
    const shown = outside.slice(0, 5).map((t) => JSON.stringify(t.slice(0, 80))).join(', ');
    throw denied(`this key does not serve ${shown}${outside.length > 5 ? ` and ${outside.length - 5} more` : ''}; a runner key names the tools it serves (\`kiwi keys create NAME --role runner --tool TOOL_ID\`)`);
  }
}

/** The parts of the admin API (/admin/v1) and the console, each behind one decision. */
export type AdminArea = 'keys' | 'usage' | 'policy' | 'approvals' | 'executions' | 'threads' | 'audit' | 'tools' | 'playground' | 'counters';

const APPROVER_AREAS: ReadonlySet<AdminArea> = new Set(['approvals', 'executions']);

/** Whether the caller may use that part of the admin API; the console shows only these. */
export function mayAdminister(caller: Caller, area: AdminArea): boolean {
  return hasRole(caller, 'admin') || (hasRole(caller, 'approver') && APPROVER_AREAS.has(area));
}

/** Throws POLICY_DENIED, naming the role it takes, when the caller may not use that part of the admin API. */
export function checkAdminister(caller: Caller, area: AdminArea): void {
  if (mayAdminister(caller, area)) return;
  const role = APPROVER_AREAS.has(area) ? 'the approver or admin role' : 'the admin role';
  throw denied(`the admin API's ${area} need a key with ${role}; the key of client ${caller.client} has ${(caller.roles ?? ['client']).join(', ')} (\`kiwi keys create NAME --role admin\`)`);
}

export function executionNotFound(id: string): KiwiError {
  return new KiwiError('NOT_FOUND', `not found: execution ${id}`);
}

function denied(message: string): KiwiError {
  return new KiwiError('POLICY_DENIED', message);
}
