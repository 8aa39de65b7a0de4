import type { Tool } from '../../src/registry/types.js';
import { pick, seedOf, uniform } from './seeded.js';

/**
 * Synthetic catalogs of any size from a real one: tool i is template i mod T. Variant 0 is the
 * template itself (so real intents still find their tool); variant k ≥ 1 is `${id}_v${k}` with
 * a seeded qualifier appended to its description, so full-text search sees distinct but
 * realistic documents. Parameters are copied, not shared, so memory grows as a real catalog's would.
 */

const CHANNELS = ['stable', 'beta', 'legacy', 'enterprise', 'lite', 'pro', 'preview', 'community'] as const;
const REGIONS = ['EU', 'US East', 'US West', 'APAC', 'Nordic', 'LATAM', 'Middle East', 'Africa', 'Oceania', 'Canada', 'Japan', 'India'] as const;
const TEAMS = ['billing', 'growth', 'platform', 'research', 'support', 'data', 'mobile', 'security', 'partner', 'ops', 'finance', 'marketing'] as const;

export interface Variant {
  template: number;
  variant: number;
}

export function variantOf(index: number, templateCount: number): Variant {
  return { template: index % templateCount, variant: Math.floor(index / templateCount) };
}

export function variantTool(template: Tool, at: Variant): Tool {
  if (at.variant === 0) return template;
  const random = uniform(seedOf(at.template, at.variant));
  const qualifier = `(${pick(CHANNELS, random)} edition for the ${pick(REGIONS, random)} region, maintained by the ${pick(TEAMS, random)} team, revision ${at.variant})`;
  return {
    ...template,
    id: `${template.id}_v${at.variant}`,
    description: `${template.description.trimEnd()} ${qualifier}`,
    parameters: structuredClone(template.parameters),
    tags: [...template.tags],
    examples: [...template.examples],
  };
}

/** The first `size` tools of the endless catalog the templates define. */
export function syntheticTools(templates: Tool[], size: number): Tool[] {
  if (templates.length === 0) throw new Error('the template catalog has no tools; check --catalog');
  const tools: Tool[] = new Array(size);
  for (let i = 0; i < size; i++) {
    const at = variantOf(i, templates.length);
    tools[i] = variantTool(templates[at.template] as Tool, at);
  }
  return tools;
}
