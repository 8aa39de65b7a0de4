import { z } from 'zod';
import type { ChatUsage } from '../llm/types.js';
import { spendUsd, type ModelPrice } from './prices.js';

/**
 * What an execution or a thread used, by model: tokens in and out, and US dollars where the
 * price table prices the model. A model it does not price says `"unpriced"`, never 0: its tokens
 * cost something nobody told the gateway. The total `spend_usd` is the priced models' sum, and
 * `unpriced` names the models left out of it.
 */
export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  /** Some of the tokens are the gateway's estimate (the upstream sent no count, or the stream was cut). */
  estimated?: true;
  spend_usd: number | 'unpriced';
}

export interface UsageSummary {
  models: Record<string, ModelUsage>;
  spend_usd: number;
  unpriced?: string[];
  estimated?: true;
  /** A thread's: what it used itself, when threads it spawned add to the totals above (own + children). */
  own?: UsageSummary;
  /** A thread's: what the threads it spawned used, theirs included; in the totals above. */
  children?: UsageSummary;
}

/** The model's price, undefined when the table has none. */
export type PriceOf = (model: string) => ModelPrice | undefined;

/** Counts turns as they are charged: a run's own usage, by model. */
export interface UsageTally {
  add(model: string, usage: ChatUsage | undefined): void;
  summary(): UsageSummary;
}

export function createUsageTally(priceOf: PriceOf): UsageTally {
  const models = new Map<string, ChatUsage>();
  return {
    add(model, usage) {
      // A call that counted nothing (the resolver's fallback model refused before answering) used nothing.
      if (usage?.inputTokens === undefined && usage?.outputTokens === undefined) return;
      const seen = models.get(model) ?? {};
      models.set(model, {
        inputTokens: (seen.inputTokens ?? 0) + (usage.inputTokens ?? 0),
        outputTokens: (seen.outputTokens ?? 0) + (usage.outputTokens ?? 0),
        ...(seen.estimated === true || usage.estimated === true ? { estimated: true } : {}),
      });
    },
    summary() {
      const entries = [...models].map(([model, usage]): [string, ModelUsage] => {
        const price = priceOf(model);
        return [model, modelUsage(usage.inputTokens ?? 0, usage.outputTokens ?? 0, usage.estimated === true, price === undefined ? 'unpriced' : spendUsd(price, usage))];
      });
      return totalled(Object.fromEntries(entries));
    },
  };
}

export const EMPTY_USAGE: UsageSummary = Object.freeze({ models: Object.freeze({}), spend_usd: 0 }) as UsageSummary;

/** Both added, model by model (parts dropped: the sum is one run's total). A model unpriced in either stays unpriced. */
export function addUsage(a: UsageSummary, b: UsageSummary): UsageSummary {
  const models: Record<string, ModelUsage> = { ...a.models };
  for (const [model, u] of Object.entries(b.models)) {
    const seen = models[model];
    models[model] =
      seen === undefined
        ? u
        : modelUsage(seen.input_tokens + u.input_tokens, seen.output_tokens + u.output_tokens, seen.estimated === true || u.estimated === true, seen.spend_usd === 'unpriced' || u.spend_usd === 'unpriced' ? 'unpriced' : seen.spend_usd + u.spend_usd);
  }
  return totalled(models);
}

/** A thread run's usage: its own, and with what its children used (own + children) when it spawned any. */
export function withChildren(own: UsageSummary, children: UsageSummary): UsageSummary {
  if (Object.keys(children.models).length === 0) return own;
  return { ...addUsage(own, children), own, children };
}

export const isEmptyUsage = (usage: UsageSummary): boolean => Object.keys(usage.models).length === 0;

/** One line for people: `gpt-4o 1200 in / 300 out $0.0060; local 50 in / 9 out unpriced`, and the total. */
export function usageText(usage: UsageSummary): string {
  if (isEmptyUsage(usage)) return 'no model tokens';
  const each = Object.entries(usage.models).map(([model, u]) => `${model} ${u.input_tokens} in / ${u.output_tokens} out${u.estimated ? ' (estimated)' : ''} ${u.spend_usd === 'unpriced' ? 'unpriced' : usd(u.spend_usd)}`);
  const unpriced = usage.unpriced === undefined ? '' : ` + unpriced ${usage.unpriced.join(', ')}`;
  const scope = usage.children === undefined ? '' : ' (own + children)';
  return `${each.join('; ')}; total ${usd(usage.spend_usd)}${unpriced}${scope}`;
}

const usd = (value: number): string => `$${value < 0.01 && value > 0 ? value.toPrecision(2) : value.toFixed(4)}`;

function modelUsage(input: number, output: number, estimated: boolean, spend: number | 'unpriced'): ModelUsage {
  return { input_tokens: input, output_tokens: output, ...(estimated ? { estimated: true as const } : {}), spend_usd: spend };
}

function totalled(models: Record<string, ModelUsage>): UsageSummary {
  const all = Object.entries(models);
  const unpriced = all.filter(([, u]) => u.spend_usd === 'unpriced').map(([m]) => m);
  const spend = all.reduce((sum, [, u]) => sum + (u.spend_usd === 'unpriced' ? 0 : u.spend_usd), 0);
  return { models, spend_usd: spend, ...(unpriced.length === 0 ? {} : { unpriced }), ...(all.some(([, u]) => u.estimated) ? { estimated: true as const } : {}) };
}

const count = z.number().int().min(0);
const modelUsageSchema = z.looseObject({ input_tokens: count, output_tokens: count, estimated: z.literal(true).optional(), spend_usd: z.union([z.number().min(0), z.literal('unpriced')]) });
const totals = z.looseObject({ models: z.record(z.string(), modelUsageSchema), spend_usd: z.number().min(0), unpriced: z.array(z.string()).optional(), estimated: z.literal(true).optional() });

/** A summary as stored (the kernel's column, a thread's end line): checked where it is read back. */
export const usageSummarySchema = totals.extend({ own: totals.optional(), children: totals.optional() });

/** The stored summary, or undefined when there is none or it is not one (a row written by another version). */
export function parseUsage(value: unknown): UsageSummary | undefined {
  const parsed = usageSummarySchema.safeParse(value);
  return parsed.success ? (parsed.data as UsageSummary) : undefined;
}
