import { parseUsage } from '../budgets/usage-summary.js';

/**
 * What an execution or a thread used, as the console shows it: a row a model with its tokens and
 * spend ("unpriced" where gateway.yaml has no price for it), and the total. A thread that spawned
 * threads says its total is its own and its children's.
 */
export function UsageTable(props: { usage: unknown }) {
  const usage = parseUsage(props.usage);
  if (usage === undefined) return null;
  const models = Object.entries(usage.models);
  return (
    <section class="usage">
      <h2>{usage.children === undefined ? 'Used' : 'Used (own + children)'}</h2>
      {models.length === 0 ? (
        <p class="empty">No model tokens.</p>
      ) : (
        <div class="table">
          <table>
            <thead>
              <tr>
                <th>Model</th>
                <th>Input tokens</th>
                <th>Output tokens</th>
                <th>Spend</th>
              </tr>
            </thead>
            <tbody>
              {models.map(([model, u]) => (
                <tr>
                  <td>
                    <code>{model}</code>
                  </td>
                  <td>{u.input_tokens}</td>
                  <td>{u.output_tokens}</td>
                  <td>{u.spend_usd === 'unpriced' ? 'unpriced' : dollars(u.spend_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="meta">
        {`Total ${dollars(usage.spend_usd)}`}
        {usage.unpriced === undefined ? '' : `, and the unpriced tokens of ${usage.unpriced.join(', ')}`}
        {usage.estimated ? ' (some tokens estimated: the upstream sent no count)' : ''}
        {usage.own === undefined ? '' : `; its own ${dollars(usage.own.spend_usd)}, the threads it spawned ${dollars(usage.children?.spend_usd ?? 0)}`}
      </p>
    </section>
  );
}

/** US dollars, with the digits a fraction of a cent needs. */
export const dollars = (usd: number): string => `$${usd.toFixed(usd > 0 && usd < 0.01 ? 6 : 4)}`;
