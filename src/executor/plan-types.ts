import type { McpServerSpec } from '../mcp-client/client-pool.js';
import type { HttpRequest } from '../primitives/http-client.js';
import type { RequirementSet } from '../primitives/python-requirements.js';
import type { SubprocessRequest } from '../primitives/subprocess.js';
import type { IsolationLevel } from '../registry/types.js';

/** What a call turns into once its chain is resolved and its templates are filled: data, nothing run yet. */
export type ExecutionPlan = SubprocessPlan | HttpPlan | McpPlan | ThreadPlan;

/** A directive run as a thread (a `thread` tool, a directive tool, or anything on `llm_runtime`): the gateway's thread runtime runs it. */
export interface ThreadPlan {
  kind: 'thread';
  directive: string;
  /** The call's arguments: the directive's inputs. */
  inputs: Record<string, unknown>;
  /** The tool's `config.model_tier`, over the directive's own. */
  tier?: string;
}

export interface SubprocessPlan extends Omit<SubprocessRequest, 'signal' | 'killGraceMs'> {
  kind: 'subprocess';
  /** argv elements that came from call arguments, for the argument-injection check. */
  fromParams: Array<{ index: number; param: string }>;
  /** Values of `format: path` parameters, checked against the filesystem globs before running. */
  paths: Array<{ param: string; value: string; access: 'read' | 'write' }>;
  /** A Python tool's `config.requires`, checked with argv[0] before it runs. */
  requires?: RequirementSet;
  /** The `filesystem.allow_secret_paths` of each context the call was checked in; the sandbox masks every other secret. */
  allowSecrets?: string[][];
  /** Where it runs: plain, under the sandbox, or in a container (see ResolvedChain.isolation). */
  isolation: IsolationLevel;
  /** The tool's `config.container`: CPUs and memory it asks for, within the policy's caps. */
  container?: { cpus?: number; memoryMb?: number };
}

export interface HttpPlan {
  kind: 'http';
  request: HttpRequest;
  transform?: ResponseTransform;
  paths: SubprocessPlan['paths'];
}

export interface McpPlan {
  kind: 'mcp';
  server: McpServerSpec;
  tool: string;
  args: Record<string, unknown>;
  paths: SubprocessPlan['paths'];
}

export interface ResponseTransform {
  pick?: string;
  /** A JSONPath (json-path.ts subset), applied before pick. */
  path?: string;
  fields?: string[];
  maxItems?: number;
}
