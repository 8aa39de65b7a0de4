/** What a tool call gives back, whichever executor ran it: the one shape audit, the proxy and every edge read. */
export interface ToolResult {
  /** Readable text for an agent or a terminal. */
  text: string;
  /** Structured data where the tool gave any (parsed JSON, MCP structured content). */
  data?: unknown;
  exitCode?: number | null;
  status?: number;
  isError: boolean;
}
