import { KiwiError } from '../base/errors.js';
import type { SqlQueryable } from '../store/sql/sql-db.js';

/**
 * Every bound on what the kernel keeps, in one place (issue 22 finding 8: without them 100 runners
 * added 222 MB of schemas in 13 s and 160 executions 600 MB of inputs). Three kinds:
 *
 * - sizes of one object, fixed here: labels, tool schemas, a page of GET /v0/tools;
 * - quotas per client (the client of the key that made the object), settable under `kernel:` in
 *   .ai/config/gateway.yaml: live executions, executions kept (ended ones too) and the bytes of
 *   their inputs, runners, published tools and their bytes. Over one,
 *   a request is refused with 409 CONFLICT (QUOTA_EXCEEDED) and not 429: the TS SDK retries a 429
 *   three times, which cannot help while the quota stays full;
 * - retention, also settable: a runner's schemas go once it has had no stream for a while, a
 *   runner's record once it has had none for the retention time, and ended executions (with their
 *   events, steps, labels, signals and jobs) once they have been ended that long.
 */

export interface KernelLimits {
  /** An execution's `input` as JSON text, in bytes (bodies are capped at 1 MiB anyway, §1). */
  maxInputBytes: number;
  /** Executions of one client not ended (pending, running, blocked) made through POST /v0/executions. */
  maxLiveExecutionsPerClient: number;
  /**
   * Executions of one client kept, ended or not, made through POST /v0/executions (issue 39: a
   * client that cancels what it makes is never at its live quota). Past it, a create deletes the
   * client's oldest ended ones first; only its live ones over it refuse the create.
   */
  maxExecutionsPerClient: number;
  /** The bytes of their inputs together, kept the same way. */
  maxInputBytesPerClient: number;
  /** Runner ids one client has recorded (by a stream or a publish) and not unregistered or expired. */
  maxRunnersPerClient: number;
  /** Tool schemas published by all of one client's runners together. */
  maxToolsPerClient: number;
  /** Their bytes (id, description and input schema as stored) together. */
  maxToolBytesPerClient: number;
  /** A runner with no stream open for this long (since its last stream or publish) loses its schemas. */
  idleRunnerSchemasMs: number;
  /** Ended executions, and runners without a stream, are deleted this long after. */
  retentionMs: number;
  /**
   * On a shared server, a gateway silent this long is taken for dead and another takes over what
   * it held (instances.ts); it says it is alive every quarter of this (at most every 10 s).
   */
  instanceTimeoutMs: number;
}

export const DEFAULT_KERNEL_LIMITS: Readonly<KernelLimits> = {
  // A quarter of the body cap: an input is stored twice (the row and execution.created).
  maxInputBytes: 256 * 1024,
  maxLiveExecutionsPerClient: 1000,
  maxExecutionsPerClient: 10_000,
  // 256 inputs at the size cap; stored twice (the row and execution.created), 128 MiB a client.
  maxInputBytesPerClient: 64 * 1024 * 1024,
  maxRunnersPerClient: 100,
  maxToolsPerClient: 2000,
  maxToolBytesPerClient: 16 * 1024 * 1024,
  idleRunnerSchemasMs: 10 * 60_000,
  retentionMs: 30 * 24 * 3_600_000,
  instanceTimeoutMs: 45_000,
};

/** Where each quota is set, for the message that refuses a request over it. */
export const LIMIT_KEYS: Readonly<Record<keyof KernelLimits, string>> = {
  maxInputBytes: 'kernel.max_input_bytes',
  maxLiveExecutionsPerClient: 'kernel.max_live_executions_per_client',
  maxExecutionsPerClient: 'kernel.max_executions_per_client',
  maxInputBytesPerClient: 'kernel.max_input_bytes_per_client',
  maxRunnersPerClient: 'kernel.max_runners_per_client',
  maxToolsPerClient: 'kernel.max_tools_per_client',
  maxToolBytesPerClient: 'kernel.max_tool_bytes_per_client',
  idleRunnerSchemasMs: 'kernel.idle_runner_schemas_ms',
  retentionMs: 'kernel.retention_days',
  instanceTimeoutMs: 'kernel.instance_timeout_ms',
};

/** Labels of one execution: at most 64, keys of 1 to 64 characters, values of at most 256. */
export const MAX_LABELS = 64;
export const MAX_LABEL_KEY_CHARS = 64;
export const MAX_LABEL_VALUE_CHARS = 256;

/** One runner's publish (§7.5); the body's 1 MiB cap bounds it in bytes. */
export const MAX_TOOLS_PER_RUNNER = 1000;
export const MAX_TOOL_ID_CHARS = 256;
export const MAX_DESCRIPTION_CHARS = 8192;
/** One input schema as JSON text. */
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;

/** One page of GET /v0/tools: at most this many tools, and no more bytes of stored schemas than this (a single larger tool still goes alone). */
export const TOOLS_PAGE_MAX = 1000;
export const TOOLS_PAGE_MAX_BYTES = 4 * 1024 * 1024;

/** The labels and input of a new execution, within the bounds; throws INVALID_INPUT (400) naming the one crossed. */
export function checkExecutionBounds(limits: Pick<KernelLimits, 'maxInputBytes'>, input: unknown, labels: Record<string, string>): void {
  const keys = Object.keys(labels);
  if (keys.length > MAX_LABELS) throw new KiwiError('INVALID_INPUT', `labels has ${keys.length} entries; an execution may have at most ${MAX_LABELS}`);
  for (const key of keys) {
    if (key === '' || key.length > MAX_LABEL_KEY_CHARS) throw new KiwiError('INVALID_INPUT', `label key ${JSON.stringify(key.slice(0, 80))} must be 1 to ${MAX_LABEL_KEY_CHARS} characters`);
    if ((labels[key] as string).length > MAX_LABEL_VALUE_CHARS) throw new KiwiError('INVALID_INPUT', `label ${JSON.stringify(key)} is longer than ${MAX_LABEL_VALUE_CHARS} characters`);
  }
  const bytes = Buffer.byteLength(JSON.stringify(input ?? null), 'utf8');
  if (bytes > limits.maxInputBytes) {
    throw new KiwiError('INVALID_INPUT', `input is ${bytes} bytes as JSON; an execution's input may be at most ${limits.maxInputBytes} bytes (${LIMIT_KEYS.maxInputBytes} in .ai/config/gateway.yaml)`);
  }
}

/** The refusal of a request over a client's quota: what is full, and how to make room or raise it. */
export function quotaExceeded(limit: keyof KernelLimits, client: string, what: string, remedy: string): KiwiError {
  return new KiwiError(
    'QUOTA_EXCEEDED',
    `quota exceeded: client ${JSON.stringify(client)} ${what} (${LIMIT_KEYS[limit]}); ${remedy}, or ask the gateway's operator to raise ${LIMIT_KEYS[limit]} in .ai/config/gateway.yaml`,
    { details: { quota: LIMIT_KEYS[limit] } },
  );
}

/** Serialises the quota checks of one client's kind of object across transactions (and gateways on one database). */
export async function lockClientQuota(tx: SqlQueryable, kind: string, client: string): Promise<void> {
  await tx.query('select pg_advisory_xact_lock(hashtext($1))', [`kiwi-quota:${kind}:${client}`]);
}
