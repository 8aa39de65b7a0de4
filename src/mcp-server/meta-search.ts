/**
 * The `search` meta-tool: tools, directives and knowledge through the resolver's ranking (the same
 * fused vector and full-text scores that resolve intents); directives and knowledge by word overlap
 * only when the resolver has no index of them, pipelines (which it never indexes) always.
 */
import { z } from 'zod';
import type { Directive, Knowledge, Pipeline, Tier, Tool } from '../registry/types.js';
import { pipelineShape } from '../registry/pipeline-shape.js';
import { parametersSchema } from '../resolver/llm-argument-filler.js';
import { stem, STOPWORDS } from '../resolver/text-words.js';
import { splitWords } from '../registry/tool-document.js';
import {
  checkProjectPath,
  itemTypeSchema,
  normalizeItemType,
  projectPathSchema,
  textResult,
  type ItemType,
  type MetaContext,
  type MetaResult,
} from './meta-common.js';

export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;

export const searchShape = {
  item_type: itemTypeSchema,
  query: z
    .string({ error: (issue) => (issue.input === undefined ? 'query is required: words describing what you look for' : 'query must be a string') })
    .trim()
    .min(1, 'query must not be empty; give words describing what you look for')
    .max(4096, 'query is longer than 4096 characters; describe what you look for in a sentence')
    .describe('What you look for, in natural language or keywords'),
  limit: z
    .number({ error: `limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}` })
    .int(`limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`)
    .min(1, `limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`)
    .max(MAX_SEARCH_LIMIT, `limit must be at most ${MAX_SEARCH_LIMIT}; refine the query to see fewer, better results`)
    .optional()
    .describe(`Most results to return (default ${DEFAULT_SEARCH_LIMIT}, at most ${MAX_SEARCH_LIMIT})`),
  source: z
    .enum(['local', 'project', 'user', 'all', 'registry'], { error: 'source must be "all" (every tier), "local" (project and user tiers), "project", "user" or "registry"' })
    .optional()
    .describe('Which tiers to search: "all" (default: project, user and the registry tier in the database), "local" (project and user), "project", "user" or "registry"'),
  project_path: projectPathSchema,
};

type SearchArgs = z.output<z.ZodObject<typeof searchShape>>;

interface Hit {
  id: string;
  score: number;
  description: string;
  tier: Tier;
  extra: Record<string, unknown>;
}

export async function search(ctx: MetaContext, args: SearchArgs, signal?: AbortSignal): Promise<MetaResult> {
  const type = normalizeItemType(args.item_type);
  await checkProjectPath(ctx.project, args.project_path);
  const limit = args.limit ?? DEFAULT_SEARCH_LIMIT;
  const tiers: Tier[] = args.source === undefined || args.source === 'all' ? ['project', 'user', 'registry'] : args.source === 'local' ? ['project', 'user'] : [args.source];
  const hits =
    type === 'tool'
      ? await searchTools(ctx, args.query, limit, tiers, signal)
      : type === 'pipeline'
        ? rankByWords(args.query, pipelineFields(ctx), tiers).slice(0, limit) // the resolver indexes no pipelines
        : await searchItems(ctx, type, args.query, limit, tiers, signal);
  return textResult(formatHits(type, args.query, hits), {
    item_type: type,
    query: args.query,
    source: args.source ?? 'all',
    total: hits.length,
    results: hits.map((h) => ({ id: h.id, score: round(h.score), description: h.description, tier: h.tier, ...h.extra })),
  });
}

async function searchTools(ctx: MetaContext, query: string, limit: number, tiers: Tier[], signal?: AbortSignal): Promise<Hit[]> {
  // A tier filter drops candidates after ranking, so ask for the most the resolver will rank.
  const wanted = tiers.length === 2 ? limit : MAX_SEARCH_LIMIT;
  const resolution = await ctx.resolver.resolve(query, { limit: wanted, ...(signal ? { signal } : {}) });
  const hits: Hit[] = [];
  for (const candidate of resolution.candidates) {
    // The resolver indexes its own load of the registry; a tool gone since then is skipped, not guessed at.
    const tool = ctx.project.registry.tools.get(candidate.tool);
    // A score of 0 shares nothing with the query: listing it would only pad the answer.
    if (!tool || candidate.score <= 0 || !tiers.includes(tool.source.tier)) continue;
    hits.push({ id: tool.id, score: candidate.score, description: tool.description, tier: tool.source.tier, extra: toolExtra(tool) });
    if (hits.length === limit) break;
  }
  return hits;
}

/** Every candidate the resolver ranks: items come after the tool pool, and a tier filter drops some after ranking. */
const ALL_CANDIDATES = 1_000;

async function searchItems(ctx: MetaContext, type: 'directive' | 'knowledge', query: string, limit: number, tiers: Tier[], signal?: AbortSignal): Promise<Hit[]> {
  const fields = new Map((type === 'directive' ? directiveFields(ctx) : knowledgeFields(ctx)).map((f) => [f.id, f]));
  if (fields.size === 0) return [];
  const resolution = await ctx.resolver.resolve(query, { limit: ALL_CANDIDATES, ...(signal ? { signal } : {}) });
  const ranked = resolution.candidates.filter((c) => c.item === type);
  // A resolver without an index of directives and knowledge ranks none of them: their words still can.
  if (ranked.length === 0 && !resolution.candidates.some((c) => c.item !== undefined)) return rankByWords(query, [...fields.values()], tiers).slice(0, limit);
  const hits: Hit[] = [];
  for (const candidate of ranked) {
    const item = fields.get(candidate.tool);
    if (!item || candidate.score <= 0 || !tiers.includes(item.tier)) continue;
    hits.push({ id: item.id, score: candidate.score, description: item.description, tier: item.tier, extra: item.extra });
    if (hits.length === limit) break;
  }
  return hits;
}

function toolExtra(tool: Tool): Record<string, unknown> {
  return { type: tool.type, mutates_state: tool.mutatesState, parameters: parametersSchema(tool.parameters) };
}

interface Fields {
  id: string;
  description: string;
  tier: Tier;
  /** Text fields with the weight a query word found in them earns. */
  weighted: Array<[text: string, weight: number]>;
  extra: Record<string, unknown>;
}

function directiveFields(ctx: MetaContext): Fields[] {
  return [...ctx.project.registry.directives.values()].map((d: Directive) => ({
    id: d.name,
    description: d.description,
    tier: d.source.tier,
    weighted: [
      [splitWords(d.name), 1],
      [d.category ?? '', 0.7],
      [d.description, 0.6],
    ],
    extra: { version: d.version, ...(d.category ? { category: d.category } : {}) },
  }));
}

function knowledgeFields(ctx: MetaContext): Fields[] {
  return [...ctx.project.registry.knowledge.values()].map((k: Knowledge) => ({
    id: k.id,
    description: k.title,
    tier: k.source.tier,
    weighted: [
      [splitWords(k.id), 1],
      [k.tags.join(' '), 0.8],
      [k.title, 0.8],
      [k.category ?? '', 0.7],
      [k.entryType, 0.5],
    ],
    extra: { title: k.title, entry_type: k.entryType, version: k.version, tags: k.tags, ...(k.category ? { category: k.category } : {}) },
  }));
}

function pipelineFields(ctx: MetaContext): Fields[] {
  return [...(ctx.project.registry.pipelines?.values() ?? [])].map((p: Pipeline) => {
    const stages = p.groups.flat();
    return {
      id: p.name,
      description: p.description,
      tier: p.source.tier,
      weighted: [
        [splitWords(p.name), 1],
        [p.description, 0.6],
        [stages.map((s) => `${splitWords(s.name)} ${splitWords(s.directive)}`).join(' '), 0.5],
      ],
      extra: { version: p.version, inputs: p.inputs, stages: pipelineShape(p) },
    };
  });
}

/**
 * Items by word overlap, for a resolver that has not indexed them: each query word earns the weight of the best field it occurs in, and the score is the share of the words'
 * possible weight that was earned.
 */
export function rankByWords(query: string, items: Fields[], tiers: Tier[]): Hit[] {
  const terms = queryWords(query);
  if (terms.length === 0) return [];
  const hits: Hit[] = [];
  for (const item of items) {
    if (!tiers.includes(item.tier)) continue;
    const fields = item.weighted.map(([text, weight]) => ({ stems: new Set(tokenize(text)), weight }));
    let earned = 0;
    for (const term of terms) earned += Math.max(0, ...fields.filter((f) => f.stems.has(term)).map((f) => f.weight));
    if (earned > 0) hits.push({ id: item.id, score: earned / terms.length, description: item.description, tier: item.tier, extra: item.extra });
  }
  return hits.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

function queryWords(query: string): string[] {
  const all = words(query);
  const meaningful = all.filter((w) => !STOPWORDS.has(w));
  // A query of stopwords only ("list") still means something; keep its words then.
  return [...new Set((meaningful.length > 0 ? meaningful : all).map(stem))];
}

function words(text: string): string[] {
  return splitWords(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

function tokenize(text: string): string[] {
  return words(text).map(stem);
}

function formatHits(type: ItemType, query: string, hits: Hit[]): string {
  if (hits.length === 0) {
    return `No ${type === 'knowledge' ? 'knowledge entry' : type} matches ${JSON.stringify(query)}. Try other words, or fewer of them.`;
  }
  const noun = type === 'knowledge' ? 'knowledge entr' : type;
  const plural = type === 'knowledge' ? (hits.length === 1 ? 'y' : 'ies') : hits.length === 1 ? '' : 's';
  const lines = [`${hits.length} ${noun}${plural} for ${JSON.stringify(query)}:`];
  for (const hit of hits) {
    lines.push(`- ${hit.id} (score ${round(hit.score)}, ${hit.tier}): ${hit.description}`);
    if (type === 'tool') lines.push(`  parameters: ${describeParameters(hit.extra['parameters'])}`);
  }
  lines.push(
    type === 'tool'
      ? 'Run one with execute(item_type="tool", action="run", item_id=ID, parameters={...}); load(item_type="tool", item_id=ID) shows its manifest.'
      : `Read one with load(item_type="${type}", item_id=ID)${type === 'directive' ? ', or execute(item_type="directive", action="run", item_id=ID) to get its steps to follow' : type === 'pipeline' ? ', or run it on the gateway with execute(item_type="pipeline", action="run", item_id=ID, parameters={inputs})' : ''}.`,
  );
  return lines.join('\n');
}

function describeParameters(schema: unknown): string {
  const s = schema as { properties?: Record<string, { type?: string }>; required?: string[] };
  const names = Object.keys(s.properties ?? {});
  if (names.length === 0) return '(none)';
  return names.map((n) => `${n}: ${s.properties?.[n]?.type ?? 'any'}${s.required?.includes(n) ? ' (required)' : ''}`).join(', ');
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
