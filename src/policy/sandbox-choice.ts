/** What a policy chooses about the sandbox (primitives/sandbox.ts runs it): whether, with which bwrap, within which limits. */
export type SandboxMode = 'auto' | 'require' | 'off';

export interface SandboxLimits {
  /** RLIMIT_NPROC inside the sandbox. */
  processes: number;
  /** RLIMIT_AS, bytes. */
  memoryBytes: number;
  /** RLIMIT_CPU, seconds, for each call of a subprocess tool (never a long-lived MCP server); when absent, derived from the call's timeout. */
  cpuSeconds?: number;
  /** Size of the private /tmp, bytes; /dev/shm gets the same. Its pages are memory that RLIMIT_AS does not count. */
  tmpBytes: number;
}

export interface SandboxChoice {
  mode: SandboxMode;
  /** The bwrap executable: a path, or a name looked up in `path` and then the standard folders; default `bwrap`. */
  bwrap?: string;
  limits?: Partial<SandboxLimits>;
}
