import type { BudgetResource, BudgetStop } from './budget-types.js';

/**
 * What the gateway says when a budget runs out: the notice that ends a running request, and the
 * message of a 429 for a new one. Both say whose budget, what ran out, how much of how much,
 * when it starts afresh, and where to raise it.
 */

const NOUN: Record<BudgetResource, string> = { spend: 'spend', tokens: 'token', tool_calls: 'tool-call', spawns: 'spawn', duration: 'time', turns: 'turn' };
const CONFIG_KEY: Record<BudgetResource, string> = { spend: 'spend_usd', tokens: 'tokens', tool_calls: 'tool_calls', spawns: 'spawns', duration: 'duration', turns: 'turns' };

export function formatAmount(resource: BudgetResource, n: number): string {
  switch (resource) {
    case 'spend':
      return `$${n < 0.01 && n > 0 ? n.toPrecision(2) : n.toFixed(n >= 100 ? 2 : 4).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
    case 'duration':
      return `${Math.round(n / 100) / 10} s`;
    default: {
      const unit = resource === 'tool_calls' ? 'call' : resource.slice(0, -1);
      return `${n} ${unit}${n === 1 ? '' : 's'}`;
    }
  }
}

function whose(stop: BudgetStop): string {
  if (stop.scope === 'client') return `client "${stop.name}"`;
  if (stop.scope === 'directive') return `directive ${stop.name}`;
  return 'this request';
}

/** Where to allow more: the config field, or the directive's own `<limits>`. */
export function whereToRaise(stop: BudgetStop): string {
  if (stop.scope === 'request') return 'raise `limits.max_spend_usd` in .ai/config/gateway.yaml';
  if (stop.scope === 'directive') return `raise ${CONFIG_KEY[stop.resource]} in the <limits> of directive ${stop.name}`;
  return `raise \`${stop.field ?? `budgets.clients.${stop.name}`}.${CONFIG_KEY[stop.resource]}\` in .ai/config/gateway.yaml`;
}

/** How much of how much, saying what part is an estimate and what requests still running hold. */
function used(stop: BudgetStop): string {
  const window = stop.window === undefined ? '' : ` in its ${stop.window} window`;
  const estimated = stop.estimated ? ` (${stop.resource === 'spend' ? `${formatAmount('spend', stop.estimated)} of it` : `${stop.estimated} of them`} estimated)` : '';
  const held = stop.held ? `, and ${formatAmount(stop.resource, stop.held)} held by requests still running,` : '';
  return `${formatAmount(stop.resource, stop.used)}${estimated}${held} of ${formatAmount(stop.resource, stop.limit)}${window}`;
}

function resets(stop: BudgetStop, now: number): string {
  if (stop.held) return '; retry when they end';
  if (stop.resetsAt === undefined) return '';
  return `; it starts afresh at ${new Date(stop.resetsAt).toISOString()} (in ${retryAfterSeconds(stop, now)} s)`;
}

export function retryAfterSeconds(stop: BudgetStop, now: number): number {
  return Math.max(1, Math.ceil(((stop.resetsAt ?? now) - now) / 1000));
}

/** The text sent before `finish` when a budget ended a running request. */
export function budgetNotice(stop: BudgetStop, now: number): string {
  return `\n\n[Kiwi gateway: stopped because ${whose(stop)} used its ${NOUN[stop.resource]} budget (${used(stop)})${resets(stop, now)}. To allow more, ${whereToRaise(stop)}.]`;
}

/** The message of the 429 a new request gets while its client is over budget. */
export function overBudgetMessage(stop: BudgetStop, now: number): string {
  return `${whose(stop)[0]?.toUpperCase()}${whose(stop).slice(1)} is over its ${NOUN[stop.resource]} budget: ${used(stop)}${resets(stop, now)}. To allow more, ${whereToRaise(stop)}.`;
}

/** Why a request for a model without a price is refused while its spend is budgeted. */
export function unpricedMessage(model: string, budgeted: string): string {
  return `Model ${JSON.stringify(model)} has no price in \`prices\` of .ai/config/gateway.yaml, and ${budgeted} a spend budget, so its spend could not be counted; add it, e.g. prices: { "${model}": { input_per_mtok: 0.15, output_per_mtok: 0.6 } } (US dollars per million tokens; 0 for a free local model)`;
}
