import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toBudgetConfig } from '../../../src/budgets/budget-config.js';
import { createMemoryBudgetHolds } from '../../../src/budgets/budget-holds.js';
import { openBudgetLedger, type BudgetLedger } from '../../../src/budgets/budget-ledger.js';
import { createBudgetUsage } from '../../../src/budgets/budget-usage.js';
import { LOCAL_CALLER } from '../../../src/clients/client-auth.js';
import type { AdminRoute } from '../../../src/http/admin/admin-route.js';
import { mountAdminUsage, type AdminUsage } from '../../../src/http/admin/admin-usage.js';
import { apiError } from '../../../src/http/server/json-api.js';

/** The usage area's answers for the configs a gateway in one test file cannot all have: nothing metered, prices alone. */

const route: AdminRoute = (_area, handler) => async (c) => {
  try {
    return await handler(c, LOCAL_CALLER);
  } catch (error) {
    return apiError(c, error, (bug) => {
      throw bug;
    });
  }
};

function app(usage: AdminUsage): Hono {
  const hono = new Hono();
  mountAdminUsage(hono, route, usage);
  return hono;
}

const get = async (hono: Hono, query = ''): Promise<{ status: number; json: Record<string, unknown> }> => {
  const response = await hono.request(`/admin/v1/usage${query}`);
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
};

let dir: string;
let ledger: BudgetLedger;
beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kiwi-admin-usage-'));
  ledger = await openBudgetLedger({ dir, retainMs: 24 * 3_600_000 });
});
afterEach(async () => {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /admin/v1/usage', () => {
  it('says plainly that nothing is metered when the config has no prices, budgets or max_spend_usd', async () => {
    const { status, json } = await get(app({ holdsWhere: 'this process', keyClients: async () => ['ci'] }));
    expect(status).toBe(200);
    expect(json).toEqual({ budgets: 'none configured', metered: false, note: expect.stringMatching(/^nothing is metered: .*add prices:/), clients: [] });
  });

  it('shows the use a config with prices alone counts, each client without a budget', async () => {
    const config = toBudgetConfig({ 'gpt-*': { input_per_mtok: 1, output_per_mtok: 2 } }, undefined, undefined);
    ledger.record({ at: Date.now(), client: 'local', input: 1_000_000, output: 500_000, usd: 2, toolCalls: 0, spawns: 0, turns: 1 });
    const usage = createBudgetUsage({ config, ledger, holds: createMemoryBudgetHolds({ ttlMs: 60_000 }), retainMs: 24 * 3_600_000 });
    const hono = app({ budgets: { usage, config, ledgerWhere: dir }, holdsWhere: 'this process', keyClients: async () => ['ci'] });
    const { json } = await get(hono);
    expect(json).toMatchObject({ budgets: 'none configured', metered: true, ledger: dir, note: expect.stringMatching(/no client has a budget/), more: false });
    expect(json['clients']).toEqual([
      expect.objectContaining({ client: 'ci', window: '1d', used: expect.objectContaining({ tokens: 0 }), budget: null }),
      expect.objectContaining({ client: 'local', used: expect.objectContaining({ tokens: 1_500_000, spend_usd: 2, turns: 1 }), budget: null }),
    ]);
    // A window is checked even when no client would be shown.
    expect(await get(hono, '?window=40d')).toMatchObject({ status: 400, json: { code: 'VALIDATION_ERROR' } });
  });
});
