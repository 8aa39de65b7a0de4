import { z } from 'zod';
import { ISOLATION_LEVELS, type IsolationLevel } from '../registry/types.js';
import { DEFAULT_CONTAINER_LIMITS, type IsolationPolicy } from './isolation-choice.js';
import { matchesAny } from './permission-context.js';

/**
 * The policy's `isolation` field: the lowest level a tool may run at, for every tool and per tool
 * glob, and the limits of the containers `sandboxed` and `restricted` tools run in. A per-tool
 * minimum can only raise the overall one: the first `per_tool` key (in file order) that matches
 * the tool applies, as in `rate_limits.per_tool`, and the higher of the two is the floor.
 *
 * The minimum defaults to `standard`: a manifest alone cannot take its tool out of the sandbox
 * (`isolation: trusted`); the policy has to lower the floor to `trusted` first.
 */

const level = z.enum(ISOLATION_LEVELS, `must be one of ${ISOLATION_LEVELS.join(', ')}`);

export const isolationSchema = z.strictObject({
  minimum: level.optional(),
  per_tool: z.record(z.string().min(1, 'must not be empty'), level).optional(),
  container: z
    .strictObject({
      cpus: z.number().positive('must be more than 0').max(256, 'must be at most 256').optional(),
      memory_mb: z.number().int().min(16, 'must be at least 16').optional(),
      processes: z.number().int().min(8, 'must be at least 8').max(65_536, 'must be at most 65536').optional(),
      open_files: z.number().int().min(64, 'must be at least 64').max(1_048_576, 'must be at most 1048576').optional(),
    })
    .optional(),
});

export function toIsolationPolicy(raw: z.infer<typeof isolationSchema> | undefined): IsolationPolicy {
  const c = raw?.container;
  return {
    minimum: raw?.minimum ?? 'standard',
    perTool: raw?.per_tool ?? {},
    container: {
      cpus: c?.cpus ?? DEFAULT_CONTAINER_LIMITS.cpus,
      memoryMb: c?.memory_mb ?? DEFAULT_CONTAINER_LIMITS.memoryMb,
      processes: c?.processes ?? DEFAULT_CONTAINER_LIMITS.processes,
      openFiles: c?.open_files ?? DEFAULT_CONTAINER_LIMITS.openFiles,
    },
  };
}

const rank = (l: IsolationLevel): number => ISOLATION_LEVELS.indexOf(l);

/** The floor for this tool, and which setting set it (for the refusal). */
export function minimumFor(policy: IsolationPolicy, toolId: string): { level: IsolationLevel; setBy: string } {
  const key = Object.keys(policy.perTool).find((glob) => matchesAny([glob], toolId));
  const perTool = key === undefined ? undefined : (policy.perTool[key] as IsolationLevel);
  if (perTool !== undefined && rank(perTool) > rank(policy.minimum)) return { level: perTool, setBy: `isolation.per_tool["${key}"]` };
  return { level: policy.minimum, setBy: 'isolation.minimum' };
}

/** Why a tool that runs at `actual` may not, or undefined when the policy lets it. */
export function isolationRefusal(policy: IsolationPolicy, toolId: string, actual: IsolationLevel, policyLabel: string): string | undefined {
  const floor = minimumFor(policy, toolId);
  if (rank(actual) >= rank(floor.level)) return undefined;
  return `${policyLabel}: ${toolId} runs at isolation ${actual}, below the ${floor.level} that ${floor.setBy} requires; set \`isolation: ${floor.level}\` (or higher) in the tool's manifest, or lower ${floor.setBy}`;
}
