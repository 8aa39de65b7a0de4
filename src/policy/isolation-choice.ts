import type { IsolationLevel } from '../registry/types.js';

/** What a policy chooses about isolation levels (isolation-policy.ts reads it; primitives/container.ts runs the containers). */
export interface ContainerLimits {
  cpus: number;
  memoryMb: number;
  /** The container's pids limit (`--pids-limit`): the fork-bomb cap. */
  processes: number;
  /** RLIMIT_NOFILE inside, soft and hard. */
  openFiles: number;
}

export interface IsolationPolicy {
  minimum: IsolationLevel;
  perTool: Record<string, IsolationLevel>;
  container: ContainerLimits;
}

export const DEFAULT_CONTAINER_LIMITS: ContainerLimits = { cpus: 1, memoryMb: 512, processes: 256, openFiles: 1024 };
