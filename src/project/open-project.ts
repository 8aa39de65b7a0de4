import { randomBytes } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { createAuditLog, type AuditLog } from '../audit/audit-log.js';
import { readCheckpointSettings } from '../checkpoints/checkpoint-config.js';
import { createCheckpointer, type Checkpointer } from '../checkpoints/checkpointer.js';
import { createLoopDetector, type LoopDetector } from '../audit/loop-detector.js';
import type { Tracing } from '../contracts/tracing.js';
import { grantFor } from '../executor/execute-plan.js';
import { createMcpClientPool, type McpClientPool } from '../mcp-client/client-pool.js';
import { loadPolicyFile } from '../policy/policy-file.js';
import type { PermissionContext } from '../policy/permission-context.js';
import { createRateLimiter } from '../policy/rate-limiter.js';
import type { TokenBuckets } from '../policy/token-buckets.js';
import { createAddressGuard } from '../primitives/address-guard.js';
import { createHttpClient, type HttpClient } from '../primitives/http-client.js';
import { createContainerRunner, type ContainerRunnerOptions } from '../primitives/container.js';
import { createRequirementCheck } from '../primitives/python-requirements.js';
import { openSandbox } from '../primitives/sandbox.js';
import { DEFAULT_CONTAINER_LIMITS } from '../policy/isolation-choice.js';
import { createToolProxy, type ToolProxy } from '../proxy/tool-proxy.js';
import type { CallSource, ThreadPort } from '../proxy/tool-call.js';
import type { RunningCalls } from '../proxy/running-calls.js';
import type { Registry } from '../registry/load-registry.js';
import { createItemCreations } from './land-item.js';
import { loadProjectRegistry } from './project-registry.js';

export interface ProjectOptions {
  /** The folder that holds `.ai/`. */
  projectDir: string;
  /** The folder whose `.ai/` is the user tier (default: the home directory). */
  userDir?: string;
  /** The gateway's environment: `${ENV}` values and allowlisted variables come from here only. */
  env: Readonly<Record<string, string | undefined>>;
  session?: string;
  source?: CallSource;
  /** Where thread tools and the hooks' directives run (the gateway's thread runtime); absent, they are refused. */
  threads?: ThreadPort;
  /** Where the policy's rate limits keep count: shared by replicas (Redis); absent, in this process. */
  buckets?: TokenBuckets;
  /** Where repeated calls are counted: shared by replicas (Redis); absent, in this process. */
  loops?: LoopDetector;
  /** Spans of each call's stages and run; absent, none. */
  tracing?: Tracing;
  /** How `sandboxed` and `restricted` tools find podman (default: `podman` and `runc` on the env's PATH, then the standard folders). */
  containers?: ContainerRunnerOptions;
  /** Where this session's audit records go: shared by replicas (Postgres); absent, files under `.ai/logs/audit`. */
  openAudit?: (session: string) => AuditLog;
  /** Tracks the calls running (the gateway cancels them when it stops); absent, none are tracked. */
  running?: Pick<RunningCalls, 'stage'>;
}

/** Everything one process needs to run tools for a project, wired once and closed once. */
export interface Project {
  root: string;
  registry: Registry;
  policy: PermissionContext;
  proxy: ToolProxy;
  session: string;
  auditDir: string;
  audit: AuditLog;
  mcp: McpClientPool;
  http: HttpClient;
  /** Git checkpoints before state-changing calls (`checkpoints:` in gateway.yaml). */
  checkpoints: Checkpointer;
  close(): Promise<void>;
}

export function newSessionId(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  return `${prefix}-${stamp}-${randomBytes(3).toString('hex')}`;
}

export async function openProject(options: ProjectOptions): Promise<Project> {
  const root = await realpath(path.resolve(options.projectDir));
  const registry = await loadProjectRegistry({ projectDir: root, env: options.env, ...(options.userDir ? { userDir: options.userDir } : {}) });
  const policy = await loadPolicyFile(path.join(root, '.ai', 'config', 'policy.yaml'), root);
  const checkpoints = createCheckpointer({ root, env: options.env, settings: await readCheckpointSettings(path.join(root, '.ai', 'config', 'gateway.yaml'), root) });
  const session = options.session ?? newSessionId(options.source ?? 'cli');
  const auditDir = path.join(root, '.ai', 'logs', 'audit');
  const audit = options.openAudit?.(session) ?? createAuditLog({ dir: auditDir, sessionId: session });
  const { network = [], secrets = {}, ...sandboxSettings } = policy.sandbox ?? { mode: 'auto' as const };
  const opened = await openSandbox({ ...sandboxSettings, ...(options.env.PATH ? { path: options.env.PATH } : {}) });
  const sandbox = { sandbox: opened, root, writeGlobs: policy.rules.fsWrite, readGlobs: policy.rules.fsRead, networkTools: network, toolSecrets: secrets };
  // Where agent-steered requests and redirects may go: public addresses, and the private ones the policy allows.
  const addressGuard = createAddressGuard({ allowPrivate: policy.network?.allowPrivate ?? [] });
  const mcp = createMcpClientPool({
    addressGuard,
    baseEnv: pickDefined(options.env, ['PATH', 'HOME']),
    // A server outlives the call that starts it, so it gets the policy's own secret grants, not a call's.
    sandbox: { sandbox: sandbox.sandbox, grantFor: (server) => grantFor(sandbox, server, [policy.rules.fsSecrets]) },
  });
  const http = createHttpClient({ addressGuard });
  // Podman is probed on the first container call only: a project without such tools never starts it.
  const containers = { runner: createContainerRunner({ ...(options.env.PATH ? { path: options.env.PATH } : {}), ...options.containers }), limits: policy.isolation?.container ?? DEFAULT_CONTAINER_LIMITS };
  const proxy = createToolProxy({
    tools: registry.tools,
    items: { directives: registry.directives, knowledge: registry.knowledge },
    context: policy,
    primitives: { http, mcp, sandbox, containers, requirements: createRequirementCheck() },
    audit,
    loops: options.loops ?? createLoopDetector(),
    rateLimiter: createRateLimiter({ root, ...(options.buckets ? { buckets: options.buckets } : {}) }),
    plan: { root, env: options.env },
    ...(options.tracing ? { tracing: options.tracing } : {}),
    checkpoints,
    ...(options.threads ? { threads: options.threads } : {}),
    ...(options.running ? { running: options.running } : {}),
    creations: createItemCreations({ root, registry, env: options.env, ...(options.userDir ? { userDir: options.userDir } : {}) }),
  });
  return {
    root,
    registry,
    policy,
    proxy,
    session,
    auditDir,
    audit,
    mcp,
    http,
    checkpoints,
    async close() {
      await Promise.allSettled([mcp.close(), http.close()]);
      await addressGuard.close();
      await audit.close();
    },
  };
}

function pickDefined(env: ProjectOptions['env'], names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (env[name] !== undefined) out[name] = env[name] as string;
  return out;
}
