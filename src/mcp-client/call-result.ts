import { KiwiError } from '../base/errors.js';
import { MAX_JSON_DEPTH, valueTooDeep } from '../base/json-depth.js';

export interface McpCallResult {
  content: unknown[];
  structuredContent?: unknown;
  /** The tool reported a failure (an expected outcome, returned as a value). */
  isError: boolean;
  /** The text parts of `content`, joined with newlines. */
  text: string;
}

/** Flattens what the SDK parsed into our result, and refuses text over the cap instead of cutting it silently. */
export function toCallResult(
  raw: Record<string, unknown>,
  where: { server: string; tool: string; maxResultBytes: number },
): McpCallResult {
  const content = Array.isArray(raw.content) ? raw.content : [];
  const text = content
    .filter((part): part is { type: 'text'; text: string } => isTextPart(part))
    .map((part) => part.text)
    .join('\n');
  // The SDK parsed the server's message at any depth; what reads the result next (the audit's
  // preview, JSON.stringify on the way to the client) recurses, and would overflow the stack.
  if (valueTooDeep(raw)) {
    throw new KiwiError('MCP_ERROR', `Tool "${where.tool}" on MCP server "${where.server}" returned a result nested more than ${MAX_JSON_DEPTH} levels of arrays and objects; the server's answer is refused`, {
      details: { server: where.server, tool: where.tool },
    });
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > where.maxResultBytes) {
    throw new KiwiError(
      'OUTPUT_TOO_LARGE',
      `Tool "${where.tool}" on MCP server "${where.server}" returned ${bytes} bytes of text, over the ${where.maxResultBytes}-byte cap. ` +
        `Ask for less (narrower arguments, paging, a head/limit parameter) or raise maxResultBytes.`,
      { details: { server: where.server, tool: where.tool, bytes, maxResultBytes: where.maxResultBytes } },
    );
  }
  return {
    content,
    ...(raw.structuredContent === undefined ? {} : { structuredContent: raw.structuredContent }),
    isError: raw.isError === true,
    text,
  };
}

function isTextPart(part: unknown): boolean {
  return typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text' && typeof (part as { text?: unknown }).text === 'string';
}
