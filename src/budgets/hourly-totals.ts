import { addTotals, emptyTotals, type BudgetTotals } from './budget-types.js';
import { hourOf } from './budget-window.js';

/** A ledger's unit of use: one upstream turn, tool call or spawn, as the ledgers store it. */
export interface Usage {
  in: number;
  out: number;
  usd?: number | undefined;
  calls: number;
  spawns: number;
  turns: number;
  estimated?: true | undefined;
}

/** What was used, per key (`client:NAME`, `run:ID`) and UTC hour: any window of whole hours is a sum. */
export interface HourlyTotals {
  add(key: string, at: number, usage: Usage): void;
  /** Puts `totals` for `hour` of `key` in place of what was there. */
  set(key: string, hour: number, totals: BudgetTotals): void;
  /** Forgets `key` entirely. */
  drop(key: string): void;
  /** What `key` used from the hour of `since` on. */
  sum(key: string, since: number): BudgetTotals;
  /** Forgets hours before `oldest`. */
  prune(oldest: number): void;
  /** The keys that have a total from the hour of `since` on. */
  keys(since: number): string[];
}

export function createHourlyTotals(): HourlyTotals {
  const buckets = new Map<string, Map<number, BudgetTotals>>();
  return {
    add(key, at, e) {
      let byHour = buckets.get(key);
      if (byHour === undefined) buckets.set(key, (byHour = new Map()));
      const hour = hourOf(at);
      const t = byHour.get(hour) ?? emptyTotals();
      t.tokens += e.in + e.out;
      if (e.usd === undefined) t.unpricedTokens += e.in + e.out;
      else t.spendUsd += e.usd;
      if (e.estimated === true) {
        t.estimatedTokens += e.in + e.out;
        t.estimatedUsd += e.usd ?? 0;
      }
      t.toolCalls += e.calls;
      t.spawns += e.spawns;
      t.turns += e.turns;
      byHour.set(hour, t);
    },
    set(key, hour, totals) {
      let byHour = buckets.get(key);
      if (byHour === undefined) buckets.set(key, (byHour = new Map()));
      byHour.set(hour, { ...totals });
    },
    drop(key) {
      buckets.delete(key);
    },
    sum(key, since) {
      const total = emptyTotals();
      const from = hourOf(since);
      for (const [hour, t] of buckets.get(key) ?? []) if (hour >= from) addTotals(total, t);
      return total;
    },
    keys(since) {
      const from = hourOf(since);
      return [...buckets].filter(([, byHour]) => [...byHour.keys()].some((hour) => hour >= from)).map(([key]) => key);
    },
    prune(oldest) {
      for (const [key, byHour] of buckets) {
        for (const hour of byHour.keys()) if (hour < oldest) byHour.delete(hour);
        if (byHour.size === 0) buckets.delete(key);
      }
    },
  };
}

/** The key a ledger files a total under. */
export const ledgerKeyName = (key: { client: string } | { run: string }): string => ('client' in key ? `client:${key.client}` : `run:${key.run}`);

/** The clients among a ledger's keys. */
export const clientsOf = (keys: Iterable<string>): string[] => [...keys].filter((k) => k.startsWith('client:')).map((k) => k.slice('client:'.length));
