import type { ChatUsage } from '../llm/types.js';
import { isModelGlob, modelMatches } from '../base/model-glob.js';

/** US dollars per million tokens, as providers publish their prices. */
export interface ModelPrice {
  inputPerMtok: number;
  outputPerMtok: number;
}

/** Model ids or globs to prices, in the config's order. */
export type PriceTable = ReadonlyArray<{ pattern: string; price: ModelPrice }>;

/** The exact id's price, else the first glob that matches; undefined when the model is not priced. */
export function priceFor(table: PriceTable, model: string): ModelPrice | undefined {
  return table.find((e) => !isModelGlob(e.pattern) && e.pattern === model)?.price ?? table.find((e) => isModelGlob(e.pattern) && modelMatches(e.pattern, model))?.price;
}

export function spendUsd(price: ModelPrice, usage: ChatUsage): number {
  return ((usage.inputTokens ?? 0) * price.inputPerMtok + (usage.outputTokens ?? 0) * price.outputPerMtok) / 1_000_000;
}

/** A local model costs nothing (the offline demo). */
export const FREE: ModelPrice = Object.freeze({ inputPerMtok: 0, outputPerMtok: 0 });
