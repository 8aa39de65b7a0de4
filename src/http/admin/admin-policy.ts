import type { Hono } from 'hono';
import type { KeyRecord } from '../../clients/key-store.js';
import { KiwiError } from '../../base/errors.js';
import type { Caller } from '../../policy/caller.js';
import { contextChain } from '../../policy/permission-context.js';
import { toolRights, type RightTarget, type ToolRight } from '../../proxy/tool-rights.js';
import { shownKey, readKeyId } from './admin-keys.js';
import { pageOf, readPage, toolsById } from './admin-page.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';
import type { AdminCatalog } from './admin-tools.js';

/**
 * The effective policy of a key: its client, roles and scopes, the policy file it names, the
 * grants its calls are checked against (its file's, then the project's: both must allow), and,
 * tool by tool, whether a call would be allowed and why: the decision of proxy/tool-rights.ts,
 * which is the proxy's before it looks at a call's arguments.
 */

const PAGE = 50;
const MAX_PAGE = 200;

export function mountAdminPolicy(app: Hono, route: AdminRoute, catalog: AdminCatalog): void {
  app.get(
    `${ADMIN_PREFIX}/keys/:id/policy`,
    route('policy', async (c) => {
      const id = readKeyId(c.req.param('id'));
      const page = readPage(c, PAGE, MAX_PAGE);
      const { record, caller, refused, right } = await keyRights(catalog, id);
      const tools = toolsById(catalog.tools);
      const { items, nextCursor } = pageOf(tools, page);
      return c.json({
        key: shownKey(record),
        served: refused === undefined,
        ...(refused === undefined ? {} : { refused }),
        policy: {
          file: record.policy ?? null,
          // Nearest first: a call must be granted by each.
          grants: contextChain(caller?.context ?? catalog.policy).map((ctx) => ({ by: ctx.label, tools: ctx.rules.tools })),
        },
        tools: items.map((tool) => ({ id: tool.id, ...right({ id: tool.id, tool }) })),
        total: tools.length,
        next_cursor: nextCursor,
        note: 'each call is also checked on its arguments (paths, commands, MCP tools), by the policy hooks and against rate limits',
      });
    }),
  );
}

export interface KeyRights {
  record: KeyRecord;
  /** The caller its requests are served as; absent when its policy file cannot be used. */
  caller?: Caller;
  /** Why every request with it is refused (revoked, a policy file that does not parse); absent when served. */
  refused?: string;
  right: (target: RightTarget) => ToolRight;
}

/** What requests with the key `id` may do with tools; NOT_FOUND when no key has that id. */
export async function keyRights(catalog: AdminCatalog, id: string): Promise<KeyRights> {
  const found = await catalog.key(id);
  if (found === undefined) throw new KiwiError('NOT_FOUND', `not found: key ${id}; GET ${ADMIN_PREFIX}/keys lists the keys`);
  const { record, served } = found;
  const refusedFor = (reason: string): KeyRights => ({ record, ...('caller' in served ? { caller: served.caller } : {}), refused: reason, right: () => ({ allowed: false, reason }) });
  if (record.revoked !== undefined) return refusedFor(`the key was revoked (${record.revoked}): every request with it is refused`);
  if ('error' in served) return refusedFor(`${served.error}; until then every request with this key is refused`);
  return { record, caller: served.caller, right: toolRights(catalog.policy, served.caller) };
}
