/**
 * What requests still running hold of their client's budget. A request is admitted while its
 * client's use plus every hold is under the budget, and then holds its own cap (what it may use
 * at most) until it ends; so requests sent in parallel can overshoot a budget by at most one
 * request's cap, instead of each seeing the budget as it was before any of them was charged.
 *
 * Why in this process for now: one gateway process admits every request of its clients, so a
 * map it alone changes is both correct and the simplest thing. Replicas need one shared store:
 * a later issue puts this interface in Redis (DESIGN §7), where `reserve` becomes a script
 * that checks and holds in one step and a hold's expiry a key's TTL. The interface is async for
 * that reason, though this implementation never waits.
 */

/** An amount of a budget: tokens, and US dollars of priced tokens. */
export interface HeldAmount {
  tokens: number;
  spendUsd: number;
}

export interface BudgetHold {
  /** Changes what it holds (a running request holds less once its charges are in the ledger). */
  set(amount: HeldAmount): void;
  /** Ends the hold; calling it again does nothing. */
  release(): void;
}

export type ReserveResult = { ok: true; hold: BudgetHold } | { ok: false; held: HeldAmount };

export interface BudgetHolds {
  /**
   * In one step: when `fits(held)` accepts what the live holds under `key` add up to, holds
   * `amount` under `key` and returns it; else returns what was held (a refusal is a value).
   */
  reserve(key: string, amount: HeldAmount, fits: (held: HeldAmount) => boolean): Promise<ReserveResult>;
  /** What the live holds under `key` add up to. */
  held(key: string): Promise<HeldAmount>;
}

export interface MemoryBudgetHolds extends BudgetHolds {
  /** Resolves once no hold is left (every request that held one ended): for shutdown and tests. */
  idle(): Promise<void>;
}

/**
 * `ttlMs`: a hold left by a request that never ended (a handler that crashed past its `finally`)
 * lapses after this long, so that it cannot block its client for good. The gateway passes its
 * longest request (`limits.max_duration_ms`) and a margin: a live request never outlasts it.
 */
export function createMemoryBudgetHolds(options: { ttlMs: number; now?: () => number }): MemoryBudgetHolds {
  const now = options.now ?? Date.now;
  interface Entry {
    key: string;
    amount: HeldAmount;
    expiresAt: number;
  }
  const live = new Set<Entry>();
  const waiters: (() => void)[] = [];

  const drop = (entry: Entry): void => {
    live.delete(entry);
    if (live.size === 0) for (const wake of waiters.splice(0)) wake();
  };
  const sum = (key: string): HeldAmount => {
    const at = now();
    const total = { tokens: 0, spendUsd: 0 };
    for (const entry of live) {
      if (entry.expiresAt <= at) drop(entry);
      else if (entry.key === key) {
        total.tokens += entry.amount.tokens;
        total.spendUsd += entry.amount.spendUsd;
      }
    }
    return total;
  };

  return {
    async reserve(key, amount, fits) {
      const held = sum(key);
      if (!fits(held)) return { ok: false, held };
      const entry: Entry = { key, amount: { ...amount }, expiresAt: now() + options.ttlMs };
      live.add(entry);
      return {
        ok: true,
        hold: {
          set(next) {
            entry.amount = { ...next };
          },
          release: () => drop(entry),
        },
      };
    },
    async held(key) {
      return sum(key);
    },
    idle() {
      sum(''); // drops lapsed holds first
      if (live.size === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}
