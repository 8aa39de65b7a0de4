import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createEmbedder, type EmbedderConfig } from '../embed/create-embedder.js';
import { callableItems } from '../registry/item-tools.js';
import type { Directive, Knowledge, Tool } from '../registry/types.js';
import { directiveDocument, knowledgeDocument } from './item-document.js';
import { createLlmArgumentFiller } from './llm-argument-filler.js';
import { loadResolverConfig, type ArgumentModelConfig, type FallbackLimits, type NamedFallback } from './resolver-config.js';
import type { ResolverFallback } from './model-fallback.js';
import { loadResolverModel, offeredGates } from './learned-model.js';
import type { OfferedTargets } from './call-gate-summary.js';
import { createResolver, resolvableTools, type ResolverGates, type ResolverSettings } from './resolver.js';
import type { StagedResolver } from './types.js';
import { openToolIndex, type SyncReport, type TableState, type ToolIndex } from '../store/tool-index.js';
import { waitForLock } from '../store/wait-lock.js';

export interface ResolverRuntimeOptions {
  /** Every valid tool; those an agent cannot call (primitives, runtimes, MCP servers) are left out. */
  tools: Iterable<Tool>;
  /** Directives and knowledge entries intents may resolve to besides tools (indexed in their own table, `items`). */
  directives?: Iterable<Directive>;
  knowledge?: Iterable<Knowledge>;
  /** Where the LanceDB table lives (a project's `.ai/vectors`, or a temporary folder). */
  indexDir: string;
  embedder?: EmbedderConfig;
  settings?: Partial<ResolverSettings>;
  /** An OpenAI-compatible chat model for argument filling; rules only when absent. */
  argumentModel?: ArgumentModelConfig | null;
  /** The model asked where the rules stop short; none when absent. */
  fallback?: ResolverFallback;
  /** The learned confidence: a file (default: the shipped models/resolver/model.json), or null for none (raw confidences, no gate). */
  model?: string | null;
  log?: (message: string) => void;
  /** Cancels opening (loading the embedder's model). */
  signal?: AbortSignal;
}

/** A sync of the tools and of the directives and knowledge: the counts are of both, `items` of the second alone. */
export interface RuntimeSyncReport extends SyncReport {
  items?: SyncReport;
}

/** The tools' table, or the directives' and knowledge's (`items`). */
export type IndexedTable = 'tools' | 'items';

/** What a sync tells as it embeds, table by table (tools first); a table with nothing to embed tells nothing. */
export interface IndexProgress {
  /** Before a table's first batch: how many need embedding, and whether the table was just made empty. */
  start?(table: IndexedTable, total: number, state: TableState): void;
  /** After each embedded batch. */
  embedded?(table: IndexedTable, done: number, total: number): void;
  /** Once every table is in line. */
  end?(report: RuntimeSyncReport): void;
}

export interface RuntimeSyncOptions {
  progress?: IndexProgress;
  signal?: AbortSignal;
}

export interface ResolverRuntime {
  resolver: StagedResolver;
  embedderId: string;
  toolCount: number;
  /** Directives and knowledge entries intents may resolve to. */
  itemCount: number;
  /** The tools intents resolve to (`resolvableTools`), and its settings: what a second index over the same tools needs (prefetch). */
  tools: ReadonlyMap<string, Tool>;
  settings: Partial<ResolverSettings>;
  /** The threshold and gate the resolver applies (what its answers are measured against). */
  gates: ResolverGates;
  /** The targets the learned confidence offers; null without one. */
  targets: OfferedTargets | null;
  /** The fallback model resolver.yaml names, as routed: the resolver asks it; a chat passes it charged to its client (`ResolveOptions.fallback`). */
  fallback?: ResolverFallback;
  /** Set when resolver.yaml names a fallback model that this runtime resolves without (no upstreams to route it): why, in words. */
  fallbackNotUsed?: string;
  /**
   * Set when resolver.yaml names no fallback model and does not turn it off: a chat asks its own
   * upstream model (`ResolveOptions.fallback`), shown this many candidates, within this time.
   */
  requestFallback?: FallbackLimits;
  /** Brings the index in line with the tools, directives and knowledge (incremental); call before resolving. */
  sync(options?: RuntimeSyncOptions): Promise<RuntimeSyncReport>;
  close(): Promise<void>;
}

/** Wires embedder, LanceDB index and resolver for one set of tools. */
export async function openResolverRuntime(options: ResolverRuntimeOptions): Promise<ResolverRuntime> {
  // Read once: the caller may pass an iterator (`registry.tools.values()`).
  const allTools = [...options.tools];
  const tools = resolvableTools(allTools);
  const model = options.model === null ? undefined : await loadResolverModel(options.model);
  const embedder = await createEmbedder(options.embedder ?? { kind: 'use-lite' }, options.signal ? { signal: options.signal } : {});
  const directives = [...(options.directives ?? [])];
  const knowledge = [...(options.knowledge ?? [])];
  const targets = callableItems(directives, knowledge, new Map(allTools.map((t) => [t.id, t])));
  let index: ToolIndex | undefined;
  let itemIndex: ToolIndex | undefined;
  // Opening may rebuild the tables and the first sync fills them: one process at a time on a
  // folder (gateways started together on one project), the others waiting, then finding it built.
  const lockFile = path.join(options.indexDir, '.build.lock');
  const takeLock = async (): Promise<() => Promise<void>> => {
    await mkdir(options.indexDir, { recursive: true });
    return waitForLock(lockFile, { ...(options.signal ? { signal: options.signal } : {}), onWait: (owner) => options.log?.(`waiting for process ${owner}, which is building the search index in ${options.indexDir}`) });
  };
  let unlock: (() => Promise<void>) | undefined;
  const release = async (): Promise<void> => {
    const held = unlock;
    unlock = undefined;
    await held?.();
  };
  try {
    unlock = await takeLock();
    index = await openToolIndex({ dir: options.indexDir, embedder, ...(options.log ? { log: options.log } : {}) });
    // Only a project that has directives or knowledge opens their table: the others resolve as tools alone.
    itemIndex = targets.size > 0 ? await openToolIndex({ dir: options.indexDir, embedder, table: 'items', ...(options.log ? { log: options.log } : {}) }) : undefined;
    const toolIndex = index;
    const items = itemIndex;
    if (model && model.embedder !== embedder.id) {
      options.log?.(`the resolver's confidence was calibrated with the ${model.embedder} embedder, not ${embedder.id}: its gates may not hold; retrain it with \`kiwi model train --embedder …\``);
    }
    const llm = options.argumentModel ? createLlmArgumentFiller(options.argumentModel) : undefined;
    const resolver = createResolver({
      tools,
      search: toolIndex,
      embedder,
      ...(items ? { items: { targets, search: items } } : {}),
      ...(options.settings ? { settings: options.settings } : {}),
      ...(llm ? { llm } : {}),
      ...(options.fallback ? { fallback: options.fallback } : {}),
      ...(model ? { model } : {}),
    });
    const documents = () => [
      ...directives.filter((d) => targets.get(d.name)?.kind === 'directive').map((d) => directiveDocument(d, embedder.id)),
      ...knowledge.filter((k) => targets.get(k.id)?.kind === 'knowledge').map((k) => knowledgeDocument(k, embedder.id)),
    ].map((d) => ({ id: d.rowId, doc: d.doc, embedText: d.embedText, hash: d.hash }));
    return {
      resolver,
      embedderId: embedder.id,
      toolCount: tools.size,
      itemCount: targets.size,
      tools,
      settings: options.settings ?? {},
      gates: resolver.gates,
      targets: model ? { offered: offeredGates(model), checkedPerFold: model.leave_one_out !== undefined } : null,
      ...(options.fallback ? { fallback: options.fallback } : {}),
      async sync({ progress, signal } = {}) {
        const told = (table: IndexedTable) => ({
          onStart: (total: number, state: TableState) => progress?.start?.(table, total, state),
          onProgress: (done: number, total: number) => progress?.embedded?.(table, done, total),
          ...(signal ? { signal } : {}),
        });
        unlock ??= await takeLock();
        try {
          const toolReport = await toolIndex.sync([...tools.values()], told('tools'));
          const report = items ? combine(toolReport, await items.syncDocuments(documents(), told('items'))) : toolReport;
          progress?.end?.(report);
          return report;
        } finally {
          await release();
        }
      },
      async close() {
        await release();
        await llm?.close();
        await items?.close();
        await toolIndex.close();
        await embedder.close();
      },
    };
  } catch (error) {
    await release();
    await itemIndex?.close();
    await index?.close();
    await embedder.close();
    throw error;
  }
}

function combine(tools: SyncReport, items: SyncReport): RuntimeSyncReport {
  const reason = [tools.reason, items.reason && `items: ${items.reason}`].filter(Boolean).join('; ');
  return {
    added: tools.added + items.added,
    updated: tools.updated + items.updated,
    removed: tools.removed + items.removed,
    unchanged: tools.unchanged + items.unchanged,
    rebuilt: tools.rebuilt || items.rebuilt,
    ...(reason ? { reason } : {}),
    ms: tools.ms + items.ms,
    items,
  };
}

/** A project's resolver as configured by its `.ai/config/resolver.yaml`, indexed in `.ai/vectors`. */
export async function openProjectResolverRuntime(options: {
  root: string;
  tools: Iterable<Tool>;
  directives?: Iterable<Directive>;
  knowledge?: Iterable<Knowledge>;
  env: Readonly<Record<string, string | undefined>>;
  /** Routes resolver.yaml's `fallback:` to a model (the gateway's upstreams, or a file it loads); absent, intents resolve without it. */
  fallbackModel?: (config: NamedFallback) => ResolverFallback | Promise<ResolverFallback>;
  log?: (message: string) => void;
  signal?: AbortSignal;
}): Promise<ResolverRuntime> {
  const file = path.join(options.root, '.ai', 'config', 'resolver.yaml');
  const config = await loadResolverConfig(file, { env: options.env, root: options.root });
  const named = config.fallback.kind === 'named' ? config.fallback.named : undefined;
  const fallback = named !== undefined ? await options.fallbackModel?.(named) : undefined;
  let runtime: ResolverRuntime;
  try {
    runtime = await openResolverRuntime({
      tools: options.tools,
      ...(options.directives ? { directives: options.directives } : {}),
      ...(options.knowledge ? { knowledge: options.knowledge } : {}),
      indexDir: path.join(options.root, '.ai', 'vectors'),
      embedder: config.embedder,
      settings: config.settings,
      argumentModel: config.argumentModel,
      ...(fallback ? { fallback } : {}),
      ...(config.modelFile ? { model: config.modelFile } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    await fallback?.close?.();
    throw error;
  }
  // The fallback was opened here (a model file loaded in this process): it closes with the runtime.
  if (fallback?.close !== undefined) {
    const { close } = runtime;
    const closeFallback = fallback.close.bind(fallback);
    runtime = {
      ...runtime,
      async close() {
        try {
          await close();
        } finally {
          await closeFallback();
        }
      },
    };
  }
  if (config.fallback.kind === 'request') return { ...runtime, requestFallback: { candidates: config.fallback.candidates, timeoutMs: config.fallback.timeoutMs } };
  if (named === undefined || fallback !== undefined) return runtime;
  return { ...runtime, fallbackNotUsed: `${file} names a fallback model, which only the gateway routes to (kiwi serve, and the console's playground): here intents resolve without it` };
}
