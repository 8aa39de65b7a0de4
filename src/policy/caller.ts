import type { PermissionContext } from './permission-context.js';

/**
 * What a key may do (clients/access.ts decides with them): `client` chats, uses MCP and owns
 * what it creates; `agent` serves the /v0 executions of its agent ids; `runner` serves the tools
 * its key names; `approver` answers other clients' approvals; `admin` sees and does everything.
 */
export const ROLES = ['client', 'agent', 'runner', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who a call is made for. Rate limits and loop detection key on `client`, never on a session or
 * the process, so opening a new session or connection cannot reset them.
 */
export interface Caller {
  /** An API key's client name, or `local` (loopback with no keys, the CLI, stdio MCP). */
  client: string;
  /** The client's own rights, narrower than the project's, when its key names a policy. */
  context?: PermissionContext;
  /** The key's roles; absent: `client` alone (the least a key is given). */
  roles?: readonly Role[];
  /** The agent ids an `agent` key serves: exact ids, or a prefix ending in `*`. */
  agents?: readonly string[];
  /** The tool ids a `runner` key serves: exact ids, or a prefix ending in `*`. */
  tools?: readonly string[];
}
