/**
 * The gateway as an MCP server: five meta-tools (search, load, execute, help, resolve) reach every
 * item of the project, with the argument names Kiwi MCP used, and the project's tools the caller
 * may run are listed as tools of their own beside them (project-tools.ts). Transport-free:
 * the stdio command and the /mcp route make a fresh server per client session (2025-06-18) or
 * per request (2026-07-28, which has no sessions).
 */
import { resolvableTools } from '../resolver/resolver.js';
import { catalogActionWords, type SplitOptions } from '../resolver/split-steps.js';
import { McpServer, type ServerContext, type ServerNotification } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { LOCAL_CALLER } from '../clients/client-auth.js';
import type { Project } from '../project/open-project.js';
import type { Caller } from '../policy/caller.js';
import type { Resolver } from '../resolver/types.js';
import { guard, normalizeItemType, type MetaContext, type MetaResult } from './meta-common.js';
import type { MetaPipelines, MetaThreads } from './meta-common.js';
import { execute, executeShape } from './meta-execute.js';
import { help, helpShape } from './meta-help.js';
import { load, loadShape } from './meta-load.js';
import { resolve, resolveShape } from './meta-resolve.js';
import { search, searchShape } from './meta-search.js';
import { registerRegistryViews } from './meta-browse.js';
import type { ApprovalWaits, MetaAnswer, WaitingAt } from './approval-waits.js';
import { menuChoice, menuRound } from './ask-back-menu.js';
import { KIWI_VERSION } from '../base/version.js';
import { toolRights } from '../proxy/tool-rights.js';
import { DEFAULT_TOOL_LISTING, registerProjectTools, type ProjectTools, type ToolListing } from './project-tools.js';

export interface MetaServerDeps {
  project: Project;
  resolver: Resolver;
  serverInfo?: { name: string; version: string };
  /** The session tool calls are audited under (default: the project's). */
  session?: string;
  /** Whose session this is (default: the local client). */
  caller?: Caller;
  /** How `resolve` splits ordered steps (catalogActionWords of the project's tools); computed once here when absent. */
  steps?: SplitOptions;
  /** Runs each execute and resolve as a recorded execution (the gateway's kernel); absent: not recorded. */
  record?: MetaRecorder;
  /** Runs executed directives as threads (the gateway); absent: `execute` returns their steps. */
  threads?: MetaThreads;
  /** Runs pipelines (the gateway); absent: `execute` says they need it. */
  pipelines?: MetaPipelines;
  /**
   * The protocol this server answers: `modern` (2026-07-28) asks back with `input_required`
   * results (a menu when an intent is ambiguous, approval waits through `waits`); `legacy`
   * (2025-06-18, the default) keeps the call open and tells the client with notifications.
   */
  era?: 'modern' | 'legacy';
  /** Approval waits handed back as `input_required` (modern only); absent: the call waits inside its request. */
  waits?: ApprovalWaits;
  /** Which of the project's tools are listed beside the meta-tools (the client's `tools`, `tags`, `max`); default: up to 40 the caller may run. */
  listing?: ToolListing;
}

/**
 * Records one execute/resolve: `run` does the meta-tool's work with the recorder's `runCall` (its
 * tool calls become steps) and a signal that also fires when the execution is cancelled.
 */
export type MetaRecorder = (
  request: { tool: 'execute' | 'resolve'; arguments: unknown; caller: Caller; signal: AbortSignal; waiting(at: WaitingAt): void },
  run: (runCall: NonNullable<MetaContext['runCall']>, signal: AbortSignal) => Promise<MetaResult>,
) => Promise<MetaResult>;

const DEFAULT_INFO = { name: 'kiwi-gateway', version: KIWI_VERSION };

/** Arguments are small objects; a client sending a million-element array is refused before zod walks it. */
const MAX_INPUT_ELEMENTS = 10_000;

const INSTRUCTIONS =
  'Kiwi Gateway serves this project\'s tools, directives and knowledge through five meta-tools, and lists the tools you may run as tools of their own. ' +
  'Use resolve(intent) to say what you want in words, or search → load → execute to pick a tool yourself (a tool search or load finds joins the tool list). ' +
  'Every tool call is checked against the project policy and audited. help(topic) explains each meta-tool.';

/** A fresh server per session: McpServer holds one transport at a time. */
export function createMetaServer(deps: MetaServerDeps): McpServer {
  const ctx: MetaContext = {
    project: deps.project,
    resolver: deps.resolver,
    session: deps.session ?? deps.project.session,
    caller: deps.caller ?? LOCAL_CALLER,
    steps: deps.steps ?? { actionWords: catalogActionWords(resolvableTools(deps.project.registry.tools.values()).values()) },
    ...(deps.threads ? { threads: deps.threads } : {}),
    ...(deps.pipelines ? { pipelines: deps.pipelines } : {}),
  };
  // Logging: a call that waits for a person says so to the client while the tool call is open.
  // The tool list depends on the caller's key: a client may keep it a minute (2026-07-28's ttlMs), never share it.
  const server = new McpServer(deps.serverInfo ?? DEFAULT_INFO, {
    instructions: INSTRUCTIONS,
    maxToolInputElements: MAX_INPUT_ELEMENTS,
    capabilities: { logging: {}, tools: { listChanged: true } },
    cacheHints: { 'tools/list': { ttlMs: 60_000, cacheScope: 'private' } },
  });
  let projectTools: ProjectTools | undefined;
  const record = deps.record;
  const modern = deps.era === 'modern';
  const waits = modern ? deps.waits : undefined;
  const recorded = (tool: 'execute' | 'resolve', args: unknown, extra: ServerContext, run: (ctx: MetaContext, signal: AbortSignal) => Promise<MetaResult>): Promise<MetaAnswer> => {
    const notify = notifier(extra);
    const told = { ...ctx, notify: (message: string) => notify(message, 'info') };
    const work = (waiting: (at: WaitingAt) => void, signal: AbortSignal): Promise<MetaResult> =>
      guard(() => (record === undefined ? run(told, signal) : record({ tool, arguments: args, caller: ctx.caller, signal, waiting }, (runCall, s) => run({ ...told, runCall }, s))));
    // A 2025 client keeps its call open while a person decides, and a warning in its log says so.
    if (waits === undefined || record === undefined) return work((at) => notify(at.message, 'warning'), extra.mcpReq.signal);
    const state = extra.mcpReq.requestState<unknown>();
    if (typeof state === 'string') return waits.follow(tool, ctx.caller, state, extra.mcpReq.signal);
    return waits.start(tool, ctx.caller, work, extra.mcpReq.signal);
  };

  server.registerTool(
    'search',
    {
      title: 'Search tools, directives, knowledge and pipelines',
      description:
        'Find tools, directives, knowledge entries or pipelines of this project by what they do. Tools come back with their parameters. ' +
        'Example: {"item_type": "tool", "query": "read a file"}',
      inputSchema: z.object(searchShape),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args, extra) => {
      const answer = await guard(() => search(ctx, args, extra.mcpReq.signal));
      projectTools?.show(foundToolIds(answer));
      return answer;
    },
  );

  server.registerTool(
    'load',
    {
      title: 'Load one item',
      description:
        "Read one item in full: a tool's manifest and parameter schema, a directive's metadata, inputs, steps and Markdown, a knowledge entry, or a pipeline's inputs and stages. " +
        'Example: {"item_type": "directive", "item_id": "review_changes"}',
      inputSchema: z.object(loadShape),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args) => {
      const answer = await guard(() => load(ctx, args));
      if (!answer.isError && normalizeItemType(args.item_type) === 'tool') projectTools?.show([args.item_id]);
      return answer;
    },
  );

  server.registerTool(
    'execute',
    {
      title: 'Run a tool, directive, knowledge entry or pipeline',
      description:
        'action "run": a tool runs (through the project policy) with parameters as its arguments; a directive runs as a thread where the gateway can ' +
        '(async: true answers its id at once; "status", "stream", "cancel", "resume" then take that id), else returns its steps for you to follow; ' +
        'knowledge returns its content; on the gateway a pipeline runs (item_id its name, parameters its inputs; async: true answers its run id, which "status", "cancel", "resume" take). ' +
        'Example: {"item_type": "tool", "action": "run", "item_id": "read_file", "parameters": {"path": "README.md"}}',
      inputSchema: z.object(executeShape),
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    (args, extra) => recorded('execute', args, extra, (c, signal) => execute(c, args, signal)),
  );

  server.registerTool(
    'help',
    {
      title: 'Help',
      description:
        'Short usage guidance for the meta-tools and item kinds. Topics: overview, search, load, execute, resolve, directives, tools, knowledge. ' +
        'With action "stuck", "escalate" or "checkpoint" and a message, it signals the people running this project instead (audited; their hooks see it). ' +
        'Example: {"action": "escalate", "message": "the migration would drop a table; a person must decide"}',
      inputSchema: z.object(helpShape),
      // A signal writes an audit record, may take a checkpoint and fires hooks (webhooks): not read-only, never destructive.
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    (args, extra) => guard(() => help(ctx, args, extra.mcpReq.signal)),
  );

  server.registerTool(
    'resolve',
    {
      title: 'Resolve an intent to a tool call',
      description:
        'Say what you want in plain words; the gateway picks the tool, fills its arguments and runs it through the project policy (execute: false only shows the call). ' +
        'If it cannot tell, it answers "unresolved" with candidates and the missing arguments. Example: {"intent": "read the file docs/setup.md"}',
      inputSchema: z.object(resolveShape),
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    async (args, extra) => {
      // The new protocol asks back: an ambiguous intent becomes a menu the client answers, and its pick is the next round's tool.
      const round = modern ? menuRound(extra) : undefined;
      const picked = round?.picked;
      const answer = await recorded('resolve', args, extra, (c, signal) => resolve(c, args, signal, picked));
      return round === undefined ? answer : menuChoice(answer, round);
    },
  );

  const listing = deps.listing ?? DEFAULT_TOOL_LISTING;
  if (listing.real) {
    const rights = toolRights(deps.project.policy, ctx.caller);
    projectTools = registerProjectTools(server, {
      tools: deps.project.registry.tools.values(),
      allowed: (tool) => rights({ id: tool.id, tool }).allowed,
      listing,
      // A tool run by its name is `execute`'s run of it: the same proxy, record and approvals.
      run: (id, parameters, extra) => {
        const args = { item_type: 'tool' as const, action: 'run' as const, item_id: id, parameters };
        return recorded('execute', args, extra, (c, signal) => execute(c, args, signal));
      },
    });
  }

  registerRegistryViews(server, deps.project);
  return server;
}

/** The tool ids a search answered with. */
function foundToolIds(answer: MetaAnswer): string[] {
  const found = answer.structuredContent as { item_type?: unknown; results?: { id?: unknown }[] } | undefined;
  if (found?.item_type !== 'tool' || !Array.isArray(found.results)) return [];
  return found.results.flatMap((r) => (typeof r.id === 'string' ? [r.id] : []));
}

/**
 * Tells the client something while its tool call runs: as progress when it asked for progress
 * (which also keeps an SDK client's request timeout from running out), else as a log message.
 */
function notifier(extra: ServerContext): (message: string, level: 'info' | 'warning') => void {
  let progress = 0; // MCP asks for progress that grows with each notification
  return (message, level) => {
    const token = extra.mcpReq._meta?.progressToken;
    const notification: ServerNotification =
      token === undefined
        ? { method: 'notifications/message', params: { level, logger: 'kiwi-gateway', data: message } }
        : { method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } };
    void extra.mcpReq.notify(notification).catch(() => undefined);
  };
}
