import { KiwiError } from '../base/errors.js';
import { isReadOnlyKnowledge } from '../registry/item-tools.js';
import { PRIMITIVES, type IsolationLevel, type PrimitiveId, type Tool } from '../registry/types.js';
import { isPlainObject } from '../base/plain-object.js';

/** A tool's executor chain, from the tool itself down to the primitive that runs it. */
export interface ResolvedChain {
  /** The tools of the chain, the called tool first, the primitive last. */
  links: Tool[];
  primitive: PrimitiveId;
  /** Every link's config merged, the primitive's as the base and the called tool's on top. */
  config: Record<string, unknown>;
  /**
   * The isolation level, carried the way config is: the called tool's own, else that of the
   * nearest link below it that states one (a runtime's level covers its scripts), else `standard`.
   */
  isolation: IsolationLevel;
}

const MAX_DEPTH = 16;

/** Primitives exist even when `.ai/` does not declare them; a declared one only adds default config. */
export function builtinPrimitive(id: PrimitiveId): Tool {
  return {
    id,
    type: 'primitive',
    executor: null,
    version: '1.0.0',
    description: `built-in ${id} primitive`,
    mutatesState: true,
    requiresApproval: false,
    config: {},
    parameters: [],
    tags: [],
    examples: [],
    source: { path: '<built-in>', tier: 'project' },
  };
}

function isPrimitiveId(id: string): id is PrimitiveId {
  return (PRIMITIVES as readonly string[]).includes(id);
}

export function lookupLink(tools: ReadonlyMap<string, Tool>, id: string): Tool | undefined {
  return tools.get(id) ?? (isPrimitiveId(id) ? builtinPrimitive(id) : undefined);
}

export function resolveChain(tools: ReadonlyMap<string, Tool>, toolId: string): ResolvedChain {
  const first = lookupLink(tools, toolId);
  if (!first) throw new KiwiError('TOOL_NOT_FOUND', `no tool \`${toolId}\` in the registry; run \`kiwi tools list\` to see what there is`);
  if (isReadOnlyKnowledge(first)) {
    throw new KiwiError('CHAIN_INVALID', `\`${toolId}\` (${first.source.path}) is knowledge: it is read, not run; \`load\` it (or execute it through the MCP server's execute) to get its content`);
  }
  const links: Tool[] = [first];
  const seen = new Set([first.id]);
  let current = first;
  while (current.type !== 'primitive') {
    const path = links.map((l) => l.id).join(' -> ');
    if (!current.executor) {
      throw new KiwiError('CHAIN_INVALID', `chain ${path}: \`${current.id}\` (${current.source.path}) names no executor, so the chain never reaches subprocess or http_client; set \`executor:\``);
    }
    if (seen.has(current.executor)) {
      throw new KiwiError('CHAIN_INVALID', `chain ${path} -> ${current.executor} loops: \`${current.id}\` (${current.source.path}) names \`${current.executor}\` again; point it at a runtime or a primitive`);
    }
    const next = lookupLink(tools, current.executor);
    if (!next) {
      throw new KiwiError('CHAIN_INVALID', `chain ${path}: \`${current.id}\` (${current.source.path}) names executor \`${current.executor}\`, which is not in the registry; add it or use one of ${PRIMITIVES.join(', ')}`);
    }
    if (links.length >= MAX_DEPTH) {
      throw new KiwiError('CHAIN_INVALID', `chain ${path} is deeper than ${MAX_DEPTH} links; shorten it`);
    }
    links.push(next);
    seen.add(next.id);
    current = next;
  }
  if (!isPrimitiveId(current.id)) {
    throw new KiwiError('CHAIN_INVALID', `chain ${links.map((l) => l.id).join(' -> ')} ends at \`${current.id}\`, a primitive the gateway does not have; primitives are ${PRIMITIVES.join(', ')}`);
  }
  let config: Record<string, unknown> = {};
  for (let i = links.length - 1; i >= 0; i--) config = mergeConfig(config, (links[i] as Tool).config);
  const isolation = links.find((l) => l.isolation !== undefined)?.isolation ?? 'standard';
  return { links, primitive: current.id, config, isolation };
}

/** Objects merge key by key; arrays and scalars of the more specific link replace the base. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    out[key] = isPlainObject(prior) && isPlainObject(value) ? mergeConfig(prior, value) : value;
  }
  return out;
}

/** Checks every tool's chain; returns one message per broken tool. */
export function validateChains(tools: ReadonlyMap<string, Tool>): Array<{ tool: Tool; message: string }> {
  const problems: Array<{ tool: Tool; message: string }> = [];
  for (const tool of tools.values()) {
    // Knowledge without an executor has no chain by design.
    if (isReadOnlyKnowledge(tool)) continue;
    try {
      resolveChain(tools, tool.id);
    } catch (error) {
      problems.push({ tool, message: error instanceof Error ? error.message : String(error) });
    }
  }
  return problems;
}
