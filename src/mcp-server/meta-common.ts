/**
 * What the meta-tools share: the zod pieces of their arguments (names as Kiwi MCP wrote them, so
 * its users' prompts keep working), the item lookup across tiers, and how results are shaped.
 */
import type { SplitOptions } from '../resolver/split-steps.js';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createDataFence } from '../base/data-fence.js';
import { describeError, isKiwiError, KiwiError } from '../base/errors.js';
import type { Project } from '../project/open-project.js';
import type { Caller } from '../policy/caller.js';
import type { ThreadOutcome, ThreadResume, ThreadStart } from '../threads/run-thread.js';
import type { ThreadStore } from '../threads/thread-store.js';
import type { PipelineCaller, PipelineOutcome } from '../threads/run-pipeline.js';
import type { CallOutcome, ToolCall, ToolCaller } from '../proxy/tool-call.js';
import type { Directive, Knowledge, Pipeline, Tier, Tool } from '../registry/types.js';
import type { Resolver } from '../resolver/types.js';

export interface MetaContext {
  project: Project;
  resolver: Resolver;
  /** The MCP session: the audit files its calls under this id. */
  session: string;
  /** Who the session belongs to: calls are checked, rate-limited and loop-checked as this client's. */
  caller: Caller;
  /** How `resolve` splits an intent into ordered steps. */
  steps: SplitOptions;
  /** Runs a call instead of the tool proxy directly: the gateway's recorder, which also writes it as a step (`details`: what asked for it). */
  runCall?: (call: ToolCall, details: Record<string, unknown>) => Promise<CallOutcome>;
  /** Runs directives as threads (the gateway can; `kiwi mcp` on stdio returns their steps instead). */
  threads?: MetaThreads;
  /** Runs pipelines, each stage a thread (the gateway can; `kiwi mcp` on stdio cannot). */
  pipelines?: MetaPipelines;
  /** Tells the client something while its tool call runs (progress, or a log message). */
  notify?: (message: string) => void;
}

/** A meta-tool's call, through the tool proxy (and the recorder, where there is one). */
export function proxyCall(ctx: MetaContext, call: ToolCall, details: Record<string, unknown> = {}): Promise<CallOutcome> {
  return ctx.runCall ? ctx.runCall(call, details) : ctx.project.proxy.call(call);
}

/** Where a recorded result names its execution (GET /v0/executions/{id}/events). */
export const EXECUTION_ID_META = 'kiwi.gateway/execution_id';

export type ItemType = 'directive' | 'tool' | 'knowledge' | 'pipeline';
export type MetaResult = CallToolResult;

const ITEM_TYPES = ['directive', 'tool', 'knowledge', 'pipeline', 'script'] as const;

/** `script` is Kiwi MCP's older name for a tool; it is accepted and read as `tool`. */
export const itemTypeSchema = z
  .enum(ITEM_TYPES, {
    error: (issue) =>
      issue.input === undefined
        ? 'item_type is required: "directive", "tool", "knowledge" or "pipeline"'
        : `item_type must be "directive", "tool", "knowledge" or "pipeline" ("script" is read as "tool"), got ${preview(issue.input)}`,
  })
  .describe('What kind of item: "directive", "tool", "knowledge" or "pipeline" ("script" is the older name of "tool")');

export const itemIdSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'item_id is required: the id of the item (a tool_id, directive name, knowledge id or pipeline name)' : 'item_id must be a string') })
  .min(1, 'item_id must not be empty')
  .max(256, 'item_id is longer than 256 characters; ids are short names like read_file')
  .describe("Id of the item: a tool_id, a directive name, a knowledge id or a pipeline name (a thread's or pipeline run's id for status, cancel and resume)");

export const projectPathSchema = z
  .string({ error: 'project_path must be a string (the absolute path of the project root)' })
  .max(4096, 'project_path is longer than 4096 characters')
  .optional()
  .describe("Accepted for Kiwi MCP compatibility: if given, it must be this server's project root (the folder holding .ai/)");

export function normalizeItemType(value: (typeof ITEM_TYPES)[number]): ItemType {
  return value === 'script' ? 'tool' : value;
}

export function preview(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** One server serves one project; a client that names another one must be told so, not served the wrong one. */
export async function checkProjectPath(project: Project, given: string | undefined): Promise<void> {
  if (given === undefined || given === '') return;
  let real: string;
  try {
    real = await realpath(path.resolve(project.root, given));
  } catch {
    throw new KiwiError('INVALID_INPUT', `project_path ${JSON.stringify(given)} does not exist; this server serves ${project.root} (leave project_path out to use it)`);
  }
  if (real !== project.root) {
    throw new KiwiError(
      'INVALID_INPUT',
      `project_path ${JSON.stringify(given)} is not this server's project; it serves ${project.root}. Leave project_path out, or start \`kiwi mcp --project ${given}\` for that project.`,
    );
  }
}

export type Item = { kind: 'tool'; item: Tool } | { kind: 'directive'; item: Directive } | { kind: 'knowledge'; item: Knowledge } | { kind: 'pipeline'; item: Pipeline };

export function itemTier(found: Item): Tier {
  return found.item.source.tier;
}

/** The item the registry holds under this id (project tier first, as everywhere), or a clear error. */
export function findItem(project: Project, type: ItemType, id: string): Item {
  const registry = project.registry;
  const found: Item | undefined =
    type === 'tool'
      ? wrap('tool', registry.tools.get(id))
      : type === 'directive'
        ? wrap('directive', registry.directives.get(id))
        : type === 'pipeline'
          ? wrap('pipeline', registry.pipelines?.get(id))
          : wrap('knowledge', registry.knowledge.get(id));
  if (found) return found;
  const broken = registry.errors.find((issue) => issue.kind === type && path.parse(issue.file).name === id);
  const hint = broken
    ? ` A file that looks like it did not load: ${broken.message}`
    : ` Find ids with search(item_type="${type}", query="…").`;
  // Pipelines load from the project and user tiers only (load-registry.ts).
  const tiers = type === 'pipeline' ? 'project or user tier (.ai/pipelines/)' : 'project, user or registry tier';
  throw new KiwiError(type === 'tool' ? 'TOOL_NOT_FOUND' : 'INVALID_INPUT', `no ${type} with id ${JSON.stringify(id)} in the ${tiers}.${hint}`);
}

function wrap<K extends Item['kind']>(kind: K, item: Extract<Item, { kind: K }>['item'] | undefined): Item | undefined {
  return item === undefined ? undefined : ({ kind, item } as Item);
}

/** Where an item's file is, relative to the project for the project tier (shorter, and no home path leaks for it). */
export function displayPath(project: Project, file: string, tier: Tier): string {
  return tier === 'project' ? path.relative(project.root, file) : file;
}

export function textResult(text: string, structured?: Record<string, unknown>): MetaResult {
  return { content: [{ type: 'text', text }], ...(structured ? { structuredContent: structured } : {}) };
}

export function errorResult(code: string, message: string, extra: Record<string, unknown> = {}): MetaResult {
  return { content: [{ type: 'text', text: `${code}: ${message}` }], structuredContent: { error: { code, message }, ...extra }, isError: true };
}

/**
 * Runs a meta-tool body; a KiwiError it throws (a bad argument, an unknown item) becomes a tool
 * result with isError, which the agent reads and can correct, rather than a protocol error.
 */
export async function guard(body: () => Promise<MetaResult>): Promise<MetaResult> {
  try {
    return await body();
  } catch (error) {
    if (isKiwiError(error)) return errorResult(error.code, error.message);
    return errorResult('INTERNAL', `${describeError(error)} (a gateway bug; the audit log and stderr have details)`);
  }
}

/** A refusal (a KiwiError: not found, not running, inputs that do not fit) as a result with isError, the value it is; anything else is thrown on. */
export async function refusals(run: () => Promise<MetaResult>): Promise<MetaResult> {
  try {
    return await run();
  } catch (error) {
    if (isKiwiError(error)) return errorResult(error.code, error.message);
    throw error;
  }
}

/**
 * A tool call's outcome as an MCP result: denials and failures are results with isError, never
 * exceptions. What the tool wrote (its output, or the error it reported) goes between fences
 * with a token drawn for this result (see data-fence.ts), so the calling agent can tell it from
 * the gateway's words; a denial is the gateway's own words and is not fenced.
 */
export function outcomeResult(outcome: CallOutcome, lead?: string): MetaResult {
  const prefix = lead ? `${lead}\n\n` : '';
  const stuck = outcome.stuck ? `\n\nwarning: ${outcome.tool} was called with the same arguments several times in this session; change approach instead of repeating it.` : '';
  const base = { tool: outcome.tool, call_id: outcome.callId, duration_ms: Math.round(outcome.durationMs), ...(outcome.stuck ? { stuck: true } : {}), ...(outcome.checkpoint ? { checkpoint: outcome.checkpoint } : {}) };
  if (outcome.status === 'denied') {
    return {
      content: [{ type: 'text', text: `${prefix}denied: ${outcome.reason}` }],
      structuredContent: { status: 'denied', reason: outcome.reason, ...base },
      isError: true,
    };
  }
  if (outcome.status === 'error') {
    return {
      content: [{ type: 'text', text: `${prefix}${fenced(`${outcome.error.code}: ${outcome.error.message}`, prefix)}${stuck}` }],
      structuredContent: { status: 'error', error: outcome.error, ...base },
      isError: true,
    };
  }
  const result = outcome.result;
  return {
    content: [{ type: 'text', text: `${prefix}${result.text === '' ? '(the tool returned no output)' : fenced(result.text, prefix)}${stuck}` }],
    structuredContent: {
      status: 'ok',
      ...base,
      is_error: result.isError,
      ...(result.exitCode !== undefined ? { exit_code: result.exitCode } : {}),
      ...(result.status !== undefined ? { http_status: result.status } : {}),
      ...(result.data !== undefined ? { data: result.data } : {}),
    },
    isError: result.isError,
  };
}

/** Who and where a meta-tool's calls run: the session's conversation and client, with the client's own rights. */
export function callerFields(ctx: MetaContext): ToolCaller {
  return { session: ctx.session, client: ctx.caller.client, source: 'mcp', ...(ctx.caller.roles ? { roles: ctx.caller.roles } : {}), ...(ctx.caller.context ? { context: ctx.caller.context } : {}) };
}

/** The fence's notice, then `text` fenced; the token is drawn against the lead too, which the agent's intent shapes. */
function fenced(text: string, lead: string): string {
  const fence = createDataFence([text, lead]);
  return `${fence.notice}\n${fence.wrap(text)}`;
}

/** How `execute` runs directives as threads where the gateway runs them (meta-thread.ts). */
export interface MetaThreads {
  run(start: ThreadStart): Promise<ThreadOutcome>;
  /** Their transcripts, read by `status` and `stream`, wherever this gateway keeps them. */
  store: ThreadStore;
  resume(resume: ThreadResume): Promise<ThreadOutcome>;
  background(job: { start: ThreadStart } | { resume: ThreadResume }): Promise<string>;
  cancel(id: string): boolean;
  /** Cancels the thread's execution in the kernel, which another replica running it hears of; false when it has none running. */
  cancelElsewhere?(id: string): Promise<boolean>;
}

/**
 * How `execute` runs pipelines where the gateway runs them (meta-pipeline.ts): each stage a
 * thread in `store`, the run a kernel execution of the caller's client.
 */
export interface MetaPipelines {
  run(start: MetaPipelineStart): Promise<PipelineOutcome>;
  resume(resume: PipelineCaller & { run: string }): Promise<PipelineOutcome>;
  /** Starts a run that goes on after the caller is answered: its id once its first stage started, or its outcome when it ended before any did. */
  background(job: { start: MetaPipelineStart } | { resume: PipelineCaller & { run: string } }): Promise<{ run: string } | { outcome: PipelineOutcome }>;
  /** Cancels a run (here, or through its execution on another replica); false when nothing of it runs that way. */
  cancel(run: string): Promise<boolean>;
  /** Where the run stands as this gateway or its kernel knows it; undefined when neither does (it ran elsewhere, or nothing records runs). */
  state(run: string): Promise<'running' | 'completed' | 'failed' | 'cancelled' | undefined>;
  store: ThreadStore;
}

export type MetaPipelineStart = PipelineCaller & { pipeline: string; inputs?: Record<string, unknown> };
