import type { McpClientPool } from '../mcp-client/client-pool.js';
import { matchesAny } from '../policy/permission-context.js';
import { KiwiError } from '../errors.js';
import type { HttpClient } from '../primitives/http-client.js';
import { writeFoldersOf, type Sandbox, type SandboxGrant } from '../primitives/sandbox.js';
import type { RequirementCheck } from '../primitives/python-requirements.js';
import { runSubprocess } from '../primitives/subprocess.js';
import type { ToolResult } from '../contracts/tool-result.js';
import type { ExecutionPlan } from './plan-types.js';
import { applyTransform } from './response-transform.js';

export interface PrimitiveDeps {
  http: HttpClient;
  mcp: McpClientPool;
  /** Checks a Python tool's `config.requires` before it runs. */
  requirements: RequirementCheck;
  /** When set, subprocess plans run in this sandbox; without it they run unsandboxed. */
  sandbox?: SubprocessSandbox;
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
      const { kind: _kind, fromParams: _from, paths: _paths, allowSecrets, requires, ...request } = plan;
      const sandbox = deps.sandbox ? { sandbox: deps.sandbox.sandbox, grant: grantFor(deps.sandbox, toolId, allowSecrets) } : undefined;
      const { cwd, env } = request;
      if (requires !== undefined) await deps.requirements.check(request.argv[0] as string, requires, { cwd, env, ...(signal ? { signal } : {}), ...(sandbox ? { sandbox } : {}) });
      const r = await runSubprocess({ ...request, ...(signal ? { signal } : {}), ...(sandbox ? { sandbox } : {}) });
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

/**
 * What a tool may do in the sandbox. A plan that did not pass the proxy's checks carries no secret
 * grants: every secret is masked. A stdio MCP server gets the grant of its own tool id.
 */
export function grantFor(s: SubprocessSandbox, toolId: string | undefined, allowSecrets: string[][] = [[]]): SandboxGrant {
  if (!s.sandbox.active) return { writePaths: [], network: true };
  // Like `network`, a per-tool grant of the policy itself: it joins every context's list.
  const extra = Object.entries(s.toolSecrets ?? {}).flatMap(([glob, paths]) => (toolId !== undefined && matchesAny([glob], toolId) ? paths : []));
  const allow = extra.length === 0 ? allowSecrets : allowSecrets.map((globs) => [...globs, ...extra]);
  return {
    writePaths: writeFoldersOf(s.root, s.writeGlobs),
    network: toolId !== undefined && matchesAny(s.networkTools, toolId),
    readPaths: [s.root],
    secrets: { root: s.root, allow, named: [...(s.readGlobs ?? []), ...s.writeGlobs] },
  };
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}
