/**
 * What requests still running hold of their client's budget. A request is admitted while its
 * client's use plus every hold is under the budget, and then holds its own cap (what it may use
 * at most) until it ends; so requests sent in parallel can overshoot a budget by at most one
 * request's cap, instead of each seeing the budget as it was before any of them was charged.
 *
 * Where: in this process by default (below), which is right for one gateway; in Redis when
 * replicas admit requests of the same clients (shared-state/redis-budget-holds.ts), where
 * `reserve` is one script that checks and holds in one step.
 */

/** What a client's requests hold under. */
export const clientHoldKey = (client: string): string => `client:${client}`;

/** An amount of a budget: tokens, and US dollars of priced tokens. */
export interface HeldAmount {
  tokens: number;
  spendUsd: number;
}

export interface BudgetHold {
  /** Changes what it holds (a running request holds less once its charges are in the ledger). */
  set(amount: HeldAmount): void;
  /**
   * Ends the hold; calling it again does nothing. Resolves once it is gone where the holds are
   * kept (Redis: a request's next one, through any replica, must not find it still there).
   */
  release(): Promise<void>;
}

export type ReserveResult = { ok: true; hold: BudgetHold } | { ok: false; held: HeldAmount };

export interface BudgetHolds {
  /**
   * In one step: when what the live holds under `key` add up to is under `room` (in tokens and
   * in spend: the budget less what the ledger counts), holds `amount` under `key` and returns it;
   * else returns what was held (a refusal is a value).
   */
  reserve(key: string, amount: HeldAmount, room: HeldAmount): Promise<ReserveResult>;
  /** What the live holds under `key` add up to. */
  held(key: string): Promise<HeldAmount>;
  /** Resolves once this process holds nothing (every request that held something ended): for shutdown and tests. */
  idle(): Promise<void>;
}

/**
 * `ttlMs`: a hold left by a request that never ended (a handler that crashed past its `finally`)
 * lapses after this long, so that it cannot block its client for good. The gateway passes its
 * longest request (`limits.max_duration_ms`) and a margin: a live request never outlasts it.
 */
export function createMemoryBudgetHolds(options: { ttlMs: number; now?: () => number }): BudgetHolds {
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
    async reserve(key, amount, room) {
      const held = sum(key);
      if (!fitsIn(held, room)) return { ok: false, held };
      const entry: Entry = { key, amount: { ...amount }, expiresAt: now() + options.ttlMs };
      live.add(entry);
      return {
        ok: true,
        hold: {
          set(next) {
            entry.amount = { ...next };
          },
          release: async () => drop(entry),
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

/** Whether holds adding up to `held` leave the budget unreached (a budget is reached at its limit). */
export function fitsIn(held: HeldAmount, room: HeldAmount): boolean {
  return held.tokens < room.tokens && held.spendUsd < room.spendUsd;
}
