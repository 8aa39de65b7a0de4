import { parseToolListing, type ToolListing } from '../../mcp-server/project-tools.js';

/** The tool list a client asks for in the /mcp URL: `?tools=real|meta&tags=git,files&max=20` (project-tools.ts). Throws INVALID_INPUT, saying what to write. */
export function toolListingOf(url: string): ToolListing {
  const query = new URL(url).searchParams;
  const given = (name: string): string | undefined => query.get(name) ?? undefined;
  return parseToolListing({ tools: given('tools'), tags: given('tags'), max: given('max') });
}
