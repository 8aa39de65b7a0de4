/**
 * One error class for everything the gateway raises on purpose. The `code` is what callers
 * branch on and what the HTTP and JSON-RPC edges map to a status; the message is for people
 * and says what to fix.
 */
export type ErrorCode =
  | 'INVALID_INPUT'
  | 'INVALID_MANIFEST'
  | 'INVALID_DIRECTIVE'
  | 'INVALID_KNOWLEDGE'
  | 'INVALID_POLICY'
  | 'SIGNATURE_INVALID'
  | 'TOOL_NOT_FOUND'
  | 'CHAIN_INVALID'
  | 'POLICY_DENIED'
  | 'RATE_LIMITED'
  | 'BUDGET_EXCEEDED'
  /** A client's share of kept state (kernel-limits.ts) is full: a hard limit, not a rate, so never 429. */
  | 'QUOTA_EXCEEDED'
  | 'TOOL_TIMEOUT'
  | 'TOOL_CANCELLED'
  | 'TOOL_FAILED'
  /** A hook decided the call fails (`fail`), or that the run that made it stops (`abort`). */
  | 'HOOK_FAILED'
  | 'HOOK_ABORTED'
  | 'OUTPUT_TOO_LARGE'
  | 'SPAWN_FAILED'
  /** A Python tool's `config.requires` names a package that is missing or too old where it would run. */
  | 'REQUIREMENT_MISSING'
  | 'HTTP_TIMEOUT'
  | 'HTTP_REDIRECT'
  | 'UPSTREAM_HTTP'
  | 'UNKNOWN_MODEL'
  | 'PAYLOAD_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'MCP_ERROR'
  | 'MCP_TIMEOUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNAUTHORIZED'
  /** A service the gateway shares with its replicas (Redis) does not answer: the request is refused, not let through unchecked. */
  | 'UNAVAILABLE'
  | 'INTERNAL';

export class KiwiError extends Error {
  override readonly name = 'KiwiError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }
}

export function isKiwiError(value: unknown, code?: ErrorCode): value is KiwiError {
  return value instanceof KiwiError && (code === undefined || value.code === code);
}

const HTTP_STATUS: Record<ErrorCode, number> = {
  INVALID_INPUT: 400,
  INVALID_MANIFEST: 422,
  INVALID_DIRECTIVE: 422,
  INVALID_KNOWLEDGE: 422,
  INVALID_POLICY: 422,
  SIGNATURE_INVALID: 422,
  TOOL_NOT_FOUND: 404,
  CHAIN_INVALID: 422,
  POLICY_DENIED: 403,
  RATE_LIMITED: 429,
  BUDGET_EXCEEDED: 429,
  QUOTA_EXCEEDED: 409,
  TOOL_TIMEOUT: 504,
  TOOL_CANCELLED: 499,
  TOOL_FAILED: 502,
  HOOK_FAILED: 502,
  HOOK_ABORTED: 409,
  OUTPUT_TOO_LARGE: 502,
  SPAWN_FAILED: 502,
  REQUIREMENT_MISSING: 424,
  HTTP_TIMEOUT: 504,
  HTTP_REDIRECT: 502,
  UPSTREAM_HTTP: 502,
  UNKNOWN_MODEL: 404,
  PAYLOAD_TOO_LARGE: 413,
  REQUEST_TIMEOUT: 408,
  MCP_ERROR: 502,
  MCP_TIMEOUT: 504,
  NOT_FOUND: 404,
  CONFLICT: 409,
  UNAUTHORIZED: 401,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** Maps any thrown value to an HTTP status; unknown errors are 500. */
export function toHttpStatus(error: unknown): number {
  return isKiwiError(error) ? HTTP_STATUS[error.code] : 500;
}

/** Maps any thrown value to a JSON-RPC error code (-32602 invalid params, -32603 internal, -32000.. server). */
export function toJsonRpcCode(error: unknown): number {
  if (!isKiwiError(error)) return -32603;
  const status = HTTP_STATUS[error.code];
  if (status === 400 || status === 422) return -32602;
  if (status === 404) return -32601;
  return status >= 500 ? -32000 : -32001;
}

/** A one-line description of any thrown value, for CLI output and audit records. */
export function describeError(error: unknown): string {
  if (isKiwiError(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}
