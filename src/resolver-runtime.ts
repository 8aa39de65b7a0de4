import path from 'node:path';
import { createEmbedder, type EmbedderConfig } from './embed/create-embedder.js';
import type { Tool } from './registry/types.js';
import { createLlmArgumentFiller } from './resolver/llm-argument-filler.js';
import { loadResolverConfig, type ArgumentModelConfig } from './resolver/resolver-config.js';
import { loadResolverModel } from './resolver/learned-model.js';
import { createResolver, resolvableTools, type ResolverSettings } from './resolver/resolver.js';
import type { StagedResolver } from './resolver/types.js';
import { openToolIndex, type SyncReport } from './store/tool-index.js';

export interface ResolverRuntimeOptions {
  /** Every valid tool; those an agent cannot call (primitives, runtimes, MCP servers) are left out. */
  tools: Iterable<Tool>;
  /** Where the LanceDB table lives (a project's `.ai/vectors`, or a temporary folder). */
  indexDir: string;
  embedder?: EmbedderConfig;
  settings?: Partial<ResolverSettings>;
  /** An OpenAI-compatible chat model for argument filling; rules only when absent. */
  argumentModel?: ArgumentModelConfig | null;
  /** The learned confidence: a file (default: the shipped models/resolver/model.json), or null for none (raw confidences, no gate). */
  model?: string | null;
  log?: (message: string) => void;
}

export interface ResolverRuntime {
  resolver: StagedResolver;
  embedderId: string;
  toolCount: number;
  /** The tools intents resolve to (`resolvableTools`), and its settings: what a second index over the same tools needs (prefetch). */
  tools: ReadonlyMap<string, Tool>;
  settings: Partial<ResolverSettings>;
  /** Brings the index in line with the tools (incremental); call before resolving. */
  sync(options?: { onProgress?: (done: number, total: number) => void; signal?: AbortSignal }): Promise<SyncReport>;
  close(): Promise<void>;
}

/** Wires embedder, LanceDB index and resolver for one set of tools. */
export async function openResolverRuntime(options: ResolverRuntimeOptions): Promise<ResolverRuntime> {
  const tools = resolvableTools(options.tools);
  const model = options.model === null ? undefined : await loadResolverModel(options.model);
  const embedder = await createEmbedder(options.embedder ?? { kind: 'use-lite' });
  try {
    const index = await openToolIndex({ dir: options.indexDir, embedder, ...(options.log ? { log: options.log } : {}) });
    if (model && model.embedder !== embedder.id) {
      options.log?.(`the resolver's confidence was calibrated with the ${model.embedder} embedder, not ${embedder.id}: its gates may not hold; retrain it with \`kiwi model train --embedder …\``);
    }
    const llm = options.argumentModel ? createLlmArgumentFiller(options.argumentModel) : undefined;
    const resolver = createResolver({ tools, search: index, embedder, ...(options.settings ? { settings: options.settings } : {}), ...(llm ? { llm } : {}), ...(model ? { model } : {}) });
    return {
      resolver,
      embedderId: embedder.id,
      toolCount: tools.size,
      tools,
      settings: options.settings ?? {},
      sync: (syncOptions) => index.sync([...tools.values()], syncOptions),
      async close() {
        await llm?.close();
        await index.close();
        await embedder.close();
      },
    };
  } catch (error) {
    await embedder.close();
    throw error;
  }
}

/** A project's resolver as configured by its `.ai/config/resolver.yaml`, indexed in `.ai/vectors`. */
export async function openProjectResolverRuntime(options: {
  root: string;
  tools: Iterable<Tool>;
  env: Readonly<Record<string, string | undefined>>;
  log?: (message: string) => void;
}): Promise<ResolverRuntime> {
  const config = await loadResolverConfig(path.join(options.root, '.ai', 'config', 'resolver.yaml'), { env: options.env, root: options.root });
  return openResolverRuntime({
    tools: options.tools,
    indexDir: path.join(options.root, '.ai', 'vectors'),
    embedder: config.embedder,
    settings: config.settings,
    argumentModel: config.argumentModel,
    ...(config.modelFile ? { model: config.modelFile } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}
