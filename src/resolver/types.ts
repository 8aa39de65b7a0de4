/** Plain types of intent resolution, shared by the resolver, the CLI, the benchmark and (later) the gateway. */

export interface Candidate {
  tool: string;
  /** The fused score the resolver ranks by, in [0, 1]. */
  score: number;
  /** Cosine similarity of intent and tool document, if the vector side found it. */
  vectorScore?: number;
  /** BM25 score normalised to [0, 1] within this query, if the full-text side found it. */
  textScore?: number;
}

export interface ToolCallSpec {
  tool: string;
  arguments: Record<string, unknown>;
}

export interface ResolutionTimings {
  embedMs: number;
  searchMs: number;
  fillMs: number;
  totalMs: number;
}

export type Resolution =
  | { status: 'resolved'; call: ToolCallSpec; confidence: number; candidates: Candidate[]; timings: ResolutionTimings; notes: string[] }
  | {
      status: 'unresolved';
      /** Why no call was made, in words an agent can act on. */
      reason: string;
      /** Required arguments the intent did not give, for the best candidate. */
      missing: string[];
      confidence: number;
      candidates: Candidate[];
      timings: ResolutionTimings;
      notes: string[];
    };

export interface ResolveOptions {
  /** Recent conversation text, used only to break ties and fill arguments the intent refers to. */
  context?: string;
  /** How many candidates to return (default 10). */
  limit?: number;
  signal?: AbortSignal;
}

export interface Resolver {
  resolve(intent: string, options?: ResolveOptions): Promise<Resolution>;
}
