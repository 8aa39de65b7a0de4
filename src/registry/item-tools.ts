/**
 * Directives and knowledge entries seen as callable items: a directive takes its `<inputs>` as
 * parameters (it runs as a thread, so it may change state), a knowledge entry takes nothing and
 * only reads. The resolver fills and checks their arguments as it does a tool's, and hooks and
 * approvals read `tool.*` of them as of a tool.
 */
import { CREATE_TOOL } from './item-proposal.js';
import type { Directive, Knowledge, Tool, ToolParameter } from './types.js';

/** What an intent or a call may name besides a tool. */
export type ItemKind = 'directive' | 'knowledge';

export interface CallableItem {
  kind: ItemKind;
  /** The directive's name or the entry's id, as a call names it. */
  id: string;
  tool: Tool;
}

/** Knowledge written as a tool manifest without an executor: it is read, never run, and has no chain. */
export function isReadOnlyKnowledge(tool: Tool): boolean {
  return tool.type === 'knowledge' && tool.executor === null;
}

export function directiveTool(directive: Directive): Tool {
  const parameters: ToolParameter[] = (directive.inputs ?? []).map((input) => ({
    name: input.name,
    type: input.type,
    required: input.required,
    ...(input.description ? { description: input.description } : {}),
  }));
  return {
    id: directive.name,
    type: 'directive',
    executor: null,
    version: directive.version,
    description: directive.description,
    mutatesState: true,
    requiresApproval: false,
    config: {},
    parameters,
    tags: directive.category ? [directive.category] : [],
    examples: [],
    source: directive.source,
  };
}

export function knowledgeTool(entry: Knowledge): Tool {
  return {
    id: entry.id,
    type: 'knowledge',
    executor: null,
    version: entry.version,
    description: entry.title,
    mutatesState: false,
    requiresApproval: false,
    config: {},
    parameters: [],
    tags: entry.tags,
    examples: [],
    source: entry.source,
  };
}

/**
 * The directives and knowledge entries a call may name, by id. A tool of the same id wins (the
 * item is reached through that tool, as a directive tool reaches its directive), and a directive
 * wins over an entry of the same id, so every id means one thing.
 */
export function callableItems(
  directives: Iterable<Directive>,
  knowledge: Iterable<Knowledge>,
  tools: ReadonlyMap<string, unknown>,
): Map<string, CallableItem> {
  const out = new Map<string, CallableItem>();
  for (const d of directives) if (!tools.has(d.name)) out.set(d.name, { kind: 'directive', id: d.name, tool: directiveTool(d) });
  for (const k of knowledge) if (!tools.has(k.id) && !out.has(k.id)) out.set(k.id, { kind: 'knowledge', id: k.id, tool: knowledgeTool(k) });
  return out;
}

/** A knowledge entry's fields as data (its content included), as MCP `load` and a knowledge call answer them. */
export function knowledgeFields(entry: Knowledge): Record<string, unknown> {
  return {
    id: entry.id,
    title: entry.title,
    entry_type: entry.entryType,
    version: entry.version,
    ...(entry.category !== undefined ? { category: entry.category } : {}),
    tags: entry.tags,
    content: entry.body,
  };
}

/** The grant, approval and audit name of restoring a checkpoint (MCP `execute action=rollback`). */
export const ROLLBACK_TOOL = 'checkpoints.restore';

/** A rollback seen as a tool: it changes the work tree, so it may need approval and is checkpointed first. */
export function rollbackTool(): Tool {
  return {
    id: ROLLBACK_TOOL,
    type: 'primitive',
    executor: null,
    version: '1.0.0',
    description: 'Restore one of your checkpoints over the work tree (the files as they were before a call)',
    mutatesState: true,
    requiresApproval: false,
    config: {},
    parameters: [{ name: 'checkpoint', type: 'string', required: true, description: 'The checkpoint id' }],
    tags: [],
    examples: [],
    source: { path: '(built in)', tier: 'project' },
  };
}

/** A creation seen as a tool: it writes `.ai/` (or the registry tier), so it is checkpointed first and hooks and approvals can name it. */
export function creationTool(): Tool {
  return {
    id: CREATE_TOOL,
    type: 'primitive',
    executor: null,
    version: '1.0.0',
    description: 'Create a tool, directive or knowledge entry, or a new version of one an agent created',
    mutatesState: true,
    requiresApproval: false,
    config: {},
    parameters: [
      { name: 'item_type', type: 'string', required: true, description: 'tool, directive or knowledge' },
      { name: 'item_id', type: 'string', required: true, description: "The item's id" },
      { name: 'content', type: 'string', required: true, description: 'The manifest, directive or entry, as text' },
      { name: 'files', type: 'object', required: false, description: "A tool's script files: name to text" },
      { name: 'tier', type: 'string', required: false, description: 'project (default) or registry' },
    ],
    tags: [],
    examples: [],
    source: { path: '(built in)', tier: 'project' },
  };
}
