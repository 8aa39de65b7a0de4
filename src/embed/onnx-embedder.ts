import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { FeatureExtractionPipeline } from '@huggingface/transformers';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { createBatchQueue, DEFAULT_MAX_QUEUED_TEXTS } from './batch-queue.js';
import type { Embedder } from './embedder.js';
import { normalize } from './vector-math.js';

/**
 * A sentence encoder exported to ONNX (all-MiniLM-L6-v2, bge-small-en-v1.5, …) in a folder the
 * user filled by hand, run through transformers.js on onnxruntime-node. Nothing is downloaded:
 * remote loading is switched off and a missing file is an error that says what to put where.
 *
 * It runs in-process: onnxruntime executes the graph on its own native threads, so the event
 * loop only pays for tokenising, which is cheap for the small batches used here; a batch per
 * turn keeps large indexing jobs from starving other work.
 */

export interface OnnxEmbedderOptions {
  /** A folder such as models/all-MiniLM-L6-v2 holding config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx. */
  modelDir: string;
  /** 'mean' (sentence-transformers models such as MiniLM, the default) or 'cls' (bge). */
  pooling?: 'mean' | 'cls';
  /** Vectors are always unit length; the option exists only to say so. */
  normalize?: true;
  /** Load model_quantized.onnx (int8) instead of model.onnx. */
  quantized?: boolean;
  /** Texts per model run; default 16. */
  batchSize?: number;
  /** Longer texts are cut to this many characters before tokenising (default 8192; the tokenizer truncates to the model's limit anyway). */
  maxTextChars?: number;
  maxQueuedTexts?: number;
  signal?: AbortSignal;
}

const REQUIRED = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];

async function isFile(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

function placeByHand(dir: string, modelFile: string): string {
  return (
    `the folder needs config.json, tokenizer.json, tokenizer_config.json and onnx/${modelFile} (or ${modelFile} next to config.json): ` +
    'the ONNX export of a sentence encoder such as all-MiniLM-L6-v2 or bge-small-en-v1.5. Models are never downloaded; place them there by hand, ' +
    `e.g. \`optimum-cli export onnx --model sentence-transformers/all-MiniLM-L6-v2 --task feature-extraction ${dir}\` on a machine with Python, ` +
    'or copy the files of a Hugging Face repo that ships onnx/ (such as Xenova/all-MiniLM-L6-v2). Or use the built-in embedder (kind: use-lite)'
  );
}

/** Checks the folder by hand first, so a missing file gets a message that says what belongs there. */
async function locateModel(dir: string, modelFile: string): Promise<{ subfolder: string }> {
  const folder = await stat(dir).catch(() => undefined);
  if (folder === undefined || !folder.isDirectory()) {
    throw new KiwiError('INVALID_INPUT', `ONNX model folder ${dir} does not exist (or is not a folder); ${placeByHand(dir, modelFile)}`, { details: { modelDir: dir } });
  }
  const missing: string[] = [];
  for (const name of REQUIRED) if (!(await isFile(path.join(dir, name)))) missing.push(name);
  let subfolder = 'onnx';
  if (!(await isFile(path.join(dir, 'onnx', modelFile)))) {
    if (await isFile(path.join(dir, modelFile))) subfolder = '';
    else missing.push(`onnx/${modelFile}`);
  }
  if (missing.length > 0) {
    throw new KiwiError('INVALID_INPUT', `ONNX model folder ${dir} is missing ${missing.join(', ')}; ${placeByHand(dir, modelFile)}`, { details: { modelDir: dir, missing } });
  }
  return { subfolder };
}

function positive(value: number | undefined, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) throw new KiwiError('INVALID_INPUT', `ONNX embedder: ${name} must be an integer from 1 to ${max}, not ${String(value)}`);
  return value;
}

export async function createOnnxEmbedder(options: OnnxEmbedderOptions): Promise<Embedder> {
  if (typeof options?.modelDir !== 'string' || options.modelDir.trim() === '') {
    throw new KiwiError('INVALID_INPUT', 'ONNX embedder: modelDir must name a model folder, e.g. models/all-MiniLM-L6-v2');
  }
  const pooling = options.pooling ?? 'mean';
  if (pooling !== 'mean' && pooling !== 'cls') throw new KiwiError('INVALID_INPUT', `ONNX embedder: pooling must be "mean" or "cls", not ${JSON.stringify(pooling)}`);
  if (options.normalize !== undefined && options.normalize !== true) {
    throw new KiwiError('INVALID_INPUT', 'ONNX embedder: vectors are always normalised (normalize: true); the index relies on dot product = cosine');
  }
  const batchSize = positive(options.batchSize, 'batchSize', 16, 1024);
  const maxTextChars = positive(options.maxTextChars, 'maxTextChars', 8192, 1_000_000);
  const maxQueuedTexts = positive(options.maxQueuedTexts, 'maxQueuedTexts', DEFAULT_MAX_QUEUED_TEXTS, 10_000_000);
  const quantized = options.quantized === true;
  const dir = path.resolve(options.modelDir);
  const modelFile = quantized ? 'model_quantized.onnx' : 'model.onnx';
  throwIfAborted(options.signal, `loading the ONNX model in ${dir}`);
  const { subfolder } = await locateModel(dir, modelFile);

  // Loaded here, not at the top: transformers.js brings onnxruntime and sharp (~0.3 s at every
  // start of every `kiwi` process), and only this embedder uses it.
  const { env, pipeline } = await import('@huggingface/transformers');
  // transformers.js keeps these switches in one process-wide object; both only ever tighten.
  // The model is named by its absolute path, which transformers.js reads as a local path rather
  // than a Hub id, so env.localModelPath (also process-wide) plays no part and two embedders
  // with models in different folders cannot disturb each other.
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  let extractor: FeatureExtractionPipeline;
  try {
    extractor = await pipeline('feature-extraction', dir, { local_files_only: true, dtype: quantized ? 'q8' : 'fp32', device: 'cpu', subfolder });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new KiwiError('INVALID_INPUT', `could not load the ONNX model in ${dir}: ${reason}; check that the files are a complete ONNX export of a BERT-style sentence encoder (export or copy them again)`, {
      cause: error,
      details: { modelDir: dir },
    });
  }

  async function run(texts: string[]): Promise<Float32Array[]> {
    const output = await extractor(texts, { pooling, normalize: true });
    try {
      const [rows, width] = output.dims as [number, number];
      if (output.dims.length !== 2 || rows !== texts.length) {
        throw new KiwiError('INTERNAL', `the ONNX model in ${dir} gave output of shape [${output.dims.join(', ')}] for ${texts.length} texts; it must output last_hidden_state [batch, sequence, hidden]`);
      }
      const data = output.data as Float32Array;
      return texts.map((_, i) => {
        const vector = normalize(data.subarray(i * width, (i + 1) * width));
        if (vector === null) throw new KiwiError('INTERNAL', `the ONNX model in ${dir} produced a zero or non-finite vector for text ${i}; the model files may be damaged`);
        return vector;
      });
    } finally {
      output.dispose();
    }
  }

  let dimensions: number;
  try {
    // One probe run learns the real output width (config.json may not say) and warms the session up.
    const [probe] = await run(['dimension probe']);
    dimensions = (probe as Float32Array).length;
  } catch (error) {
    await extractor.dispose();
    if (error instanceof KiwiError) throw error;
    throw new KiwiError('INVALID_INPUT', `the ONNX model in ${dir} loaded but failed on a test sentence: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (options.signal?.aborted) {
    await extractor.dispose();
    throwIfAborted(options.signal, `loading the ONNX model in ${dir}`);
  }

  const name = `the ONNX embedder (${path.basename(dir)})`;
  const queue = createBatchQueue({ name, batchSize, maxTextChars, maxQueuedTexts, run });
  let closing: Promise<void> | undefined;
  return {
    id: `onnx:${path.basename(dir)}:${pooling}${quantized ? ':q8' : ''}:${dimensions}`,
    dimensions,
    embed: (texts, signal) => queue.embed(texts, signal),
    close() {
      closing ??= (async () => {
        await queue.close(new KiwiError('TOOL_CANCELLED', `${name} was closed before this request ran`));
        await extractor.dispose();
      })();
      return closing;
    },
  };
}
