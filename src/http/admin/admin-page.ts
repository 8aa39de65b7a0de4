import type { Context } from 'hono';
import { KiwiError } from '../../base/errors.js';
import type { Tool } from '../../registry/types.js';
import { TOOL_ID_PATTERN } from '../../registry/tool-name.js';

/**
 * Pages of the tool catalog in the admin API, in order of tool id: `cursor` is the id of the last
 * tool of the page before (its `next_cursor`), so a page is the same whether tools came or went
 * since. Unlike v0's lists, a limit or cursor that cannot be read is an error, not the default:
 * a person (or the console) asked for something and should learn it was not that.
 */

export interface PageQuery {
  cursor?: string;
  limit: number;
}

export interface Page<T> {
  items: T[];
  /** The cursor of the next page; null on the last. */
  nextCursor: string | null;
}

export function readPage(c: Context, fallback: number, max: number): PageQuery {
  const limit = c.req.query('limit');
  const cursor = c.req.query('cursor');
  if (limit !== undefined && (!/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > max)) {
    throw new KiwiError('INVALID_INPUT', `limit must be a whole number from 1 to ${max}, got ${JSON.stringify(limit.slice(0, 40))}`);
  }
  if (cursor !== undefined && cursor !== '' && !TOOL_ID_PATTERN.test(cursor)) {
    throw new KiwiError('INVALID_INPUT', `cursor ${JSON.stringify(cursor.slice(0, 80))} is not one this API gave: pass the next_cursor of the page before (a tool id), or leave it out for the first page`);
  }
  return { limit: limit === undefined ? fallback : Number(limit), ...(cursor === undefined || cursor === '' ? {} : { cursor }) };
}

/** The page of `tools` (sorted by id) after the cursor. */
export function pageOf(tools: readonly Tool[], query: PageQuery): Page<Tool> {
  const start = query.cursor === undefined ? 0 : firstAfter(tools, query.cursor);
  const items = tools.slice(start, start + query.limit);
  const last = items.at(-1);
  return { items, nextCursor: last !== undefined && start + items.length < tools.length ? last.id : null };
}

const sorted = new WeakMap<ReadonlyMap<string, Tool>, Tool[]>();

/** The catalog's tools in order of id: sorted once, as the registry is loaded once (when the gateway opens). */
export function toolsById(catalog: ReadonlyMap<string, Tool>): readonly Tool[] {
  let tools = sorted.get(catalog);
  if (tools === undefined) sorted.set(catalog, (tools = [...catalog.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))));
  return tools;
}

/** Binary search: the index of the first tool whose id sorts after `id`. */
function firstAfter(tools: readonly Tool[], id: string): number {
  let lo = 0;
  let hi = tools.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((tools[mid] as Tool).id <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
