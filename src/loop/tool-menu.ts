import { LRUCache } from 'lru-cache';
import { menuLine } from '../resolver/compact-schema.js';
import type { Tool } from '../registry/types.js';
import type { Retrieval } from '../resolver/types.js';

/**
 * The menu of likely tools a request's agent sees in its instructions: the tools retrieval ranks
 * first for the user's latest message, by id with one line each, so the agent can call the tool
 * it means exactly (an id merely named in a sentence only helps retrieval find it) instead of
 * hoping its words retrieve it. Only tools the caller may run are listed. Menus are remembered by caller and
 * text: a retried or repeated message costs no second search and no second policy check. A
 * catalog no larger than the menu is listed whole, with no search: the search could only reorder
 * it, and it would cost every new message an embedding before the upstream call. The menu is a
 * hint, not a right: a remembered one that outlives a policy change can only offer a tool the
 * tool proxy then refuses.
 */
export interface ToolMenuDeps {
  retrieve(text: string, options: { signal?: AbortSignal }): Promise<Retrieval>;
  /** The catalog, fixed for the menu's life. */
  tools: ReadonlyMap<string, Tool>;
}

export interface ToolMenuOptions {
  /** Tools listed (default 20); 0 turns the menu off. */
  size?: number;
  /** Menus remembered (default 256). */
  cacheSize?: number;
}

/** Whose menu: `scope` names the caller's rights (the client), `allowed` applies them. */
export interface MenuCaller {
  scope: string;
  allowed(toolId: string): boolean;
}

export type ToolMenu = (userText: string, caller: MenuCaller, signal?: AbortSignal) => Promise<string[]>;

export const DEFAULT_MENU_SIZE = 20;
/** The message the menu is chosen for is cut to this: retrieval reads the start of a request best. */
const MAX_TEXT = 2000;

export function createToolMenu(deps: ToolMenuDeps, options: ToolMenuOptions = {}): ToolMenu {
  const size = options.size ?? DEFAULT_MENU_SIZE;
  // Candidates before any caller's rights are applied (a few more than the menu, since some may be denied), and menus per caller.
  const ranked = new LRUCache<string, string[]>({ max: options.cacheSize ?? 256 });
  const menus = new LRUCache<string, string[]>({ max: options.cacheSize ?? 256 });
  return async (userText, caller, signal) => {
    const text = userText.trim().slice(0, MAX_TEXT);
    if (size === 0 || text === '') return [];
    const whole = deps.tools.size <= size;
    // The whole catalog's menu depends on the caller only.
    const key = whole ? caller.scope : `${caller.scope}\u0000${text}`;
    const remembered = menus.get(key);
    if (remembered !== undefined) return remembered;
    let ids = whole ? [...deps.tools.keys()] : ranked.get(text);
    if (ids === undefined) {
      const retrieval = await deps.retrieve(text, signal ? { signal } : {});
      ids = retrieval.candidates.slice(0, size * 2).map((c) => c.tool);
      ranked.set(text, ids);
    }
    const lines: string[] = [];
    for (const id of ids) {
      const tool = deps.tools.get(id);
      if (tool && caller.allowed(id)) lines.push(menuLine(tool));
      if (lines.length === size) break;
    }
    menus.set(key, lines);
    return lines;
  };
}

/** The menu as it is appended to the intent instructions. */
export function menuText(lines: readonly string[], marker: string): string {
  if (lines.length === 0) return '';
  return [`Tools likely useful for this request (call one exactly to run it: [${marker}: id {…its arguments as JSON…}]):`, ...lines.map((l) => `- ${l}`)].join('\n');
}
