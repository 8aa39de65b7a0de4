import { validateChains } from '../executor/chain.js';
import { checkTool, matchesAny, type PermissionContext } from '../policy/permission-context.js';
import { callContext } from '../proxy/call-context.js';
import type { Caller } from '../policy/caller.js';
import type { Tool } from '../registry/types.js';
import { resolvableTools } from '../resolver/resolver.js';

/**
 * What a runner offers the kernel (§7.1: capabilities are exact tool ids): the tools of its
 * registry an agent can call, whose chain is whole, that the policy lets its caller run — the
 * check the tool proxy makes first on every call — and, when `only` is given, that match one of
 * its globs. A tool left out is never sent here, so an agent's call to it waits in the kernel's
 * queue for a runner that has it instead of failing on this one.
 */

export interface RunnerCapabilities {
  /** Sorted tool ids. */
  offered: string[];
  /** What the policy allows, before `only` narrows it. */
  allowed: string[];
  /** Tools left out by the policy or a broken chain (not those `only` left out), with why. */
  withheld: { tool: string; reason: string }[];
  /** Globs of `only` that match none of the tools the policy allows: a typo, most likely. */
  unmatched: string[];
}

export function runnerCapabilities(tools: ReadonlyMap<string, Tool>, policy: PermissionContext, caller: Caller, only?: readonly string[]): RunnerCapabilities {
  const rights = callContext(policy, caller.context);
  const broken = new Map(validateChains(tools).map((p) => [p.tool.id, p.message]));
  const allowed: string[] = [];
  const withheld: RunnerCapabilities['withheld'] = [];
  for (const id of [...resolvableTools(tools.values()).keys()].sort()) {
    const chain = broken.get(id);
    const grant = checkTool(rights, id);
    if (chain !== undefined) withheld.push({ tool: id, reason: `its chain is broken: ${chain}` });
    else if (!grant.allowed) withheld.push({ tool: id, reason: grant.reason });
    else allowed.push(id);
  }
  if (only === undefined) return { offered: allowed, allowed, withheld, unmatched: [] };
  return {
    offered: allowed.filter((id) => matchesAny(only, id)),
    allowed,
    withheld,
    unmatched: only.filter((glob) => !allowed.some((id) => matchesAny([glob], id))),
  };
}
