import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/app/gateway-config.js';
import { priceFor } from '../../src/budgets/prices.js';
import { failure } from '../helpers/expect-failure.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-budget-config-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
function configFile(text: string): string {
  const file = path.join(root, `gateway-${++counter}.yaml`);
  writeFileSync(file, text);
  return file;
}
const load = (text: string) => loadGatewayConfig(configFile(text), { env: {}, root });
async function refused(text: string): Promise<string> {
  const file = configFile(text);
  const error = await failure(loadGatewayConfig(file, { env: {}, root }), 'INVALID_INPUT');
  return error.message.replace(path.basename(file), 'FILE');
}

const UPSTREAM = 'upstreams:\n  - { name: up, kind: openai, base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o-mini", "claude-*"] }\n';

describe('gateway config: prices and budgets', () => {
  it('reads prices (ids and globs, in order), the default and per-client budgets with their windows, and limits.max_spend_usd', async () => {
    const c = await load(
      [
        'prices:',
        '  "gpt-4o-mini": { input_per_mtok: 0.15, output_per_mtok: 0.6 }',
        '  "gpt-*": { input_per_mtok: 2.5, output_per_mtok: 10 }',
        'budgets:',
        '  default: { spend_usd: 5, tokens: 2000000, tool_calls: 500 }',
        '  clients:',
        '    ci-bot: { spend_usd: 1, window: 12h }',
        'limits:',
        '  max_spend_usd: 0.5',
      ].join('\n'),
    );
    expect(c.budgets.prices.map((p) => p.pattern)).toEqual(['gpt-4o-mini', 'gpt-*']);
    expect(priceFor(c.budgets.prices, 'gpt-4o')).toEqual({ inputPerMtok: 2.5, outputPerMtok: 10 });
    expect(priceFor(c.budgets.prices, 'gpt-4o-mini')).toEqual({ inputPerMtok: 0.15, outputPerMtok: 0.6 });
    expect(c.budgets.default).toEqual({ limits: { spendUsd: 5, tokens: 2_000_000, toolCalls: 500 }, window: '1d', windowMs: 86_400_000, field: 'budgets.default' });
    expect(c.budgets.clients.get('ci-bot')).toEqual({ limits: { spendUsd: 1 }, window: '12h', windowMs: 43_200_000, field: 'budgets.clients.ci-bot' });
    expect(c.budgets.requestSpendUsd).toBe(0.5);
  });

  it('has no prices and no budgets by default; max_spend_usd 0 is no limit', async () => {
    const c = await load('limits:\n  max_spend_usd: 0\n');
    expect(c.budgets).toEqual({ prices: [], clients: new Map() });
  });

  it('warns at start about each upstream model a spend budget would refuse for want of a price', async () => {
    const c = await load(`${UPSTREAM}prices:\n  "gpt-*": { input_per_mtok: 1, output_per_mtok: 1 }\nbudgets:\n  clients:\n    ci: { spend_usd: 1 }\n`);
    expect(c.warnings).toEqual([expect.stringMatching(/^upstream "up" serves "claude-\*" with no price in `prices` of .*: a budget counts spend, so requests for such a model are refused until it is priced$/)]);
    const tokensOnly = await load(`${UPSTREAM}budgets:\n  clients:\n    ci: { tokens: 1000 }\n`);
    expect(tokensOnly.warnings).toEqual([]);
  });

  it.each([
    ['prices:\n  gpt-4o: { input_per_mtok: -1, output_per_mtok: 1 }\n', /^FILE:2:29: prices\.gpt-4o\.input_per_mtok: must be 0 or more; see the comments/],
    ['prices:\n  gpt-4o: { input_per_mtok: 1 }\n', /^FILE:2:11: prices\.gpt-4o\.output_per_mtok: must be US dollars per million tokens, e\.g\. 0\.15/],
    ['prices:\n  gpt-4o: { input: 1, output_per_mtok: 1 }\n', /^FILE:2:13: prices\.gpt-4o\.input: unknown field/],
    ['prices:\n  gpt-4o: 0.15\n', /prices\.gpt-4o: must be \{ input_per_mtok: N, output_per_mtok: N \} in US dollars per million tokens/],
    ['budgets:\n  clients:\n    ci: { spend: 5 }\n', /^FILE:3:11: budgets\.clients\.ci\.spend: unknown field/],
    ['budgets:\n  clients:\n    ci: { spend_usd: "5$" }\n', /^FILE:3:22: budgets\.clients\.ci\.spend_usd: must be a number of US dollars/],
    ['budgets:\n  clients:\n    ci: { tokens: 1.5 }\n', /budgets\.clients\.ci\.tokens: must be a whole number of tokens/],
    ['budgets:\n  clients:\n    ci: { tokens: 10, window: 2w }\n', /^FILE:3:31: budgets\.clients\.ci\.window: must be hours or days, e\.g\. 1h, 12h, 1d or 7d/],
    ['budgets:\n  default: { tokens: 10, window: 40d }\n', /budgets\.default\.window: must be at most 31 days/],
    ['budgets:\n  clients:\n    "ci bot": { tokens: 10 }\n', /budgets\.clients\.ci bot: must be a client name as `kiwi keys create NAME` takes it/],
    ['budgets:\n  client:\n    ci: { tokens: 10 }\n', /budgets\.client: unknown field \(did you mean "clients"\?\)/],
    ['limits:\n  max_spend_usd: -1\n', /^FILE:2:18: limits\.max_spend_usd: must be 0 \(no limit\) or more/],
  ])('%j', async (text, message) => {
    expect(await refused(text)).toMatch(message);
  });
});
