import { contextChain, type PermissionContext } from './permission-context.js';

/**
 * What the policy gives items that agents created (CreatedItemsPolicy, `created_items:` in a
 * policy file). Such a tool is written by an agent, not by the project's author, so it gets none
 * of the gateway's environment (API keys, database URLs) unless a policy grants a variable by
 * name, and a client keeps at most a quota of created items, every kept version counted.
 */

export const DEFAULT_CREATED_QUOTA_BYTES = 16 * 1024 * 1024;

/**
 * The variables a created tool may read, besides those every child gets (executor/plan.ts
 * HARMLESS_ENV): those every policy file of the chain (the project's, the client's) grants. A
 * policy file that says nothing of created items grants none; a directive's context, which is no
 * policy file, does not narrow.
 */
export function createdEnvGrant(ctx: PermissionContext): Set<string> {
  let granted: Set<string> | undefined;
  for (const c of contextChain(ctx)) {
    if (c.createdItems === undefined) continue;
    granted = new Set(c.createdItems.env.filter((name) => granted === undefined || granted.has(name)));
  }
  return granted ?? new Set();
}

/** The least quota any policy file of the chain sets, else the default. */
export function createdQuotaBytes(ctx: PermissionContext): number {
  const set = contextChain(ctx).flatMap((c) => (c.createdItems?.quotaBytes === undefined ? [] : [c.createdItems.quotaBytes]));
  return set.length === 0 ? DEFAULT_CREATED_QUOTA_BYTES : Math.min(...set);
}
