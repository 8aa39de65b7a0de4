import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import { readCappedFile } from '../base/read-capped-file.js';
import { TOKENIZER_ID, tokenize } from './static-tokenizer.js';

/**
 * The files of a static embedder, one folder:
 *
 * - `model.json`  — what the model is (format, id, dimensions, vocabulary size, tokenizer, the
 *   sentence bias, the sha256 of the weights) and where it came from (teacher, corpus, build).
 * - `vocab.txt`   — one word per line, in row order (UTF-8, `\n`).
 * - `weights.bin` — little-endian: vocab_size float32 row scales, then vocab_size × dimensions
 *   int8. A word's vector is scale × row; its SIF weight is already folded into the scale.
 *
 * A text's vector is bias + (sum of its known words' vectors) / (number of known words), made
 * unit length; a text with no known word is therefore the bias direction (the corpus's mean
 * sentence), which the loader requires to be non-zero.
 */

export const STATIC_MODEL_FORMAT = 'kiwi-static-embedder';
export const STATIC_MODEL_VERSION = 1;

export const STATIC_MODEL_FILES = { header: 'model.json', vocab: 'vocab.txt', weights: 'weights.bin' } as const;

const MAX_HEADER_BYTES = 1024 * 1024;
const MAX_VOCAB_BYTES = 8 * 1024 * 1024;
const MAX_WEIGHTS_BYTES = 64 * 1024 * 1024;
const MAX_VOCAB = 200_000;
const MAX_DIMENSIONS = 4096;

const headerSchema = z.object({
  format: z.literal(STATIC_MODEL_FORMAT),
  version: z.literal(STATIC_MODEL_VERSION),
  id: z.string().regex(/^[a-z0-9][a-z0-9._@-]{0,79}$/, 'lower-case letters, digits and . _ @ - (at most 80)'),
  dimensions: z.number().int().min(1).max(MAX_DIMENSIONS),
  vocab_size: z.number().int().min(1).max(MAX_VOCAB),
  tokenizer: z.string(),
  weights_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bias: z.array(z.number().finite()),
  // Provenance, written by the build script and shown to people; the runtime does not read it.
  teacher: z.record(z.string(), z.unknown()).optional(),
  corpus: z.record(z.string(), z.unknown()).optional(),
  build: z.record(z.string(), z.unknown()).optional(),
});

export type StaticModelHeader = z.infer<typeof headerSchema>;

export interface StaticModel {
  header: StaticModelHeader;
  vocab: string[];
  /** Per row: the factor that turns the int8 row into the word's (SIF-weighted) vector. */
  scales: Float32Array;
  /** vocab_size × dimensions, row-major. */
  rows: Int8Array;
  bias: Float32Array;
}

function rebuildHint(dir: string): string {
  return (
    `the static embedder's files (${Object.values(STATIC_MODEL_FILES).join(', ')}) in ${dir} are missing or damaged; ` +
    'the shipped model is models/static-use-256 (restore it with `git checkout -- models/static-use-256`), or rebuild it with ' +
    '`apt-cache dumpavail > /tmp/dumpavail.txt && npx tsx scripts/build-static-embedder.ts --dump /tmp/dumpavail.txt --out ' +
    `${dir}\` (see models/static-use-256/README.md)`
  );
}

function damaged(dir: string, what: string): KiwiError {
  return new KiwiError('INVALID_INPUT', `static embedder: ${what}; ${rebuildHint(dir)}`, { details: { modelDir: dir } });
}

async function readModelFile(dir: string, name: string, max: number): Promise<Buffer> {
  const file = path.join(dir, name);
  try {
    return await readCappedFile(file, max, (size) => damaged(dir, `${file} is ${size} bytes, more than the ${max} a model file may have`));
  } catch (error) {
    if (error instanceof KiwiError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw damaged(dir, code === 'ENOENT' ? `${file} does not exist` : `cannot read ${file} (${code ?? String(error)})`);
  }
}

function parseHeader(dir: string, bytes: Buffer): StaticModelHeader {
  let data: unknown;
  try {
    data = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw damaged(dir, `${STATIC_MODEL_FILES.header} is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = headerSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw damaged(dir, `${STATIC_MODEL_FILES.header}: ${issue?.path.join('.') || '(top level)'}: ${issue?.message ?? 'invalid'}`);
  }
  const header = parsed.data;
  if (header.tokenizer !== TOKENIZER_ID) throw damaged(dir, `the model was built with tokenizer ${header.tokenizer}, this code splits words with ${TOKENIZER_ID}`);
  if (header.bias.length !== header.dimensions) throw damaged(dir, `bias has ${header.bias.length} numbers, dimensions is ${header.dimensions}`);
  if (header.bias.every((x) => x === 0)) throw damaged(dir, 'bias is all zeros, so a text with no known word would have no direction');
  return header;
}

function parseVocab(dir: string, bytes: Buffer, size: number): string[] {
  const text = bytes.toString('utf8');
  const vocab = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  if (vocab.length !== size) throw damaged(dir, `${STATIC_MODEL_FILES.vocab} has ${vocab.length} lines, model.json says vocab_size ${size}`);
  const seen = new Set<string>();
  for (const [line, word] of vocab.entries()) {
    // A word the tokenizer would not produce could never be looked up: the files do not belong together.
    const words = tokenize(word);
    if (words.length !== 1 || words[0] !== word) throw damaged(dir, `${STATIC_MODEL_FILES.vocab} line ${line + 1} ("${word.slice(0, 40)}") is not one word of ${TOKENIZER_ID}`);
    if (seen.has(word)) throw damaged(dir, `${STATIC_MODEL_FILES.vocab} line ${line + 1}: "${word}" appears twice`);
    seen.add(word);
  }
  return vocab;
}

export async function readStaticModel(dir: string): Promise<StaticModel> {
  const header = parseHeader(dir, await readModelFile(dir, STATIC_MODEL_FILES.header, MAX_HEADER_BYTES));
  const vocab = parseVocab(dir, await readModelFile(dir, STATIC_MODEL_FILES.vocab, MAX_VOCAB_BYTES), header.vocab_size);
  const weights = await readModelFile(dir, STATIC_MODEL_FILES.weights, MAX_WEIGHTS_BYTES);
  const v = header.vocab_size;
  const expected = v * 4 + v * header.dimensions;
  if (weights.length !== expected) throw damaged(dir, `${STATIC_MODEL_FILES.weights} is ${weights.length} bytes; ${v} words × (4 + ${header.dimensions}) needs ${expected}`);
  if (createHash('sha256').update(weights).digest('hex') !== header.weights_sha256) throw damaged(dir, `${STATIC_MODEL_FILES.weights} does not match the sha256 in model.json`);
  // Copies, so the views are aligned whatever offset the Buffer had in Node's pool.
  const scales = new Float32Array(v);
  for (let i = 0; i < v; i++) scales[i] = weights.readFloatLE(i * 4);
  if (!scales.every(Number.isFinite)) throw damaged(dir, `${STATIC_MODEL_FILES.weights} holds a scale that is not a finite number`);
  const rows = new Int8Array(weights.buffer.slice(weights.byteOffset + v * 4, weights.byteOffset + expected));
  return { header, vocab, scales, rows, bias: Float32Array.from(header.bias) };
}

export interface StaticModelInput {
  id: string;
  vocab: string[];
  scales: Float32Array;
  rows: Int8Array;
  bias: Float32Array;
  /** Where the model came from, for people (model.json's teacher, corpus and build). */
  provenance?: Pick<StaticModelHeader, 'teacher' | 'corpus' | 'build'>;
}

/** Writes the three files (the build script's output; tests use it for tiny models). */
export async function writeStaticModel(dir: string, model: StaticModelInput): Promise<StaticModelHeader> {
  const v = model.vocab.length;
  const d = model.bias.length;
  if (model.scales.length !== v || model.rows.length !== v * d) {
    throw new KiwiError('INVALID_INPUT', `static model: ${v} words and ${d} dimensions need ${v} scales and ${v * d} row values; got ${model.scales.length} and ${model.rows.length}`);
  }
  const weights = Buffer.alloc(v * 4 + v * d);
  model.scales.forEach((s, i) => weights.writeFloatLE(s, i * 4));
  Buffer.from(model.rows.buffer, model.rows.byteOffset, model.rows.byteLength).copy(weights, v * 4);
  const header: StaticModelHeader = {
    format: STATIC_MODEL_FORMAT,
    version: STATIC_MODEL_VERSION,
    id: model.id,
    dimensions: d,
    vocab_size: v,
    tokenizer: TOKENIZER_ID,
    weights_sha256: createHash('sha256').update(weights).digest('hex'),
    bias: Array.from(model.bias),
    ...model.provenance,
  };
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, STATIC_MODEL_FILES.weights), weights);
  await writeFile(path.join(dir, STATIC_MODEL_FILES.vocab), `${model.vocab.join('\n')}\n`);
  await writeFile(path.join(dir, STATIC_MODEL_FILES.header), `${JSON.stringify(header, null, 2)}\n`);
  return header;
}
