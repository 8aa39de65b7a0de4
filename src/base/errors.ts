/**
 * One error class for everything the gateway raises on purpose. The `code` is what callers
 * branch on; the message is for people and says what to fix. ERROR_CODES is the one table of
 * what each code is at every edge: its HTTP status on the chat edges (and in the CLI's client),
 * its code on the kernel's /v0 and the admin API, its OpenAI-style `code` where it has one.
 */

/** The kernel v0 spec's error codes (its §3) and the status each goes with; the admin API answers with the same. */
export const API_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ApiCode = keyof typeof API_STATUS;

export interface ErrorRow {
  /** The status on the chat edges (OpenAI, Anthropic, Responses) and the MCP route's refusals. */
  readonly http: number;
  /** The code on /v0 and /admin/v1; its status is API_STATUS's. INTERNAL_ERROR means a bug: logged, its message kept on the server. */
  readonly api: ApiCode;
  /** OpenAI's machine-readable `code` on the chat edges, where a client branches on one. */
  readonly chat?: string;
  /** What the code means, for docs/troubleshooting.md's table of codes. */
  readonly doc: string;
}

// The spec has no 422, 502 or 504: a request the gateway understood but cannot accept is its 400,
// and a fault behind the gateway (a tool, an upstream, an MCP server) its 503, the one 5xx that
// is not a bug. A limit that stays reached until a person or a window changes it is its 409, as
// QUOTA_EXCEEDED: the Rebuno TS SDK retries a 429 three times after Retry-After, which cannot help.
const ROWS = {
  INVALID_INPUT: { http: 400, api: 'VALIDATION_ERROR', doc: 'The request, an argument or a config file is malformed; the message names the field.' },
  INVALID_DIRECTIVE: { http: 422, api: 'VALIDATION_ERROR', doc: 'A directive cannot be signed or rewritten: its `<directive>` block is missing or incomplete.' },
  INVALID_KNOWLEDGE: { http: 422, api: 'VALIDATION_ERROR', doc: 'A knowledge entry cannot be signed: its front matter is missing, not a mapping, or has no id.' },
  INVALID_POLICY: { http: 422, api: 'VALIDATION_ERROR', doc: 'The policy file or a policy given with a request is invalid.' },
  TOOL_NOT_FOUND: { http: 404, api: 'NOT_FOUND', doc: 'No tool with that id in the registry.' },
  CHAIN_INVALID: { http: 422, api: 'VALIDATION_ERROR', doc: "A tool's executor chain or config does not fit its runtime; fix the manifest." },
  POLICY_DENIED: { http: 403, api: 'FORBIDDEN', doc: "The policy or the caller's role does not allow it." },
  // Retried by the SDKs (with Retry-After on /v0), which is right: a busy queue frees up.
  RATE_LIMITED: { http: 429, api: 'RATE_LIMITED', doc: 'Too many at once (queued texts, background threads, a busy local model); retry shortly.' },
  // 429 on the chat edges, with x-should-retry: false; on /v0 the 409, as QUOTA_EXCEEDED (above).
  BUDGET_EXCEEDED: { http: 429, api: 'CONFLICT', chat: 'budget_exceeded', doc: "A client's spending budget is used up until its window starts afresh." },
  QUOTA_EXCEEDED: { http: 409, api: 'CONFLICT', doc: "A client's share of kept state (kernel quotas, created items) is full: a hard limit, not a rate." },
  TOOL_TIMEOUT: { http: 504, api: 'SERVICE_UNAVAILABLE', doc: 'A tool ran past its timeout and was stopped.' },
  // 499 (client closed request): the caller went away or the gateway is stopping; on /v0 the 503 a retry may get past.
  TOOL_CANCELLED: { http: 499, api: 'SERVICE_UNAVAILABLE', doc: 'The work was cancelled before it finished: the caller went away or the gateway is stopping.' },
  TOOL_FAILED: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: 'A tool, or a command the gateway runs itself (git for checkpoints), failed.' },
  HOOK_FAILED: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: 'A hook decided the call fails (`fail`).' },
  HOOK_ABORTED: { http: 409, api: 'CONFLICT', doc: 'A hook stopped the run that made the call (`abort`).' },
  OUTPUT_TOO_LARGE: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: 'A tool or command wrote more than its output cap.' },
  SPAWN_FAILED: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: "A tool's process, container or MCP server could not be started." },
  // 424 Failed Dependency is 4xx: retrying cannot install a package, so the 409 and not the retried 503.
  REQUIREMENT_MISSING: { http: 424, api: 'CONFLICT', doc: "A Python tool's `config.requires` names a package that is missing or too old where it would run." },
  HTTP_TIMEOUT: { http: 504, api: 'SERVICE_UNAVAILABLE', doc: 'An HTTP tool or an upstream did not answer in time.' },
  HTTP_REDIRECT: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: "An HTTP tool's redirects cannot be followed: too many, or an answer with several Location headers." },
  UPSTREAM_HTTP: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: "An upstream (LLM, HTTP tool) failed or refused; the chat edges keep an upstream's 4xx status." },
  UNKNOWN_MODEL: { http: 404, api: 'NOT_FOUND', chat: 'model_not_found', doc: 'No upstream serves the requested model.' },
  PAYLOAD_TOO_LARGE: { http: 413, api: 'VALIDATION_ERROR', chat: 'payload_too_large', doc: 'The request body is over the cap.' },
  REQUEST_TIMEOUT: { http: 408, api: 'VALIDATION_ERROR', chat: 'request_timeout', doc: 'The request body did not arrive in time.' },
  MCP_ERROR: { http: 502, api: 'SERVICE_UNAVAILABLE', doc: 'An MCP server used as a tool failed, exited or answered with an error.' },
  MCP_TIMEOUT: { http: 504, api: 'SERVICE_UNAVAILABLE', doc: 'An MCP server used as a tool did not answer in time.' },
  NOT_FOUND: { http: 404, api: 'NOT_FOUND', doc: 'No such execution, step, thread, key or other item.' },
  CONFLICT: { http: 409, api: 'CONFLICT', doc: 'The item is not in a state that allows it (already ended, resolved, in use).' },
  UNAUTHORIZED: { http: 401, api: 'UNAUTHORIZED', doc: 'No key, a wrong key, or an expired session.' },
  UNAVAILABLE: { http: 503, api: 'SERVICE_UNAVAILABLE', doc: 'A service shared with replicas (Redis) does not answer: the request is refused, not let through unchecked.' },
  INTERNAL: { http: 500, api: 'INTERNAL_ERROR', doc: 'A gateway bug; the log has it under the request id.' },
} satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof ROWS;

export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorRow>> = ROWS;

/** As undici's: the brand is in the global symbol registry, so two copies of this module know each other's errors. */
const BRAND: unique symbol = Symbol.for('kiwi.error');

export class KiwiError extends Error {
  override readonly name = 'KiwiError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly [BRAND] = true;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }

  /** `instanceof KiwiError` holds for a KiwiError of another copy of this module too. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }
}

/** A KiwiError, of this copy of the module or another, whose code this table knows (and is `code` when given). */
export function isKiwiError(value: unknown, code?: ErrorCode): value is KiwiError {
  return value instanceof KiwiError && Object.hasOwn(ERROR_CODES, value.code) && (code === undefined || value.code === code);
}

/** Maps any thrown value to an HTTP status; unknown errors are 500. */
export function toHttpStatus(error: unknown): number {
  return isKiwiError(error) ? ERROR_CODES[error.code].http : 500;
}

/** A one-line description of any thrown value, for CLI output and audit records. */
export function describeError(error: unknown): string {
  if (isKiwiError(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}
