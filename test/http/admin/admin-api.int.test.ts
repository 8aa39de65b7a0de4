import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../../src/clients/key-store.js';
import { addShipRelease, chatThatWaits } from '../../helpers/waiting-chat.js';
import { serveDemoGateway, type DemoGateway } from '../../helpers/demo-gateway.js';

/**
 * The admin API's keys, approvals, executions and counters, on the whole gateway as `kiwi serve`
 * wires it (a copy of the demo `.ai/` with keys, so every request needs one; the upstream is a
 * local server replaying recorded streams). Each area is tried with every kind of key.
 */

let served: DemoGateway;
let url: string;
const keys: Record<'admin' | 'approver' | 'alice' | 'bob' | 'aliceApprover', string> = { admin: '', approver: '', alice: '', bob: '', aliceApprover: '' };

beforeAll(async () => {
  served = await serveDemoGateway({ prefix: 'kiwi-admin-', prepare: addShipRelease });
  url = served.server.url;
  const file = path.join(served.root, KEY_FILE);
  keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
  keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
  keys.alice = (await createKey(file, 'alice')).key;
  keys.bob = (await createKey(file, 'bob')).key;
  // A client that may also answer approvals, only not its own.
  keys.aliceApprover = (await createKey(file, 'alice', { roles: ['client', 'approver'] })).key;
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function call(method: string, route: string, key: string | undefined, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) };
  const res = await fetch(`${url}${route}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const ROUTES: [method: string, route: string, admin: boolean][] = [
  ['GET', '/admin/v1/keys', true],
  ['POST', '/admin/v1/keys', true],
  ['DELETE', '/admin/v1/keys/key_00000000', true],
  ['GET', '/admin/v1/counters', true],
  ['GET', '/admin/v1/approvals', false],
  ['POST', '/admin/v1/approvals/step-1', false],
  ['GET', '/admin/v1/executions', false],
  ['GET', '/admin/v1/executions/x-1', false],
];

describe('the doors of /admin/v1', () => {
  it('no key is 401 and a client key is 403 on every route, naming the role it takes', async () => {
    for (const [method, route, adminOnly] of ROUTES) {
      expect((await call(method, route, undefined, method === 'GET' ? undefined : {})).status, `${method} ${route}`).toBe(401);
      const refused = await call(method, route, keys.alice, method === 'GET' ? undefined : {});
      expect(refused.status, `${method} ${route}`).toBe(403);
      expect(refused.json).toMatchObject({ code: 'FORBIDDEN', error: expect.stringContaining(adminOnly ? 'the admin role' : 'the approver or admin role') });
    }
  });

  it('an approver key gets approvals and executions, and 403 on keys and counters', async () => {
    for (const [method, route, adminOnly] of ROUTES.filter(([m]) => m === 'GET')) {
      const r = await call(method, route, keys.approver);
      if (adminOnly) expect(r.status, route).toBe(403);
      else expect(r.status, route).not.toBe(403);
    }
  });

  it('a wrong key is 401, and so is a revoked one, at once', async () => {
    expect((await call('GET', '/admin/v1/keys', 'kiwi_00000000_nope')).status).toBe(401);
  });
});

describe('keys', () => {
  it('lists keys without their hashes', async () => {
    const r = await call('GET', '/admin/v1/keys', keys.admin);
    expect(r.status).toBe(200);
    const listed = r.json['keys'] as Record<string, unknown>[];
    expect(listed.map((k) => k['client'])).toEqual(expect.arrayContaining(['ops', 'reviewer', 'alice', 'bob']));
    expect(JSON.stringify(r.json)).not.toMatch(/sha256:/);
  });

  it('creates a key that works at once, and revokes it so that its next request is 401', async () => {
    const made = await call('POST', '/admin/v1/keys', keys.admin, { client: 'carol', roles: ['client'] });
    expect(made.status).toBe(201);
    const key = String(made.json['key']);
    const record = made.json['record'] as Record<string, unknown>;
    expect(record).toMatchObject({ client: 'carol', roles: ['client'] });
    expect(record['hash']).toBeUndefined();
    expect((await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    const revoked = await call('DELETE', `/admin/v1/keys/${String(record['id'])}`, keys.admin);
    expect(revoked.status).toBe(200);
    expect((revoked.json['revoked'] as unknown[]).length).toBe(1);
    expect((await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    // Revoked already: nothing more to revoke.
    expect((await call('DELETE', `/admin/v1/keys/${String(record['id'])}`, keys.admin)).json).toEqual({ revoked: [] });
  });

  it('refuses bad keys with what to fix', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /client is required/],
      [{ client: 'bad name!' }, /client name .* is not valid/],
      [{ client: 'local' }, /keyless local operator/],
      [{ client: 'x', roles: ['root'] }, /unknown role/],
      [{ client: 'x', roles: 'admin' }, /roles must be a list of strings/],
      [{ client: 'x', roles: ['agent'] }, /must name the agent ids/],
      [{ client: 'x', roles: Array.from({ length: 65 }, () => 'client') }, /at most 64/],
      [{ client: 'x', policy: '.ai/config/clients/missing.yaml' }, /does not exist/],
      [{ client: 'x', policy: '../outside.yaml' }, /does not exist|outside the project/],
      ['[1, 2]', /must be a JSON object/],
      ['{not json', /JSON/],
      [JSON.stringify({ client: 'x', pad: 'x'.repeat(70 * 1024) }), /larger than the gateway's limit of 65536 bytes/],
    ];
    for (const [body, message] of cases) {
      const r = await call('POST', '/admin/v1/keys', keys.admin, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json['error'], JSON.stringify(body)).toMatch(message);
    }
  });

  it('takes a policy file only inside the project, after links are followed, and only when it parses', async () => {
    const clients = path.join(served.root, '.ai', 'config', 'clients');
    mkdirSync(clients, { recursive: true });
    writeFileSync(path.join(clients, 'dave.yaml'), 'version: 1\ntools: [read_file]\n');
    const made = await call('POST', '/admin/v1/keys', keys.admin, { client: 'dave', policy: '.ai/config/clients/dave.yaml' });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    expect((made.json['record'] as Record<string, unknown>)['policy']).toBe('.ai/config/clients/dave.yaml');

    const outside = path.join(tmpdir(), `kiwi-admin-outside-${process.pid}.yaml`);
    writeFileSync(outside, 'version: 1\n');
    symlinkSync(outside, path.join(clients, 'escape.yaml'));
    const escaped = await call('POST', '/admin/v1/keys', keys.admin, { client: 'eve', policy: '.ai/config/clients/escape.yaml' });
    expect(escaped.status).toBe(400);
    expect(escaped.json['error']).toMatch(/outside the project/);

    // A secret is never read as a policy, even through a link: its parse error would quote it.
    writeFileSync(path.join(served.root, '.env'), 'OPENAI_API_KEY=sk-live-do-not-leak\n');
    symlinkSync(path.join(served.root, '.env'), path.join(clients, 'env-link.yaml'));
    for (const policy of ['.env', '.ai/config/clients/env-link.yaml', '.git/config']) {
      const secret = await call('POST', '/admin/v1/keys', keys.admin, { client: 'mallory', policy });
      expect(secret.status, policy).toBe(400);
      expect(secret.json['error'], policy).toMatch(/is (an environment file|git metadata), not a policy file|does not exist/);
      expect(JSON.stringify(secret.json)).not.toContain('sk-live');
    }

    writeFileSync(path.join(clients, 'broken.yaml'), 'version: [\n');
    const broken = await call('POST', '/admin/v1/keys', keys.admin, { client: 'frank', policy: '.ai/config/clients/broken.yaml' });
    expect(broken.status).toBe(400);
  });

  it('revokes only by key id: another name is 400, an unknown id 404', async () => {
    expect((await call('DELETE', '/admin/v1/keys/alice', keys.admin)).status).toBe(400);
    expect((await call('DELETE', '/admin/v1/keys/key_ffffffff', keys.admin)).status).toBe(404);
    expect((await call('DELETE', `/admin/v1/keys/key_${'a'.repeat(300)}`, keys.admin)).status).toBe(400);
  });
});

describe('approvals', () => {
  it("lists a waiting call with its digest and expiry, refuses its own client's answer and a stale digest, and a grant lets it run", async () => {
    const chat = await chatThatWaits(url, served.llm, 'v7.1', keys.alice);
    const listed = await call('GET', '/admin/v1/approvals', keys.approver);
    expect(listed.status).toBe(200);
    const approval = (listed.json['approvals'] as Record<string, unknown>[]).find((a) => a['step_id'] === chat.stepId);
    expect(approval).toMatchObject({ execution_id: chat.executionId, client: 'alice', tool_id: 'ship_release', arguments: { version: 'v7.1' }, arguments_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), answerable: true });
    expect(Date.parse(String(approval?.['expires']))).toBeGreaterThan(Date.parse(String(approval?.['since'])));
    // Alice's own approver key sees it but may not answer it.
    const own = await call('GET', '/admin/v1/approvals', keys.aliceApprover);
    expect((own.json['approvals'] as Record<string, unknown>[]).find((a) => a['step_id'] === chat.stepId)?.['answerable']).toBe(false);
    const selfGrant = await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.aliceApprover, { decision: 'grant', arguments_digest: approval?.['arguments_digest'] });
    expect(selfGrant.status).toBe(403);

    expect((await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.approver, { decision: 'grant' })).status).toBe(400);
    const stale = await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.approver, { decision: 'grant', arguments_digest: `sha256:${'0'.repeat(64)}` });
    expect(stale.status).toBe(409);
    expect(stale.json['error']).toMatch(/not the one you saw/);
    expect((await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.approver, { decision: 'maybe' })).status).toBe(400);

    const granted = await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.approver, { decision: 'grant', arguments_digest: approval?.['arguments_digest'] });
    expect(granted).toMatchObject({ status: 200, json: { step_id: chat.stepId, decision: 'grant', tool_id: 'ship_release' } });
    expect(await chat.rest).toMatch(/shipped v7\.1[\s\S]*Done\./);
    // Answered: it waits no more.
    const again = await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.approver, { decision: 'grant', arguments_digest: approval?.['arguments_digest'] });
    expect(again.status).toBe(404);
    const after = await call('GET', '/admin/v1/approvals', keys.approver);
    expect((after.json['approvals'] as Record<string, unknown>[]).some((a) => a['step_id'] === chat.stepId)).toBe(false);
  });

  it('a denial with a reason stops the call, and the chat says so', async () => {
    const chat = await chatThatWaits(url, served.llm, 'v7.2', keys.bob);
    const denied = await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.admin, { decision: 'deny', reason: 'not on a Friday' });
    expect(denied.status).toBe(200);
    const rest = await chat.rest;
    expect(rest).not.toMatch(/shipped v7\.2/);
    expect(rest).toMatch(/not on a Friday|denied/i);
  });

  it('an unknown or malformed step is 404 or 400', async () => {
    expect((await call('POST', '/admin/v1/approvals/no-such-step', keys.admin, { decision: 'deny' })).status).toBe(404);
    expect((await call('POST', `/admin/v1/approvals/${'s'.repeat(300)}`, keys.admin, { decision: 'deny' })).status).toBe(400);
    expect((await call('POST', '/admin/v1/approvals/no-such-step', keys.admin, { decision: 'deny', reason: 'r'.repeat(2001) })).status).toBe(400);
  });
});

describe('executions', () => {
  it("lists every client's with whose it is, filters by client, and shows one with its events", async () => {
    const chat = await chatThatWaits(url, served.llm, 'v8.0', keys.bob);
    await call('POST', `/admin/v1/approvals/${chat.stepId}`, keys.admin, { decision: 'deny' });
    await chat.rest;
    const all = await call('GET', '/admin/v1/executions?limit=200', keys.approver);
    expect(all.status).toBe(200);
    const listed = all.json['executions'] as Record<string, unknown>[];
    expect(new Set(listed.map((e) => e['client']))).toEqual(new Set(['alice', 'bob']));
    const bobs = await call('GET', '/admin/v1/executions?client=bob&limit=200', keys.admin);
    expect((bobs.json['executions'] as Record<string, unknown>[]).every((e) => e['client'] === 'bob')).toBe(true);
    expect((bobs.json['executions'] as Record<string, unknown>[]).some((e) => e['id'] === chat.executionId)).toBe(true);

    await expect.poll(async () => ((await call('GET', `/admin/v1/executions/${chat.executionId}`, keys.approver)).json['execution'] as Record<string, unknown>)['status'], { timeout: 10_000 }).toBe('completed');
    const one = await call('GET', `/admin/v1/executions/${chat.executionId}`, keys.approver);
    expect(one.json['execution']).toMatchObject({ id: chat.executionId, client: 'bob', agent_id: 'gateway' });
    expect((one.json['events'] as Record<string, unknown>[]).map((e) => e['type'])).toEqual(expect.arrayContaining(['execution.created', 'step.approval_required', 'execution.completed']));
  });

  it('refuses a bad status, and an unknown or malformed id', async () => {
    expect((await call('GET', '/admin/v1/executions?status=sleeping', keys.admin)).status).toBe(400);
    expect((await call('GET', '/admin/v1/executions/019999aa-0000-7000-8000-000000000000', keys.admin)).status).toBe(404);
    expect((await call('GET', `/admin/v1/executions/${'%00'}`, keys.admin)).status).toBe(400);
    expect((await call('GET', `/admin/v1/executions?client=${'c'.repeat(300)}`, keys.admin)).status).toBe(400);
  });
});

describe('counters', () => {
  it('answers the gateway counters to an admin', async () => {
    const r = await call('GET', '/admin/v1/counters', keys.admin);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ uptime_s: expect.any(Number), prefetch: expect.any(Object) });
  });
});
