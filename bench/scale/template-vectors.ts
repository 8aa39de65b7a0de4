import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createUseLiteEmbedder } from '../../src/embed/use-lite-embedder.js';
import type { Tool } from '../../src/registry/types.js';
import { TOOL_DOCUMENT_VERSION, toolEmbeddingText } from '../../src/registry/tool-document.js';

/**
 * The real USE-lite vectors of the template tools, computed once and cached under the system's
 * temporary folder: a file named by a hash of the catalog, the document format and the model,
 * holding a header (count, dimensions as uint32) and the float32 vectors row by row.
 */

export interface TemplateVectors {
  count: number;
  dimensions: number;
  /** count × dimensions, row-major, unit rows. */
  data: Float32Array;
  /** The embedder whose vectors these are. */
  embedderId: string;
}

const EMBEDDER_ID = 'use-lite-512';
const HEADER_BYTES = 8;
const BATCH = 64;

export async function templateVectorsFile(catalogFile: string): Promise<string> {
  const hash = createHash('sha256')
    .update(`${EMBEDDER_ID}\0${TOOL_DOCUMENT_VERSION}\0`)
    .update(await readFile(catalogFile))
    .digest('hex');
  return path.join(tmpdir(), `kiwi-scale-template-vectors-${hash.slice(0, 16)}.f32`);
}

/** Reads the cache; null when it is missing or does not hold `count` vectors. */
export async function readTemplateVectors(file: string, count: number): Promise<TemplateVectors | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch {
    return null;
  }
  if (bytes.length < HEADER_BYTES) return null;
  const storedCount = bytes.readUInt32LE(0);
  const dimensions = bytes.readUInt32LE(4);
  if (storedCount !== count || dimensions === 0 || bytes.length !== HEADER_BYTES + count * dimensions * 4) return null;
  // A copy: the Buffer may sit at an offset that is not a multiple of 4 in Node's pool.
  const data = new Float32Array(count * dimensions);
  new Uint8Array(data.buffer).set(bytes.subarray(HEADER_BYTES));
  return { count, dimensions, data, embedderId: EMBEDDER_ID };
}

/** Loads the cached vectors, or embeds the templates with USE-lite (in its worker) and caches them. */
export async function ensureTemplateVectors(
  file: string,
  templates: Tool[],
  onProgress: (done: number, total: number) => void,
): Promise<{ vectors: TemplateVectors; cached: boolean; ms: number }> {
  const started = performance.now();
  const cached = await readTemplateVectors(file, templates.length);
  if (cached) return { vectors: cached, cached: true, ms: performance.now() - started };

  const embedder = await createUseLiteEmbedder();
  if (embedder.id !== EMBEDDER_ID) throw new Error(`expected embedder ${EMBEDDER_ID}, got ${embedder.id}; update bench/scale/template-vectors.ts`);
  const data = new Float32Array(templates.length * embedder.dimensions);
  try {
    for (let i = 0; i < templates.length; i += BATCH) {
      const texts = templates.slice(i, i + BATCH).map(toolEmbeddingText);
      const vectors = await embedder.embed(texts);
      vectors.forEach((vector, j) => data.set(vector, (i + j) * embedder.dimensions));
      onProgress(Math.min(i + BATCH, templates.length), templates.length);
    }
  } finally {
    await embedder.close();
  }

  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(templates.length, 0);
  header.writeUInt32LE(embedder.dimensions, 4);
  // Written beside and renamed, so a killed run never leaves a truncated cache behind.
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, Buffer.concat([header, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
  await rename(partial, file);
  return { vectors: { count: templates.length, dimensions: embedder.dimensions, data, embedderId: EMBEDDER_ID }, cached: false, ms: performance.now() - started };
}
