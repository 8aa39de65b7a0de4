import type { Client } from '@modelcontextprotocol/client';
import { KiwiError } from '../base/errors.js';
import { closeNames } from './close-names.js';

export interface McpToolInfo {
  server: string;
  name: string;
  /** `server.tool`, the name the gateway shows agents. */
  qualifiedName: string;
  description: string;
  inputSchema: Record<string, unknown>;
  title?: string;
  outputSchema?: Record<string, unknown>;
  /** The server's hints (readOnlyHint, destructiveHint, …); untrusted, for display and defaults only. */
  annotations?: Record<string, unknown>;
}

// A server that keeps handing out cursors must not keep us listing forever.
const MAX_PAGES = 100;

/** Reads every page of `tools/list`. */
export async function fetchToolCatalog(client: Client, server: string, timeoutMs: number): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: timeoutMs });
    for (const tool of result.tools) {
      tools.push({
        server,
        name: tool.name,
        qualifiedName: `${server}.${tool.name}`,
        description: tool.description ?? tool.title ?? '',
        inputSchema: { ...tool.inputSchema },
        ...(tool.title === undefined ? {} : { title: tool.title }),
        ...(tool.outputSchema === undefined ? {} : { outputSchema: { ...tool.outputSchema } }),
        ...(tool.annotations === undefined ? {} : { annotations: { ...tool.annotations } }),
      });
    }
    cursor = result.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

/** Accepts the bare tool name, or `server.tool` as listTools shows it. */
export function findTool(tools: readonly McpToolInfo[], server: string, wanted: string): McpToolInfo | undefined {
  const exact = tools.find((tool) => tool.name === wanted);
  if (exact !== undefined) return exact;
  const prefix = `${server}.`;
  return wanted.startsWith(prefix) ? tools.find((tool) => tool.name === wanted.slice(prefix.length)) : undefined;
}

export function unknownToolError(tools: readonly McpToolInfo[], server: string, wanted: string): KiwiError {
  const names = tools.map((tool) => tool.name);
  const bare = wanted.startsWith(`${server}.`) ? wanted.slice(server.length + 1) : wanted;
  const close = closeNames(bare, names);
  const hint = close.length > 0 ? ` Did you mean: ${close.join(', ')}?` : '';
  const shown = names.slice(0, 20).join(', ');
  const more = names.length > 20 ? ` (${names.length} in all; use listTools for the rest)` : '';
  const available = names.length === 0 ? ' It offers no tools.' : ` Its tools: ${shown}${more}.`;
  return new KiwiError('TOOL_NOT_FOUND', `MCP server "${server}" has no tool "${wanted}".${hint}${available}`, {
    details: { server, tool: wanted, closeNames: close },
  });
}
