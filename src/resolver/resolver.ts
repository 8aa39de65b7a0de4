import { LRUCache } from 'lru-cache';
import type { Embedder } from '../embed/embedder.js';
import { isReadOnlyKnowledge, type CallableItem } from '../registry/item-tools.js';
import type { Tool } from '../registry/types.js';
import { throwIfAborted } from '../base/abort.js';
import { describeError } from '../base/errors.js';
import { readExactCall } from './exact-call.js';
import { fillArguments, type FilledArguments } from './fill-args.js';
import { fillableRunnerUp } from './fillable-candidate.js';
import type { LlmArgumentFiller } from './llm-argument-filler.js';
import type { ResolverFallback } from './model-fallback.js';
import { callFromFallback } from './fallback-call.js';
import { fuse, fuseSources, type Hit } from './fuse.js';
import { parseItemRowId } from './item-document.js';
import { preferCuedKind } from './item-cues.js';
import { mentionedTool, mentionFirst } from './tool-mention.js';
import { calibrate, gateFor, type ResolverModel } from './learned-model.js';
import type { Candidate, CompleteOptions, ItemKind, Resolution, ResolveOptions, Retrieval, RetrieveOptions, StagedResolver } from './types.js';

/** What the resolver needs of an index; `ToolIndex` (LanceDB) is one. */
export interface ToolSearch {
  searchVector(vector: Float32Array, k: number): Promise<Hit[]>;
  searchText(query: string, k: number): Promise<Hit[]>;
}

export interface ResolverSettings {
  /** Weight of normalised BM25 next to cosine similarity (DESIGN §4: 0.3–0.5 does best). */
  textWeight: number;
  /** How many hits each side returns before fusion. */
  pool: number;
  /** Below this confidence the answer is "unresolved", never a guess. */
  threshold: number;
  /** How much the lead over the runner-up adds to the confidence. */
  marginWeight: number;
  /**
   * The share of calls made from plain words that must be entirely right: the learned model's gate
   * for it is applied to the calibrated whole-call confidence, and a call below it is not run (the
   * agent is asked to restate it exactly). 0 runs every resolved call. Without a model, no gate.
   */
  targetPrecision: number;
}

/** The bars a resolution must clear to become a call, as this resolver applies them. */
export interface ResolverGates {
  /** Below this retrieval confidence no tool fits (`threshold`). */
  threshold: number;
  /**
   * What the whole-call confidence of a call made from plain words must reach to run: 0, every
   * such call runs (no learned model, or a target precision of 0); null, none does (no gate of the
   * model reaches the target precision), so only calls that state everything run.
   */
  callGate: number | null;
  targetPrecision: number;
  /** Confidences are calibrated by the learned model (models/resolver/model.json). */
  calibrated: boolean;
}

export const DEFAULT_RESOLVER_SETTINGS: ResolverSettings = { textWeight: 0.4, pool: 50, threshold: 0.55, marginWeight: 1, targetPrecision: 0.95 };

export interface ResolverDeps {
  /** The tools an intent may resolve to (see `resolvableTools`). */
  tools: ReadonlyMap<string, Tool>;
  search: ToolSearch;
  /**
   * The directives and knowledge entries an intent may resolve to (`callableItems`), and the index
   * of their documents (rows `directive:NAME` and `knowledge:ID`, see item-document.ts). Without
   * any, resolution is the tools' alone, exactly as if this were not there.
   */
  items?: { targets: ReadonlyMap<string, CallableItem>; search: ToolSearch };
  embedder: Embedder;
  settings?: Partial<ResolverSettings>;
  /** The optional generative argument filler (off unless configured). */
  llm?: LlmArgumentFiller;
  /** The optional model asked where the rules stop short (resolver.yaml `fallback:`); a resolution's own (`ResolveOptions.fallback`) takes its place. */
  fallback?: ResolverFallback;
  /** The learned confidence calibration and its gates (models/resolver/model.json); without it, raw confidences and no gate. */
  model?: ResolverModel;
  now?: () => number;
}

const MAX_INTENT = 4096;

/** Tools an agent can call: primitives, runtimes and MCP servers only execute other tools. */
export function resolvableTools(tools: Iterable<Tool>): Map<string, Tool> {
  const out = new Map<string, Tool>();
  // Knowledge written as a tool manifest without an executor is read, never called.
  for (const t of tools) if (t.type !== 'primitive' && t.type !== 'runtime' && t.type !== 'mcp_server' && !isReadOnlyKnowledge(t)) out.set(t.id, t);
  return out;
}

export function createResolver(deps: ResolverDeps): StagedResolver & { gates: ResolverGates } {
  const settings = { ...DEFAULT_RESOLVER_SETTINGS, ...deps.settings };
  const gate = deps.model ? gateFor(deps.model, settings.targetPrecision) : 0;
  const now = deps.now ?? (() => performance.now());
  const items = deps.items && deps.items.targets.size > 0 ? deps.items : undefined;
  /** Everything a call may name, by id: exact calls and named ids reach items as they reach tools. */
  const targets: ReadonlyMap<string, Tool> = items ? withItems(deps.tools, items.targets) : deps.tools;
  /** The kind of a named id: undefined for a tool. */
  const kindOf = (id: string): ItemKind | undefined => (deps.tools.has(id) ? undefined : items?.targets.get(id)?.kind);
  const itemField = (id: string): { item?: ItemKind } => {
    const kind = kindOf(id);
    return kind ? { item: kind } : {};
  };
  /** The tool, directive or entry a candidate names, as a tool; undefined when it is not (or no longer) there. */
  const targetOf = (candidate: Candidate): Tool | undefined => {
    if (candidate.item === undefined) return deps.tools.get(candidate.tool);
    const item = items?.targets.get(candidate.tool);
    return item?.kind === candidate.item ? item.tool : undefined;
  };

  // Agents repeat intents (retries, loops) and the prefetcher asks ahead: the model is the cost, so remember its answers.
  const vectors = new LRUCache<string, Float32Array>({ max: 2048 });

  async function embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const cached = vectors.get(text);
    if (cached) return cached;
    const vector = (await deps.embedder.embed([text], signal))[0] as Float32Array;
    vectors.set(text, vector);
    return vector;
  }

  /**
   * The optional model fills the arguments when configured; the rule-based filler backs it up for
   * whatever it left out, and replaces it entirely when the model cannot be reached.
   */
  async function fillCall(intent: string, tool: Tool, options: ResolveOptions): Promise<FilledArguments> {
    const context = options.context !== undefined ? { context: options.context } : undefined;
    const rules = fillArguments(intent, tool, context);
    if (!deps.llm) return rules;
    let model: FilledArguments;
    try {
      model = await deps.llm.fill(intent, tool, { ...context, ...(options.signal ? { signal: options.signal } : {}) });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      return { ...rules, notes: [...rules.notes, `the argument model failed (${describeError(error)}); used the rule-based filler`] };
    }
    const args = { ...model.arguments };
    const notes = [...model.notes];
    for (const name of model.missing) {
      if (Object.hasOwn(rules.arguments, name)) {
        args[name] = rules.arguments[name];
        notes.push(`${name}: from the rule-based filler`);
      }
    }
    const missing = tool.parameters.filter((p) => p.required && !Object.hasOwn(args, p.name)).map((p) => p.name);
    return { arguments: args, missing, confidence: Math.min(model.confidence, rules.confidence), notes };
  }

  async function retrieve(rawIntent: string, options: RetrieveOptions = {}): Promise<Retrieval> {
    const t0 = now();
    const intent = normalizeIntent(rawIntent);
    const timings = { embedMs: 0, searchMs: 0, totalMs: 0 };
    const done = (fields: Omit<Retrieval, 'intent' | 'timings'>): Retrieval => ({ intent, ...fields, timings: { ...timings, totalMs: now() - t0 } });
    if (!intent) return done({ candidates: [], confidence: 0 });
    throwIfAborted(options.signal, 'resolution');

    // Only an exact call names its tool for certain; a tool's id in a sentence is evidence, applied in `complete`.
    const exact = readExactCall(intent, targets);
    const named = exact.kind === 'none' ? undefined : exact.tool?.id;
    if (named) return done({ candidates: [{ tool: named, score: 1, ...itemField(named) }], confidence: 1, named: true });
    // Embedding first, alone: on two cores, a full-text query running beside it slows the model down more than it saves.
    const tEmbed = now();
    const vector = await embedQuery(intent, options.signal);
    timings.embedMs = now() - tEmbed;
    const tSearch = now();
    // The full-text query is started first: it runs in LanceDB's threads while the vector search computes here.
    const textPromise = deps.search.searchText(intent, settings.pool);
    if (!items) {
      const [vectorHits, textHits] = await Promise.all([deps.search.searchVector(vector, settings.pool), textPromise]);
      timings.searchMs = now() - tSearch;
      const candidates = fuse(vectorHits, textHits, settings).filter((c) => deps.tools.has(c.tool));
      return done({ vector, candidates, confidence: retrievalConfidence(candidates, settings) });
    }
    const itemTextPromise = items.search.searchText(intent, settings.pool);
    const [vectorHits, textHits, itemVectorHits, itemTextHits] = await Promise.all([
      deps.search.searchVector(vector, settings.pool),
      textPromise,
      items.search.searchVector(vector, settings.pool),
      itemTextPromise,
    ]);
    timings.searchMs = now() - tSearch;
    const fused = fuseSources([{ vector: vectorHits, text: textHits }, { vector: itemVectorHits, text: itemTextHits, k: settings.pool }], settings);
    const candidates = preferCuedKind(intent, fused.flatMap((c) => asCandidate(c)));
    return done({ vector, candidates, confidence: retrievalConfidence(candidates, settings) });
  }

  /** A fused hit as a candidate: an item row becomes its item; a row of neither index's targets is dropped. */
  function asCandidate(hit: Candidate): Candidate[] {
    if (deps.tools.has(hit.tool)) return [hit];
    const row = parseItemRowId(hit.tool);
    if (row === undefined || items?.targets.get(row.id)?.kind !== row.kind) return [];
    return [{ ...hit, tool: row.id, item: row.kind }];
  }

  async function complete(rawIntent: string, retrieval: Retrieval, options: CompleteOptions = {}): Promise<Resolution> {
    const t0 = now();
    const limit = options.limit ?? 10;
    const intent = normalizeIntent(rawIntent);
    const notes: string[] = [];
    const timings = { embedMs: retrieval.timings.embedMs, searchMs: retrieval.timings.searchMs, fillMs: 0, totalMs: 0 };
    const finish = () => ({ ...timings, totalMs: retrieval.timings.totalMs + (now() - t0) });
    if (!intent) {
      return { status: 'unresolved', stop: 'intent', reason: 'the intent is empty; say what should be done', missing: [], confidence: 0, candidates: [], timings: finish(), notes };
    }
    // Recomputed from this intent, not taken from the retrieval: an exact call, or a tool the real intent names, wins whatever was prefetched.
    const exact = readExactCall(intent, targets);
    if (exact.kind === 'call') {
      notes.push('an exact call: checked against the schema and run as written');
      const item = itemField(exact.tool.id);
      return { status: 'resolved', call: { tool: exact.tool.id, arguments: exact.args, ...item }, confidence: 1, candidates: [{ tool: exact.tool.id, score: 1, ...item }], timings: finish(), notes };
    }
    if (exact.kind === 'invalid') {
      const candidates = exact.tool ? [{ tool: exact.tool.id, score: 1, ...itemField(exact.tool.id) }] : retrieval.candidates.slice(0, 3);
      return { status: 'unresolved', stop: 'exact_call', reason: exact.reason, missing: exact.missing, confidence: 0, candidates, timings: finish(), notes };
    }
    // The id of a tool written in the sentence ranks it first, at the best score: evidence, never a call.
    const chosen = options.tool !== undefined && targets.has(options.tool) ? options.tool : undefined;
    const mentioned = chosen ?? mentionedTool(intent, targets);
    if (chosen) notes.push(`the caller chose the ${kindOf(chosen) ?? 'tool'} \`${chosen}\``);
    else if (mentioned) notes.push(`the intent names the ${kindOf(mentioned) ?? 'tool'} \`${mentioned}\`: ranked first, and the call is gated like any from plain words`);
    let candidates: Candidate[] = chosen ? [{ tool: chosen, score: 1, ...itemField(chosen) }] : mentioned ? mentionFirst(retrieval.candidates, { tool: mentioned, ...itemField(mentioned) }) : retrieval.candidates;
    const toolConfidence = chosen ? 1 : mentioned ? retrievalConfidence(candidates, settings) : retrieval.confidence;
    candidates = candidates.slice(0, Math.max(limit, 1));

    let best = candidates[0];
    let tool = best ? targetOf(best) : undefined;
    if (!best || !tool) {
      return { status: 'unresolved', stop: 'match', reason: 'no tool in the catalog matches this intent', missing: [], confidence: 0, candidates, timings: finish(), notes };
    }
    // Close or weak candidates: the rules cannot tell which fits, a model may (it is free to decline).
    if (toolConfidence < settings.threshold) {
      return fallBack(intent, candidates, toolConfidence, options, finish, {
        status: 'unresolved',
        stop: 'threshold',
        reason: `no tool fits well enough (best: \`${best.tool}\`, confidence ${toolConfidence.toFixed(2)} < ${settings.threshold}); rephrase the intent or name the tool`,
        missing: [],
        confidence: toolConfidence,
        candidates,
        timings: finish(),
        notes,
      });
    }
    const tFill = now();
    const ruled = (target: Tool): FilledArguments => fillArguments(intent, target, options.context !== undefined ? { context: options.context } : undefined);
    let filled = options.rulesOnly ? ruled(tool) : await fillCall(intent, tool, options);
    let confidence = toolConfidence;
    // A runner-up the intent fills, where the first lacks a value (fillable-candidate.ts); a tool the intent names keeps its place.
    // Read by the rules alone: an argument model configured would otherwise be asked once per runner-up, in the request path.
    const runnerUp = filled.missing.length > 0 && !mentioned ? fillableRunnerUp({ intent, candidates, targetOf, fill: ruled, threshold: settings.threshold }) : undefined;
    if (runnerUp) {
      notes.push(`\`${tool.id}\` lacks ${filled.missing.map((m) => `\`${m}\``).join(', ')}; \`${runnerUp.tool.id}\` (rank ${runnerUp.rank}) takes every value the intent gives: chosen, at its own score less the first's lead`);
      ({ candidate: best, tool, filled } = runnerUp);
      candidates = [runnerUp.candidate, ...candidates.filter((c) => c !== runnerUp.candidate)];
      // Its own score less the first's lead over it: the retrieval's confidence, with the lead negative.
      confidence = retrievalConfidence(candidates, settings);
    }
    timings.fillMs = now() - tFill;
    notes.push(...filled.notes);
    if (filled.missing.length > 0) {
      return fallBack(intent, candidates, confidence, options, finish, {
        status: 'unresolved',
        stop: 'arguments',
        reason: `\`${tool.id}\` fits, but the intent does not give ${filled.missing.map((m) => `\`${m}\``).join(', ')}; add ${filled.missing.length > 1 ? 'them' : 'it'} (e.g. ${filled.missing[0]}=…)`,
        missing: filled.missing,
        found: filled.arguments,
        confidence,
        candidates,
        timings: finish(),
        notes,
      });
    }
    // One confidence for the whole call: the tool is right and so is every argument.
    const raw = confidence * filled.confidence;
    // Nothing in it is a guess: the caller chose the tool (not a name in the sentence) and the intent states every value (quoted, key=value).
    const stated = chosen !== undefined && filled.confidence === 1;
    const callConfidence = stated ? 1 : deps.model ? calibrate(deps.model, raw) : raw;
    // Loading a knowledge entry changes nothing, and a wrong one costs the agent a few lines it can
    // set aside: past the retrieval threshold it loads without the call gate (docs/resolution.md).
    const harmless = best.item === 'knowledge';
    if (!stated && !harmless && (gate === null || callConfidence < gate)) {
      const bar = gate === null ? `no confidence reaches ${settings.targetPrecision} precision on unseen catalogs` : `calls run at ${gate.toFixed(2)} and above, for ${settings.targetPrecision} precision`;
      return fallBack(intent, candidates, confidence, options, finish, {
        status: 'unresolved',
        stop: 'gate',
        reason: `\`${tool.id}\` may fit, but a call from plain words is not sure enough to run (confidence ${callConfidence.toFixed(2)}; ${bar}); write it exactly as ${tool.id} {…its arguments…}`,
        missing: [],
        found: filled.arguments,
        confidence: callConfidence,
        candidates,
        timings: finish(),
        notes,
      });
    }
    const call = { tool: tool.id, arguments: filled.arguments, ...(best.item ? { item: best.item } : {}) };
    return { status: 'resolved', call, confidence: callConfidence, candidates, timings: finish(), notes };
  }

  /** The rules' answer, or the fallback model's call where it passes the checks of a model's call (fallback-call.ts). */
  async function fallBack(intent: string, candidates: Candidate[], confidence: number, options: CompleteOptions, finish: () => Resolution['timings'], stopped: Resolution & { status: 'unresolved' }): Promise<Resolution> {
    const fallback = options.fallback ?? deps.fallback;
    if (!fallback || options.rulesOnly) return stopped;
    const ground = { fallback, targetOf, ...(deps.model ? { model: deps.model } : {}) };
    return callFromFallback(ground, { intent, candidates, confidence, options, finish, stopped });
  }

  async function resolve(intent: string, options: ResolveOptions = {}): Promise<Resolution> {
    const t0 = now();
    const resolution = await complete(intent, await retrieve(intent, options.signal ? { signal: options.signal } : {}), options);
    resolution.timings.totalMs = now() - t0;
    return resolution;
  }

  return { resolve, retrieve, complete, embedQuery, gates: { threshold: settings.threshold, callGate: gate, targetPrecision: settings.targetPrecision, calibrated: deps.model !== undefined } };
}

/** Tools first: an item whose id a tool has is reached through that tool (`callableItems` leaves it out). */
function withItems(tools: ReadonlyMap<string, Tool>, items: ReadonlyMap<string, CallableItem>): Map<string, Tool> {
  const out = new Map(tools);
  for (const [id, item] of items) if (!out.has(id)) out.set(id, item.tool);
  return out;
}

/** The text an intent is resolved as: NULs removed, trimmed, capped. `retrieve` and `complete` apply it themselves. */
export function normalizeIntent(raw: string): string {
  return raw.replaceAll('\u0000', '').trim().slice(0, MAX_INTENT);
}

/** The retrieval's confidence in its first candidate: its fused score plus its lead over the runner-up. */
export function retrievalConfidence(candidates: readonly Candidate[], settings: Pick<ResolverSettings, 'marginWeight'>): number {
  const [first, second] = candidates;
  return first ? clamp(first.score + settings.marginWeight * (first.score - (second?.score ?? 0))) : 0;
}

function clamp(x: number): number {
  return Math.max(0, Math.min(1, x));
}
