import { describe, expect, it } from 'vitest';
import { createClientAuth } from '../../src/clients/client-auth.js';
import { sqlKeyStore } from '../../src/clients/sql-key-store.js';
import { createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { gatewayDatabaseForFile } from '../helpers/gateway-database.js';
import { postgresAvailable } from '../helpers/postgres-server.js';

/** Client keys in Postgres: two stores on one database stand for two gateways (or `kiwi keys` and a gateway). */
describe.skipIf(!postgresAvailable())('client keys in Postgres', () => {
  const pg = gatewayDatabaseForFile();


  it('keeps keys as the file does: hashed, with their roles and scopes, revoked by id or by client', async () => {
    const store = sqlKeyStore(pg.db, 'test db');
    const stamp0 = await store.stamp();
    const made = await store.create('ci-bot', { roles: ['client', 'agent'], agents: ['support-*'], policy: '.ai/config/clients/ci.yaml' });
    expect(made.key).toMatch(/^kiwi_[0-9a-f]{8}_/);
    const { keys } = await store.read();
    expect(keys).toEqual([made.record]);
    expect(JSON.stringify(keys)).not.toContain(made.key);
    const stamp1 = await store.stamp();
    expect(stamp1).not.toBe(stamp0);
    await store.create('ci-bot');
    expect(await store.revoke(made.record.id)).toMatchObject([{ id: made.record.id, revoked: expect.any(String) }]);
    expect(await store.revoke('ci-bot')).toHaveLength(1); // the other one; the first was already revoked
    expect(await store.revoke('ci-bot')).toEqual([]);
    expect(await store.stamp()).not.toBe(stamp1);
    await expect(store.revoke('nobody')).rejects.toThrow(/no key or client named "nobody"; `kiwi keys list` shows/);
    await expect(store.create('local')).rejects.toThrow(/keyless local operator/);
    await expect(store.create('bad name')).rejects.toThrow(/client name "bad name" is not valid/);
  });

  it('a key made through one gateway works on another at once, and a revoke within its next look', async () => {
    let clock = 0;
    const policy = createPermissionContext('/nonexistent', { ...emptyRules(), tools: ['*'] }, 'policy test');
    const [here, there] = [sqlKeyStore(pg.db, 'test db'), sqlKeyStore(pg.db, 'test db')];
    const auth = createClientAuth({ root: '/nonexistent', store: there, policy, openWithoutKeys: false, now: () => clock });
    await auth.mode(); // it has looked
    const { key, record } = await here.create('newcomer');
    expect(await auth.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true, caller: { client: 'newcomer', roles: ['client'] } });
    await here.revoke(record.id);
    clock += 1000;
    expect(await auth.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: false, status: 401 });
  });
});
