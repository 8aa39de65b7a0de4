import type { Hono } from 'hono';
import type { KeyRecord } from '../../clients/key-store.js';
import { KiwiError } from '../../base/errors.js';
import type { Caller } from '../../policy/caller.js';
import type { PermissionContext } from '../../policy/permission-context.js';
import { approvalReason } from '../../proxy/approval.js';
import type { Tool } from '../../registry/types.js';
import { parametersSchema } from '../../resolver/llm-argument-filler.js';
import { pageOf, readPage, toolsById } from './admin-page.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';

/**
 * The tool catalog as the gateway loaded it (every tier, the first of an id winning): each tool's
 * id, type, description, whether it only reads (and so may be prefetched), whether its calls wait
 * for a person, and its parameters as JSON Schema; found by a piece of its id or description.
 */

/** What the tools, policy and playground areas read: the catalog, the project's policy, the keys. */
export interface AdminCatalog {
  tools: ReadonlyMap<string, Tool>;
  /** The project's policy: the root of every call's rights; its `approvals` apply to every caller. */
  policy: PermissionContext;
  /** A key by id, and the caller it is served as (clients/client-auth.ts keyCaller); undefined when no key has that id. */
  key(id: string): Promise<{ record: KeyRecord; served: { caller: Caller } | { error: string } } | undefined>;
}

const PAGE = 50;
const MAX_PAGE = 200;
const MAX_QUERY_CHARS = 200;

export function mountAdminTools(app: Hono, route: AdminRoute, catalog: AdminCatalog): void {
  app.get(
    `${ADMIN_PREFIX}/tools`,
    route('tools', async (c) => {
      const page = readPage(c, PAGE, MAX_PAGE);
      const q = c.req.query('q') ?? '';
      if (q.length > MAX_QUERY_CHARS || /[\u0000-\u001f\u007f]/.test(q)) throw new KiwiError('INVALID_INPUT', `q must be a piece of a tool's id or description of at most ${MAX_QUERY_CHARS} characters, without control characters`);
      const needle = q.trim().toLowerCase();
      const all = toolsById(catalog.tools);
      const matching = needle === '' ? all : all.filter((t) => t.id.toLowerCase().includes(needle) || t.description.toLowerCase().includes(needle));
      const { items, nextCursor } = pageOf(matching, page);
      return c.json({ tools: items.map((t) => toolView(t, catalog.policy)), total: matching.length, next_cursor: nextCursor });
    }),
  );
}

function toolView(tool: Tool, policy: PermissionContext): Record<string, unknown> {
  const approval = approvalReason(tool, tool.id, policy.approvals, undefined);
  return {
    id: tool.id,
    type: tool.type,
    description: tool.description,
    version: tool.version,
    executor: tool.executor,
    // Unknown counts as mutating (the manifest's `mutates_state` absent).
    read_only: !tool.mutatesState,
    requires_approval: approval !== undefined,
    ...(approval === undefined ? {} : { approval }),
    tags: tool.tags,
    parameters: parametersSchema(tool.parameters),
  };
}
