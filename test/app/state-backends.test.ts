import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUDGET_STATE_DIR, openStateBackends } from '../../src/app/state-backends.js';

const root = mkdtempSync(path.join(tmpdir(), 'kiwi-state-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('where a project keeps its shared state, without DATABASE_URL (app/state-backends.ts)', () => {
  it("keeps keys, audit records, budgets and threads in the project's .ai/, and opens no database", async () => {
    const state = await openStateBackends(root, { DATABASE_URL: '' });
    expect(state.database).toBeUndefined();
    expect(state.auditLog).toBeUndefined();
    expect(state.keys().where).toBe(path.join(root, '.ai', 'state', 'keys.json'));
    expect(state.where).toEqual({ audit: path.join(root, '.ai', 'logs', 'audit'), budgets: path.join(root, BUDGET_STATE_DIR) });
    expect(await state.auditTail({ limit: 5 })).toEqual([]);
    expect(await state.threads().list(5)).toEqual([]);
    await state.close();
  });
});
