import { createEmbedder } from '../embed/create-embedder.js';
import type { Embedder } from '../embed/embedder.js';
import type { Tool } from '../registry/types.js';
import { createResolver, type ResolverSettings, type ToolSearch } from '../resolver/resolver.js';
import { toolDocument, toolEmbeddingText } from '../registry/tool-document.js';
import type { StagedResolver } from '../resolver/types.js';
import { createTextBm25 } from '../store/text-bm25.js';
import { createVectorMatrix } from '../store/vector-matrix.js';
import type { PrefetchEmbedder } from './types.js';

export interface SnapshotResolver {
  /** Retrieval for snapshots (the predictor's); its `complete` is the resolver's rules. */
  resolver: StagedResolver;
  embedderId: string;
  /**
   * The snapshots are searched in the resolver's own vector space, so a prefetched retrieval is
   * the one the same text would get when it resolves, and may stand in for it.
   */
  sharesResolverIndex: boolean;
  /** Embedding the tools for the snapshot index, ms (0 when the resolver's index is shared). */
  buildMs: number;
  close(): Promise<void>;
}

export interface SnapshotResolverOptions {
  embedder: PrefetchEmbedder;
  /** The resolver every intent is answered with, and what it searches. */
  resolver: StagedResolver;
  resolverEmbedderId: string;
  /** The tools an intent may resolve to (see `resolvableTools`). */
  tools: ReadonlyMap<string, Tool>;
  settings?: Partial<ResolverSettings>;
  /** Builds the static embedder (tests pass another); default the shipped model. */
  openStatic?: () => Promise<Embedder>;
  signal?: AbortSignal;
}

/**
 * What prefetch searches its snapshots with. A snapshot costs the resolver's embedder a full
 * query embedding (USE-lite: 11–25 ms here, on the same two cores the intents need); the static
 * model costs ~0.02 ms and an exact scan of its 256-d tool vectors ~1 ms at 4k tools. Its vectors
 * live in another space than the resolver's index, so it gets an in-memory index of its own, and
 * an in-memory BM25 over the same tool documents (a LanceDB full-text query per snapshot cost
 * more than the rest of a request), fused with the same settings. Such a retrieval only decides
 * what to run ahead: it never answers an intent.
 */
export async function openSnapshotResolver(options: SnapshotResolverOptions): Promise<SnapshotResolver> {
  const { resolver, tools } = options;
  // A resolver that is static already is as cheap: a second index would only cost memory.
  if (options.embedder === 'resolver' || options.resolverEmbedderId.startsWith('static:')) {
    return { resolver, embedderId: options.resolverEmbedderId, sharesResolverIndex: true, buildMs: 0, close: async () => undefined };
  }
  const embedder = await (options.openStatic ?? (() => createEmbedder({ kind: 'static' }, options.signal ? { signal: options.signal } : {})))();
  try {
    const t0 = performance.now();
    const list = [...tools.values()];
    const vectors = await embedder.embed(list.map(toolEmbeddingText), options.signal);
    const matrix = createVectorMatrix(list.map((tool, i) => ({ id: tool.id, vector: vectors[i] as Float32Array })), embedder.dimensions);
    const bm25 = createTextBm25(list.map((tool) => ({ id: tool.id, text: toolDocument(tool) })));
    const buildMs = performance.now() - t0;
    const search: ToolSearch = { searchVector: async (vector, k) => matrix.search(vector, k), searchText: async (query, k) => bm25.search(query, k) };
    return {
      resolver: createResolver({ tools, search, embedder, ...(options.settings ? { settings: options.settings } : {}) }),
      embedderId: embedder.id,
      sharesResolverIndex: false,
      buildMs,
      close: () => embedder.close(),
    };
  } catch (error) {
    await embedder.close();
    throw error;
  }
}
