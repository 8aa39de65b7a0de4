import type { ToolResult } from '../contracts/tool-result.js';

/**
 * What the audit log keeps of a tool's result. The text goes in whole: the writer redacts it and
 * cuts it to its string cap with the full size and hash, so there is one place that decides.
 */
export function resultPreview(result: ToolResult): Record<string, unknown> {
  return {
    text: result.text,
    is_error: result.isError,
    ...(result.exitCode !== undefined ? { exit_code: result.exitCode } : {}),
    ...(result.status !== undefined ? { status: result.status } : {}),
  };
}
