import path from 'node:path';
import { z } from 'zod';
import type { EmbedderConfig } from '../embed/create-embedder.js';
import { substitute } from '../executor/substitute.js';
import type { ResolverSettings } from './resolver.js';
import { DEFAULT_FALLBACK_CANDIDATES, DEFAULT_FALLBACK_TIMEOUT_MS } from './model-fallback.js';
import { loadYamlConfig } from '../registry/yaml-config.js';

/**
 * `.ai/config/resolver.yaml` — optional; without it the offline defaults apply (USE-lite).
 *
 *   embedder: { kind: use-lite }                                   # default
 *   embedder: { kind: static }                                     # ~1000x faster, a little less accurate; model_dir: another build
 *   embedder: { kind: onnx, model_dir: models/all-MiniLM-L6-v2 }   # an ONNX model placed by hand
 *   embedder: { kind: http, url: http://127.0.0.1:8080, model: nomic-embed, api_key: "${EMBED_KEY:-}" }
 *   arguments: { kind: llm, url: http://127.0.0.1:8080, model: qwen2.5-0.5b-instruct }   # optional; default: rules only
 *   fallback: { model: qwen3-0.6b }   # or { tier: fast }: a model gateway.yaml routes, asked where the rules stop short;
 *                                     # or { model_file: models/qwen3-0.6b.gguf }: a GGUF file run in the gateway (node-llama-cpp, CPU);
 *                                     # default: a chat's own upstream model; `off`: none
 *                                     # (candidates: 5, timeout_ms: 10000); docs/resolution.md "The fallback model"
 *   text_weight: 0.4      threshold: 0.55      margin_weight: 1      pool: 50
 *   target_precision: 0.95   # share of plain-words calls that must be right; below the gate for it, ask (0: run all)
 *   model: models/resolver/model.json   # the learned confidence (default: the shipped one; `kiwi model train` rebuilds it)
 */
const Schema = z.strictObject({
  embedder: z
    .discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('use-lite') }),
      z.strictObject({ kind: z.literal('static'), model_dir: z.string().min(1).optional() }),
      z.strictObject({ kind: z.literal('onnx'), model_dir: z.string().min(1) }),
      z.strictObject({ kind: z.literal('http'), url: z.string().min(1), model: z.string().min(1), api_key: z.string().optional() }),
    ])
    .optional(),
  arguments: z
    .discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('rules') }),
      z.strictObject({ kind: z.literal('llm'), url: z.string().min(1), model: z.string().min(1), api_key: z.string().optional(), timeout_ms: z.number().int().min(100).max(120_000).optional() }),
    ])
    .optional(),
  fallback: z
    .union([z.literal('off'), z.literal(false)])
    .or(
      z
        .strictObject({
          model: z.string().min(1).max(512).optional(),
          tier: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a tier name of gateway.yaml model_tiers, like fast').optional(),
          model_file: z.string().min(1).max(4096).optional(),
          candidates: z.number().int().min(1).max(20).default(DEFAULT_FALLBACK_CANDIDATES),
          timeout_ms: z.number().int().min(100).max(120_000).default(DEFAULT_FALLBACK_TIMEOUT_MS),
        })
        .refine(
          (f) => [f.model, f.tier, f.model_file].filter((x) => x !== undefined).length <= 1,
          'give one of model (a model gateway.yaml routes), tier (one of its model_tiers) or model_file (a GGUF file run in the gateway), not two; none: the request\'s own model',
        ),
    )
    .optional(),
  text_weight: z.number().min(0).max(10).optional(),
  threshold: z.number().min(0).max(1).optional(),
  margin_weight: z.number().min(0).max(10).optional(),
  pool: z.number().int().min(1).max(1000).optional(),
  target_precision: z.number().min(0).max(1).optional(),
  model: z.string().min(1).optional(),
});

/** An OpenAI-compatible chat model that fills arguments (e.g. llama.cpp's server); null = rules only. */
export interface ArgumentModelConfig {
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs?: number;
}

/** How many candidates the fallback model is shown, and how long it may take. */
export interface FallbackLimits {
  candidates: number;
  timeoutMs: number;
}

/** A fallback model resolver.yaml names: one the gateway routes (gateway.yaml), or a GGUF file it runs itself (an absolute path). */
export type NamedFallback = ({ model: string } | { tier: string } | { modelFile: string }) & FallbackLimits;

/**
 * The model asked where the rules stop short: one resolver.yaml names (`named`), or by default
 * the request's own upstream model (`request`: only a chat has one), or none (`off`).
 */
export type FallbackConfig = { kind: 'off' } | ({ kind: 'request' } & FallbackLimits) | { kind: 'named'; named: NamedFallback };

export const DEFAULT_FALLBACK: FallbackConfig = { kind: 'request', candidates: DEFAULT_FALLBACK_CANDIDATES, timeoutMs: DEFAULT_FALLBACK_TIMEOUT_MS };

export interface ResolverConfig {
  embedder: EmbedderConfig;
  settings: Partial<ResolverSettings>;
  argumentModel: ArgumentModelConfig | null;
  fallback: FallbackConfig;
  /** The learned confidence's file, when not the shipped one. */
  modelFile?: string;
}

export async function loadResolverConfig(file: string, ctx: { env: Readonly<Record<string, string | undefined>>; root: string }): Promise<ResolverConfig> {
  const loaded = await loadYamlConfig(file, { shown: file, schema: Schema, maxBytes: 64 * 1024, hint: 'see the section ".ai/config/resolver.yaml" of docs/resolution.md' });
  if (loaded === undefined) return { embedder: { kind: 'use-lite' }, settings: {}, argumentModel: null, fallback: DEFAULT_FALLBACK };
  const c = loaded.data;
  const settings: Partial<ResolverSettings> = {};
  if (c.text_weight !== undefined) settings.textWeight = c.text_weight;
  if (c.threshold !== undefined) settings.threshold = c.threshold;
  if (c.margin_weight !== undefined) settings.marginWeight = c.margin_weight;
  if (c.pool !== undefined) settings.pool = c.pool;
  if (c.target_precision !== undefined) settings.targetPrecision = c.target_precision;
  const scope = { params: {}, env: ctx.env, where: `${file}: embedder` };
  const e = c.embedder ?? { kind: 'use-lite' as const };
  const embedder: EmbedderConfig =
    e.kind === 'use-lite'
      ? { kind: 'use-lite' }
      : e.kind === 'static'
        ? { kind: 'static', ...(e.model_dir ? { modelDir: path.resolve(ctx.root, e.model_dir) } : {}) }
        : e.kind === 'onnx'
          ? { kind: 'onnx', modelDir: path.resolve(ctx.root, e.model_dir) }
          : { kind: 'http', url: substitute(e.url, scope), model: e.model, ...(e.api_key ? { apiKey: substitute(e.api_key, scope) } : {}) };
  const a = c.arguments;
  const argumentModel: ArgumentModelConfig | null =
    a?.kind === 'llm'
      ? {
          url: substitute(a.url, { ...scope, where: `${file}: arguments.url` }),
          model: a.model,
          ...(a.api_key ? { apiKey: substitute(a.api_key, { ...scope, where: `${file}: arguments.api_key` }) } : {}),
          ...(a.timeout_ms ? { timeoutMs: a.timeout_ms } : {}),
        }
      : null;
  const f = c.fallback;
  const fallback = fallbackOf(f, ctx.root);
  return { embedder, settings, argumentModel, fallback, ...(c.model ? { modelFile: path.resolve(ctx.root, c.model) } : {}) };
}

function fallbackOf(f: z.infer<typeof Schema>['fallback'], root: string): FallbackConfig {
  if (f === undefined) return DEFAULT_FALLBACK;
  if (f === 'off' || f === false) return { kind: 'off' };
  const limits = { candidates: f.candidates, timeoutMs: f.timeout_ms };
  if (f.model !== undefined) return { kind: 'named', named: { model: f.model, ...limits } };
  if (f.tier !== undefined) return { kind: 'named', named: { tier: f.tier, ...limits } };
  if (f.model_file !== undefined) return { kind: 'named', named: { modelFile: path.resolve(root, f.model_file), ...limits } };
  return { kind: 'request', ...limits };
}
