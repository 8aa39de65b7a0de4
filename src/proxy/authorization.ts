import type { ToolResult } from '../contracts/tool-result.js';
import type { ExecutionPlan } from '../executor/plan-types.js';
import type { PlanContext } from '../executor/plan.js';
import type { PermissionContext } from '../policy/permission-context.js';
import type { Directive, Knowledge, Tool } from '../registry/types.js';
import type { Creation } from './tool-call.js';

/** A call whose answer is known once it is allowed (a knowledge entry's content): nothing runs. */
export interface ReadPlan {
  kind: 'read';
  result: ToolResult;
}

/** A checkpoint of the caller's restored over the work tree (MCP `execute action=rollback`). */
export interface RollbackPlan {
  kind: 'rollback';
  checkpoint: string;
}

/** An item an agent proposed, checked and signed, to land in the project or the registry tier (MCP `execute action=create`). */
export interface CreatePlan extends Creation {
  kind: 'create';
}

export type AllowedPlan = ExecutionPlan | ReadPlan | RollbackPlan | CreatePlan;

/**
 * How the policy grants a call of what it names: the policy's `tools` names `id` (a tool, a
 * directive, ROLLBACK_TOOL: `hint` says how to grant it), an MCP server's own tool is granted by its
 * qualified name (`server` is what a directive's `<tools>` may name instead), a knowledge entry is
 * read by every caller, and a creation needs CREATE_TOOL named in every policy or a person's approval.
 */
export type Grant =
  | { by: 'tools'; id: string; hint?: string }
  | { by: 'mcp_tools'; id: string; server: string }
  | { by: 'everyone' }
  | { by: 'creation'; what: string; tier: string };

/** Which of authorize's judgments a planning failure is reported before, so a call is refused in the order it always was. */
export type Judgment = 'tags' | 'grant' | 'checks';

/**
 * What the plan stage found a call would run, before the policy judges it (authorize.ts): how it
 * is granted, its arguments as checked and its plan — or where planning stopped and why.
 */
export interface Planned {
  /** Absent when planning stopped before the call named anything the policy grants (a bad name, an unknown tool). */
  grant?: Grant;
  /** The registry tool the plan runs (an MCP server's, for its own tools): its parameters say which may start with "-". */
  tool?: Tool;
  /** The arguments as checked (validated, paths resolved), once planning got that far. */
  args?: Record<string, unknown>;
  plan?: AllowedPlan;
  /** Said after an allowed call's reason: whose agent created the tool. */
  note?: string;
  /** Why planning stopped: a refusal, or the error a malformed call throws; authorize reports it before the judgment `before`. */
  stopped?: { before: Judgment; reason: string } | { before: Judgment; error: unknown };
}

/** Authorize's judgment of a planned call. */
export type Verdict =
  | {
      allowed: true;
      /** The arguments the call runs with, as the hooks, the loop check and a person see them. */
      args: Record<string, unknown>;
      reason: string;
      /** Why a person must approve the call although the policy allows it (a creation the policy does not grant). */
      approval?: string;
    }
  /** `args`: the arguments as checked, when the call was granted before it was refused (hooks see no others). */
  | { allowed: false; reason: string; args?: Record<string, unknown> };

/** What a call is checked against: the registry, the directives and knowledge a call may name, the policy. */
export interface AuthorizeDeps {
  tools: ReadonlyMap<string, Tool>;
  /** The directives and knowledge entries a call may name with `item`; without them, such calls find nothing. */
  items?: { directives: ReadonlyMap<string, Directive>; knowledge: ReadonlyMap<string, Knowledge> };
  context: PermissionContext;
  plan: PlanContext;
}
