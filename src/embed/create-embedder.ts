import { z } from 'zod';
import { KiwiError } from '../base/errors.js';
import type { HttpClient } from '../primitives/http-client.js';
import type { Embedder } from './embedder.js';
import { createHttpEmbedder } from './http-embedder.js';
import { createOnnxEmbedder } from './onnx-embedder.js';
import { createStaticEmbedder } from './static-embedder.js';
import { createUseLiteEmbedder } from './use-lite-embedder.js';

/** Which embedder to build; `{ kind: 'use-lite' }` is the offline default. */
export const embedderConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('use-lite'),
    batchSize: z.number().int().min(1).max(1024).optional(),
    worker: z.boolean().optional(),
  }),
  z.strictObject({
    kind: z.literal('static'),
    /** Default: the shipped models/static-use-256. */
    modelDir: z.string().min(1).optional(),
    maxTextChars: z.number().int().min(1).max(10_000_000).optional(),
  }),
  z.strictObject({
    kind: z.literal('onnx'),
    modelDir: z.string().min(1),
    pooling: z.enum(['mean', 'cls']).optional(),
    quantized: z.boolean().optional(),
    batchSize: z.number().int().min(1).max(1024).optional(),
  }),
  z.strictObject({
    kind: z.literal('http'),
    url: z.string().min(1),
    model: z.string().min(1),
    apiKey: z.string().optional(),
    dimensions: z.number().int().min(1).max(65_536).optional(),
    batchSize: z.number().int().min(1).max(4096).optional(),
    timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  }),
]);

export type EmbedderConfig = z.infer<typeof embedderConfigSchema>;

export interface CreateEmbedderOptions {
  /** For the HTTP embedder: a shared client (its owner closes it). */
  http?: HttpClient;
  /** Cancels loading (or the HTTP embedder's probe). */
  signal?: AbortSignal;
}

/** Checks `config` (it may come straight from YAML or JSON) and builds that embedder. */
export async function createEmbedder(config: EmbedderConfig, options: CreateEmbedderOptions = {}): Promise<Embedder> {
  const parsed = embedderConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError(
      'INVALID_INPUT',
      `embedder config: ${issue?.path.join('.') || '(top level)'}: ${issue?.message ?? 'invalid'}; use { kind: use-lite }, { kind: static }, { kind: onnx, modelDir } or { kind: http, url, model }`,
    );
  }
  const c = parsed.data;
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  switch (c.kind) {
    case 'use-lite': {
      const { kind: _, ...rest } = c;
      return createUseLiteEmbedder({ ...rest, ...signal });
    }
    case 'static': {
      const { kind: _, ...rest } = c;
      return createStaticEmbedder({ ...rest, ...signal });
    }
    case 'onnx': {
      const { kind: _, ...rest } = c;
      return createOnnxEmbedder({ ...rest, ...signal });
    }
    case 'http': {
      const { kind: _, ...rest } = c;
      return createHttpEmbedder({ ...rest, ...signal, ...(options.http === undefined ? {} : { http: options.http }) });
    }
  }
}
