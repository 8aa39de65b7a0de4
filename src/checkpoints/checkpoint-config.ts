import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { formatFieldPath } from '../registry/validation-error.js';
import { parseYamlSource, yamlFailure } from '../registry/yaml-source.js';
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

export const checkpointsSchema = z.strictObject({
  enabled: z.boolean('must be true or false').optional(),
  max_file_bytes: z.number().int().min(1024).max(4096 * MiB).optional(),
  max_total_bytes: z.number().int().min(1024).max(64 * 1024 * MiB).optional(),
  timeout_ms: z.number().int().min(100).max(600_000).optional(),
});

export function toCheckpointSettings(raw: z.output<typeof checkpointsSchema> | undefined): CheckpointSettings {
  return {
    enabled: raw?.enabled ?? DEFAULT_CHECKPOINTS.enabled,
    maxFileBytes: raw?.max_file_bytes ?? DEFAULT_CHECKPOINTS.maxFileBytes,
    maxTotalBytes: raw?.max_total_bytes ?? DEFAULT_CHECKPOINTS.maxTotalBytes,
    timeoutMs: raw?.timeout_ms ?? DEFAULT_CHECKPOINTS.timeoutMs,
  };
}

const MAX_FILE_BYTES = 64 * 1024;

/** The settings in `file` (gateway.yaml); defaults when the file or the section is absent. */
export async function readCheckpointSettings(file: string, root: string): Promise<CheckpointSettings> {
  const shown = shownPath(root, file);
  let text: string;
  try {
    text = (await readCappedFile(file, MAX_FILE_BYTES, () => new KiwiError('INVALID_INPUT', `${shown}: larger than ${MAX_FILE_BYTES} bytes; it should be a few lines`))).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ...DEFAULT_CHECKPOINTS };
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `${shown}: cannot read the gateway config (${(error as Error).message})`);
  }
  const parsed = parseYamlSource(text);
  if (!parsed.ok) {
    throw new KiwiError('INVALID_INPUT', yamlFailure(shown, parsed.errors));
  }
  const data = parsed.value.data;
  const section = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>)['checkpoints'] : undefined;
  const checked = checkpointsSchema.optional().safeParse(section ?? undefined);
  if (checked.success) return toCheckpointSettings(checked.data);
  const issue = checked.error.issues[0];
  const at = ['checkpoints', ...(issue?.path ?? [])];
  const key = issue?.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
  const pos = key === undefined ? parsed.value.locate(at) : parsed.value.locateKey(at, key);
  const field = formatFieldPath(key === undefined ? at : [...at, key]);
  const what = key === undefined ? (issue?.message ?? 'invalid') : 'unknown field; the fields are enabled, max_file_bytes, max_total_bytes, timeout_ms';
  throw new KiwiError('INVALID_INPUT', `${pos === undefined ? shown : `${shown}:${pos.line}:${pos.column}`}: ${field}: ${what}; see the comments in .ai/config/gateway.yaml`);
}
