import type { McpClientPool } from '../mcp-client/client-pool.js';
import { parseJsonWithin } from '../base/json-depth.js';
import { matchesAny } from '../policy/permission-context.js';
import { KiwiError } from '../base/errors.js';
import type { HttpClient } from '../primitives/http-client.js';
import type { ContainerLimits } from '../policy/isolation-choice.js';
import type { ContainerGrant, ContainerRunner } from '../primitives/container.js';
import type { RequirementCheck } from '../primitives/python-requirements.js';
import { readFoldersOf, writeFoldersOf, type Sandbox, type SandboxGrant } from '../primitives/sandbox.js';
import { runSubprocess, type SubprocessResult } from '../primitives/subprocess.js';
import type { ToolResult } from '../contracts/tool-result.js';
import type { ExecutionPlan, SubprocessPlan } from './plan-types.js';
import { applyTransform } from './response-transform.js';

export interface PrimitiveDeps {
  http: HttpClient;
  mcp: McpClientPool;
  /** Checks a Python tool's `config.requires` before it runs. */
  requirements: RequirementCheck;
  /** When set, subprocess plans run in this sandbox; without it they run unsandboxed. */
  sandbox?: SubprocessSandbox;
  /** Where `sandboxed` and `restricted` tools run, within the policy's limits; without it they are refused. */
  containers?: { runner: ContainerRunner; limits: ContainerLimits };
}

export interface SubprocessSandbox {
  sandbox: Sandbox;
  /** The project root, which the write globs are relative to. */
  root: string;
  /** The policy's `filesystem.write` globs: their folders are the writable binds. */
  writeGlobs: string[];
  /** The policy's `filesystem.read` globs: with the write globs, they keep the `.ai/` folders they name visible. */
  readGlobs?: string[];
  /** Globs over tool ids that keep the network. */
  networkTools: string[];
  /** Globs over tool ids → secret globs those tools may read inside the sandbox (the policy's `sandbox.secrets`). */
  toolSecrets?: Record<string, string[]>;
}

/** Runs a plan on its primitive. Only the tool proxy calls this, after every check has passed. */
export async function executePlan(plan: ExecutionPlan, deps: PrimitiveDeps, signal?: AbortSignal, toolId?: string): Promise<ToolResult> {
  switch (plan.kind) {
    case 'subprocess': {
      const r = await runAtLevel(plan, deps, signal, toolId);
      const failed = r.exitCode !== 0;
      const text = failed && r.stderr ? `${r.stdout}${r.stdout ? '\n' : ''}${r.stderr}` : r.stdout;
      return { text, data: parseJson(r.stdout), exitCode: r.exitCode, isError: failed };
    }
    case 'http': {
      const r = await deps.http.request({ ...plan.request, ...(signal ? { signal } : {}) });
      let data = parseJson(r.body);
      if (plan.transform && data !== undefined) data = applyTransform(data, plan.transform);
      const text = data === undefined ? r.body : JSON.stringify(data, null, 2);
      return { text, data, status: r.status, isError: r.status >= 400 };
    }
    case 'mcp': {
      const r = await deps.mcp.callTool(plan.server, plan.tool, plan.args, signal);
      return { text: r.text, data: r.structuredContent ?? r.content, isError: r.isError };
    }
    case 'thread':
      // The tool proxy hands thread plans to the gateway's thread runtime before they get here.
      throw new KiwiError('CHAIN_INVALID', `${toolId ?? 'this tool'} runs directive ${plan.directive} as a thread, which only the gateway runs (kiwi serve, kiwi directives run ${plan.directive})`);
  }
}

/** A subprocess plan at its isolation level: plain, under the sandbox, or in a container. */
async function runAtLevel(plan: SubprocessPlan, deps: PrimitiveDeps, signal: AbortSignal | undefined, toolId: string | undefined): Promise<SubprocessResult> {
  const { kind: _kind, fromParams: _from, paths: _paths, allowSecrets, isolation, container, requires, ...fields } = plan;
  const request = { ...fields, ...(signal ? { signal } : {}) };
  // Asked of the tool's own python, sandboxed as a standard tool's run is (a container's python is the host's /usr one).
  if (requires !== undefined) {
    const sandbox = isolation !== 'trusted' && deps.sandbox ? { sandbox: deps.sandbox.sandbox, grant: grantFor(deps.sandbox, toolId, allowSecrets) } : undefined;
    await deps.requirements.check(request.argv[0] as string, requires, { cwd: request.cwd, env: request.env, ...(signal ? { signal } : {}), ...(sandbox ? { sandbox } : {}) });
  }
  if (isolation === 'trusted') return runSubprocess(request);
  if (isolation === 'standard') {
    const sandbox = deps.sandbox ? { sandbox: deps.sandbox.sandbox, grant: grantFor(deps.sandbox, toolId, allowSecrets) } : undefined;
    return runSubprocess({ ...request, ...(sandbox ? { sandbox } : {}) });
  }
  if (deps.containers === undefined || deps.sandbox === undefined) {
    throw new KiwiError('SPAWN_FAILED', `${toolId ?? 'this tool'} is refused: isolation ${isolation} runs it in a container, and this gateway was started without one`);
  }
  return deps.containers.runner.run(request, containerGrantFor(deps.sandbox, deps.containers.limits, toolId, allowSecrets, plan));
}

/**
 * What a container tool may do: the policy's read and write folders, the network only at
 * `sandboxed` and only where the policy's `sandbox.network` grants it, and the policy's limits,
 * which the tool's `config.container` may lower, never raise.
 */
export function containerGrantFor(s: SubprocessSandbox, limits: ContainerLimits, toolId: string | undefined, allowSecrets: string[][] | undefined, plan: Pick<SubprocessPlan, 'isolation' | 'container'>): ContainerGrant {
  const asked = plan.container ?? {};
  for (const [key, field, cap] of [['cpus', 'cpus', limits.cpus], ['memoryMb', 'memory_mb', limits.memoryMb]] as const) {
    const wanted = asked[key];
    if (wanted !== undefined && wanted > cap) {
      throw new KiwiError('POLICY_DENIED', `${toolId ?? 'this tool'} asks for config.container.${field}: ${wanted}, more than the policy's isolation.container.${field} (${cap}); lower it in the tool or raise it in .ai/config/policy.yaml`);
    }
  }
  return {
    network: plan.isolation === 'sandboxed' && toolId !== undefined && matchesAny(s.networkTools, toolId),
    readPaths: readFoldersOf(s.root, s.readGlobs ?? []),
    writePaths: writeFoldersOf(s.root, s.writeGlobs),
    limits: { ...limits, ...(asked.cpus ? { cpus: asked.cpus } : {}), ...(asked.memoryMb ? { memoryMb: asked.memoryMb } : {}) },
    secrets: secretsGrant(s, toolId, allowSecrets),
  };
}

/**
 * What a tool may do in the sandbox. A plan that did not pass the proxy's checks carries no secret
 * grants: every secret is masked. A stdio MCP server gets the grant of its own tool id.
 */
export function grantFor(s: SubprocessSandbox, toolId: string | undefined, allowSecrets: string[][] = [[]]): SandboxGrant {
  if (!s.sandbox.active) return { writePaths: [], network: true };
  return {
    writePaths: writeFoldersOf(s.root, s.writeGlobs),
    network: toolId !== undefined && matchesAny(s.networkTools, toolId),
    readPaths: [s.root],
    secrets: secretsGrant(s, toolId, allowSecrets),
  };
}

/** The secrets a call may see: each context's list, joined by the policy's `sandbox.secrets` for this tool. */
function secretsGrant(s: SubprocessSandbox, toolId: string | undefined, allowSecrets: string[][] = [[]]): NonNullable<SandboxGrant['secrets']> {
  // Like `network`, a per-tool grant of the policy itself: it joins every context's list.
  const extra = Object.entries(s.toolSecrets ?? {}).flatMap(([glob, paths]) => (toolId !== undefined && matchesAny([glob], toolId) ? paths : []));
  const allow = extra.length === 0 ? allowSecrets : allowSecrets.map((globs) => [...globs, ...extra]);
  return { root: s.root, allow, named: [...(s.readGlobs ?? []), ...s.writeGlobs] };
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return parseJsonWithin(trimmed);
  } catch {
    return undefined;
  }
}
