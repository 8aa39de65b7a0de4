/**
 * What `resolve` and `resolve-suite` share: one catalog's resolver over a real index, built once,
 * and cases run through it one at a time, timed, with the catalog's own tool names put back.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { EmbedderConfig } from '../../src/embed/create-embedder.js';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import { createModelFallback } from '../../src/resolver/model-fallback.js';
import { openResolverRuntime } from '../../src/resolver/resolver-runtime.js';
import { DEFAULT_RESOLVER_SETTINGS, type ResolverSettings } from '../../src/resolver/resolver.js';
import type { Resolution, StagedResolver } from '../../src/resolver/types.js';
import { createProgress } from '../progress.js';
import type { BenchCase } from '../../src/datasets/case-file.js';
import type { ImportedCatalog } from '../../src/datasets/catalog-file.js';
import type { CaseResult, Schemas } from './metrics.js';

/** Candidates kept per resolution: enough for recall@20, the size of the tool menu an agent is shown. */
export const CANDIDATES = 20;

export interface CatalogResolver {
  resolver: StagedResolver;
  embedderId: string;
  indexBuildMs: number;
  close(): Promise<void>;
}

/**
 * The resolver's settings as a bench runs them, and as its results file must say: no gate unless
 * asked for (--set targetPrecision=…), since the benches record every call's confidence and apply
 * the gates afterwards (shipped-gates.ts).
 */
export function benchSettings(settings: Partial<ResolverSettings>): ResolverSettings {
  return { ...DEFAULT_RESOLVER_SETTINGS, targetPrecision: 0, ...settings };
}

/**
 * Indexes the catalog's tools and opens its resolver. `indexDir` keeps the LanceDB table between
 * runs (sync is incremental), for tuning; without it the index lives in a temporary folder that
 * `close` removes.
 */
/** A fallback model to measure (`--fallback-url`, `--fallback-model`): an OpenAI-compatible server such as llama.cpp's or Ollama's. */
export interface BenchFallback {
  url: string;
  model: string;
}

/** `--fallback-url` and `--fallback-model`, both or neither. */
export function parseFallback(url: string | undefined, model: string | undefined): BenchFallback | undefined {
  if (url === undefined && model === undefined) return undefined;
  if (url === undefined || model === undefined) throw new Error('--fallback-url and --fallback-model go together: the server (e.g. http://127.0.0.1:11434/v1) and the model it serves');
  return { url, model };
}

export async function openCatalogResolver(options: {
  catalog: ImportedCatalog;
  settings: Partial<ResolverSettings>;
  indexDir?: string | undefined;
  label?: string;
  embedder?: string | undefined;
  fallback?: BenchFallback | undefined;
}): Promise<CatalogResolver> {
  const dir = options.indexDir ?? (await mkdtemp(path.join(tmpdir(), 'kiwi-bench-index-')));
  const removeDir = async () => {
    if (!options.indexDir) await rm(dir, { recursive: true, force: true });
  };
  try {
    // Only the kind: createEmbedder checks it and names the kinds it knows.
    const embedder = options.embedder === undefined ? {} : { embedder: { kind: options.embedder } as EmbedderConfig };
    const settings = benchSettings(options.settings);
    const provider = options.fallback ? createOpenAiProvider({ baseUrl: options.fallback.url }) : undefined;
    const fallback = provider && options.fallback ? { fallback: createModelFallback({ provider, model: options.fallback.model, upstream: options.fallback.url }) } : {};
    const runtime = await openResolverRuntime({ tools: options.catalog.tools, indexDir: dir, settings, ...embedder, ...fallback, log: (m) => console.error(m) }).catch(async (error: unknown) => {
      await provider?.close();
      throw error;
    });
    try {
      const t0 = performance.now();
      const counter = createProgress(options.label ? `${options.label}: ` : '').counter('embedding tools');
      await runtime.sync({ progress: { embedded: (_table, done, total) => counter(done, total) } });
      const indexBuildMs = performance.now() - t0;
      console.error(`${options.label ? `${options.label}: ` : ''}index built in ${(indexBuildMs / 1000).toFixed(1)} s (${runtime.embedderId})`);
      return {
        resolver: runtime.resolver,
        embedderId: runtime.embedderId,
        indexBuildMs,
        async close() {
          await runtime.close();
          await provider?.close();
          await removeDir();
        },
      };
    } catch (error) {
      await runtime.close();
      await provider?.close();
      throw error;
    }
  } catch (error) {
    await removeDir();
    throw error;
  }
}

/** Resolves a few intents untimed, on altered text, so that no measured intent is already in the query-vector cache. */
export async function warmUp(resolver: StagedResolver, cases: readonly BenchCase[]): Promise<void> {
  for (const c of cases.slice(0, 5)) await resolver.resolve(`warm-up: ${c.intent}`);
}

/** Resolves every case in turn and times each; `label` names the progress counter. */
export async function resolveCases(
  resolver: StagedResolver,
  catalog: ImportedCatalog,
  cases: readonly BenchCase[],
  options: { label: string; onResult?: (r: CaseResult) => void },
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  const tick = createProgress('').counter(options.label);
  for (const [i, c] of cases.entries()) {
    const start = performance.now();
    const r = await resolver.resolve(c.intent, { limit: CANDIDATES });
    const ms = performance.now() - start;
    const result = { case: c, resolution: catalogNames(r, catalog.names), ms };
    results.push(result);
    options.onResult?.(result);
    tick(i + 1, cases.length);
  }
  return results;
}

/** Each tool's parameter names by catalog name, for FORMAT.md's "no parameter outside the schema". */
export function catalogSchemas(catalog: ImportedCatalog): Schemas {
  return new Map(catalog.tools.map((t) => [catalog.names.get(t.id) ?? t.id, t.parameters.map((p) => p.name)]));
}

/** Puts the catalog's own spelling back on respelt tool ids, so scoring compares like with like. */
function catalogNames(r: Resolution, names: Map<string, string>): Resolution {
  if (names.size === 0) return r;
  const name = (id: string) => names.get(id) ?? id;
  const candidates = r.candidates.map((c) => ({ ...c, tool: name(c.tool) }));
  return r.status === 'resolved' ? { ...r, candidates, call: { ...r.call, tool: name(r.call.tool) } } : { ...r, candidates };
}

/** `--set key=value` pairs → resolver settings; an unknown key or a value that is not a number stops the run. */
export function parseSettings(pairs: string[]): Partial<ResolverSettings> {
  const out: Partial<ResolverSettings> = {};
  for (const pair of pairs) {
    const [key, raw] = pair.split('=');
    if (!key || raw === undefined || !(key in DEFAULT_RESOLVER_SETTINGS) || !Number.isFinite(Number(raw))) {
      throw new Error(`--set ${pair}: write key=number with key one of ${Object.keys(DEFAULT_RESOLVER_SETTINGS).join(', ')}`);
    }
    out[key as keyof ResolverSettings] = Number(raw);
  }
  return out;
}

/** A `--limit`-style option: a whole number ≥ 1, or absent. */
export function parseCount(option: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${option} ${raw}: write a whole number of 1 or more`);
  return n;
}

/** What the fallback model was asked over a run and what it cost: for the results file and the printout. */
export function fallbackSummary(results: readonly CaseResult[]): { asked: number; outcomes: Record<string, number>; seconds: number; input_tokens: number; output_tokens: number } {
  const outcomes: Record<string, number> = { called: 0, refused: 0, declined: 0, failed: 0 };
  let seconds = 0;
  let input = 0;
  let output = 0;
  for (const r of results) {
    const used = r.resolution.fallback;
    if (used === undefined) continue;
    outcomes[used.outcome] = (outcomes[used.outcome] ?? 0) + 1;
    seconds += used.ms / 1000;
    input += used.inputTokens ?? 0;
    output += used.outputTokens ?? 0;
  }
  const asked = Object.values(outcomes).reduce((a, b) => a + b, 0);
  return { asked, outcomes, seconds: round3(seconds), input_tokens: input, output_tokens: output };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
