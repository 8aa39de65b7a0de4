import { fromJsonSchema, type McpServer, type RegisteredTool, type ServerContext, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { KiwiError } from '../base/errors.js';
import type { Tool } from '../registry/types.js';
import { parametersSchema } from '../resolver/llm-argument-filler.js';
import { resolvableTools } from '../resolver/resolver.js';
import type { MetaAnswer } from './approval-waits.js';

/**
 * The project's tools as MCP tools of their own, beside the meta-tools: each under its id with its
 * real parameter schema, run by name through the same proxy as `execute` (the policy, hooks,
 * approvals and audit are the same). Only the tools the caller's policy grants are listed. A
 * client may ask for a profile (`tags`) and a size; a catalog larger than that lists its first
 * tools (the project's own first, then the user's and the registry's, each by id), and each tool
 * `search` or `load` finds joins the list, announced with `notifications/tools/list_changed` to a
 * client with a session (2025-06-18). Without a session (2026-07-28) the list is the first tools;
 * the others run through `execute`.
 */

export interface ToolListing {
  /** false: the meta-tools only (`?tools=meta`). */
  real: boolean;
  /** Only the tools with at least one of these tags; absent: every granted tool. */
  tags?: string[];
  /** How many are listed at first. */
  max: number;
}

export const DEFAULT_LISTED_TOOLS = 40;
export const MAX_LISTED_TOOLS = 500;
export const DEFAULT_TOOL_LISTING: ToolListing = { real: true, max: DEFAULT_LISTED_TOOLS };

/** The meta-tools' names: a project tool of one of these names is run through `execute` instead. */
export const META_TOOL_NAMES: ReadonlySet<string> = new Set(['search', 'load', 'execute', 'help', 'resolve']);

const TAG = /^[A-Za-z0-9_.:-]{1,64}$/;

/** `tools`, `tags` and `max` as a client gives them (the /mcp URL's query, `kiwi mcp`'s flags); a bad one is refused, saying what to write. */
export function parseToolListing(given: { tools?: string | undefined; tags?: string | undefined; max?: string | undefined }): ToolListing {
  const { tools, tags, max } = given;
  if (tools !== undefined && tools !== 'real' && tools !== 'meta') throw new KiwiError('INVALID_INPUT', `tools must be "real" (the project's tools beside the meta-tools, the default) or "meta" (the five meta-tools only), got ${JSON.stringify(tools.slice(0, 40))}`);
  const listing: ToolListing = { real: tools !== 'meta', max: DEFAULT_LISTED_TOOLS };
  if (max !== undefined) {
    const n = Number(max);
    if (!/^\d{1,4}$/.test(max) || n < 1 || n > MAX_LISTED_TOOLS) throw new KiwiError('INVALID_INPUT', `max must be a whole number from 1 to ${MAX_LISTED_TOOLS} (how many tools are listed at first), got ${JSON.stringify(max.slice(0, 40))}`);
    listing.max = n;
  }
  if (tags !== undefined) {
    const list = tags.split(',').map((t) => t.trim()).filter((t) => t !== '');
    const bad = list.find((t) => !TAG.test(t));
    if (list.length === 0 || list.length > 20 || bad !== undefined) throw new KiwiError('INVALID_INPUT', `tags must be 1 to 20 tag names separated by commas (letters, digits, "_", ".", ":" or "-"), e.g. tags=git,files${bad === undefined ? '' : `; ${JSON.stringify(bad.slice(0, 40))} is not one`}`);
    listing.tags = list;
  }
  return listing;
}

export type RunProjectTool = (id: string, args: Record<string, unknown>, extra: ServerContext) => Promise<MetaAnswer>;

export interface ProjectTools {
  /** Adds these tools to the list, those the caller may run and that are not on it yet (a session's client is told the list changed). */
  show(ids: readonly string[]): void;
}

const TIER_ORDER = { project: 0, user: 1, registry: 2 } as const;

// A tool's compiled schema, shared by every server that lists it (one per session or request); a reloaded tool is a new object.
const schemas = new WeakMap<Tool, StandardSchemaWithJSON>();

function schemaOf(tool: Tool): StandardSchemaWithJSON {
  let schema = schemas.get(tool);
  if (schema === undefined) {
    schema = fromJsonSchema(parametersSchema(tool.parameters) as Parameters<typeof fromJsonSchema>[0]);
    schemas.set(tool, schema);
  }
  return schema;
}

export function registerProjectTools(server: McpServer, options: { tools: Iterable<Tool>; allowed: (tool: Tool) => boolean; listing: ToolListing; run: RunProjectTool }): ProjectTools {
  const { listing } = options;
  const tags = listing.tags;
  const eligible = [...resolvableTools(options.tools).values()]
    .filter((t) => !META_TOOL_NAMES.has(t.id) && (tags === undefined || t.tags.some((tag) => tags.includes(tag))) && options.allowed(t))
    .sort((a, b) => TIER_ORDER[a.source.tier] - TIER_ORDER[b.source.tier] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const byId = new Map(eligible.map((t) => [t.id, t]));
  const listed = new Map<string, RegisteredTool>();
  const register = (tool: Tool): void => {
    const approval = tool.requiresApproval ? ' Every call waits for a person to approve it first.' : '';
    listed.set(
      tool.id,
      server.registerTool(
        tool.id,
        {
          description: `${tool.description}${approval}`,
          inputSchema: schemaOf(tool),
          annotations: { readOnlyHint: !tool.mutatesState, destructiveHint: tool.mutatesState, openWorldHint: true },
        },
        (args, extra) => options.run(tool.id, args as Record<string, unknown>, extra),
      ),
    );
  };
  for (const tool of eligible.slice(0, listing.max)) register(tool);
  return {
    show(ids) {
      for (const id of ids) {
        const tool = byId.get(id);
        if (tool !== undefined && !listed.has(id)) register(tool);
      }
    },
  };
}
