import { Notice, When } from './console-layout.js';
import { ConsoleError, query, render, type ConsoleRouter } from './console-route.js';
import { ShareBar } from './svg-charts.js';

/**
 * Usage and budgets: per client, what the ledger counted over a window (spend, tokens, turns,
 * tool calls), what its running requests hold now, and its budget: each limit as a bar of what
 * is used and held, what is left, and whether it was reached (new requests are refused until the
 * window resets). A gateway that meters nothing says so, in the API's words.
 */

interface Totals {
  spend_usd: number;
  tokens: number;
  unpriced_tokens: number;
  estimated_tokens: number;
  estimated_usd: number;
  turns: number;
  tool_calls: number;
  spawns: number;
}

type Limits = { spend_usd?: number; tokens?: number; tool_calls?: number };

interface ClientUsage {
  client: string;
  window: string;
  since: string;
  used: Totals;
  held: { tokens: number; spend_usd: number };
  budget: {
    field: string;
    window: string;
    since: string;
    resets_at: string;
    limits: Limits;
    used: { spend_usd: number; tokens: number; tool_calls: number };
    left: Limits;
    reached: { resource: string; used: number; limit: number } | null;
  } | null;
}

interface UsageAnswer {
  budgets: string;
  metered: boolean;
  note?: string;
  ledger?: string;
  held_in?: string;
  request_spend_usd?: number;
  clients: ClientUsage[];
  more?: boolean;
}

/** '' is each client's budget window, else a day (the API's default). */
const WINDOWS = ['', '1h', '6h', '1d', '7d', '31d'];

/** Cents at least, and down to the millionth the API rounds to: a turn can cost a fraction of a cent. */
const USD = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });
const dollars = (n: number): string => USD.format(n);
const count = (n: number): string => n.toLocaleString('en-US');

const LIMITED: [key: keyof Limits, label: string, shown: (n: number) => string][] = [
  ['spend_usd', 'Spend', dollars],
  ['tokens', 'Tokens', count],
  ['tool_calls', 'Tool calls', count],
];

export function mountUsagePage(router: ConsoleRouter): void {
  router.page('/ui/usage', 'usage', async (c, r) => {
    const window = c.req.query('window') ?? '';
    const client = c.req.query('client') ?? '';
    let usage: UsageAnswer | undefined;
    let refused: ConsoleError | undefined;
    try {
      usage = (await r.api('GET', `/admin/v1/usage${query({ window, client })}`)) as unknown as UsageAnswer;
    } catch (error) {
      if (!(error instanceof ConsoleError) || error.status !== 400) throw error;
      refused = error;
    }
    return render(
      c,
      { title: 'Usage and budgets', viewer: r.viewer, current: '/ui/usage', ...(refused === undefined ? {} : { status: 400 as const }) },
      <>
        <h1>Usage and budgets</h1>
        <form class="filters" method="get" action="/ui/usage">
          <label>
            Window
            <select name="window">
              {WINDOWS.map((w) => (
                <option value={w} selected={w === window}>
                  {w === '' ? "the budget's" : w}
                </option>
              ))}
            </select>
          </label>
          <label>
            Client
            <input type="text" name="client" value={client} maxlength={64} />
          </label>
          <button type="submit">Show</button>
        </form>
        {refused !== undefined ? <Notice kind="error">{refused.message}</Notice> : usage === undefined ? null : <Usage usage={usage} />}
      </>,
    );
  });
}

function Usage(props: { usage: UsageAnswer }) {
  const u = props.usage;
  return (
    <>
      {u.note === undefined ? null : <Notice kind="warn">{`No budgets are configured: ${u.note}.`}</Notice>}
      {!u.metered ? null : (
        <p class="meta">
          {`Use counted in ${u.ledger ?? '?'}; what running requests hold, in ${u.held_in ?? '?'}.`}
          {u.request_spend_usd === undefined ? '' : ` Each request may spend at most ${dollars(u.request_spend_usd)}.`} Windows are aligned to UTC.
        </p>
      )}
      {u.metered && u.clients.length === 0 ? <p class="empty">No client has a key, a budget or use in the ledger.</p> : null}
      <ul class="cards usage">
        {u.clients.map((cu) => (
          <ClientCard usage={cu} />
        ))}
      </ul>
      {u.more === true ? <p class="meta">More clients than are shown here: ask for one by name.</p> : null}
    </>
  );
}

function ClientCard(props: { usage: ClientUsage }) {
  const { client, used, held, budget } = props.usage;
  return (
    <li class="card client-usage" data-client={client}>
      <h2>
        {client}{' '}
        {budget === null ? <span class="status">no budget</span> : budget.reached === null ? <span class="status completed">within budget</span> : <span class="status failed">budget reached</span>}
      </h2>
      <p class="meta">
        {`Used in the ${props.usage.window} window since `}
        <When at={props.usage.since} />
      </p>
      <dl class="totals">
        <dt>Spend</dt>
        <dd>{`${dollars(used.spend_usd)}${used.estimated_usd > 0 ? ` (${dollars(used.estimated_usd)} of it estimated)` : ''}`}</dd>
        <dt>Tokens</dt>
        <dd>{`${count(used.tokens)}${used.unpriced_tokens > 0 ? ` (${count(used.unpriced_tokens)} without a price)` : ''}${used.estimated_tokens > 0 ? ` (${count(used.estimated_tokens)} estimated)` : ''}`}</dd>
        <dt>Turns</dt>
        <dd>{count(used.turns)}</dd>
        <dt>Tool calls</dt>
        <dd>{count(used.tool_calls)}</dd>
        {used.spawns === 0 ? null : (
          <>
            <dt>Spawns</dt>
            <dd>{count(used.spawns)}</dd>
          </>
        )}
        <dt>Held now</dt>
        <dd>{held.tokens === 0 && held.spend_usd === 0 ? 'nothing' : `${count(held.tokens)} tokens, ${dollars(held.spend_usd)}`}</dd>
      </dl>
      {budget === null ? null : (
        <>
          <h3>
            {`Budget, ${budget.window} window`} <code>{budget.field}</code>
          </h3>
          {LIMITED.filter(([key]) => budget.limits[key] !== undefined).map(([key, label, shown]) => {
            const limit = budget.limits[key] ?? 0;
            const spent = budget.used[key];
            const holding = key === 'spend_usd' ? held.spend_usd : key === 'tokens' ? held.tokens : 0;
            return (
              <div class={`limit ${key}`}>
                <p>
                  <strong>{label}</strong>
                  {` ${shown(spent)} of ${shown(limit)}${holding > 0 ? `, ${shown(holding)} held` : ''} · ${shown(budget.left[key] ?? 0)} left`}
                </p>
                <ShareBar used={spent} held={holding} limit={limit} title={`${label}: ${shown(spent)} used${holding > 0 ? ` and ${shown(holding)} held` : ''} of ${shown(limit)}`} />
              </div>
            );
          })}
          {budget.reached === null ? (
            <p class="meta">
              Resets <When at={budget.resets_at} />
            </p>
          ) : (
            <Notice kind="error">
              {`Reached its ${budget.reached.resource} limit: new requests are refused (429) until `}
              <When at={budget.resets_at} />.
            </Notice>
          )}
        </>
      )}
    </li>
  );
}
