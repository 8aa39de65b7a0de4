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

export interface Allowed {
  allowed: true;
  plan: AllowedPlan;
  args: Record<string, unknown>;
  reason: string;
  /** Why a person must approve the call although the policy allows it (a creation the policy does not grant). */
  approval?: string;
}

export type Authorization =
  | Allowed
  /** `args`: the arguments as validated, when the call got that far before it was refused (hooks see no others). */
  | { allowed: false; reason: string; args?: Record<string, unknown> };

/** What a call is checked against: the registry, the directives and knowledge a call may name, the policy. */
export interface AuthorizeDeps {
  tools: ReadonlyMap<string, Tool>;
  /** The directives and knowledge entries a call may name with `item`; without them, such calls find nothing. */
  items?: { directives: ReadonlyMap<string, Directive>; knowledge: ReadonlyMap<string, Knowledge> };
  context: PermissionContext;
  plan: PlanContext;
}
