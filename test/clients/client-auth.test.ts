import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClientAuth, type ClientAuth } from '../../src/clients/client-auth.js';
import { createKey, fileKeyStore, readKeyFile, revokeKeys } from '../../src/clients/key-store.js';
import { isLoopbackHost } from '../../src/clients/loopback.js';
import { createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { createTempProject, type TempProject } from '../helpers/temp-project.js';

let temp: TempProject;
let file: string;
let clock: number;

beforeEach(() => {
  temp = createTempProject();
  file = path.join(temp.root, '.ai', 'state', 'keys.json');
  clock = 0;
});

afterEach(() => temp.remove());

function auth(openWithoutKeys = true): ClientAuth {
  const policy = createPermissionContext(temp.root, { ...emptyRules(), tools: ['*'] }, 'policy test');
  return createClientAuth({ root: temp.root, store: fileKeyStore(file), policy, openWithoutKeys, recheckMs: 1000, now: () => clock });
}

describe('client auth', () => {
  it('serves the local client on loopback while no key exists, and nobody elsewhere', async () => {
    // One person's machine: the local operator holds every role.
    expect(await auth(true).authenticate({})).toEqual({ ok: true, caller: { client: 'local', roles: ['client', 'agent', 'runner', 'approver', 'admin'], agents: ['*'], tools: ['*'] } });
    expect(await auth(true).mode()).toEqual({ mode: 'open', activeKeys: 0, clients: 0 });
    const closed = await auth(false).authenticate({ authorization: 'Bearer anything' });
    expect(closed).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/no active client keys.*kiwi keys create NAME/) });
    expect((await auth(false).mode()).mode).toBe('closed');
  });

  it('takes a key from Authorization: Bearer or x-api-key, and refuses missing, wrong, malformed and conflicting ones', async () => {
    const { key } = await createKey(file, 'ci-bot');
    const a = auth();
    // A key made without roles is a client's, and nothing more.
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toEqual({ ok: true, caller: { client: 'ci-bot', roles: ['client'] }, key: { id: expect.stringMatching(/^key_/), hash: expect.stringMatching(/^sha256:/) } });
    expect(await a.authenticate({ apiKey: key })).toMatchObject({ ok: true, caller: { client: 'ci-bot' } });
    expect(await a.authenticate({ authorization: `bearer  ${key} ` })).toMatchObject({ ok: true });
    expect(await a.authenticate({})).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/needs a client key/) });
    expect(await a.authenticate({ authorization: `Bearer ${key}x` })).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/not valid/) });
    expect(await a.authenticate({ authorization: `Basic ${key}` })).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/not `Bearer KEY`/) });
    expect(await a.authenticate({ authorization: `Bearer ${key}`, apiKey: 'other' })).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/two different keys/) });
    expect(await a.authenticate({ apiKey: 'x'.repeat(10_000) })).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/too long/) });
    expect(await a.mode()).toEqual({ mode: 'keys', activeKeys: 1, clients: 1 });
  });

  it('refuses a key revoked through this gateway at once: changed() makes the next request read the store', async () => {
    const { key, record } = await createKey(file, 'ci-bot');
    await createKey(file, 'other');
    const a = auth();
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true });
    await revokeKeys(file, record.id);
    // Within the recheck interval the old view would stand; changed() ends it.
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true });
    expect(await a.keyById(record.id)).toMatchObject({ caller: { client: 'ci-bot' }, key: { id: record.id, hash: record.hash } });
    a.changed();
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: false, status: 401 });
    expect(await a.keyById(record.id)).toBeUndefined();
  });

  it('sees keys created and revoked on a running gateway once the file changed and a second passed', async () => {
    const a = auth();
    expect(await a.authenticate({})).toMatchObject({ ok: true, caller: { client: 'local' } });
    const { key } = await createKey(file, 'ci-bot');
    // Within the recheck interval the old view stands; after it, the new key locks the door.
    expect(await a.authenticate({})).toMatchObject({ ok: true });
    clock += 1000;
    expect(await a.authenticate({})).toMatchObject({ ok: false, status: 401 });
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true, caller: { client: 'ci-bot' } });
    expect(await revokeKeys(file, 'ci-bot')).toHaveLength(1);
    expect(await revokeKeys(file, 'ci-bot')).toHaveLength(0);
    clock += 1000;
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: false, status: 401 });
  });

  it('takes a key made after its last look (made through another replica), and a flood of wrong keys does not make it read the store each time', async () => {
    await createKey(file, 'first');
    const store = fileKeyStore(file);
    let stamps = 0;
    // A store shared by replicas: its looks are rationed (250 ms by default).
    const counted = { ...store, missRecheckMs: undefined, stamp: () => (stamps++, store.stamp()) };
    const policy = createPermissionContext(temp.root, { ...emptyRules(), tools: ['*'] }, 'policy test');
    const a = createClientAuth({ root: temp.root, store: counted, policy, openWithoutKeys: false, recheckMs: 60_000, now: () => clock });
    expect(await a.mode()).toMatchObject({ mode: 'keys', activeKeys: 1 });
    const { key } = await createKey(file, 'second');
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true, caller: { client: 'second' } });
    clock += 250;
    const before = stamps;
    const flood = await Promise.all(Array.from({ length: 50 }, (_, i) => a.authenticate({ authorization: `Bearer kiwi_00000000_wrong${i}` })));
    for (const refused of flood) expect(refused).toMatchObject({ ok: false, status: 401 });
    expect(stamps - before).toBe(1);
    clock += 250;
    await a.authenticate({ authorization: 'Bearer kiwi_00000000_wrong' });
    expect(stamps - before).toBe(2);
  });

  it('serves a key made just after another unknown key was looked up: it waits for the next look, it is not refused', async () => {
    await createKey(file, 'first');
    const a = auth(false);
    expect(await a.authenticate({ authorization: 'Bearer kiwi_00000000_wrong' })).toMatchObject({ ok: false, status: 401 });
    const { key } = await createKey(file, 'newcomer');
    // Within the 250 ms since that look (the test's clock stands still; the wait is real).
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true, caller: { client: 'newcomer' } });
  });

  it('open on loopback, serves the placeholder keys SDKs send without waiting, looking at the store at most every 250 ms', async () => {
    const store = fileKeyStore(file);
    let stamps = 0;
    // A store shared by replicas asks for the 250 ms throttle (the file's own looks are one stat: below).
    const counted = { ...store, missRecheckMs: 250, stamp: () => (stamps++, store.stamp()) };
    const policy = createPermissionContext(temp.root, { ...emptyRules(), tools: ['*'] }, 'policy test');
    const a = createClientAuth({ root: temp.root, store: counted, policy, openWithoutKeys: true, recheckMs: 60_000, now: () => clock });
    for (let i = 0; i < 20; i++) expect(await a.authenticate({ authorization: 'Bearer unused' })).toMatchObject({ ok: true, caller: { client: 'local' } });
    // The first look, and the one for the first placeholder key; none for the other 19.
    expect(stamps).toBe(2);
  });

  it('looks at a key file again for every unknown key, with no wait: a look is one stat, the file read only when it changed', async () => {
    await createKey(file, 'first');
    const store = fileKeyStore(file);
    let stamps = 0;
    let reads = 0;
    const counted = { ...store, stamp: () => (stamps++, store.stamp()), read: () => (reads++, store.read()) };
    const policy = createPermissionContext(temp.root, { ...emptyRules(), tools: ['*'] }, 'policy test');
    const a = createClientAuth({ root: temp.root, store: counted, policy, openWithoutKeys: false, recheckMs: 60_000, now: () => clock });
    for (let i = 0; i < 3; i++) expect(await a.authenticate({ authorization: `Bearer kiwi_00000000_wrong${i}` })).toMatchObject({ ok: false, status: 401 });
    expect({ stamps, reads }).toEqual({ stamps: 4, reads: 1 });
    const { key } = await createKey(file, 'second');
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true, caller: { client: 'second' } });
    expect(reads).toBe(2);
  });

  it('revoking the last key locks the gateway shut, not open, even on loopback', async () => {
    const { key } = await createKey(file, 'ci-bot');
    const a = auth(true);
    expect(await a.authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: true });
    await revokeKeys(file, 'ci-bot');
    clock += 1000;
    expect(await a.authenticate({})).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/no active client keys/) });
    expect(await a.mode()).toEqual({ mode: 'closed', activeKeys: 0, clients: 0 });
  });

  it('fails closed when the key file or a client policy cannot be used', async () => {
    const { key } = await createKey(file, 'ci-bot', { policy: '.ai/config/clients/ci-bot.yaml' });
    mkdirSync(path.join(temp.root, '.ai', 'config', 'clients'), { recursive: true });
    writeFileSync(path.join(temp.root, '.ai', 'config', 'clients', 'ci-bot.yaml'), 'version: 1\ntools: [x]\nfilesytem: {}\n');
    expect(await auth().authenticate({ authorization: `Bearer ${key}` })).toMatchObject({ ok: false, status: 403, message: expect.stringMatching(/policy of client ci-bot cannot be used.*filesytem/) });
    writeFileSync(file, '{"version": 1, "keys": [');
    const broken = await auth().authenticate({ authorization: `Bearer ${key}` });
    expect(broken).toMatchObject({ ok: false, status: 503, message: expect.stringMatching(/key store cannot be read.*not valid JSON/) });
    expect((await auth(true).mode()).mode).toBe('closed');
  });

  it("narrows the project policy with the client's own, never widens it", async () => {
    mkdirSync(path.join(temp.root, '.ai', 'config', 'clients'), { recursive: true });
    writeFileSync(path.join(temp.root, '.ai', 'config', 'clients', 'reader.yaml'), 'version: 1\ntools: [read_file]\n');
    const { key } = await createKey(file, 'reader', { policy: '.ai/config/clients/reader.yaml' });
    const result = await auth().authenticate({ apiKey: key });
    if (!result.ok) throw new Error(result.message);
    expect(result.caller.context?.label).toBe('client reader (policy .ai/config/clients/reader.yaml)');
    expect(result.caller.context?.parent?.label).toBe('policy test');
  });
});

describe('the key store', () => {
  it('refuses bad client names and unknown ids with the fix', async () => {
    await expect(createKey(file, 'bad name')).rejects.toThrow(/client name "bad name" is not valid: use 1 to 64 letters/);
    await expect(revokeKeys(file, 'nobody')).rejects.toThrow(/no key or client named "nobody"; `kiwi keys list`/);
  });

  it('reads a hand-edited or foreign file as an error that says so', async () => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ version: 1, keys: [{ id: 'key_00000000', client: 'x', hash: 'md5:abc', created: 'now' }] }));
    await expect(readKeyFile(file)).rejects.toThrow(/keys.0.hash .*do not edit it by hand/);
  });
});

describe('isLoopbackHost', () => {
  it('knows the loopback names and addresses, and nothing else', () => {
    for (const h of ['localhost', '127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'gateway.internal', '128.0.0.1', 'localhost.evil.example']) expect(isLoopbackHost(h), h).toBe(false);
  });

  it('gives a key the roles and scopes it was made with, and reads a key from before roles as a client', async () => {
    const { key: agent } = await createKey(file, 'support-bot', { roles: ['agent'], agents: ['support-*', 'triage'] });
    const { key: runner } = await createKey(file, 'ops', { roles: ['runner', 'client'], tools: ['read_file'] });
    const a = auth();
    expect(await a.authenticate({ apiKey: agent })).toMatchObject({ ok: true, caller: { client: 'support-bot', roles: ['agent'], agents: ['support-*', 'triage'] } });
    expect(await a.authenticate({ apiKey: runner })).toMatchObject({ ok: true, caller: { client: 'ops', roles: ['runner', 'client'], tools: ['read_file'] } });

    const old = { version: 1, keys: [{ id: 'key_0000abcd', client: 'legacy', hash: `sha256:${'0'.repeat(64)}`, created: '2026-01-01T00:00:00.000Z' }] };
    writeFileSync(file, JSON.stringify(old));
    expect((await readKeyFile(file)).keys[0]?.roles).toBeUndefined();
  });

  it('refuses a key that would serve nothing it names, or names what its roles do not use, with the fix', async () => {
    await expect(createKey(file, 'bot', { roles: ['agent'] })).rejects.toThrow(/agent role must name the agent ids it serves \(--agent NAME/);
    await expect(createKey(file, 'bot', { roles: ['runner'] })).rejects.toThrow(/runner role must name the tool ids it serves \(--tool NAME/);
    await expect(createKey(file, 'bot', { tools: ['read_file'] })).rejects.toThrow(/--tool goes with the runner role/);
    await expect(createKey(file, 'bot', { roles: ['agent'], agents: ['a*b'] })).rejects.toThrow(/not valid: an exact id, or a prefix ending in \*/);
    await expect(createKey(file, 'bot', { roles: ['agent'], agents: ['a\u0000'] })).rejects.toThrow(/not valid/);
    await expect(createKey(file, 'bot', { roles: ['root' as never] })).rejects.toThrow(/unknown role "root": use client, agent, runner, approver, admin/);
    await expect(createKey(file, 'local')).rejects.toThrow(/keyless local operator/);
    expect((await readKeyFile(file)).keys).toEqual([]);
  });
});
