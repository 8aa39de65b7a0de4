import { writeFile } from 'node:fs/promises';
import { uniform } from '../../bench/scale/seeded.js';

/**
 * A GGUF file (version 3) of a tiny llama model with random weights, written here so that the
 * in-process fallback model is tested on a real model file without downloading one. It loads and
 * generates like any llama model; what it writes means nothing (the grammar gives it its shape).
 *
 * Layout (github.com/ggml-org/ggml docs/gguf.md): header, metadata key/values, tensor infos,
 * padding to the alignment, then each tensor's F32 data at an aligned offset. The vocabulary is
 * SentencePiece-style with byte fallback: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>,
 * and a few whole pieces, so any text tokenizes.
 */

export interface TinyGgufOptions {
  /** Width of the model; a multiple of `heads`. Default 32. */
  embedding?: number;
  heads?: number;
  layers?: number;
  contextLength?: number;
  /** Seeds the weights: the same seed writes the same file. */
  seed?: number;
}

const GGUF_MAGIC = 0x46554747; // "GGUF", little-endian
const GGUF_VERSION = 3;
const ALIGNMENT = 32;
const TYPE = { u32: 4, i32: 5, f32: 6, string: 8, array: 9 } as const;
const GGML_TYPE_F32 = 0;
const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, byte: 6 } as const;
const EXTRA_PIECES = ['▁', '{', '}', '"', ':', ',', '▁the', 'true', 'false', 'null'];

type Value = { type: 'u32' | 'i32' | 'f32'; value: number } | { type: 'string'; value: string } | { type: 'array'; of: 'string'; values: string[] } | { type: 'array'; of: 'f32' | 'i32'; values: number[] };

export async function writeTinyGguf(file: string, options: TinyGgufOptions = {}): Promise<void> {
  await writeFile(file, tinyGguf(options));
}

export function tinyGguf(options: TinyGgufOptions = {}): Buffer {
  const nEmbd = options.embedding ?? 32;
  const nHead = options.heads ?? 2;
  const nLayer = options.layers ?? 1;
  const nFf = nEmbd * 2;
  // Seeded: the same weights every run.
  const random = uniform(options.seed ?? 1);

  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`), ...EXTRA_PIECES];
  const types = tokens.map((_, i) => (i === 0 ? TOKEN_TYPE.unknown : i < 3 ? TOKEN_TYPE.control : i < 259 ? TOKEN_TYPE.byte : TOKEN_TYPE.normal));
  const scores = tokens.map((_, i) => (i < 259 ? 0 : -i));
  const nVocab = tokens.length;

  const metadata: [string, Value][] = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: 'kiwi-tiny-random' }],
    ['general.alignment', { type: 'u32', value: ALIGNMENT }],
    ['llama.context_length', { type: 'u32', value: options.contextLength ?? 2048 }],
    ['llama.embedding_length', { type: 'u32', value: nEmbd }],
    ['llama.block_count', { type: 'u32', value: nLayer }],
    ['llama.feed_forward_length', { type: 'u32', value: nFf }],
    ['llama.attention.head_count', { type: 'u32', value: nHead }],
    ['llama.attention.head_count_kv', { type: 'u32', value: nHead }],
    ['llama.rope.dimension_count', { type: 'u32', value: nEmbd / nHead }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-5 }],
    ['llama.vocab_size', { type: 'u32', value: nVocab }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', values: tokens }],
    ['tokenizer.ggml.scores', { type: 'array', of: 'f32', values: scores }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'i32', values: types }],
    ['tokenizer.ggml.unknown_token_id', { type: 'u32', value: 0 }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: 2 }],
  ];

  // Dimensions as GGML counts them: the first is the one that varies fastest.
  const tensors: [string, number[]][] = [
    ['token_embd.weight', [nEmbd, nVocab]],
    ['output_norm.weight', [nEmbd]],
    ['output.weight', [nEmbd, nVocab]],
  ];
  for (let l = 0; l < nLayer; l++) {
    tensors.push(
      [`blk.${l}.attn_norm.weight`, [nEmbd]],
      [`blk.${l}.attn_q.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_k.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_v.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_output.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.ffn_norm.weight`, [nEmbd]],
      [`blk.${l}.ffn_gate.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_down.weight`, [nFf, nEmbd]],
      [`blk.${l}.ffn_up.weight`, [nEmbd, nFf]],
    );
  }

  const out = new Writer();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_VERSION);
  out.u64(tensors.length);
  out.u64(metadata.length);
  for (const [key, value] of metadata) {
    out.string(key);
    out.value(value);
  }
  let offset = 0;
  const data: Buffer[] = [];
  for (const [name, dims] of tensors) {
    out.string(name);
    out.u32(dims.length);
    for (const d of dims) out.u64(d);
    out.u32(GGML_TYPE_F32);
    out.u64(offset);
    const count = dims.reduce((a, b) => a * b, 1);
    const bytes = Buffer.alloc(align(count * 4));
    // Norm weights near 1 keep activations in range; the rest small and random.
    const isNorm = name.endsWith('norm.weight');
    for (let i = 0; i < count; i++) bytes.writeFloatLE(isNorm ? 1 : (random() * 2 - 1) * 0.5, i * 4);
    data.push(bytes);
    offset += bytes.length;
  }
  const head = out.buffer();
  return Buffer.concat([head, Buffer.alloc(align(head.length) - head.length), ...data]);
}

const align = (n: number): number => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

class Writer {
  private readonly parts: Buffer[] = [];
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.parts.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.parts.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.parts.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.parts.push(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.parts.push(bytes);
  }
  value(v: Value): void {
    if (v.type === 'array') {
      this.u32(TYPE.array);
      this.u32(TYPE[v.of]);
      this.u64(v.values.length);
      for (const item of v.values) {
        if (v.of === 'string') this.string(item as string);
        else if (v.of === 'f32') this.f32(item as number);
        else this.i32(item as number);
      }
      return;
    }
    this.u32(TYPE[v.type]);
    if (v.type === 'string') this.string(v.value);
    else if (v.type === 'f32') this.f32(v.value);
    else if (v.type === 'i32') this.i32(v.value);
    else this.u32(v.value);
  }
  buffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}
