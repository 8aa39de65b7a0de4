import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Embedder } from '../embed/embedder.js';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import type { Tool } from '../registry/types.js';
import { INDEX_SCHEMA_VERSION, readIndexMeta, staleReason, writeIndexMeta, type IndexMeta } from './index-meta.js';
import { connectStore, createFreshTable, openAndProbe, tableFolder, type Hit, type LanceToolTable } from './lance-table.js';
import { documentItems, planSync, wantedItems, type SyncItem } from './sync-plan.js';
import { textQueryTerms } from './text-query.js';
import { createVectorMatrix, type VectorMatrix } from './vector-matrix.js';

export interface SyncReport {
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
  /** The table was (re)built from scratch before this sync: it was missing, stale or unreadable. */
  rebuilt: boolean;
  /** Why it was rebuilt. */
  reason?: string;
  ms: number;
}

/** The table a sync embeds into: `new` where there was none, `rebuilt` where it was stale or unreadable (both start empty), else `kept`. */
export type TableState = 'new' | 'rebuilt' | 'kept';

export interface SyncOptions {
  /** Called once before the first batch, when anything needs embedding: how many, and the table they go into. */
  onStart?: (total: number, table: TableState) => void;
  /** Called after each embedded batch with the tools embedded so far and the number that needed it. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface ToolIndex {
  /** Brings the table in line with `tools` (valid tools only), embedding only new or changed ones. */
  sync(tools: Tool[], options?: SyncOptions): Promise<SyncReport>;
  /** The same for documents made elsewhere (directives and knowledge, see item-document.ts): each its own id, text and hash. */
  syncDocuments(documents: SyncItem[], options?: SyncOptions): Promise<SyncReport>;
  /** Nearest tools by cosine similarity (score in [-1, 1], higher is closer). */
  searchVector(vector: Float32Array, k: number): Promise<Hit[]>;
  /** Best tools by BM25 over the tool documents (score ≥ 0, unbounded). Any text is safe here. */
  searchText(query: string, k: number): Promise<Hit[]>;
  count(): Promise<number>;
  close(): Promise<void>;
}

export interface ToolIndexOptions {
  /** Folder of the LanceDB database, e.g. `<project>/.ai/vectors`; created when missing. */
  dir: string;
  embedder: Embedder;
  /** Table name (default `tools`). */
  table?: string;
  /** Rows changed between `optimize()` calls (default 200). */
  compactEvery?: number;
  /** Rows from which an ANN vector index is built (default 50 000); below it a flat scan is faster. */
  annThreshold?: number;
  log?: (message: string) => void;
}

const EMBED_BATCH = 64;
const WRITE_BATCH = 512;
const MAX_K = 1_000;
const MAX_ERROR_CHARS = 300;

/**
 * Rows from which vector search uses LanceDB's HNSW index instead of the exact in-memory scan.
 * Measured here (resolve-scale): the scan costs ~16 ms at 10k tools and ~51 ms at 40k, HNSW
 * ~9–10 ms at any size; building HNSW over 10k rows takes ~2.6 s.
 */
export const DEFAULT_ANN_THRESHOLD = 10_000;

export async function openToolIndex(options: ToolIndexOptions): Promise<ToolIndex> {
  const name = options.table ?? 'tools';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new KiwiError('INVALID_INPUT', `tool index table name "${name}" is not allowed; use 1-64 letters, digits, "_" or "-"`);
  }
  const compactEvery = positiveInt(options.compactEvery ?? 200, 'compactEvery');
  const annThreshold = positiveInt(options.annThreshold ?? DEFAULT_ANN_THRESHOLD, 'annThreshold');
  const { embedder } = options;
  const dimensions = positiveInt(embedder.dimensions, `dimensions of embedder ${embedder.id}`);
  const log = options.log ?? (() => undefined);
  const dir = path.resolve(options.dir);
  const folder = tableFolder(dir, name);
  const metaFile = path.join(dir, `${name}.meta.json`);
  const expected = { schemaVersion: INDEX_SCHEMA_VERSION, embedderId: embedder.id, dimensions };

  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw new KiwiError('INVALID_INPUT', `cannot create the tool index folder ${dir} (${short(error)}); pick a writable folder`, { cause: error });
  }
  const db = await connectStore(dir);

  let lance: LanceToolTable | null = null;
  let meta: IndexMeta = { ...expected, changesSinceCompact: 0 };
  /** Set by a rebuild (why, and whether there was a table before), reported and cleared by the next sync that completes. */
  let pendingRebuild: { reason: string; table: 'new' | 'rebuilt' } | null = null;
  /** Set when a search or write failed: the next sync probes the table again before trusting it. */
  let suspect = false;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();

  async function rebuild(reason: string, message: string, table: 'new' | 'rebuilt' = 'rebuilt'): Promise<LanceToolTable> {
    log(message);
    const fresh = await createFreshTable(db, dir, name, dimensions);
    meta = { ...expected, changesSinceCompact: 0 };
    await writeIndexMeta(metaFile, meta);
    // The old handle stays current until now, so a concurrent search fails as a search (and
    // marks the index suspect) rather than reporting the index closed.
    lance?.close();
    lance = fresh;
    pendingRebuild = { reason, table };
    return fresh;
  }

  const unreadable = (what: string, error: unknown): Promise<LanceToolTable> => {
    const reason = `${what} is unreadable (${short(error)})`;
    return rebuild(reason, `tool index at ${folder}: ${reason}; rebuilding — it is a cache`);
  };

  /** Opens the table if it can be trusted for this embedder, else rebuilds it empty. */
  async function prepare(): Promise<LanceToolTable> {
    const read = await readIndexMeta(metaFile);
    const tableExists = await exists(folder);
    if (read.kind === 'missing') {
      if (!tableExists) return rebuild(`no index at ${folder}`, `no index at ${folder} yet; building it`, 'new');
      const reason = `has no metadata file ${metaFile}`;
      return rebuild(reason, `tool index at ${folder} ${reason}; rebuilding — it is a cache`);
    }
    if (read.kind === 'unreadable') return unreadable(`its metadata file ${metaFile}`, read.error);
    const stale = staleReason(read.meta, expected);
    if (stale) return rebuild(stale, `tool index at ${folder} ${stale}; rebuilding`);
    if (!tableExists) return rebuild('its table folder is missing', `tool index at ${folder} has metadata but no table; rebuilding — it is a cache`);
    try {
      const opened = await openAndProbe(db, name, dimensions, log);
      meta = read.meta;
      return opened;
    } catch (error) {
      return unreadable('the table', error);
    }
  }

  try {
    lance = await prepare();
  } catch (error) {
    db.close();
    throw new KiwiError('INTERNAL', `cannot open or build the tool index at ${folder} (${short(error)}); check that ${dir} is writable`, { cause: error });
  }

  function current(): LanceToolTable {
    if (closed || !lance) throw new KiwiError('INVALID_INPUT', `the tool index at ${folder} is closed; open it again with openToolIndex`);
    return lance;
  }

  function serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  }

  // Below the ANN threshold, vectors are searched in memory; the copy is (re)loaded on first use after a sync.
  let matrix: VectorMatrix | null = null;

  async function vectorMatrix(table: LanceToolTable): Promise<VectorMatrix | null> {
    if (matrix) return matrix;
    if (table.hasVectorIndex || (await table.count()) >= annThreshold) return null;
    matrix = createVectorMatrix(await table.readVectors(), dimensions);
    return matrix;
  }

  async function sync(wanted: Map<string, SyncItem>, syncOptions: SyncOptions = {}): Promise<SyncReport> {
    matrix = null;
    const { signal, onStart, onProgress } = syncOptions;
    const started = performance.now();
    let table = current();
    throwIfAborted(signal, 'tool index sync');

    if (suspect) {
      suspect = false;
      try {
        const reopened = await openAndProbe(db, name, dimensions, log);
        table.close();
        lance = table = reopened;
      } catch (error) {
        table = await unreadable('the table', error);
      }
    }
    let existing: Map<string, string>;
    try {
      existing = await table.readHashes();
    } catch (error) {
      table = await unreadable('the table', error);
      existing = new Map();
    }

    const plan = planSync(wanted, existing);
    const total = plan.toEmbed.length;
    if (total > 0) onStart?.(total, pendingRebuild?.table ?? 'kept');
    let done = 0;
    let buffer: Parameters<LanceToolTable['upsert']>[0] = [];
    const flush = async (): Promise<void> => {
      const rows = buffer;
      buffer = [];
      await writeOrThrow(() => table.upsert(rows), 'writing to');
    };

    await writeOrThrow(() => table.deleteIds(plan.removed), 'deleting from');
    for (let i = 0; i < total; i += EMBED_BATCH) {
      const batch = plan.toEmbed.slice(i, i + EMBED_BATCH);
      if (signal?.aborted) await cancelAfter(flush, done, total);
      let vectors: Float32Array[];
      try {
        vectors = await embedder.embed(batch.map((item) => item.embedText), signal);
      } catch (error) {
        if (signal?.aborted) await cancelAfter(flush, done, total);
        await flush(); // what earlier batches embedded is still good
        throw error;
      }
      checkVectors(vectors, batch.length, embedder.id, dimensions);
      batch.forEach((item, j) => buffer.push({ id: item.id, hash: item.hash, doc: item.doc, vector: vectors[j] as Float32Array }));
      if (buffer.length >= WRITE_BATCH) await flush();
      done += batch.length;
      onProgress?.(done, total);
    }
    await flush();

    const changes = plan.added + plan.updated + plan.removed.length;
    const rebuilt = pendingRebuild;
    meta.changesSinceCompact += changes;
    if (rebuilt !== null || meta.changesSinceCompact >= compactEvery) {
      // Compaction also folds rows written since the last optimize into the full-text (and
      // vector) index; until then LanceDB finds them by scanning the unindexed rows.
      await writeOrThrow(() => table.optimize(), 'compacting');
      meta.changesSinceCompact = 0;
    }
    if (!table.hasVectorIndex && wanted.size >= annThreshold) {
      try {
        await table.createVectorIndex(wanted.size);
      } catch (error) {
        log(`building the ANN vector index of ${folder} failed (${short(error)}); vector search stays exact (slower)`);
      }
    }
    if (changes > 0 || rebuilt !== null) await writeIndexMeta(metaFile, meta);
    pendingRebuild = null;
    return {
      added: plan.added,
      updated: plan.updated,
      removed: plan.removed.length,
      unchanged: plan.unchanged,
      rebuilt: rebuilt !== null,
      ...(rebuilt !== null ? { reason: rebuilt.reason } : {}),
      ms: Math.round(performance.now() - started),
    };
  }

  async function writeOrThrow(write: () => Promise<void>, what: string): Promise<void> {
    try {
      await write();
    } catch (error) {
      suspect = true;
      throw new KiwiError('INTERNAL', `${what} the tool index at ${folder} failed (${short(error)}); sync again — a table that cannot be read is rebuilt`, { cause: error });
    }
  }

  async function search(kind: string, k: number, run: (table: LanceToolTable) => Promise<Hit[]>): Promise<Hit[]> {
    const table = current();
    if (!Number.isInteger(k) || k < 0 || k > MAX_K) {
      throw new KiwiError('INVALID_INPUT', `${kind} search asked for ${k} results; ask for a whole number from 0 to ${MAX_K}`);
    }
    if (k === 0) return [];
    try {
      return await run(table);
    } catch (error) {
      suspect = true;
      throw new KiwiError('INTERNAL', `${kind} search of the tool index at ${folder} failed (${short(error)}); sync the index to rebuild it`, { cause: error });
    }
  }

  return {
    sync: (tools, syncOptions) => serialize(() => sync(wantedItems(tools, embedder.id), syncOptions)),
    syncDocuments: (documents, syncOptions) => serialize(() => sync(documentItems(documents), syncOptions)),

    searchVector(vector, k) {
      if (!(vector instanceof Float32Array) || vector.length !== dimensions || !vector.every(Number.isFinite)) {
        const got = vector instanceof Float32Array ? `${vector.length} numbers` : typeof vector;
        return Promise.reject(new KiwiError('INVALID_INPUT', `vector search needs a Float32Array of ${dimensions} finite numbers (from ${embedder.id}); got ${got}`));
      }
      return search('vector', k, async (table) => {
        const inMemory = await vectorMatrix(table);
        return inMemory ? inMemory.search(vector, k) : table.searchVector(vector, k);
      });
    },

    searchText(query, k) {
      const terms = typeof query === 'string' ? textQueryTerms(query) : '';
      return search('text', k, (table) => (terms === '' ? Promise.resolve([]) : table.searchText(terms, k)));
    },

    count: () => current().count(),

    close: () =>
      serialize(async () => {
        if (closed) return;
        closed = true;
        lance?.close();
        lance = null;
        db.close();
      }),
  };
}

function checkVectors(vectors: Float32Array[], expected: number, embedderId: string, dimensions: number): void {
  if (!Array.isArray(vectors) || vectors.length !== expected) {
    throw new KiwiError('INTERNAL', `embedder ${embedderId} returned ${Array.isArray(vectors) ? vectors.length : 'no'} vectors for ${expected} texts; fix the embedder`);
  }
  for (const vector of vectors) {
    if (!(vector instanceof Float32Array) || vector.length !== dimensions || !vector.every(Number.isFinite)) {
      throw new KiwiError('INTERNAL', `embedder ${embedderId} returned a vector that is not ${dimensions} finite numbers; fix the embedder or its dimensions`);
    }
  }
}

/** Keeps what was embedded (the next sync starts from there), then reports the cancellation. */
async function cancelAfter(flush: () => Promise<void>, done: number, total: number): Promise<never> {
  await flush();
  throw new KiwiError('TOOL_CANCELLED', `tool index sync was cancelled after ${done} of ${total} tools were embedded; they are kept, and the next sync embeds the rest`);
}

function positiveInt(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1) throw new KiwiError('INVALID_INPUT', `tool index option ${what} is ${value}; use a whole number of at least 1`);
  return value;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

function short(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text;
}
