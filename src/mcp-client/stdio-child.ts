import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { KiwiError } from '../base/errors.js';
import type { SandboxGrant, Sandbox } from '../primitives/sandbox.js';
import { connectError } from './mcp-errors.js';
import type { McpServerSpec } from './server-spec.js';

/** The sandbox stdio servers run in, and what each one may do there, by server name (its tool id). */
export interface McpServerSandbox {
  sandbox: Sandbox;
  grantFor(server: string): SandboxGrant;
}

export interface StdioChildOptions {
  /** The environment the child starts from, before spec.env. */
  baseEnv: Record<string, string>;
  /** Cap on one line (one message) from the child. */
  maxMessageBytes: number;
  sandbox?: McpServerSandbox;
  connectTimeoutMs: number;
  signal?: AbortSignal;
  /** Called once the child runs, with its pid. */
  onSpawn(pid: number): void;
  /** Called once the child has exited and its pipes closed (reaped). */
  onExit(pid: number): void;
}

/**
 * The SDK's stdio transport, subclassed for three reasons. Its start() is the one place the pid
 * is known before a fast-crashing child clears it. Its `onclose` is the one sign that the child
 * exited, and the client takes it over only once the handshake is under way, so this transport
 * keeps its own: `exited`. And the SDK 2.x probes the protocol of its own base class on a second,
 * throw-away child (to survive servers that exit on a request before `initialize`); a subclass is
 * probed in place, on the one child the pool tracks, sandboxes and reaps. A server that does exit
 * on the probe is started again with the 2025 handshake (connection.ts).
 */
export class StdioChildTransport extends StdioClientTransport {
  /** Resolves once the child has exited and its pipes closed; never rejects. */
  readonly exited: Promise<void>;
  private readonly hooks: Pick<StdioChildOptions, 'onSpawn' | 'onExit'>;
  private childPid: number | null = null;

  constructor(params: ConstructorParameters<typeof StdioClientTransport>[0], hooks: Pick<StdioChildOptions, 'onSpawn' | 'onExit'>) {
    super(params);
    let markExited!: () => void;
    this.exited = new Promise<void>((resolve) => (markExited = resolve));
    this.hooks = hooks;
    let outer: (() => void) | undefined;
    let firing = false;
    const fire = (): void => {
      if (this.childPid !== null) {
        const pid = this.childPid;
        this.childPid = null;
        hooks.onExit(pid);
      }
      markExited();
      // The client chains its handler onto the one it finds (ours), so ours is called back from it once.
      if (firing) return;
      firing = true;
      try {
        outer?.();
      } finally {
        firing = false;
      }
    };
    // The base class declares `onclose` as a field, so the accessor has to be put on the instance.
    Object.defineProperty(this, 'onclose', {
      configurable: true,
      get: () => fire,
      set: (handler: (() => void) | undefined) => {
        outer = handler;
      },
    });
  }

  override async start(): Promise<void> {
    await super.start();
    if (this.pid === null) return;
    this.childPid = this.pid;
    this.hooks.onSpawn(this.pid);
  }
}

/** The transport for a stdio server: its command, wrapped in the sandbox when there is one, with only the given environment. */
export function stdioChild(spec: Extract<McpServerSpec, { transport: 'stdio' }>, options: StdioChildOptions): StdioChildTransport {
  const env = { ...options.baseEnv, ...spec.env };
  const cwd = spec.cwd ?? process.cwd();
  let argv = [spec.command, ...spec.args];
  if (options.sandbox) {
    try {
      // No call timeout bounds a server's life (the pool keeps it), hence no CPU-time limit: null.
      argv = options.sandbox.sandbox.wrap(argv, cwd, options.sandbox.grantFor(spec.name), null, env);
    } catch (error) {
      if (!(error instanceof KiwiError)) throw connectError(spec, error, { exited: false, stderr: '', pid: null, signal: options.signal, connectTimeoutMs: options.connectTimeoutMs });
      throw new KiwiError(error.code, `MCP server "${spec.name}" was not started: ${error.message}`, { cause: error, details: { server: spec.name, ...error.details } });
    }
  }
  return new StdioChildTransport(
    { command: argv[0] as string, args: argv.slice(1), env, cwd, stderr: 'pipe', maxBufferSize: options.maxMessageBytes },
    options,
  );
}
