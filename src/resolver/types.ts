/** Plain types of intent resolution, shared by the resolver, the CLI, the benchmark and (later) the gateway. */

import type { ItemKind } from '../registry/item-tools.js';
import type { ResolverFallback } from './model-fallback.js';

/** What a call names besides a tool: a directive (run as a thread) or a knowledge entry (read). */
export type { ItemKind };

export interface Candidate {
  /** The tool's id; for a directive its name, for a knowledge entry its id. */
  tool: string;
  /** Set when the candidate is a directive or a knowledge entry; absent, a tool. */
  item?: ItemKind;
  /** The fused score the resolver ranks by, in [0, 1]. */
  score: number;
  /** Cosine similarity of intent and tool document, if the vector side found it. */
  vectorScore?: number;
  /** BM25 score normalised to [0, 1] within this query, if the full-text side found it. */
  textScore?: number;
}

export interface ToolCallSpec {
  /** The tool's id; for a directive its name, for a knowledge entry its id. */
  tool: string;
  /** A directive's inputs; `{}` for a knowledge entry. */
  arguments: Record<string, unknown>;
  /** Set when the call runs a directive or reads a knowledge entry; absent, a tool. */
  item?: ItemKind;
}

export interface ResolutionTimings {
  embedMs: number;
  searchMs: number;
  fillMs: number;
  totalMs: number;
}

/**
 * Where a resolution stopped short of a call: the intent was empty (`intent`), an exact call did
 * not validate (`exact_call`), nothing in the catalog matched (`match`), the best match fits too
 * poorly (`threshold`), the intent lacks required values (`arguments`), or a call made from plain
 * words is below the calibrated gate (`gate`). The last three found a tool the agent is asked about.
 */
export type UnresolvedStop = 'intent' | 'exact_call' | 'match' | 'threshold' | 'arguments' | 'gate';

/**
 * The fallback model was asked (resolver.yaml `fallback:`): which one, what came of it, and what it
 * cost. `called`: its call is the resolution's; `refused`: its call failed a check (schema, rank,
 * evidence, gate); `declined`: it called no function; `failed`: the request failed.
 */
export interface FallbackUse {
  model: string;
  /** The gateway.yaml upstream that served it. */
  upstream: string;
  outcome: 'called' | 'refused' | 'declined' | 'failed';
  ms: number;
  inputTokens?: number;
  outputTokens?: number;
  /** The upstream sent no count: the tokens are estimated. */
  estimated?: true;
  /** US dollars, when gateway.yaml prices the model. */
  usd?: number;
}

export type Resolution =
  | { status: 'resolved'; call: ToolCallSpec; confidence: number; candidates: Candidate[]; timings: ResolutionTimings; notes: string[]; fallback?: FallbackUse }
  | {
      status: 'unresolved';
      /** Why no call was made, in words an agent can act on. */
      reason: string;
      /** Which check stopped it (see `UnresolvedStop`); absent from resolvers that do not say. */
      stop?: UnresolvedStop;
      /** Required arguments the intent did not give, for the best candidate. */
      missing: string[];
      /** The values that were found for the best candidate, when only some were missing: the agent repeats them in its exact call. */
      found?: Record<string, unknown>;
      confidence: number;
      candidates: Candidate[];
      timings: ResolutionTimings;
      notes: string[];
      fallback?: FallbackUse;
    };

export interface ResolveOptions {
  /** Recent conversation text, used only to break ties and fill arguments the intent refers to. */
  context?: string;
  /** How many candidates to return (default 10). */
  limit?: number;
  /**
   * The tool the caller chose outside the intent's words (its pick from an ask-back menu): the
   * pool is that one tool, its values are still read from the intent, and the call runs at once
   * only where the intent states every value. A tool's id written in the intent is not this.
   */
  tool?: string;
  signal?: AbortSignal;
  /**
   * The model asked where the rules stop short, for this resolution only: a chat's own upstream
   * model (docs/resolution.md "The fallback model"). It takes the place of the resolver's own.
   */
  fallback?: ResolverFallback;
  /** Which candidates the caller may run: only these are shown to the fallback model (absent: all). */
  mayCall?: (candidate: Candidate) => boolean;
}

export interface Resolver {
  resolve(intent: string, options?: ResolveOptions): Promise<Resolution>;
}

export interface RetrievalTimings {
  embedMs: number;
  searchMs: number;
  totalMs: number;
}

/**
 * The first stage of a resolution: which tools fit an intent and how well, before any limit,
 * threshold or argument is applied. It depends only on the intent text, so it can be computed
 * ahead of time (prefetch) and completed later against the real intent.
 */
export interface Retrieval {
  /** The intent as retrieved: NULs removed, trimmed, capped. */
  intent: string;
  /** The intent's embedding; absent for an empty intent or one that names its tool. */
  vector?: Float32Array;
  /** The fused pool, best first, before the `limit` cut. */
  candidates: Candidate[];
  /** The resolver's confidence in the first candidate (score plus its lead over the runner-up). */
  confidence: number;
  /** The intent is an exact call (exact-call.ts): the pool is its one tool and no search ran. */
  named?: boolean;
  timings: RetrievalTimings;
}

export interface RetrieveOptions {
  signal?: AbortSignal;
}

export interface CompleteOptions extends ResolveOptions {
  /**
   * Fill arguments with the rule-based filler only, even when the argument model is configured
   * (the prefetcher guesses calls; a model request per guess would cost more than it saves).
   */
  rulesOnly?: boolean;
}

/** A resolver whose stages can be run apart: `resolve(i)` is `complete(i, await retrieve(i))`. */
export interface StagedResolver extends Resolver {
  /** The intent's embedding (remembered in an LRU). Pass the text as `retrieve` sees it (see `normalizeIntent`). */
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
  /** Exact-call shortcut, embed, search and fusion. */
  retrieve(intent: string, options?: RetrieveOptions): Promise<Retrieval>;
  /**
   * Limit, threshold and arguments: the arguments always come from `intent`, whatever text the
   * retrieval was made for; an exact call in `intent` wins over the retrieval, and a tool id it
   * mentions is ranked first (tool-mention.ts).
   */
  complete(intent: string, retrieval: Retrieval, options?: CompleteOptions): Promise<Resolution>;
}
