import { stringify } from 'yaml';
import type { ImportedTool } from './openapi-import.js';
import { snakeCase } from './openapi-import.js';
import { isObject, summaryText } from './openapi-schema.js';

/** What `tools/list` says of one tool (the client pool's McpToolInfo has these). */
export interface ListedMcpTool {
  name: string;
  /** `server.tool`. */
  qualifiedName: string;
  description: string;
  title?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/**
 * An MCP server's `tools/list` as `mcp_tool` manifests, one per tool: `SERVER_TOOL` as the id (so
 * the resolver finds it and the policy grants it like any tool), its description, its input schema
 * as the parameters, and `mutates_state: false` only where the server says `readOnlyHint: true`
 * (a hint, so anything else is taken to change state). The server's own manifest (`mcp_server`)
 * runs them; the policy's `mcp.tools` still decides which run.
 */
export function importMcpTools(server: string, tools: readonly ListedMcpTool[]): { tools: ImportedTool[]; skipped: string[] } {
  const out: ImportedTool[] = [];
  const skipped: string[] = [];
  const ids = new Set<string>();
  for (const tool of tools) {
    const schema = tool.inputSchema;
    if (!isObject(schema) || (schema['type'] !== undefined && schema['type'] !== 'object')) {
      skipped.push(`${tool.qualifiedName}: its input schema is not an object schema`);
      continue;
    }
    let id = `${server}_${snakeCase(tool.name)}`.slice(0, 120);
    for (let n = 2; ids.has(id); n++) id = `${server}_${snakeCase(tool.name)}_${n}`;
    ids.add(id);
    const manifest = {
      tool_id: id,
      tool_type: 'mcp_tool',
      executor: server,
      version: '1.0.0',
      description: summaryText(tool.description) ?? summaryText(tool.title) ?? `${tool.name} of MCP server ${server}`,
      mutates_state: tool.annotations?.['readOnlyHint'] !== true,
      tags: [...new Set([snakeCase(server) || 'mcp', 'mcp'])],
      config: { tool: tool.name },
      parameters: { ...schema, type: 'object' },
    };
    out.push({ id, operation: tool.qualifiedName, text: `# Imported from MCP server ${server} (${tool.qualifiedName}) by \`kiwi tools import mcp\`; importing it again rewrites this file.\n${stringify(manifest, { lineWidth: 0 })}` });
  }
  return { tools: out, skipped };
}
