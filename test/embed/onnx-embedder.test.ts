import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embed/create-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { createOnnxEmbedder } from '../../src/embed/onnx-embedder.js';
import { dot, normalize } from '../../src/embed/vector-math.js';
import { buildTinyModel, type TinyModel } from '../fixtures/embed/build-tiny-model.mjs';
import { failure } from '../helpers/expect-failure.js';

// A tiny BERT-shaped model built by the fixture (a word-embedding lookup in an ONNX graph), so
// the whole transformers.js + onnxruntime-node path runs without any downloaded weights.


let root: string;
let model: TinyModel;
let embedder: Embedder;

/** Mean pooling by hand: the mean of the rows of [CLS], the text's words and [SEP], made unit length. */
function expected(text: string): Float32Array {
  const words = text.toLowerCase().match(/[a-z]+|[^\sa-z]/g) ?? [];
  const ids = ['[CLS]', ...words, '[SEP]'].map((w) => {
    const id = model.vocab.indexOf(w);
    return id >= 0 ? id : model.vocab.indexOf('[UNK]');
  });
  const mean = new Array<number>(model.hiddenSize).fill(0);
  for (const id of ids) model.rows[id]!.forEach((v, k) => (mean[k]! += v / ids.length));
  return normalize(mean)!;
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'kiwi-onnx-'));
  model = await buildTinyModel(path.join(root, 'tiny-bert'));
  embedder = await createOnnxEmbedder({ modelDir: model.modelDir });
});

afterAll(async () => {
  await embedder?.close();
  await rm(root, { recursive: true, force: true });
});

describe('ONNX embedder (tiny local model)', () => {
  it('gives unit vectors of the hidden size, equal to mean pooling computed by hand', async () => {
    expect(embedder.dimensions).toBe(model.hiddenSize);
    expect(embedder.id).toBe(`onnx:tiny-bert:mean:${model.hiddenSize}`);
    const texts = ['Send a message to the ops channel', 'post a note in the team chat', 'compute the factorial of number'];
    const vectors = await embedder.embed(texts);
    vectors.forEach((v, i) => {
      expect(v).toBeInstanceOf(Float32Array);
      expect(dot(v, v)).toBeCloseTo(1, 5);
      Array.from(expected(texts[i]!)).forEach((x, k) => expect(v[k]).toBeCloseTo(x, 5));
    });
  });

  it('puts texts that share words closer than unrelated ones, and gives identical texts identical vectors', async () => {
    const [a, b, c, a2] = await embedder.embed(['send a message to the ops channel', 'send a message to the team', 'compute factorial of number', 'send a message to the ops channel']);
    expect(dot(a!, b!)).toBeGreaterThan(dot(a!, c!));
    expect(Array.from(a2!)).toEqual(Array.from(a!));
    // Across batches and calls too (batches pad to their longest text; padding must not leak in).
    const [alone] = await embedder.embed(['send a message to the ops channel']);
    Array.from(a!).forEach((x, k) => expect(alone![k]).toBeCloseTo(x, 6));
  });

  it('keeps order across several batches, and handles unknown words and empty text', async () => {
    const small = await createOnnxEmbedder({ modelDir: model.modelDir, batchSize: 2, pooling: 'cls' });
    try {
      expect(small.id).toBe(`onnx:tiny-bert:cls:${model.hiddenSize}`);
      const texts = ['read file', 'write file', 'list directory', 'web search', 'weather forecast for city'];
      const vectors = await small.embed(texts);
      expect(vectors).toHaveLength(5);
      // CLS pooling sees only [CLS], whose row is the same for every text.
      const cls = normalize(model.rows[model.vocab.indexOf('[CLS]')]!)!;
      for (const v of vectors) Array.from(cls).forEach((x, k) => expect(v[k]).toBeCloseTo(x, 5));
      const [unknown, empty] = await embedder.embed(['xyzzy plugh', '']);
      Array.from(expected('xyzzy plugh')).forEach((x, k) => expect(unknown![k]).toBeCloseTo(x, 5));
      expect(dot(empty!, empty!)).toBeCloseTo(1, 5);
    } finally {
      await small.close();
    }
  });

  it('says which folder and files are missing, and that models are placed by hand', async () => {
    const absent = path.join(root, 'no-such-model');
    const error = await failure(createOnnxEmbedder({ modelDir: absent }), 'INVALID_INPUT');
    expect(error.message).toContain(absent);
    expect(error.message).toMatch(/does not exist/);
    expect(error.message).toMatch(/config\.json, tokenizer\.json, tokenizer_config\.json and onnx\/model\.onnx/);
    expect(error.message).toMatch(/never downloaded; place them there by hand/);

    const partial = await buildTinyModel(path.join(root, 'partial'));
    await unlink(path.join(partial.modelDir, 'tokenizer.json'));
    await unlink(path.join(partial.modelDir, 'onnx', 'model.onnx'));
    const missing = await failure(createOnnxEmbedder({ modelDir: partial.modelDir }), 'INVALID_INPUT');
    expect(missing.message).toContain(`${partial.modelDir} is missing tokenizer.json, onnx/model.onnx`);

    const quantized = await failure(createOnnxEmbedder({ modelDir: model.modelDir, quantized: true }), 'INVALID_INPUT');
    expect(quantized.message).toContain('is missing onnx/model_quantized.onnx');
  });

  it('loads model_quantized.onnx when quantized, and a model.onnx next to config.json', async () => {
    const q = await buildTinyModel(path.join(root, 'quantized'), { modelFile: 'onnx/model_quantized.onnx' });
    const flat = await buildTinyModel(path.join(root, 'flat'), { modelFile: 'model.onnx', hiddenSize: 6 });
    const [qe, fe] = await Promise.all([createOnnxEmbedder({ modelDir: q.modelDir, quantized: true }), createOnnxEmbedder({ modelDir: flat.modelDir })]);
    try {
      expect(qe.id).toBe(`onnx:quantized:mean:q8:${q.hiddenSize}`);
      expect(fe.dimensions).toBe(6);
      expect((await fe.embed(['read file']))[0]).toHaveLength(6);
    } finally {
      await Promise.all([qe.close(), fe.close()]);
    }
  });

  it('rejects a damaged model file and bad options with clear errors', async () => {
    const broken = await buildTinyModel(path.join(root, 'broken'));
    await writeFile(path.join(broken.modelDir, 'onnx', 'model.onnx'), 'not a protobuf');
    const error = await failure(createOnnxEmbedder({ modelDir: broken.modelDir }), 'INVALID_INPUT');
    expect(error.message).toContain(`could not load the ONNX model in ${broken.modelDir}`);
    await failure(createOnnxEmbedder({ modelDir: '' }), 'INVALID_INPUT');
    await failure(createOnnxEmbedder({ modelDir: model.modelDir, pooling: 'max' as 'mean' }), 'INVALID_INPUT');
    await failure(createOnnxEmbedder({ modelDir: model.modelDir, batchSize: 0 }), 'INVALID_INPUT');
  });

  it('is built by createEmbedder from a config', async () => {
    const own = await createEmbedder({ kind: 'onnx', modelDir: model.modelDir, pooling: 'cls' });
    try {
      expect(own.id).toBe(`onnx:tiny-bert:cls:${model.hiddenSize}`);
    } finally {
      await own.close();
    }
  });

  it('refuses calls after close', async () => {
    const own = await createOnnxEmbedder({ modelDir: model.modelDir });
    await own.close();
    await failure(own.embed(['read file']), 'INTERNAL');
  });
});
