/**
 * The features the learned-ranker experiment gives each candidate: ones that mean the same on any
 * catalog (similarities, ranks and gaps within the query, word overlap weighted by the catalog's
 * own word rarity, how well the arguments filled, near-duplicate neighbours), never a tool's or a
 * dataset's identity.
 */
import { extractMentions } from '../../../src/resolver/extract-values.js';
import type { FilledArguments } from '../../../src/resolver/fill-args.js';
import { STOPWORDS, splitName, stem, tokenize } from '../../../src/resolver/text-words.js';
import type { Candidate } from '../../../src/resolver/types.js';
import type { Tool } from '../../../src/registry/types.js';

export const FEATURE_NAMES = [
  'fused', 'cosine', 'text', 'inverse_rank', 'fused_below_best', 'fused_above_next', 'cosine_below_best',
  'name_in_intent', 'intent_in_name', 'intent_in_description', 'intent_in_parameters', 'intent_in_tool',
  'fill_confidence', 'required_filled', 'missing_required', 'parameters_filled', 'log_parameters', 'values_used',
  'like_next', 'crowd',
] as const;

interface ToolTerms {
  name: ReadonlySet<string>;
  description: ReadonlySet<string>;
  parameters: ReadonlySet<string>;
  all: ReadonlySet<string>;
}

export interface CatalogTerms {
  of(tool: Tool): ToolTerms;
  idf(stem: string): number;
}

function contentStems(text: string): Set<string> {
  const out = new Set<string>();
  for (const t of tokenize(text)) if (t.lower.length > 1 && !STOPWORDS.has(t.lower)) out.add(t.stem);
  return out;
}

function nameStems(identifier: string): Set<string> {
  return new Set(splitName(identifier).filter((w) => w.length > 1 && !STOPWORDS.has(w)).map(stem));
}

export function catalogTerms(tools: ReadonlyMap<string, Tool>): CatalogTerms {
  const terms = new Map<string, ToolTerms>();
  for (const tool of tools.values()) {
    const parameters = new Set<string>();
    for (const p of tool.parameters) for (const s of [...nameStems(p.name), ...contentStems(p.description ?? '')]) parameters.add(s);
    const name = nameStems(tool.id);
    const description = contentStems(tool.description);
    terms.set(tool.id, { name, description, parameters, all: new Set([...name, ...description, ...parameters]) });
  }
  const df = new Map<string, number>();
  for (const t of terms.values()) for (const s of t.all) df.set(s, (df.get(s) ?? 0) + 1);
  const n = Math.max(1, tools.size);
  return { of: (tool) => terms.get(tool.id) as ToolTerms, idf: (s) => Math.log(1 + n / (df.get(s) ?? 0.5)) };
}

/** Candidates this close in fused score are as good as tied. */
const CROWD_WIDTH = 0.03;

export interface CandidateRow {
  tool: Tool;
  features: number[];
  filled: FilledArguments;
}

/** Rows for the first `k` candidates that are tools of the catalog, in retrieval order. */
export function candidateRows(intent: string, candidates: readonly Candidate[], deps: { tools: ReadonlyMap<string, Tool>; terms: CatalogTerms; fill(tool: Tool): FilledArguments }, k: number): CandidateRow[] {
  const pool = candidates.filter((c) => deps.tools.has(c.tool));
  const top = pool.slice(0, k);
  const words = contentStems(intent);
  const values = extractMentions(intent).length;
  const weight = (stems: Iterable<string>): number => [...stems].reduce((sum, s) => sum + deps.terms.idf(s), 0);
  const intentWeight = weight(words);
  const share = (field: ReadonlySet<string>): number => (intentWeight > 0 ? weight([...words].filter((w) => field.has(w))) / intentWeight : 0);
  const cosines = pool.map((c) => c.vectorScore).filter((v): v is number => v !== undefined);
  const floorCosine = cosines.length ? Math.min(...cosines) : 0;
  const bestCosine = cosines.length ? Math.max(...cosines) : 0;
  const best = top[0]?.score ?? 0;
  return top.map((c, rank) => {
    const tool = deps.tools.get(c.tool) as Tool;
    const terms = deps.terms.of(tool);
    const filled = deps.fill(tool);
    const required = tool.parameters.filter((p) => p.required);
    const filledCount = Object.keys(filled.arguments).length;
    const nameWeight = weight(terms.name);
    const cosine = c.vectorScore ?? floorCosine;
    const nextId = pool[rank + 1]?.tool;
    const next = nextId === undefined ? undefined : deps.tools.get(nextId);
    const features = [
      c.score,
      cosine,
      c.textScore ?? 0,
      1 / (1 + rank),
      best - c.score,
      c.score - (pool[rank + 1]?.score ?? 0),
      bestCosine - cosine,
      nameWeight > 0 ? weight([...terms.name].filter((s) => words.has(s))) / nameWeight : 0,
      share(terms.name),
      share(terms.description),
      share(terms.parameters),
      share(terms.all),
      filled.confidence,
      required.length ? required.filter((p) => Object.hasOwn(filled.arguments, p.name)).length / required.length : 1,
      filled.missing.length > 0 ? 1 : 0,
      tool.parameters.length ? filledCount / tool.parameters.length : 1,
      Math.log1p(tool.parameters.length),
      values > 0 ? Math.min(1, filledCount / values) : 1,
      next ? jaccard(terms.all, deps.terms.of(next).all) : 0,
      pool.filter((o) => Math.abs(o.score - c.score) <= CROWD_WIDTH).length / k,
    ];
    return { tool, features, filled };
  });
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let both = 0;
  for (const s of a) if (b.has(s)) both++;
  const either = a.size + b.size - both;
  return either > 0 ? both / either : 0;
}
