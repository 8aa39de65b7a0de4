/**
 * An item an agent proposes (MCP `execute action=create`): a tool manifest with its script files,
 * a directive, or a knowledge entry, as text. It is signed here (the gateway vouches for the bytes
 * it checked, whatever signature line the agent wrote), parsed by the registry's own parsers, and
 * held to what an agent may create: no primitives, runtimes or MCP servers (they start processes
 * from their config alone), nothing `trusted` (it would run outside every sandbox), script files
 * flat beside the manifest and never another manifest. Nothing is written here (land-item.ts does).
 */
import path from 'node:path';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { parseDirective } from './directive-parser.js';
import { parseKnowledge } from './knowledge-parser.js';
import { signText } from './signature.js';
import { parseToolManifest } from './tool-manifest.js';
import { TOOL_ID_PATTERN } from './tool-name.js';
import type { Directive, Knowledge, Tier, Tool, ToolType } from './types.js';
import type { FileLabel, ParseResult } from './validation-error.js';

/** The grant (the policy's `tools`), approval and audit name of creating an item. */
export const CREATE_TOOL = 'registry.create';

export const CREATABLE = ['tool', 'directive', 'knowledge'] as const;
export type CreatableKind = (typeof CREATABLE)[number];

/** Where a created item lands: the project's `.ai/`, or the registry tier in the database. */
export const CREATION_TIERS = ['project', 'registry'] as const;
export type CreationTier = (typeof CREATION_TIERS)[number];

/** The tool types an agent may write: each runs through an executor the project already has. */
const CREATABLE_TOOL_TYPES: readonly ToolType[] = ['script', 'api', 'mcp_tool'];

/** Per creation: each file, their number, and all of them together (UTF-8 bytes). A client's total is the policy's `created_items.quota_mb`. */
export const PROPOSAL_LIMITS = { maxFileChars: 256 * 1024, maxFiles: 16, maxTotalBytes: 1024 * 1024 } as const;

/** What a created MCP tool's config may hold: the remote tool's name; everything else would change the server a person configured. */
const MCP_TOOL_KEYS = ['tool', 'mcp_tool_name'];

/** A script file's name: one plain name (no folder), not hidden, and not one the registry would load as an item. */
const SCRIPT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const ITEM_FILE = /\.(ya?ml|md)$/i;

const text = (what: string) =>
  z
    .string({ error: `${what} must be the file's text, as a string` })
    .min(1, `${what} is empty`)
    .max(PROPOSAL_LIMITS.maxFileChars, `${what} is longer than ${PROPOSAL_LIMITS.maxFileChars} characters`);

const proposalArgs = z.strictObject(
  {
    item_type: z.enum(CREATABLE, { error: `item_type must be one of ${CREATABLE.join(', ')}` }),
    item_id: z
      .string({ error: 'item_id must be the new item\'s id (a directive\'s name)' })
      .regex(TOOL_ID_PATTERN, 'item_id is 1-128 of A-Z, a-z, 0-9, "_", "." and "-"')
      .refine((id) => !id.startsWith('.'), 'item_id must not start with "." (the registry does not load hidden files)'),
    content: text('parameters.content (the manifest, directive or entry)'),
    files: z
      .record(z.string(), text('each of parameters.files'), { error: 'parameters.files must be an object of file name to text, e.g. {"count.py": "..."}' })
      .optional(),
    tier: z.enum(CREATION_TIERS, { error: `parameters.tier must be one of ${CREATION_TIERS.join(', ')}` }).optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `parameters may hold content, files and tier; not ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : undefined) },
);

export type ProposalArgs = z.output<typeof proposalArgs>;

export type ProposedItem = { kind: 'tool'; item: Tool } | { kind: 'directive'; item: Directive } | { kind: 'knowledge'; item: Knowledge };

export interface Proposal {
  kind: CreatableKind;
  id: string;
  version: string;
  tier: CreationTier;
  /** The item's folder inside `.ai/`, `/`-separated: `tools/created/ID`, `directives/created`, `knowledge/created`. */
  folder: string;
  /** The file that defines it, in `folder`; the first of `files`. */
  manifest: string;
  /** Every file, the manifest signed. */
  files: Array<{ name: string; text: string }>;
  /** The hash its signature line records. */
  signature: string;
  /** As the registry parsed the signed manifest (its source a placeholder until it lands). */
  parsed: ProposedItem;
}

/** Checks and signs a proposal; throws INVALID_INPUT saying what to change. */
export function proposeItem(raw: unknown, now: Date): Proposal {
  const parsedArgs = proposalArgs.safeParse(raw);
  if (!parsedArgs.success) throw new KiwiError('INVALID_INPUT', parsedArgs.error.issues.map(issueText).join('; '));
  const args = parsedArgs.data;
  const kind = args.item_type;
  const extra = Object.entries(args.files ?? {});
  if (kind !== 'tool' && extra.length > 0) throw new KiwiError('INVALID_INPUT', `a ${kind} is one file, its content; parameters.files is for a tool's scripts`);
  if (extra.length > PROPOSAL_LIMITS.maxFiles) throw new KiwiError('INVALID_INPUT', `a created tool has at most ${PROPOSAL_LIMITS.maxFiles} script files, not ${extra.length}`);
  for (const [name] of extra) checkScriptName(name);
  const total = [args.content, ...extra.map(([, body]) => body)].reduce((sum, body) => sum + Buffer.byteLength(body, 'utf8'), 0);
  if (total > PROPOSAL_LIMITS.maxTotalBytes) {
    throw new KiwiError('INVALID_INPUT', `the ${kind} and its files are ${total} bytes together, more than the ${PROPOSAL_LIMITS.maxTotalBytes} a creation may hold; keep data out of tools (a tool reads it at run time)`);
  }

  const manifest = kind === 'tool' ? `${args.item_id}.yaml` : `${args.item_id}.md`;
  const folder = kind === 'tool' ? `tools/created/${args.item_id}` : `${kind === 'directive' ? 'directives' : 'knowledge'}/created`;
  let signed: string;
  try {
    signed = signText(kind, args.content, now);
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `the ${kind} cannot be signed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const label: FileLabel = { file: path.join('/', '.ai', folder, manifest), display: `the proposed ${kind} ${args.item_id}` };
  const parsed = parseProposed(kind, signed, label);
  const id = parsed.kind === 'directive' ? parsed.item.name : parsed.item.id;
  if (id !== args.item_id) throw new KiwiError('INVALID_INPUT', `item_id is ${JSON.stringify(args.item_id)} but the ${kind} says ${JSON.stringify(id)}; make them the same`);
  if (!/^\d+(\.\d+){0,3}$/.test(parsed.item.version)) {
    throw new KiwiError('INVALID_INPUT', `the ${kind} needs a version of numbers like 1.0.0 (it says ${JSON.stringify(parsed.item.version)}), so a later version can follow it`);
  }
  if (parsed.kind === 'tool') checkTool(parsed.item, extra.map(([name]) => name));
  const signature = parsed.item.signature?.hash;
  if (signature === undefined) throw new KiwiError('INTERNAL', `the proposed ${kind} ${id} lost its signature line when parsed`);
  return {
    kind,
    id,
    version: parsed.item.version,
    tier: args.tier ?? 'project',
    folder,
    manifest,
    files: [{ name: manifest, text: signed }, ...extra.map(([name, body]) => ({ name, text: body }))],
    signature,
    parsed,
  };
}

function parseProposed(kind: CreatableKind, signed: string, label: FileLabel): ProposedItem {
  const result = parseItem(kind, signed, label, 'project');
  if (!result.ok) throw new KiwiError('INVALID_INPUT', `the registry's parser refuses it: ${result.issues.map((i) => i.message).join('; ')}`);
  return result.value;
}

/** An item's file as the registry's parser for its kind reads it. */
export function parseItem(kind: CreatableKind, text: string, label: FileLabel, tier: Tier): ParseResult<ProposedItem> {
  const result = kind === 'tool' ? parseToolManifest(text, label, tier) : kind === 'directive' ? parseDirective(text, label, tier) : parseKnowledge(text, label, tier);
  return result.ok ? { ok: true, value: { kind, item: result.value } as ProposedItem } : result;
}

function checkTool(tool: Tool, scripts: readonly string[]): void {
  const refuse = (why: string): never => {
    throw new KiwiError('INVALID_INPUT', `tool ${tool.id}: ${why}`);
  };
  if (!CREATABLE_TOOL_TYPES.includes(tool.type)) refuse(`tool_type ${tool.type} cannot be created by an agent; create a ${CREATABLE_TOOL_TYPES.join(', ')} tool run by an executor the project has (or a directive)`);
  if (tool.isolation === 'trusted') refuse('a created tool cannot be `isolation: trusted` (it would run outside every sandbox); write standard, sandboxed or restricted');
  const mcp = createdMcpToolProblem(tool);
  if (mcp !== undefined) refuse(mcp);
  const script = tool.config['script'] ?? tool.config['entrypoint'];
  if (typeof script === 'string' && script !== '' && !script.includes('{') && !scripts.includes(script)) {
    refuse(`its script ${JSON.stringify(script)} is not among parameters.files (${scripts.length === 0 ? 'none were given' : scripts.join(', ')}); send the script's text there under that name`);
  }
}

/** Why a created MCP tool's config is refused (it reaches past naming the remote tool), or undefined. */
export function createdMcpToolProblem(tool: Tool): string | undefined {
  if (tool.type !== 'mcp_tool') return undefined;
  const extra = Object.keys(tool.config).filter((key) => !MCP_TOOL_KEYS.includes(key));
  if (extra.length === 0) return undefined;
  return `a created MCP tool's config names the server's tool only (${MCP_TOOL_KEYS.join(' or ')}), not ${extra.slice(0, 5).join(', ')}: the server's URL, command, headers and environment are the ones a person configured`;
}

function checkScriptName(name: string): void {
  if (!SCRIPT_NAME.test(name)) throw new KiwiError('INVALID_INPUT', `file name ${JSON.stringify(name.slice(0, 140))} is not a plain name; scripts sit beside the manifest, named with A-Z, a-z, 0-9, "_", "." and "-" (no folders, not hidden)`);
  if (ITEM_FILE.test(name)) throw new KiwiError('INVALID_INPUT', `file ${name} would be loaded as an item of its own; a tool's files are its scripts (a .yaml, .yml or .md file is not one)`);
}

function issueText(issue: z.core.$ZodIssue): string {
  const where = issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
  return issue.message.startsWith('parameters') || issue.message.startsWith('item_') ? issue.message : `${where}${issue.message}`;
}
