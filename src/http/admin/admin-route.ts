import type { Context } from 'hono';
import type { AdminArea } from '../../clients/access.js';
import type { Caller } from '../../policy/caller.js';

/** What every area of the admin API (admin-routes.ts) shares. */

export const ADMIN_PREFIX = '/admin/v1';

/** Bodies of the admin API are small: a key's grants, an answer, an intent. */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;

/** A route of an area: the caller checked against the area before the handler runs, errors answered as JSON. */
export type AdminRoute = (area: AdminArea, handler: (c: Context, caller: Caller) => Promise<Response>) => (c: Context) => Promise<Response>;
