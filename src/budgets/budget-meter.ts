import { KiwiError } from '../base/errors.js';
import type { ChatUsage } from '../llm/types.js';
import { budgetOf, type BudgetConfig } from './budget-config.js';
import { clientHoldKey, createMemoryBudgetHolds, type BudgetHold, type BudgetHolds, type HeldAmount } from './budget-holds.js';
import type { BudgetLedger } from './budget-ledger.js';
import { emptyTotals, firstReached, type BudgetLimits, type BudgetStop, type BudgetTotals } from './budget-types.js';
import { windowStart } from './budget-window.js';
import { overBudgetMessage, retryAfterSeconds, unpricedMessage } from './budget-words.js';
import { FREE, priceFor, spendUsd, type ModelPrice } from './prices.js';

/**
 * Budgets at work: `admit` refuses a request whose client (or directive run) has already used a
 * budget, before anything goes upstream; the meter it returns charges every turn, tool call and
 * spawn of the request to the ledger, and tells the agent loop when a budget ran out (the loop
 * then starts no further turn). A turn, once started, runs to its end: the overshoot is at most
 * one turn and the tool intents one request may have.
 *
 * Requests of one client run in parallel, and each is charged only as its turns end; so admission
 * also counts what the client's running requests hold (budget-holds.ts). A request that says what
 * it may use at most (`cap`) holds that, less what it was already charged, until `end()`: a new
 * one is admitted only while use plus holds is under the budget, so parallel requests overshoot
 * it by at most one request (as far as each keeps to its cap).
 */

/** A directive being run, whose `<limits>` bound the whole run (all its requests, restarts included). */
export interface DirectiveRun {
  directive: string;
  /** The run's id: its usage is totalled under it in the ledger. */
  run: string;
  limits: BudgetLimits;
  /** When the run began (ms since the epoch), for its `duration`. */
  startedAt: number;
}

export interface AdmitOptions {
  client: string;
  /** The model id sent upstream: its price is looked up. */
  model: string;
  /** An upstream that costs nothing (the offline demo). */
  free?: boolean;
  /** Set when the request runs under a directive. */
  directive?: DirectiveRun;
  /**
   * The most the request may use (request-cap.ts), held against the client's budget while it
   * runs; absent, nothing is held (an MCP tool call uses no tokens).
   */
  cap?: ChatUsage;
}

export interface BudgetMeter {
  /** One upstream turn's usage (turn-usage.ts): the upstream's count, or `estimated`. */
  charge(usage: ChatUsage | undefined): void;
  /**
   * A side request made for the request (the resolver's fallback model): its tokens and spend,
   * not a turn. `model` is the one it asked, priced by the table; absent, the request's own (priced as it is).
   */
  chargeSide(usage: ChatUsage, model?: string): void;
  countToolCall(): void;
  countSpawn(): void;
  /** The budget that ran out, if one did. */
  exhausted(): BudgetStop | undefined;
  /** Resolves once every charge so far is durable (ledger.record). */
  written(): Promise<void>;
  /** The request is over, whichever way: what it held is released (its charges stay); resolves once it is and its charges are written. Again: nothing. */
  end(): Promise<void>;
}

export interface Budgets {
  /**
   * Throws BUDGET_EXCEEDED (429) or, for an unpriced model under a spend budget, POLICY_DENIED.
   * The meter's `end()` must be called when the request is over (in a `finally`).
   */
  admit(options: AdmitOptions): Promise<BudgetMeter>;
}

/** How long a hold lives when the caller does not say: the longest request the config allows, and a margin. */
const DEFAULT_HOLD_TTL_MS = 3_600_000 + 60_000;

export function createBudgets(deps: { config: BudgetConfig; ledger: BudgetLedger; holds?: BudgetHolds; now?: () => number }): Budgets {
  const { config, ledger } = deps;
  const now = deps.now ?? Date.now;
  const holds = deps.holds ?? createMemoryBudgetHolds({ ttlMs: DEFAULT_HOLD_TTL_MS, now });
  return {
    async admit(options) {
      const budget = budgetOf(config, options.client);
      const run = options.directive;
      const price = options.free === true ? FREE : priceFor(config.prices, options.model);
      if (price === undefined) {
        const budgeted =
          budget?.limits.spendUsd !== undefined ? `client "${options.client}" has` : run?.limits.spendUsd !== undefined ? `directive ${run.directive} has` : config.requestSpendUsd !== undefined ? 'every request has (limits.max_spend_usd)' : undefined;
        // Spend that cannot be counted could run without bound: refuse rather than guess.
        if (budgeted !== undefined) throw new KiwiError('POLICY_DENIED', unpricedMessage(options.model, budgeted), { details: { model: options.model } });
      }
      const request = emptyTotals();
      const clientTotals = (start: number): BudgetTotals => ledger.totals({ client: options.client }, start);
      const exhausted = (): BudgetStop | undefined => {
        const at = now();
        if (config.requestSpendUsd !== undefined) {
          const hit = firstReached(request, { spendUsd: config.requestSpendUsd });
          if (hit) return withEstimate({ scope: 'request', name: 'request', ...hit }, request);
        }
        if (budget !== undefined) {
          const start = windowStart(at, budget.windowMs);
          const totals = clientTotals(start);
          const hit = firstReached(totals, budget.limits);
          if (hit) return withEstimate({ scope: 'client', name: options.client, ...hit, resetsAt: start + budget.windowMs, window: budget.window, field: budget.field }, totals);
        }
        if (run !== undefined) {
          const totals = ledger.totals({ run: run.run }, 0);
          const hit = firstReached(totals, run.limits, at - run.startedAt);
          if (hit) return withEstimate({ scope: 'directive', name: run.directive, ...hit }, totals);
        }
        return undefined;
      };
      if (budget !== undefined || run !== undefined) await ledger.refresh([...(budget === undefined ? [] : [{ client: options.client }]), ...(run === undefined ? [] : [{ run: run.run }])]);
      const over = exhausted();
      if (over !== undefined) throw overBudget(over, now());

      // The request's cap, held against its client's budget while it runs.
      const cap = options.cap === undefined || budget === undefined ? undefined : capAmount(options.cap, price, config.requestSpendUsd);
      let hold: BudgetHold | undefined;
      if (cap !== undefined && budget !== undefined) {
        const start = windowStart(now(), budget.windowMs);
        const used = clientTotals(start);
        const room = { tokens: (budget.limits.tokens ?? Infinity) - used.tokens, spendUsd: (budget.limits.spendUsd ?? Infinity) - used.spendUsd };
        const reserved = await holds.reserve(clientHoldKey(options.client), cap, room);
        if (!reserved.ok) {
          const totals = clientTotals(start);
          const hit = firstReached(plus(totals, reserved.held), budget.limits);
          // Unreachable (the ledger alone was under the budget, so the holds are what reached it); a refusal all the same.
          const resource = hit?.resource ?? 'tokens';
          const held = resource === 'spend' ? reserved.held.spendUsd : reserved.held.tokens;
          const stop = withEstimate({ scope: 'client', name: options.client, resource, used: (hit?.used ?? 0) - held, limit: hit?.limit ?? 0, held, window: budget.window, field: budget.field }, totals);
          throw overBudget(stop, now());
        }
        hold = reserved.hold;
      }

      // The request's charges not yet durable: its end waits for them, so a gateway killed after a
      // request ended has lost none of its charges.
      const unwritten = new Set<Promise<void>>();
      const record = (counts: { model?: string; priced?: boolean; input?: number; output?: number; usd?: number; toolCalls?: number; spawns?: number; turns?: number; estimated?: boolean }): void => {
        const written = ledger.record({
          at: now(),
          client: options.client,
          model: counts.model ?? options.model,
          input: counts.input ?? 0,
          output: counts.output ?? 0,
          ...(counts.usd === undefined && !(counts.priced ?? price !== undefined) ? {} : { usd: counts.usd ?? 0 }),
          toolCalls: counts.toolCalls ?? 0,
          spawns: counts.spawns ?? 0,
          turns: counts.turns ?? 0,
          ...(run === undefined ? {} : { directive: run.directive, run: run.run }),
          ...(counts.estimated === true ? { estimated: true } : {}),
        });
        unwritten.add(written);
        void written.then(() => unwritten.delete(written));
      };
      /** Tokens used by the request, at `at` price, as a turn or a side request. */
      const use = (usage: ChatUsage | undefined, at: { model?: string; price: ModelPrice | undefined; turn: boolean }): void => {
        const input = usage?.inputTokens ?? 0;
        const output = usage?.outputTokens ?? 0;
        const estimated = usage?.estimated === true;
        const usd = at.price === undefined ? undefined : spendUsd(at.price, { inputTokens: input, outputTokens: output });
        request.tokens += input + output;
        request.spendUsd += usd ?? 0;
        if (estimated) {
          request.estimatedTokens += input + output;
          request.estimatedUsd += usd ?? 0;
        }
        if (at.turn) request.turns++;
        record({ ...(at.model === undefined ? {} : { model: at.model }), priced: at.price !== undefined, input, output, ...(usd === undefined ? {} : { usd }), turns: at.turn ? 1 : 0, estimated });
        // What is in the ledger now no longer needs holding; a request past its cap holds nothing more.
        if (cap !== undefined) hold?.set({ tokens: Math.max(0, cap.tokens - request.tokens), spendUsd: Math.max(0, cap.spendUsd - request.spendUsd) });
      };
      return {
        charge: (usage) => use(usage, { price, turn: true }),
        chargeSide: (usage, model) => use(usage, model === undefined || model === options.model ? { price, turn: false } : { model, price: priceFor(config.prices, model), turn: false }),
        countToolCall: () => record({ toolCalls: 1 }),
        countSpawn: () => record({ spawns: 1 }),
        exhausted,
        written: async () => {
          await Promise.all(unwritten);
        },
        async end() {
          await Promise.all([hold?.release(), ...unwritten]);
        },
      };
    },
  };
}

function overBudget(stop: BudgetStop, at: number): KiwiError {
  return new KiwiError('BUDGET_EXCEEDED', overBudgetMessage(stop, at), { details: { budget: stop, ...(stop.resetsAt === undefined ? {} : { retryAfter: String(retryAfterSeconds(stop, at)) }) } });
}

/** The cap in the budget's terms: tokens, and their price (at most `limits.max_spend_usd`, which ends the request). */
function capAmount(cap: ChatUsage, price: ModelPrice | undefined, requestSpendUsd: number | undefined): HeldAmount {
  const usd = price === undefined ? 0 : spendUsd(price, cap);
  return { tokens: (cap.inputTokens ?? 0) + (cap.outputTokens ?? 0), spendUsd: requestSpendUsd === undefined ? usd : Math.min(usd, requestSpendUsd) };
}

function plus(totals: BudgetTotals, held: HeldAmount): BudgetTotals {
  return { ...totals, tokens: totals.tokens + held.tokens, spendUsd: totals.spendUsd + held.spendUsd };
}

/** The stop, saying how much of what it counted was estimated (when some was). */
function withEstimate(stop: BudgetStop, totals: BudgetTotals): BudgetStop {
  const estimated = stop.resource === 'tokens' ? totals.estimatedTokens : stop.resource === 'spend' ? totals.estimatedUsd : 0;
  return estimated > 0 ? { ...stop, estimated } : stop;
}
