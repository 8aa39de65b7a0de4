import type { UsageSummary } from '../budgets/usage-summary.js';
import type { CallItem, ResolvedBy } from '../audit/audit-record.js';
import type { ToolResult } from '../contracts/tool-result.js';
import type { ThreadPlan } from '../executor/plan-types.js';
import type { LoadedHook } from '../hooks/hook-runner.js';
import type { Role } from '../policy/caller.js';
import type { PermissionContext } from '../policy/permission-context.js';
import type { Proposal } from '../registry/item-proposal.js';
import type { AskApproval } from './approval.js';

export type CallSource = 'cli' | 'gateway' | 'mcp' | 'prefetch' | 'runner' | 'thread';

/**
 * What a caller asks the tool proxy to run, and everything the proxy's stages read about it, in
 * groups as the MCP SDK groups a handler's context: what runs (`target`), who asks (`caller`), the
 * run it is part of (`run`), and what only one caller passes (`ext`). A new fact goes into its
 * group, not onto the call.
 */
export interface ToolCall {
  target: CallTarget;
  caller: ToolCaller;
  run?: CallRun;
  ext?: CallExtensions;
}

/** What the call runs. */
export interface CallTarget {
  /** The tool's id; a directive's name or a knowledge entry's id when `item` says so. */
  tool: string;
  /**
   * A directive (run as a thread, as a thread tool is), a knowledge entry (its content is the
   * result), a checkpoint to restore (`tool` is ROLLBACK_TOOL, `args.checkpoint` its id), or an
   * item to create (`tool` is CREATE_TOOL, `args` the proposal); absent, a tool.
   */
  item?: CallItem;
  /** The arguments as the caller gave them, unchecked (the plan stage checks them). */
  args?: unknown;
}

/** Who asks. */
export interface ToolCaller {
  /** Who asked (see Caller): rate limits count per client, never per session; loop detection per client and session. */
  client: string;
  /** The conversation the call belongs to; the audit files it under this id. */
  session: string;
  /** The asking key's roles (Caller.roles), where a stage asks: an admin may add a version to another client's creation. */
  roles?: readonly Role[];
  /** Which way in the call came (a chat, MCP, a thread, the CLI, …): kept in its audit record. */
  source: CallSource;
  /** A narrower context for this call (a directive's); it is intersected with the proxy's, never wider. */
  context?: PermissionContext;
}

/** The run the call is part of: a chat's turn, a thread, an MCP request. */
export interface CallRun {
  /** Aborted when the caller stops waiting: the call is cancelled. */
  signal?: AbortSignal;
  /** The directive the call runs under: its hooks fire after the policy's, conditions read its name and limits, and its `<tools>` (when it has one) name all it may call. */
  directive?: { name: string; hooks: readonly LoadedHook[]; limits?: Record<string, number>; tools?: readonly string[] };
  /** What the request has used so far (`turns`, `tool_calls`, `tokens`) and may use, for hook conditions (`cost.turns > limits.turns * 0.9`). */
  cost?: Record<string, number>;
  /** The request's limits, beside `cost` for hook conditions; the directive's own override them. */
  limits?: Record<string, number>;
  /** Asks a person whether the call may run; absent, a call that needs approval is denied. */
  approve?: AskApproval;
  /**
   * The thread making the call: a thread it spawns is its child (narrower rights, one level deeper), and counts as its
   * spawn; what a child it waits for used is told to `onChildUsage`, for the parent's own + children total.
   */
  thread?: { id: string; depth: number; onSpawn?: () => void; onChildUsage?: (usage: UsageSummary) => void };
  /** The request's budget, which counts each call asked of the proxy; absent, none is counted. */
  budget?: { countToolCall(): void };
}

/** What only one kind of caller passes, kept apart so that the groups above stay what every caller fills. */
export interface CallExtensions {
  /** The resolver's fallback model wrote this call: kept in its audit record. */
  resolvedBy?: ResolvedBy;
}

interface OutcomeBase {
  callId: string;
  tool: string;
  durationMs: number;
  /** The same call was made again and again in this session: the caller is probably looping. */
  stuck: boolean;
  /** The git checkpoint taken before the call ran (the work tree as it was): MCP `execute action=rollback` restores it. */
  checkpoint?: string;
  /** Directives the call's hooks asked to run next, their inputs filled. */
  directives?: { name: string; inputs: Record<string, string> }[];
  /** A hook decided `abort`: whatever made the call (a chat, a thread) stops, for this reason. */
  abort?: string;
}

export type CallOutcome =
  /** `skipped`: a hook decided the call is not run (the hook, `file:line`); the result says so, and it is no error. */
  | (OutcomeBase & { status: 'ok'; result: ToolResult; skipped?: string })
  | (OutcomeBase & { status: 'denied'; reason: string })
  | (OutcomeBase & { status: 'error'; error: { code: string; message: string } });

export type OkOutcome = CallOutcome & { status: 'ok' };

/** Runs a thread plan (the gateway's thread runtime), as the caller: its client, rights and thread. */
export type ThreadSpawner = (plan: ThreadPlan, call: ToolCall) => Promise<ToolResult>;
/** Starts a thread in the background for a call (a hook's directive), as the caller; answers its id. */
export type BackgroundSpawner = (plan: ThreadPlan, call: ToolCall) => Promise<string>;

/** Where thread plans run: the gateway's thread runtime. Without it they are refused. */
export interface ThreadPort {
  spawn: ThreadSpawner;
  background: BackgroundSpawner;
}

/** Lands an allowed proposal (project/land-item.ts): writes or pushes it, and the registry runs it from then on. */
export interface ItemCreations {
  land(creation: Creation, call: ToolCall): Promise<ToolResult>;
}

/** An allowed creation: the proposal, and how many bytes of created items its client may keep (the policy's `created_items.quota_mb`). */
export interface Creation {
  proposal: Proposal;
  quotaBytes: number;
}
