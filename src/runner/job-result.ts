import type { ErrorCode } from '../base/errors.js';
import type { ToolResult } from '../contracts/tool-result.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import { textHead } from '../base/text-cut.js';

/**
 * A tool call's outcome as the runner reports it (§7.2): `success` with the tool's output as
 * `data`, or a failure with an `error` line and whether the kernel may run it again.
 *
 * Retryable only when running the call again is safe and may go differently: a timeout, a lost
 * connection or a cancelled call (this runner stopping) of a read-only tool. A tool that mutates
 * state may have done its work before it timed out, so its failures are final; so are a denial,
 * an unknown tool, bad arguments, and an error the tool itself reported (it ran; running it
 * again gives the same answer).
 */

export type JobResult = { success: true; data: ToolData } | { success: false; error: string; retryable: boolean; data?: ToolData };

/** What reaches the agent of a call that ran: the tool's text, and what the tool gave besides. */
export interface ToolData {
  text: string;
  data?: unknown;
  exit_code?: number | null;
  http_status?: number;
  /** The output was larger than a result may be: `text` is its start, `data` was left out. */
  truncated?: { bytes: number };
}

const TRANSIENT: ReadonlySet<ErrorCode | string> = new Set(['TOOL_TIMEOUT', 'HTTP_TIMEOUT', 'MCP_TIMEOUT', 'UPSTREAM_HTTP', 'TOOL_CANCELLED']);
/** The kernel keeps 4096 characters of an error (§7.2). */
const MAX_ERROR_CHARS = 4000;
/** The kernel refuses bodies over 1 MiB (§1); the rest of a result body stays well under the margin. */
export const MAX_DATA_BYTES = 1_000_000;

export function jobResult(outcome: CallOutcome, readOnly: boolean): JobResult {
  if (outcome.status === 'denied') return { success: false, error: cut(`denied: ${outcome.reason}`), retryable: false };
  if (outcome.status === 'error') {
    return { success: false, error: cut(`${outcome.error.code}: ${outcome.error.message}`), retryable: readOnly && TRANSIENT.has(outcome.error.code) };
  }
  const data = toolData(outcome.result);
  if (!outcome.result.isError) return { success: true, data };
  const how = outcome.result.exitCode != null ? ` (exit code ${outcome.result.exitCode})` : outcome.result.status !== undefined ? ` (HTTP ${outcome.result.status})` : '';
  const said = outcome.result.text.trim();
  return { success: false, error: cut(`${outcome.tool} reported an error${how}${said === '' ? '' : `: ${said}`}`), retryable: false, data };
}

/** The tool's output, cut to what one result may carry. */
export function toolData(result: ToolResult): ToolData {
  const full: ToolData = {
    text: result.text,
    ...(result.data === undefined ? {} : { data: result.data }),
    ...(result.exitCode === undefined ? {} : { exit_code: result.exitCode }),
    ...(result.status === undefined ? {} : { http_status: result.status }),
  };
  const bytes = Buffer.byteLength(JSON.stringify(full));
  if (bytes <= MAX_DATA_BYTES) return full;
  const { data: _dropped, ...rest } = full;
  for (let text = textHead(result.text, MAX_DATA_BYTES); ; ) {
    const cutDown: ToolData = { ...rest, text, truncated: { bytes } };
    const size = Buffer.byteLength(JSON.stringify(cutDown));
    if (size <= MAX_DATA_BYTES) return cutDown;
    text = textHead(text, Math.floor(text.length * (MAX_DATA_BYTES / size) * 0.95));
  }
}

function cut(text: string): string {
  return text.length > MAX_ERROR_CHARS ? `${textHead(text, MAX_ERROR_CHARS - 1)}…` : text;
}
