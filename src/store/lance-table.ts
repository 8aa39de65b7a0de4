import { rm } from 'node:fs/promises';
import path from 'node:path';
import { connect, Index, MatchQuery, Operator, type Connection, type Table } from '@lancedb/lancedb';
import { DataType, Field, FixedSizeList, Float32, Schema, Utf8 } from 'apache-arrow';

/** One row of the tool table. */
export interface ToolRow {
  id: string;
  hash: string;
  doc: string;
  vector: Float32Array;
}

export interface Hit {
  id: string;
  score: number;
}

const TEXT_COLUMN = 'doc';
const VECTOR_COLUMN = 'vector';
/** Candidates an ANN search re-scores with the stored vectors, per result asked for. */
const REFINE_FACTOR = 4;

/**
 * The LanceDB edge of the tool index: table layout, index creation and raw queries. Everything
 * that knows LanceDB's quirks lives here; `tool-index.ts` decides when to call what.
 */
export interface LanceToolTable {
  readonly table: Table;
  hasVectorIndex: boolean;
  count(): Promise<number>;
  /** id → hash of every row, read column by column (the sync diff needs nothing else). */
  readHashes(): Promise<Map<string, string>>;
  /** Every row's vector, for the in-memory exact search of small tables. */
  readVectors(): Promise<Array<{ id: string; vector: Float32Array }>>;
  upsert(rows: ToolRow[]): Promise<void>;
  deleteIds(ids: string[]): Promise<void>;
  optimize(): Promise<void>;
  createVectorIndex(rows: number): Promise<void>;
  searchVector(vector: Float32Array, k: number): Promise<Hit[]>;
  searchText(terms: string, k: number): Promise<Hit[]>;
  close(): void;
}

export async function connectStore(dir: string): Promise<Connection> {
  // Another process (`kiwi index` beside a running gateway) may write the table; re-check
  // for new versions at most this often instead of never (LanceDB's default).
  return connect(dir, { readConsistencyInterval: 5 });
}

export function tableFolder(dir: string, name: string): string {
  return path.join(dir, `${name}.lance`);
}

function tableSchema(dimensions: number): Schema {
  return new Schema([
    new Field('id', new Utf8(), false),
    new Field('hash', new Utf8(), false),
    new Field(TEXT_COLUMN, new Utf8(), false),
    new Field(VECTOR_COLUMN, new FixedSizeList(dimensions, new Field('item', new Float32(), true)), false),
  ]);
}

/**
 * Removes whatever is at the table's folder and creates an empty table with its full-text
 * index. The index exists from the start, so text search works on an empty or half-built table.
 */
export async function createFreshTable(db: Connection, dir: string, name: string, dimensions: number): Promise<LanceToolTable> {
  // Not dropTable: a corrupt table may not open far enough for LanceDB to drop it.
  await rm(tableFolder(dir, name), { recursive: true, force: true });
  // `create`, the folder being gone: `overwrite` of a table that is not there has LanceDB print
  // "WARN … No existing dataset at …, it will be created" on stderr at every first start.
  const table = await db.createEmptyTable(name, tableSchema(dimensions), { mode: 'create' });
  await createTextIndex(table);
  return wrapTable(table, false);
}

async function createTextIndex(table: Table): Promise<void> {
  // Positions are required: without them any query LanceDB reads as a phrase throws.
  await table.createIndex(TEXT_COLUMN, {
    config: Index.fts({ withPosition: true, baseTokenizer: 'simple', lowercase: true, asciiFolding: true, stem: true, removeStopWords: true, language: 'English' }),
    replace: true,
  });
}

/**
 * Opens the table and reads enough of it to trust it: schema, row count, index list, one full
 * row. Throws with LanceDB's error when any of that fails (truncated or garbled files, missing
 * manifests or index files). A missing full-text index, or one without positions, is recreated.
 */
export async function openAndProbe(db: Connection, name: string, dimensions: number, log: (message: string) => void): Promise<LanceToolTable> {
  const table = await db.openTable(name);
  try {
    const schema = await table.schema();
    const problem = schemaProblem(schema, dimensions);
    if (problem) throw new Error(problem);
    await table.countRows();
    const indices = await table.listIndices();
    await table.query().select(['id', 'hash', TEXT_COLUMN, VECTOR_COLUMN]).limit(1).toArray();
    const text = indices.find((i) => i.columns.includes(TEXT_COLUMN) && i.indexType === 'FTS');
    if (!text || (text as { indexDetails?: { with_position?: unknown } }).indexDetails?.with_position !== true) {
      log(`the full-text index of table ${name} is missing or has no positions; recreating it`);
      await createTextIndex(table);
    }
    const hasVectorIndex = indices.some((i) => i.columns.includes(VECTOR_COLUMN));
    return wrapTable(table, hasVectorIndex);
  } catch (error) {
    table.close();
    throw error;
  }
}

// Type guards, not instanceof: LanceDB loads apache-arrow's CommonJS build, this module the ESM
// one, so the classes differ even though the package is the same.
function schemaProblem(schema: Schema, dimensions: number): string | null {
  for (const column of ['id', 'hash', TEXT_COLUMN]) {
    const field = schema.fields.find((f) => f.name === column);
    if (!field || !DataType.isUtf8(field.type)) return `column ${column} is missing or not a string`;
  }
  const vector = schema.fields.find((f) => f.name === VECTOR_COLUMN);
  if (!vector || !DataType.isFixedSizeList(vector.type) || vector.type.listSize !== dimensions) {
    return `column ${VECTOR_COLUMN} is missing or not ${dimensions} floats`;
  }
  return null;
}

function wrapTable(table: Table, hasVectorIndex: boolean): LanceToolTable {
  const self: LanceToolTable = {
    table,
    hasVectorIndex,
    count: () => table.countRows(),

    async readHashes() {
      const out = new Map<string, string>();
      for await (const batch of table.query().select(['id', 'hash'])) {
        const ids = batch.getChild('id');
        const hashes = batch.getChild('hash');
        if (!ids || !hashes) throw new Error('a scan of the table returned no id/hash columns');
        for (let i = 0; i < batch.numRows; i++) out.set(String(ids.get(i)), String(hashes.get(i)));
      }
      return out;
    },

    async readVectors() {
      const out: Array<{ id: string; vector: Float32Array }> = [];
      for await (const batch of table.query().select(['id', VECTOR_COLUMN])) {
        const ids = batch.getChild('id');
        const vectors = batch.getChild(VECTOR_COLUMN);
        if (!ids || !vectors) throw new Error('a scan of the table returned no id/vector columns');
        for (let i = 0; i < batch.numRows; i++) out.push({ id: String(ids.get(i)), vector: Float32Array.from(vectors.get(i) as Iterable<number>) });
      }
      return out;
    },

    async upsert(rows) {
      if (rows.length === 0) return;
      const data = rows.map((r) => ({ id: r.id, hash: r.hash, [TEXT_COLUMN]: r.doc, [VECTOR_COLUMN]: Array.from(r.vector) }));
      await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(data);
    },

    async deleteIds(ids) {
      // Bounded predicates: one IN list of thousands of literals is slow to plan.
      for (let i = 0; i < ids.length; i += 500) {
        const list = ids.slice(i, i + 500).map(sqlString).join(', ');
        await table.delete(`id IN (${list})`);
      }
    },

    async optimize() {
      await table.optimize();
    },

    async createVectorIndex(rows) {
      // HNSW over scalar-quantised vectors: good recall without training PQ codebooks; one
      // graph per 250k rows keeps the build's memory bounded.
      const numPartitions = Math.max(1, Math.ceil(rows / 250_000));
      await table.createIndex(VECTOR_COLUMN, { config: Index.hnswSq({ distanceType: 'cosine', numPartitions }), replace: true });
      self.hasVectorIndex = true;
    },

    async searchVector(vector, k) {
      let query = table.query().nearestTo(vector).distanceType('cosine').limit(k).select(['id', '_distance']);
      // An ANN index reports quantised distances in its own units (for cosine HNSW/IVF-PQ,
      // 2·(1 − cos)); refining re-scores the candidates with the stored vectors, so
      // `_distance` is the exact cosine distance again.
      if (self.hasVectorIndex) query = query.refineFactor(REFINE_FACTOR).ef(Math.max(64, k * REFINE_FACTOR));
      const rows = (await query.toArray()) as Array<{ id: string; _distance: number | null }>;
      const hits: Hit[] = [];
      for (const row of rows) {
        if (typeof row._distance !== 'number' || !Number.isFinite(row._distance)) continue;
        hits.push({ id: row.id, score: 1 - row._distance });
      }
      return hits;
    },

    async searchText(terms, k) {
      const query = new MatchQuery(terms, TEXT_COLUMN, { operator: Operator.Or });
      const rows = (await table.query().fullTextSearch(query).limit(k).select(['id', '_score']).toArray()) as Array<{ id: string; _score: number }>;
      return rows.map((row) => ({ id: row.id, score: row._score }));
    },

    close: () => table.close(),
  };
  return self;
}

function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
