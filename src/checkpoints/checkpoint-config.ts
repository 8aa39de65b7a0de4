import { z } from 'zod';
import { loadYamlConfig } from '../registry/yaml-config.js';
import { shownPath } from '../base/shown-path.js';

/**
 * The `checkpoints:` section of `.ai/config/gateway.yaml`. Every process that runs tools for a
 * project (the gateway, `kiwi run`, `kiwi mcp`, a runner) reads it, so it is read on its own here:
 * a mistake elsewhere in the file stops `kiwi serve` (which checks the whole file), not `kiwi run`.
 */

export interface CheckpointSettings {
  /** On by default; it only has an effect in a git work tree. */
  enabled: boolean;
  maxFileBytes: number;
  maxTotalBytes: number;
  /** What one checkpoint may take before the call goes ahead without one. */
  timeoutMs: number;
}

const MiB = 1024 * 1024;
export const DEFAULT_CHECKPOINTS: CheckpointSettings = { enabled: true, maxFileBytes: 50 * MiB, maxTotalBytes: 200 * MiB, timeoutMs: 10_000 };

export const checkpointsSchema = z
  .strictObject({
    enabled: z.boolean('must be true or false').default(DEFAULT_CHECKPOINTS.enabled),
    max_file_bytes: z.number().int().min(1024).max(4096 * MiB).default(DEFAULT_CHECKPOINTS.maxFileBytes),
    max_total_bytes: z.number().int().min(1024).max(64 * 1024 * MiB).default(DEFAULT_CHECKPOINTS.maxTotalBytes),
    timeout_ms: z.number().int().min(100).max(600_000).default(DEFAULT_CHECKPOINTS.timeoutMs),
  })
  .prefault({})
  .transform((c): CheckpointSettings => ({ enabled: c.enabled, maxFileBytes: c.max_file_bytes, maxTotalBytes: c.max_total_bytes, timeoutMs: c.timeout_ms }));

// The rest of the file is kiwi serve's to check: here only this section, of a mapping.
const fileSchema = z.preprocess((data) => (data !== null && typeof data === 'object' && !Array.isArray(data) ? data : {}), z.looseObject({ checkpoints: checkpointsSchema }));

/** The settings in `file` (gateway.yaml); defaults when the file or the section is absent. */
export async function readCheckpointSettings(file: string, root: string): Promise<CheckpointSettings> {
  const loaded = await loadYamlConfig(file, { shown: shownPath(root, file), schema: fileSchema, maxBytes: 64 * 1024, hint: 'see the comments in .ai/config/gateway.yaml' });
  return (loaded?.data ?? fileSchema.parse({})).checkpoints;
}
