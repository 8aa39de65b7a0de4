import { countTurn, type TurnUsage } from '../budgets/turn-usage.js';
import type { ChatMessage, ChatUsage } from '../llm/types.js';
import type { RunBudget } from '../budgets/budget-types.js';

/**
 * What a request's turns used: each turn is counted while it streams and charged to the budget
 * once, when it ends — by the upstream's finish, or cut short (the client, the duration, the
 * consumer, a failure) with what it used so far, estimated.
 */
export interface TurnCharges {
  /** The request's usage so far, every turn added. */
  readonly usage: ChatUsage;
  /** A turn is sent with this prompt: its usage counts from here. */
  open(prompt: readonly ChatMessage[]): TurnUsage;
  /** The upstream answered the open turn (anything at all). */
  heard(): void;
  /** The upstream finished the open turn, reporting `reported`: it is charged. */
  settle(reported: ChatUsage | undefined): void;
  /**
   * The open turn ends without its finish: charged what it used so far, unless the upstream
   * refused it before answering (a 4xx, a refused connection) and nothing here cut it.
   */
  cut(refusedBeforeAnswer: boolean): void;
}

export function createTurnCharges(budget: RunBudget | undefined): TurnCharges {
  const usage: ChatUsage = {};
  let open: { counted: TurnUsage; heard: boolean } | undefined;
  const charge = (used: ChatUsage): void => {
    addUsage(usage, used);
    budget?.charge(used);
  };
  return {
    usage,
    open(prompt) {
      const counted = countTurn(prompt);
      open = { counted, heard: false };
      return counted;
    },
    heard() {
      if (open !== undefined) open.heard = true;
    },
    settle(reported) {
      const turn = open;
      open = undefined;
      if (turn === undefined) return;
      turn.counted.reported(reported);
      charge(turn.counted.usage());
    },
    cut(refusedBeforeAnswer) {
      const turn = open;
      open = undefined;
      if (turn === undefined || (!turn.heard && refusedBeforeAnswer)) return;
      charge(turn.counted.usage());
    },
  };
}

function addUsage(total: ChatUsage, usage: ChatUsage | undefined): void {
  if (usage?.inputTokens !== undefined) total.inputTokens = (total.inputTokens ?? 0) + usage.inputTokens;
  if (usage?.outputTokens !== undefined) total.outputTokens = (total.outputTokens ?? 0) + usage.outputTokens;
  if (usage?.estimated === true) total.estimated = true;
}
