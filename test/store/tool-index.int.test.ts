import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from '@lancedb/lancedb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import type { Tool } from '../../src/registry/types.js';
import { toolEmbeddingText } from '../../src/registry/tool-document.js';
import { openToolIndex, type TableState, type ToolIndex, type ToolIndexOptions } from '../../src/store/tool-index.js';
import { createHashEmbedder, hashVector, type HashEmbedder } from '../helpers/hash-embedder.js';
import { makeTool } from '../helpers/make-tool.js';

const SUBJECTS = ['invoice', 'weather', 'river', 'calendar', 'ticket', 'repository', 'customer', 'shipment', 'playlist', 'sensor'];
const VERBS = ['list', 'create', 'delete', 'archive', 'summarise', 'export', 'import', 'validate'];
const EXTRAS = ['quickly', 'for a team', 'by date', 'with filters', 'as csv', 'from the cloud'];

/** A catalog whose documents differ in their words, so both searches can tell tools apart. */
function catalog(count: number): Tool[] {
  const tools: Tool[] = [];
  for (let i = 0; i < count; i++) {
    const verb = VERBS[i % VERBS.length] as string;
    const subject = SUBJECTS[Math.floor(i / VERBS.length) % SUBJECTS.length] as string;
    tools.push(
      makeTool({
        id: `${verb}_${subject}_${i}`,
        description: `${verb} ${subject} records ${EXTRAS[i % EXTRAS.length]} item${i}`,
        parameters: [{ name: `${subject}Id`, type: 'string', required: true, description: `the ${subject} to ${verb}` }],
      }),
    );
  }
  return tools;
}

const waterQuality = makeTool({
  id: 'getWaterQuality',
  description: 'Measure the water quality of a river at a monitoring station',
  parameters: [{ name: 'station_id', type: 'string', required: true, description: 'monitoring station code' }],
  tags: ['environment'],
});

let dir: string;
let logs: string[];
const open: ToolIndex[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kiwi-tool-index-'));
  logs = [];
});

afterEach(async () => {
  for (const index of open.splice(0)) await index.close();
  await rm(dir, { recursive: true, force: true });
});

async function openIndex(embedder: HashEmbedder, extra: Partial<ToolIndexOptions> = {}): Promise<ToolIndex> {
  const index = await openToolIndex({ dir: path.join(dir, 'vectors'), embedder, log: (m) => logs.push(m), ...extra });
  open.push(index);
  return index;
}

async function closeIndex(index: ToolIndex): Promise<void> {
  await index.close();
  open.splice(open.indexOf(index), 1);
}

const ids = (hits: Array<{ id: string }>): string[] => hits.map((h) => h.id);

describe('tool index: building and incremental sync', () => {
  it('creates a missing folder, builds the table, and finds tools by vector and text', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    expect((await stat(path.join(dir, 'vectors'))).isDirectory()).toBe(true);
    expect(logs.join('\n')).toMatch(/no index at .* yet; building it/);

    const tools = [...catalog(150), waterQuality];
    const report = await index.sync(tools);
    expect(report).toMatchObject({ added: 151, updated: 0, removed: 0, unchanged: 0, rebuilt: true });
    expect(report.reason).toMatch(/no index at/);
    expect(await index.count()).toBe(151);
    expect(embedder.embedded).toHaveLength(151);

    const own = await index.searchVector(hashVector(toolEmbeddingText(waterQuality), embedder.dimensions), 5);
    expect(own[0]?.id).toBe('getWaterQuality');
    expect(own[0]?.score).toBeCloseTo(1, 4);
    expect(own.length).toBe(5);
    for (let i = 1; i < own.length; i++) expect(own[i - 1]!.score).toBeGreaterThanOrEqual(own[i]!.score);

    const text = await index.searchText('what is the water quality of the river', 5);
    expect(text[0]?.id).toBe('getWaterQuality');
    expect(text[0]?.score).toBeGreaterThan(0);
    // Stemming: "measuring" matches "Measure"; a camelCase name finds its tool.
    expect(ids(await index.searchText('measuring', 3))).toContain('getWaterQuality');
    expect(ids(await index.searchText('getWaterQuality', 3))[0]).toBe('getWaterQuality');
  });

  it('re-embeds nothing when nothing changed, exactly one tool when one description changed', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    const tools = [...catalog(100), waterQuality];
    await index.sync(tools);
    const afterBuild = embedder.embedded.length;

    const again = await index.sync(tools);
    expect(again).toMatchObject({ added: 0, updated: 0, removed: 0, unchanged: 101, rebuilt: false });
    expect(again.reason).toBeUndefined();
    expect(embedder.embedded.length).toBe(afterBuild);

    const changed = tools.map((t) => (t.id === 'getWaterQuality' ? { ...t, description: 'Report turbidity and nitrate levels of a lake' } : t));
    const report = await index.sync(changed);
    expect(report).toMatchObject({ added: 0, updated: 1, removed: 0, unchanged: 100 });
    expect(embedder.embedded.slice(afterBuild)).toEqual([toolEmbeddingText(changed.find((t) => t.id === 'getWaterQuality')!)]);
    expect(await index.count()).toBe(101);
    expect(ids(await index.searchText('turbidity nitrate', 5))[0]).toBe('getWaterQuality');
    expect(ids(await index.searchText('monitoring station river', 5))).toContain('getWaterQuality'); // parameters still indexed
    expect(ids(await index.searchText('turbidity', 5))).toEqual(['getWaterQuality']);
  });

  it('removes a tool from both searches and finds an added one in both', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    const tools = [...catalog(80), waterQuality];
    await index.sync(tools);

    const withoutWater = tools.filter((t) => t.id !== 'getWaterQuality');
    expect(await index.sync(withoutWater)).toMatchObject({ removed: 1, unchanged: 80, added: 0 });
    expect(await index.count()).toBe(80);
    expect(ids(await index.searchText('water quality', 10))).not.toContain('getWaterQuality');
    expect(ids(await index.searchVector(hashVector(toolEmbeddingText(waterQuality), embedder.dimensions), 80))).not.toContain('getWaterQuality');

    const glacier = makeTool({ id: 'trackGlacierMelt', description: 'Track glacier melt rates from satellite imagery', tags: ['climate'] });
    const before = embedder.embedded.length;
    expect(await index.sync([...withoutWater, glacier])).toMatchObject({ added: 1, removed: 0, unchanged: 80 });
    expect(embedder.embedded.length - before).toBe(1);
    expect(ids(await index.searchText('glacier satellite', 5))[0]).toBe('trackGlacierMelt');
    const vectorHits = await index.searchVector(hashVector('track glacier melt rates from satellite imagery', embedder.dimensions), 3);
    expect(vectorHits[0]?.id).toBe('trackGlacierMelt');
  });

  it('reports progress per embedded batch', async () => {
    const index = await openIndex(createHashEmbedder());
    const calls: Array<[number, number]> = [];
    await index.sync(catalog(150), { onProgress: (done, total) => calls.push([done, total]) });
    expect(calls).toEqual([
      [64, 150],
      [128, 150],
      [150, 150],
    ]);
    const quiet: Array<[number, number]> = [];
    await index.sync(catalog(150), { onProgress: (done, total) => quiet.push([done, total]) });
    expect(quiet).toEqual([]);
  });

  it('says before the first batch how many need embedding, and whether the table starts empty', async () => {
    const starts: Array<[number, TableState]> = [];
    const onStart = (total: number, table: TableState): void => void starts.push([total, table]);
    const index = await openIndex(createHashEmbedder({ id: 'hash-a' }));
    await index.sync(catalog(150), { onStart });
    await index.sync(catalog(150), { onStart });
    await index.sync(catalog(152), { onStart });
    await closeIndex(index);
    const other = await openIndex(createHashEmbedder({ id: 'hash-b' }));
    await other.sync(catalog(152), { onStart });
    expect(starts).toEqual([
      [150, 'new'],
      [2, 'kept'],
      [152, 'rebuilt'],
    ]);
  });

  it('refuses duplicate ids before touching the table', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    await index.sync(catalog(10));
    const tools = [...catalog(10), makeTool({ id: 'list_invoice_0', description: 'a second tool with the same id' })];
    const error = await index.sync(tools).catch((e: unknown) => e);
    expect(isKiwiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(/tool id "list_invoice_0" was given to the tool index twice/);
    expect(await index.count()).toBe(10);
    expect(embedder.embedded).toHaveLength(10);
  });

  it('searches of an empty table return nothing', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    expect(await index.searchVector(hashVector('anything', 64), 10)).toEqual([]);
    expect(await index.searchText('anything at all', 10)).toEqual([]);
    await index.sync([]);
    expect(await index.count()).toBe(0);
    expect(await index.searchText('"quoted"', 10)).toEqual([]);
  });

  it('opens the same folder again later and keeps what was indexed', async () => {
    const first = createHashEmbedder();
    const index = await openIndex(first);
    const tools = [...catalog(40), waterQuality];
    await index.sync(tools);
    await closeIndex(index);

    const second = createHashEmbedder();
    const reopened = await openIndex(second);
    expect(logs, logs.join('\n')).toHaveLength(1);
    expect(await reopened.count()).toBe(41);
    expect(ids(await reopened.searchText('water quality', 3))[0]).toBe('getWaterQuality');
    const report = await reopened.sync(tools);
    expect(report).toMatchObject({ unchanged: 41, rebuilt: false });
    expect(second.embedded).toHaveLength(0);
    await closeIndex(reopened);

    const third = await openIndex(createHashEmbedder());
    expect(await third.count()).toBe(41);
  });
});

describe('tool index: cancellation', () => {
  it('stops a sync with TOOL_CANCELLED, keeps what was embedded, and the next sync finishes the job', async () => {
    const controller = new AbortController();
    const embedder = createHashEmbedder({ beforeBatch: (_texts, call) => call === 2 && controller.abort() });
    const index = await openIndex(embedder);
    const tools = catalog(200);
    const error = await index.sync(tools, { signal: controller.signal }).catch((e: unknown) => e);
    expect(isKiwiError(error, 'TOOL_CANCELLED')).toBe(true);
    expect((error as Error).message).toMatch(/cancelled after 64 of 200 tools/);
    expect(await index.count()).toBe(64);

    const report = await index.sync(tools);
    expect(report).toMatchObject({ added: 136, unchanged: 64, rebuilt: true });
    expect(await index.count()).toBe(200);
    expect(await index.sync(tools)).toMatchObject({ unchanged: 200, rebuilt: false });
  });

  it('does not start when the signal has already fired', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder);
    const error = await index.sync(catalog(5), { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(isKiwiError(error, 'TOOL_CANCELLED')).toBe(true);
    expect(embedder.calls).toBe(0);
    expect(await index.count()).toBe(0);
  });
});

describe('tool index: stale and broken tables are rebuilt', () => {
  it('rebuilds when the embedder id changes, and says why', async () => {
    const tools = [...catalog(30), waterQuality];
    const index = await openIndex(createHashEmbedder({ id: 'hash-a' }));
    await index.sync(tools);
    await closeIndex(index);

    const other = createHashEmbedder({ id: 'hash-b' });
    const reopened = await openIndex(other);
    expect(logs.at(-1)).toMatch(/tool index at .*tools\.lance was built with hash-a but the embedder is now hash-b; rebuilding/);
    const report = await reopened.sync(tools);
    expect(report).toMatchObject({ added: 31, updated: 0, rebuilt: true });
    expect(report.reason).toBe('was built with hash-a but the embedder is now hash-b');
    expect(other.embedded).toHaveLength(31);
    expect(await reopened.count()).toBe(31);
  });

  it('rebuilds when the dimensions change', async () => {
    const tools = catalog(12);
    const index = await openIndex(createHashEmbedder({ id: 'same', dimensions: 64 }));
    await index.sync(tools);
    await closeIndex(index);

    const wider = await openIndex(createHashEmbedder({ id: 'same', dimensions: 32 }));
    expect(logs.at(-1)).toMatch(/holds 64-dimensional vectors but same gives 32; rebuilding/);
    expect(await wider.sync(tools)).toMatchObject({ added: 12, rebuilt: true });
    expect((await wider.searchVector(hashVector(toolEmbeddingText(tools[3]!), 32), 1))[0]?.id).toBe(tools[3]!.id);
  });

  it.each([
    ['truncated data files', (file: string) => file.includes(`${path.sep}data${path.sep}`), 'truncate'],
    ['garbled version manifests', (file: string) => file.includes(`${path.sep}_versions${path.sep}`), 'garble'],
    ['garbled index files', (file: string) => file.includes(`${path.sep}_indices${path.sep}`), 'garble'],
  ] as const)('rebuilds a table with %s', async (_label, pick, damage) => {
    const tools = [...catalog(50), waterQuality];
    const index = await openIndex(createHashEmbedder());
    await index.sync(tools);
    await closeIndex(index);

    const files = (await listFiles(path.join(dir, 'vectors', 'tools.lance'))).filter(pick);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      if (damage === 'truncate') await truncate(file, Math.floor((await stat(file)).size / 3));
      else await writeFile(file, garble(await readFile(file)));
    }

    const embedder = createHashEmbedder();
    const reopened = await openIndex(embedder);
    expect(logs.at(-1)).toMatch(/tool index at .*tools\.lance: the table is unreadable \(.+\); rebuilding — it is a cache/);
    expect(logs.at(-1)).not.toMatch(/column/);
    const report = await reopened.sync(tools);
    expect(report).toMatchObject({ added: 51, rebuilt: true });
    expect(report.reason).toMatch(/^the table is unreadable/);
    expect(await reopened.count()).toBe(51);
    expect(ids(await reopened.searchText('water quality river', 3))[0]).toBe('getWaterQuality');
  });

  it('rebuilds a table whose columns are not the tool layout', async () => {
    const index = await openIndex(createHashEmbedder());
    await index.sync(catalog(5));
    await closeIndex(index);
    const db = await connect(path.join(dir, 'vectors'));
    const table = await db.createTable('tools', [{ id: 'x', vector: [1, 2] }], { mode: 'overwrite' });
    table.close();
    db.close();

    const reopened = await openIndex(createHashEmbedder());
    expect(logs.at(-1)).toMatch(/the table is unreadable \(column hash is missing or not a string\); rebuilding/);
    expect(await reopened.sync(catalog(5))).toMatchObject({ added: 5, rebuilt: true });
  });

  it('turns a search of a table damaged while open into INTERNAL, and the next sync rebuilds it', async () => {
    const tools = [...catalog(30), waterQuality];
    const index = await openIndex(createHashEmbedder());
    await index.sync(tools);
    await rm(path.join(dir, 'vectors', 'tools.lance', 'data'), { recursive: true });

    const error = await index.searchVector(hashVector('water', 64), 5).catch((e: unknown) => e);
    expect(isKiwiError(error, 'INTERNAL')).toBe(true);
    expect((error as Error).message).toMatch(/vector search of the tool index at .* failed \(.+\); sync the index to rebuild it/);

    const report = await index.sync(tools);
    expect(report).toMatchObject({ added: 31, rebuilt: true });
    expect(report.reason).toMatch(/^the table is unreadable/);
    expect(ids(await index.searchText('water quality', 1))).toEqual(['getWaterQuality']);
  });

  it('rebuilds when the metadata file is garbage, too large or missing', async () => {
    const tools = catalog(20);
    const index = await openIndex(createHashEmbedder());
    await index.sync(tools);
    await closeIndex(index);

    const metaFile = path.join(dir, 'vectors', 'tools.meta.json');
    await writeFile(metaFile, '{"schemaVersion": 1, "embedderId": ');
    const a = await openIndex(createHashEmbedder());
    expect(logs.at(-1)).toMatch(/its metadata file .*tools\.meta\.json is unreadable \(not JSON: .+\); rebuilding — it is a cache/);
    expect(await a.sync(tools)).toMatchObject({ added: 20, rebuilt: true });
    await closeIndex(a);

    await writeFile(metaFile, ' '.repeat(65 * 1024));
    const huge = await openIndex(createHashEmbedder());
    expect(logs.at(-1)).toMatch(/its metadata file .*tools\.meta\.json is unreadable \(66560 bytes, more than a metadata file can be\); rebuilding/);
    await closeIndex(huge);

    await rm(metaFile);
    const b = await openIndex(createHashEmbedder());
    expect(logs.at(-1)).toMatch(/has no metadata file .*; rebuilding — it is a cache/);
    expect(await b.sync(tools)).toMatchObject({ added: 20, rebuilt: true });
    const meta = JSON.parse(await readFile(metaFile, 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({ embedderId: 'hash-64', dimensions: 64, schemaVersion: 1 });
  });
});

describe('tool index: hostile queries and bad input', () => {
  it('never lets query syntax reach the full-text parser', async () => {
    const index = await openIndex(createHashEmbedder());
    await index.sync([...catalog(30), waterQuality]);
    const hostile = [
      '"water quality"',
      'water "quality',
      "river's water",
      'station_id: "X-1"',
      'water (quality',
      'wat*',
      'water -quality',
      '+water',
      'water AND quality OR NOT river',
      'NOT',
      'water~2 quality^3',
      'title:water',
      '🌊 water quality 🐟',
      'water\\ quality / [river] {x} <y>',
      "'; DROP TABLE tools; --",
      'a'.repeat(10_000),
    ];
    for (const query of hostile) {
      const hits = await index.searchText(query, 5);
      expect(Array.isArray(hits), query).toBe(true);
    }
    expect(ids(await index.searchText('"water quality"', 3))[0]).toBe('getWaterQuality');
    expect(ids(await index.searchText('station_id: "X-1"', 3))[0]).toBe('getWaterQuality');
    expect(await index.searchText('', 5)).toEqual([]);
    expect(await index.searchText('   \n\t ', 5)).toEqual([]);
    expect(await index.searchText('🌊🐟', 5)).toEqual([]);
    expect(await index.searchText('"" () * : - AND OR NOT', 5)).toEqual([]);
    expect(await index.count()).toBe(31);
  });

  it('rejects bad k and vectors of the wrong size with INVALID_INPUT', async () => {
    const index = await openIndex(createHashEmbedder());
    await index.sync(catalog(5));
    for (const k of [-1, 1.5, Number.NaN, 1_000_001]) {
      const error = await index.searchText('invoice', k).catch((e: unknown) => e);
      expect(isKiwiError(error, 'INVALID_INPUT'), String(k)).toBe(true);
      expect((error as Error).message).toMatch(/ask for a whole number from 0 to 1000/);
    }
    expect(await index.searchText('invoice', 0)).toEqual([]);
    const wrong = await index.searchVector(new Float32Array(3), 5).catch((e: unknown) => e);
    expect(isKiwiError(wrong, 'INVALID_INPUT')).toBe(true);
    expect((wrong as Error).message).toMatch(/needs a Float32Array of 64 finite numbers \(from hash-64\); got 3 numbers/);
    const nan = await index.searchVector(new Float32Array(64).fill(Number.NaN), 5).catch((e: unknown) => e);
    expect(isKiwiError(nan, 'INVALID_INPUT')).toBe(true);
  });

  it('rejects bad options and use after close', async () => {
    const embedder = createHashEmbedder();
    await expect(openToolIndex({ dir, embedder, table: '../escape' })).rejects.toThrow(/table name "..\/escape" is not allowed/);
    await expect(openToolIndex({ dir, embedder, compactEvery: 0 })).rejects.toThrow(/compactEvery is 0; use a whole number of at least 1/);
    const index = await openToolIndex({ dir, embedder });
    await index.close();
    await index.close();
    await expect(index.searchText('x', 1)).rejects.toThrow(/is closed; open it again/);
    await expect(index.sync([])).rejects.toThrow(/is closed/);
  });

  it('reports an embedder that returns vectors of the wrong size', async () => {
    const broken = createHashEmbedder();
    broken.embed = async (texts) => texts.map(() => new Float32Array(10));
    const index = await openIndex(broken as HashEmbedder);
    const error = await index.sync(catalog(3)).catch((e: unknown) => e);
    expect(isKiwiError(error, 'INTERNAL')).toBe(true);
    expect((error as Error).message).toMatch(/embedder hash-64 returned a vector that is not 64 finite numbers/);
  });
});

describe('tool index: compaction and the ANN index', () => {
  it('compacts after compactEvery changed rows, counting across opens', async () => {
    const tools = catalog(20);
    const metaFile = path.join(dir, 'vectors', 'tools.meta.json');
    const readMeta = async () => JSON.parse(await readFile(metaFile, 'utf8')) as { changesSinceCompact: number };
    const index = await openIndex(createHashEmbedder(), { compactEvery: 5 });
    await index.sync(tools);
    expect((await readMeta()).changesSinceCompact).toBe(0); // a rebuild compacts

    const edit = (n: number) => tools.map((t, i) => (i < n ? { ...t, description: `${t.description} revised` } : t));
    await index.sync(edit(3));
    expect((await readMeta()).changesSinceCompact).toBe(3);
    await closeIndex(index);

    const reopened = await openIndex(createHashEmbedder(), { compactEvery: 5 });
    await reopened.sync(edit(3).map((t, i) => (i >= 3 && i < 5 ? { ...t, description: `${t.description} zeppelin` } : t)));
    expect((await readMeta()).changesSinceCompact).toBe(0);
    expect(ids(await reopened.searchText('zeppelin', 5)).sort()).toEqual([tools[3]!.id, tools[4]!.id].sort());
  });

  it('builds an ANN index from annThreshold rows and still returns exact cosine scores', async () => {
    const embedder = createHashEmbedder();
    const index = await openIndex(embedder, { annThreshold: 300 });
    const tools = catalog(400);
    await index.sync(tools);

    const db = await connect(path.join(dir, 'vectors'));
    const table = await db.openTable('tools');
    const indices = await table.listIndices();
    table.close();
    db.close();
    expect(indices.map((i) => i.indexType)).toContain('IvfHnswSq');

    const target = tools[123]!;
    const hits = await index.searchVector(hashVector(toolEmbeddingText(target), embedder.dimensions), 5);
    expect(hits[0]?.id).toBe(target.id);
    expect(hits[0]?.score).toBeCloseTo(1, 4);
    for (const hit of hits) expect(hit.score).toBeLessThanOrEqual(1.0001);

    const added = makeTool({ id: 'orbitalDebrisTracker', description: 'orbital debris tracker for low earth orbit' });
    await index.sync([...tools, added]);
    expect((await index.searchVector(hashVector(toolEmbeddingText(added), embedder.dimensions), 1))[0]?.id).toBe('orbitalDebrisTracker');
  });
});

async function listFiles(folder: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else out.push(full);
  }
  return out;
}

function garble(bytes: Buffer): Buffer {
  const out = Buffer.from(bytes);
  for (let i = 0; i < out.length; i += 7) out[i] = (out[i] ?? 0) ^ 0x5a;
  return out;
}
