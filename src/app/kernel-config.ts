import { z } from 'zod';
import { DEFAULT_KERNEL_LIMITS, type KernelLimits } from '../kernel/kernel-limits.js';

/**
 * gateway.yaml's `kernel:` section: whether chats are recorded as executions, and what the
 * kernel keeps (sizes, per-client quotas, retention; kernel/kernel-limits.ts).
 */

const fields = z.strictObject({
  record_chats: z.boolean('must be true or false').optional(),
  max_input_bytes: z.number().int().min(1024).max(1024 * 1024, 'must be at most 1048576: a request body is at most 1 MiB').optional(),
  max_live_executions_per_client: z.number().int().min(1).max(1_000_000).optional(),
  max_executions_per_client: z.number().int().min(1).max(10_000_000).optional(),
  max_input_bytes_per_client: z.number().int().min(1024).max(1024 * 1024 * 1024 * 1024).optional(),
  max_runners_per_client: z.number().int().min(1).max(100_000).optional(),
  max_tools_per_client: z.number().int().min(1).max(1_000_000).optional(),
  max_tool_bytes_per_client: z.number().int().min(1024).max(1024 * 1024 * 1024).optional(),
  // The watcher notes open streams every 30 s: an expiry near that would drop a connected runner's schemas.
  idle_runner_schemas_ms: z.number().int().min(60_000, 'must be at least 60000 (1 minute)').max(7 * 86_400_000).optional(),
  retention_days: z.number().int().min(1).max(3650).optional(),
  // Below a few heartbeats of a loaded replica, a busy gateway would be taken for dead.
  instance_timeout_ms: z.number().int().min(3_000, 'must be at least 3000 (3 s)').max(3_600_000).optional(),
});

export const kernelSchema = fields.optional();

/** The section's names, for the "did you mean" of a misspelt field. */
export const KERNEL_FIELDS = ['kernel', ...Object.keys(fields.shape)];

export function kernelLimits(k: z.output<typeof fields> = {}): KernelLimits {
  const d = DEFAULT_KERNEL_LIMITS;
  return {
    maxInputBytes: k.max_input_bytes ?? d.maxInputBytes,
    maxLiveExecutionsPerClient: k.max_live_executions_per_client ?? d.maxLiveExecutionsPerClient,
    maxExecutionsPerClient: k.max_executions_per_client ?? d.maxExecutionsPerClient,
    maxInputBytesPerClient: k.max_input_bytes_per_client ?? d.maxInputBytesPerClient,
    maxRunnersPerClient: k.max_runners_per_client ?? d.maxRunnersPerClient,
    maxToolsPerClient: k.max_tools_per_client ?? d.maxToolsPerClient,
    maxToolBytesPerClient: k.max_tool_bytes_per_client ?? d.maxToolBytesPerClient,
    idleRunnerSchemasMs: k.idle_runner_schemas_ms ?? d.idleRunnerSchemasMs,
    retentionMs: k.retention_days === undefined ? d.retentionMs : k.retention_days * 86_400_000,
    instanceTimeoutMs: k.instance_timeout_ms ?? d.instanceTimeoutMs,
  };
}
