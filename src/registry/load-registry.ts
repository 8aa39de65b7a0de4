/**
 * Loads the `.ai/` folders of the project and user tiers, then the registry tier's items (read
 * from the database by the caller). The first tier that has an id wins; one bad file never stops
 * the others from loading — it is reported in `errors` and left out of the maps.
 */
import { homedir } from 'node:os';
import path from 'node:path';
import { KiwiError } from '../base/errors.js';
import { parseDirective } from './directive-parser.js';
import { unknownToolNames } from './directive-tools.js';
import { compareVersions, parseVersion } from './directive-version.js';
import { parseKnowledge } from './knowledge-parser.js';
import { parsePipeline } from './pipeline-file.js';
import { realpathOrNull, walkTier, type FoundFile, type SectionKind } from './registry-files.js';
import { parseToolManifest } from './tool-manifest.js';
import { isCreatedFile, readOwners } from './item-owners.js';
import { namespaceServer } from './item-succession.js';
import type { CreatedBy, Directive, Knowledge, Pipeline, Registry, RegistryIssue, ShadowedItem, SourceRef, Tier, Tool } from './types.js';
import { makeIssue, type ParseResult } from './validation-error.js';

export type { Registry, RegistryIssue, ShadowedItem } from './types.js';

export interface LoadRegistryOptions {
  /** The folder that contains the project's `.ai`. */
  projectDir: string;
  /** The folder that contains the user's `.ai`; defaults to the home directory. */
  userDir?: string;
  signal?: AbortSignal;
  /** Files above this size are skipped with an error (default 1 MiB). */
  maxFileBytes?: number;
  /** At most this many files are read per tier (default 10 000). */
  maxFiles?: number;
  /** The registry tier's manifests, already read from the database (project/project-registry.ts). */
  registryTier?: readonly FoundFile[];
}

export const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_FILES = 10_000;

type Item = Tool | Directive | Knowledge;
type ItemKind = Exclude<SectionKind, 'pipeline'>;

interface TierItems {
  items: Map<string, Item>;
  /** Ids defined by more than one file of the tier: not loaded from any tier. */
  conflicted: Set<string>;
  /** A directive's older versions beside its newest (in `items`), newest first. */
  older: Map<string, Directive[]>;
}

const KINDS: Exclude<SectionKind, 'pipeline'>[] = ['tool', 'directive', 'knowledge'];

export async function loadRegistry(options: LoadRegistryOptions): Promise<Registry> {
  if (options.signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'loading the registry was cancelled');
  const errors: RegistryIssue[] = [];
  const warnings: RegistryIssue[] = [];
  const limits = {
    maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
    maxFiles: options.maxFiles ?? DEFAULT_MAX_FILES,
  };
  const projectAi = path.resolve(options.projectDir, '.ai');
  const userAi = path.resolve(options.userDir ?? homedir(), '.ai');
  const userLabel = options.userDir === undefined ? '~/.ai' : userAi;

  const project = await walkTier(projectAi, '.ai', limits, errors, options.signal);
  // A project in the home folder would otherwise load the same files twice, as two tiers.
  const sameFolder = project.realRoot !== null && project.realRoot === (await realpathOrNull(userAi));
  const user = sameFolder ? { files: [], realRoot: null } : await walkTier(userAi, userLabel, limits, errors, options.signal);

  const items = (files: FoundFile[]): FoundFile[] => files.filter((f) => f.kind !== 'pipeline');
  const owners = project.realRoot === null ? undefined : await readOwners(project.realRoot);
  // Agents' creations land in the project tier (with an owner file) and the registry tier (owned in its rows); never in the user's.
  const projectCreated: CreatedOf = (file, id) => (isCreatedFile(projectAi, file.label.file) ? owned(owners?.get(file.kind as ItemKind)?.get(id)?.client) : undefined);
  const sinks = { errors, warnings };
  const tiers: Array<[Tier, Record<ItemKind, TierItems>]> = [
    ['project', collect(items(project.files), 'project', projectCreated, sinks, options.signal)],
    ['user', collect(items(user.files), 'user', () => undefined, sinks, options.signal)],
    ['registry', collect(items([...(options.registryTier ?? [])]), 'registry', (file) => file.created, sinks, options.signal)],
  ];

  const registry: Registry = { tools: new Map(), directives: new Map(), knowledge: new Map(), errors, warnings, shadowed: [] };
  for (const kind of KINDS) merge(kind, tiers, registry);
  dropCreatedInServerNamespaces(registry);
  dropUnknownToolNames(registry);
  // Pipelines name directives: they are checked against the directives that loaded, from either tier.
  const pipelines = loadPipelines([['project', project.files], ['user', user.files]], registry);
  if (pipelines.size > 0) registry.pipelines = pipelines;
  return registry;
}

/** A tier's pipeline files; a name the project tier has shadows the user tier's, and a name twice in one tier loads neither. */
function loadPipelines(tiers: Array<[Tier, FoundFile[]]>, registry: Registry): Map<string, Pipeline> {
  const out = new Map<string, Pipeline>();
  for (const [tier, files] of tiers) {
    const loaded = new Map<string, Array<{ pipeline: Pipeline; file: FoundFile }>>();
    for (const file of files.filter((f) => f.kind === 'pipeline')) {
      const result = parsePipeline(file.text, file.label, tier, registry.directives);
      if (!result.ok) registry.errors.push(...result.issues);
      else loaded.set(result.value.name, [...(loaded.get(result.value.name) ?? []), { pipeline: result.value, file }]);
    }
    for (const [name, found] of loaded) {
      const first = found[0] as { pipeline: Pipeline };
      const winner = out.get(name);
      if (winner !== undefined) registry.shadowed.push({ id: name, kind: 'pipeline', winner: winner.source, loser: first.pipeline.source });
      else if (found.length === 1) out.set(name, first.pipeline);
      else
        for (const { file } of found) {
          const others = found.filter((o) => o.file !== file).map((o) => o.file.label.display);
          registry.errors.push(makeIssue('pipeline', file.label, { field: 'name', text: `pipeline "${name}" is also defined in ${others.join(', ')}; names must be unique within the ${tier} tier — rename or delete one (none of them is loaded until then)` }));
        }
    }
  }
  return out;
}

/** Whether an agent created the item read from `file` (its id `id`), and whose it is. */
type CreatedOf = (file: FoundFile, id: string) => CreatedBy | undefined;

function owned(owner: string | undefined): CreatedBy {
  return owner === undefined ? {} : { owner };
}

function collect(
  files: readonly FoundFile[],
  tier: Tier,
  createdOf: CreatedOf,
  { errors, warnings }: { errors: RegistryIssue[]; warnings: RegistryIssue[] },
  signal: AbortSignal | undefined,
): Record<ItemKind, TierItems> {
  const groups = new Map<string, Array<{ file: FoundFile; item: Item; id: string }>>();
  for (const file of files) {
    if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'loading the registry was cancelled');
    const result = parseFile(file, tier);
    if (!result.ok) {
      errors.push(...result.issues);
      continue;
    }
    if (result.warnings !== undefined) warnings.push(...result.warnings);
    const id = idOf(file.kind, result.value);
    const created = createdOf(file, id);
    if (created !== undefined) result.value.source = { ...result.value.source, created };
    const key = `${file.kind}\u0000${id}`;
    const group = groups.get(key) ?? [];
    group.push({ file, item: result.value, id });
    groups.set(key, group);
  }
  const out: Record<ItemKind, TierItems> = {
    tool: { items: new Map(), conflicted: new Set(), older: new Map() },
    directive: { items: new Map(), conflicted: new Set(), older: new Map() },
    knowledge: { items: new Map(), conflicted: new Set(), older: new Map() },
  };
  for (const group of groups.values()) {
    const first = group[0];
    if (first === undefined) continue;
    const bucket = out[first.file.kind as ItemKind];
    if (group.length === 1) {
      bucket.items.set(first.id, first.item);
      continue;
    }
    const versions = first.file.kind === 'directive' ? byVersion(group.map((g) => g.item as Directive)) : undefined;
    if (versions !== undefined) {
      const [newest, ...older] = versions;
      bucket.items.set(first.id, newest as Directive);
      bucket.older.set(first.id, older);
      continue;
    }
    bucket.conflicted.add(first.id);
    for (const { file } of group) {
      const others = group.filter((g) => g.file !== file).map((g) => g.file.label.display);
      errors.push(
        makeIssue(file.kind, file.label, {
          field: idField(file.kind),
          text:
            file.kind === 'directive'
              ? `directive "${first.id}" is also defined in ${others.join(', ')} with the same version, or a version that is not numbers; versions of one directive in the ${tier} tier must be distinct numbers like 1.0.1, so the highest runs — change one (none of them is loaded until then)`
              : `${file.kind} "${first.id}" is also defined in ${others.join(', ')}; ids must be unique within the ${tier} tier — rename or delete one (none of them is loaded until then)`,
        }),
      );
    }
  }
  return out;
}

/** Newest first, when every version is a number and no two are equal; otherwise undefined (a conflict). */
function byVersion(directives: Directive[]): Directive[] | undefined {
  if (directives.some((d) => parseVersion(d.version) === undefined)) return undefined;
  const sorted = [...directives].sort((a, b) => compareVersions(b.version, a.version) ?? 0);
  const distinct = sorted.every((d, i) => i === 0 || compareVersions((sorted[i - 1] as Directive).version, d.version) !== 0);
  return distinct ? sorted : undefined;
}

function parseFile(file: FoundFile, tier: Tier): ParseResult<Item> {
  if (file.kind === 'tool') return parseToolManifest(file.text, file.label, tier);
  if (file.kind === 'directive') return parseDirective(file.text, file.label, tier);
  return parseKnowledge(file.text, file.label, tier);
}

function idOf(kind: SectionKind, item: Item): string {
  if (kind === 'directive') return (item as Directive).name;
  return (item as Tool | Knowledge).id;
}

function idField(kind: SectionKind): string {
  if (kind === 'tool') return 'tool_id';
  if (kind === 'directive') return 'name';
  return 'id';
}

function merge(kind: ItemKind, tiers: Array<[Tier, Record<ItemKind, TierItems>]>, registry: Registry): void {
  const target = (kind === 'tool' ? registry.tools : kind === 'directive' ? registry.directives : registry.knowledge) as Map<string, Item>;
  const claimed = new Map<string, SourceRef | null>();
  for (const [, byKind] of tiers) {
    const { items, conflicted } = byKind[kind];
    for (const id of conflicted) if (!claimed.has(id)) claimed.set(id, null);
    for (const [id, item] of items) {
      if (claimed.has(id)) {
        const winner = claimed.get(id);
        if (winner !== null && winner !== undefined) {
          const shadow: ShadowedItem = { id, kind, winner, loser: item.source };
          registry.shadowed.push(shadow);
        }
        continue;
      }
      claimed.set(id, item.source);
      target.set(id, item);
      const older = byKind[kind].older.get(id);
      if (older !== undefined) (registry.olderDirectives ??= new Map()).set(id, older);
    }
  }
}

/** A tool an agent created with an id in an MCP server's namespace (`server.tool`) would shadow the server's tool of that name for every client: not loaded. */
function dropCreatedInServerNamespaces(registry: Registry): void {
  for (const [id, tool] of registry.tools) {
    const server = tool.source.created === undefined ? undefined : namespaceServer(registry.tools, id);
    if (server === undefined) continue;
    registry.tools.delete(id);
    registry.errors.push(makeIssue('tool', { file: tool.source.path, display: tool.source.path }, { field: 'tool_id', text: `was created by an agent in the namespace of MCP server ${server.id}: ids that start with "${server.id}." are that server's tools, so it is not loaded — a person may rename it` }));
  }
}

/** A directive whose `<tools>` names a tool the registry lacks does not load: its thread would be refused what its author meant it to have. */
function dropUnknownToolNames(registry: Registry): void {
  for (const [name, directive] of registry.directives) {
    const issues = unknownToolNames(directive, registry.tools);
    if (issues.length === 0) continue;
    registry.errors.push(...issues);
    registry.directives.delete(name);
    registry.olderDirectives?.delete(name);
  }
}
