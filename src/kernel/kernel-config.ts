import { z } from 'zod';
import { DEFAULT_KERNEL_LIMITS as d, type KernelLimits } from './kernel-limits.js';

/**
 * gateway.yaml's `kernel:` section: whether chats are recorded as executions, and what the
 * kernel keeps (sizes, per-client quotas, retention; kernel/kernel-limits.ts).
 */

const DAY_MS = 86_400_000;

export const kernelSchema = z
  .strictObject({
    record_chats: z.boolean('must be true or false').default(true),
    max_input_bytes: z.number().int().min(1024).max(1024 * 1024, 'must be at most 1048576: a request body is at most 1 MiB').default(d.maxInputBytes),
    max_live_executions_per_client: z.number().int().min(1).max(1_000_000).default(d.maxLiveExecutionsPerClient),
    max_executions_per_client: z.number().int().min(1).max(10_000_000).default(d.maxExecutionsPerClient),
    max_input_bytes_per_client: z.number().int().min(1024).max(1024 * 1024 * 1024 * 1024).default(d.maxInputBytesPerClient),
    max_runners_per_client: z.number().int().min(1).max(100_000).default(d.maxRunnersPerClient),
    max_tools_per_client: z.number().int().min(1).max(1_000_000).default(d.maxToolsPerClient),
    max_tool_bytes_per_client: z.number().int().min(1024).max(1024 * 1024 * 1024).default(d.maxToolBytesPerClient),
    // The watcher notes open streams every 30 s: an expiry near that would drop a connected runner's schemas.
    idle_runner_schemas_ms: z.number().int().min(60_000, 'must be at least 60000 (1 minute)').max(7 * DAY_MS).default(d.idleRunnerSchemasMs),
    retention_days: z.number().int().min(1).max(3650).default(d.retentionMs / DAY_MS),
    // Below a few heartbeats of a loaded replica, a busy gateway would be taken for dead.
    instance_timeout_ms: z.number().int().min(3_000, 'must be at least 3000 (3 s)').max(3_600_000).default(d.instanceTimeoutMs),
  })
  .prefault({})
  .transform((k): { recordChats: boolean; limits: KernelLimits } => ({
    recordChats: k.record_chats,
    limits: {
      maxInputBytes: k.max_input_bytes,
      maxLiveExecutionsPerClient: k.max_live_executions_per_client,
      maxExecutionsPerClient: k.max_executions_per_client,
      maxInputBytesPerClient: k.max_input_bytes_per_client,
      maxRunnersPerClient: k.max_runners_per_client,
      maxToolsPerClient: k.max_tools_per_client,
      maxToolBytesPerClient: k.max_tool_bytes_per_client,
      idleRunnerSchemasMs: k.idle_runner_schemas_ms,
      retentionMs: k.retention_days * DAY_MS,
      instanceTimeoutMs: k.instance_timeout_ms,
    },
  }));
