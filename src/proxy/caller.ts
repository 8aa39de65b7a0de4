import type { PermissionContext } from '../policy/permission-context.js';

/**
 * Who a call is made for. Rate limits and loop detection key on `client`, never on a session or
 * the process, so opening a new session or connection cannot reset them.
 */
export interface Caller {
  /** An API key's client name, or `local` (loopback with no keys, the CLI, stdio MCP). */
  client: string;
  /** The client's own rights, narrower than the project's, when its key names a policy. */
  context?: PermissionContext;
}
