import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../../src/audit/audit-reader.js';
import { createKey, KEY_FILE } from '../../../src/clients/key-store.js';
import { serveDemoGateway, type DemoGateway } from '../../helpers/demo-gateway.js';
import { openAiStream } from '../../helpers/openai-sse.js';

/**
 * The admin API's usage, policy, tools and playground areas on `kiwi serve`'s gateway over a copy
 * of the demo `.ai/`, booted once for the file: an admin key, an approver key, and a client key
 * whose policy file grants read_file alone, under a token budget.
 */

let served: DemoGateway;
let url: string;
const keys = { admin: '', approver: '', client: '', clientId: '' };

beforeAll(async () => {
  served = await serveDemoGateway({
    config: ['budgets:', '  clients:', '    ci: { tokens: 100000, window: 1h }'].join('\n'),
    async prepare(root) {
      mkdirSync(path.join(root, '.ai', 'config', 'clients'), { recursive: true });
      writeFileSync(path.join(root, '.ai', 'config', 'clients', 'ci.yaml'), 'version: 1\ntools: [read_file]\n');
    },
  });
  url = `${served.server.url}/admin/v1`;
  const file = path.join(served.root, KEY_FILE);
  keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
  keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
  const client = await createKey(file, 'ci', { roles: ['client'], policy: '.ai/config/clients/ci.yaml' });
  keys.client = client.key;
  keys.clientId = client.record.id;
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function call(route: string, options: { key?: string; body?: unknown } = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const key = options.key ?? keys.admin;
  const response = await fetch(`${url}${route}`, {
    method: options.body === undefined ? 'GET' : 'POST',
    headers: { ...(key === '' ? {} : { authorization: `Bearer ${key}` }), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

type Row = Record<string, unknown>;

describe('who may use the usage, policy, tools and playground areas', () => {
  it('lets an admin key in, refuses approver and client keys (403, naming the role) and a request without a key (401)', async () => {
    const routes: [string, unknown?][] = [['/usage'], [`/keys/${keys.clientId}/policy`], ['/tools'], ['/playground', { intent: 'show the git log' }]];
    for (const [route, body] of routes) {
      expect((await call(route, { body })).status, route).toBe(200);
      for (const key of [keys.approver, keys.client]) {
        const refused = await call(route, { key, body });
        expect(refused, route).toMatchObject({ status: 403, json: { code: 'FORBIDDEN', error: expect.stringMatching(/need a key with the admin role/) } });
      }
      expect(await call(route, { key: '', body }), route).toMatchObject({ status: 401, json: { code: 'UNAUTHORIZED' } });
    }
    // The approver's own areas stay open to it.
    expect((await call('/approvals', { key: keys.approver })).status).toBe(200);
  }, 60_000);
});

describe('GET /admin/v1/usage', () => {
  it("shows what a client used in its budget's window, its limit and what is left", async () => {
    served.llm.replyOnce(openAiStream(['Hello.'], { usage: [120, 30] }));
    const chat = await fetch(`${served.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.client}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(200);
    await served.gateway.budgets?.settled();

    const { status, json } = await call('/usage');
    expect(status).toBe(200);
    expect(json).toMatchObject({ budgets: 'configured', metered: true, ledger: expect.stringMatching(/budgets$/), held_in: 'this process', more: false });
    const clients = json['clients'] as Row[];
    // Every key's client is listed, used or not.
    expect(clients.map((c) => c['client'])).toEqual(expect.arrayContaining(['ci', 'ops', 'reviewer']));
    const ci = clients.find((c) => c['client'] === 'ci');
    expect(ci).toMatchObject({
      window: '1h',
      used: { tokens: 150, turns: 1, tool_calls: 0, spend_usd: 0, unpriced_tokens: 150 },
      held: { tokens: 0, spend_usd: 0 },
      budget: { field: 'budgets.clients.ci', window: '1h', limits: { tokens: 100000 }, used: { tokens: 150 }, left: { tokens: 99850 }, reached: null },
    });
    expect(clients.find((c) => c['client'] === 'ops')).toMatchObject({ window: '1d', used: { tokens: 0 }, budget: null });
  });

  it('shows one client over the window asked, and refuses a window or client name it cannot use', async () => {
    const one = await call('/usage?client=ci&window=2h');
    expect(one.json['clients']).toEqual([expect.objectContaining({ client: 'ci', window: '2h', used: expect.objectContaining({ tokens: 150 }) })]);
    expect(await call('/usage?window=week')).toMatchObject({ status: 400, json: { code: 'VALIDATION_ERROR', error: expect.stringMatching(/window "week" is not a number of hours or days/) } });
    expect(await call('/usage?window=7d')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/window 7d is longer than the ledger keeps \(24h/) } });
    expect(await call('/usage?client=no%20such')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/client must be a client's name/) } });
  });
});

describe('GET /admin/v1/keys/{id}/policy', () => {
  it("shows a client key's grants and, tool by tool, what its policy file allows and denies and why", async () => {
    const { status, json } = await call(`/keys/${keys.clientId}/policy?limit=200`);
    expect(status).toBe(200);
    expect(json).toMatchObject({ key: { id: keys.clientId, client: 'ci', roles: ['client'], policy: '.ai/config/clients/ci.yaml' }, served: true, next_cursor: null });
    expect(json['key']).not.toHaveProperty('hash');
    const grants = (json['policy'] as { grants: Row[] }).grants;
    expect(grants).toEqual([
      { by: expect.stringMatching(/^client ci \(policy .*ci\.yaml\)$/), tools: ['read_file'] },
      { by: expect.stringMatching(/^policy .*policy\.yaml$/), tools: expect.arrayContaining(['read_file', 'git_log']) },
    ]);
    const tools = json['tools'] as Row[];
    expect(tools.find((t) => t['id'] === 'read_file')).toMatchObject({ allowed: true, reason: expect.stringMatching(/^allowed by client ci/) });
    // Granted by the project, denied by the key's own file.
    expect(tools.find((t) => t['id'] === 'git_log')).toEqual({ id: 'git_log', allowed: false, reason: expect.stringMatching(/^denied by client ci \(policy .*ci\.yaml\): tool `git_log` is not in `tools`/) });
    expect(tools.find((t) => t['id'] === 'node_runtime')).toMatchObject({ allowed: false, reason: expect.stringMatching(/cannot be called directly/) });
    expect(json['total']).toBe(tools.length);
  });

  it('shows what an admin key may do: the project policy, with the calls that wait for a person', async () => {
    const listed = (await call('/keys')).json['keys'] as Row[];
    const adminId = listed.find((k) => k['client'] === 'ops')?.['id'] as string;
    const tools = (await call(`/keys/${adminId}/policy?limit=200`)).json['tools'] as Row[];
    expect(tools.find((t) => t['id'] === 'git_log')).toMatchObject({ allowed: true });
    expect(tools.find((t) => t['id'] === 'save_note')).toMatchObject({ allowed: true, approval: expect.stringMatching(/requires_approval/) });
    // An approver key makes no calls at all.
    const approverId = listed.find((k) => k['client'] === 'reviewer')?.['id'] as string;
    const approver = (await call(`/keys/${approverId}/policy`)).json['tools'] as Row[];
    expect(approver.every((t) => t['allowed'] === false && /client role/.test(String(t['reason'])))).toBe(true);
  });

  it('pages, and answers an unknown key 404, an id that is not a key 400, and a bad limit or cursor 400', async () => {
    const first = await call(`/keys/${keys.clientId}/policy?limit=2`);
    const second = await call(`/keys/${keys.clientId}/policy?limit=2&cursor=${String(first.json['next_cursor'])}`);
    const ids = (page: { json: Row }) => (page.json['tools'] as Row[]).map((t) => t['id'] as string);
    expect(ids(first)).toHaveLength(2);
    expect(ids(second)[0]! > ids(first)[1]!).toBe(true);
    expect(await call('/keys/key_ffffffff/policy')).toMatchObject({ status: 404, json: { code: 'NOT_FOUND', error: expect.stringMatching(/not found: key key_ffffffff/) } });
    expect(await call('/keys/ci/policy')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/is not a key id; key ids start with key_/) } });
    for (const query of ['limit=0', 'limit=abc', 'limit=201']) {
      expect(await call(`/keys/${keys.clientId}/policy?${query}`), query).toMatchObject({ status: 400, json: { error: expect.stringMatching(/limit must be a whole number from 1 to 200/) } });
    }
    expect(await call(`/keys/${keys.clientId}/policy?cursor=${encodeURIComponent('../x y')}`)).toMatchObject({ status: 400, json: { error: expect.stringMatching(/cursor .* is not one this API gave/) } });
  });
});

describe('GET /admin/v1/tools', () => {
  it('lists the catalog with read-only, approval and parameters, found by a piece of id or description, in pages', async () => {
    const { json } = await call('/tools?limit=200');
    const tools = json['tools'] as Row[];
    expect(json['next_cursor']).toBeNull();
    expect(tools.find((t) => t['id'] === 'read_file')).toMatchObject({
      type: 'script',
      read_only: true,
      requires_approval: false,
      parameters: { type: 'object', properties: { path: expect.objectContaining({ type: 'string' }) }, required: ['path'] },
    });
    expect(tools.find((t) => t['id'] === 'save_note')).toMatchObject({ read_only: false, requires_approval: true, approval: expect.stringMatching(/requires_approval/) });

    const git = await call('/tools?q=GIT');
    expect((git.json['tools'] as Row[]).map((t) => t['id'])).toEqual(['git_diff', 'git_log', 'git_status']);
    expect(git.json['total']).toBe(3);
    const page = await call('/tools?q=git&limit=2');
    expect(page.json['next_cursor']).toBe('git_log');
    expect((await call('/tools?q=git&limit=2&cursor=git_log')).json).toMatchObject({ tools: [{ id: 'git_status' }], next_cursor: null });
  });

  it('refuses a bad limit, cursor or query with what to send', async () => {
    expect(await call('/tools?limit=-1')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/limit must be a whole number from 1 to 200/) } });
    expect(await call('/tools?cursor=%E2%80%A6')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/next_cursor of the page before/) } });
    expect(await call(`/tools?q=${'x'.repeat(201)}`)).toMatchObject({ status: 400, json: { error: expect.stringMatching(/at most 200 characters/) } });
  });
});

describe('POST /admin/v1/playground', () => {
  /** What was run or recorded so far: audit records and executions. */
  async function traces(): Promise<{ audit: number; executions: number }> {
    await served.gateway.project.audit.flush();
    const audit = await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 1000 });
    const executions = (await call('/executions?limit=200')).json['executions'] as Row[];
    return { audit: audit.length, executions: executions.length };
  }

  it('shows the candidates with their scores, the call, the gates and the decision, and runs nothing', async () => {
    const before = await traces();
    const { status, json } = await call('/playground', { body: { intent: 'read_file {"path": "package.json"}' } });
    expect(status).toBe(200);
    expect(json).toMatchObject({ intent: 'read_file {"path": "package.json"}', rights_of: { client: 'ops' }, plan: 'single', ran: false, gates: { threshold: expect.any(Number), target_precision: expect.any(Number), calibrated: expect.any(Boolean) } });
    const [step] = json['steps'] as Row[];
    expect(step).toMatchObject({
      decision: 'resolved',
      call: { tool: 'read_file', arguments: { path: 'package.json' } },
      confidence: 1,
      policy: { tool: 'read_file', allowed: true },
      candidates: [{ tool: 'read_file', score: expect.any(Number), allowed: true }],
    });

    const plain = await call('/playground', { body: { intent: 'show the recent commits in the git history' } });
    const [words] = plain.json['steps'] as Row[];
    const candidates = (words as Row)['candidates'] as Row[];
    expect(candidates.length).toBeGreaterThan(1);
    expect(candidates.map((c) => c['tool'])).toContain('git_log');
    for (const c of candidates) expect(c['score']).toEqual(expect.any(Number));
    expect(['resolved', 'asked_back', 'unresolved']).toContain((words as Row)['decision']);

    expect(await traces()).toEqual(before);
  });

  it("answers for another key's rights when asked: its policy file denies what the project allows", async () => {
    const { json } = await call('/playground', { body: { intent: 'git_log {}', client: keys.clientId } });
    expect(json['rights_of']).toEqual({ client: 'ci', key: keys.clientId });
    const [step] = json['steps'] as Row[];
    expect(step).toMatchObject({ decision: 'resolved', call: { tool: 'git_log' }, policy: { tool: 'git_log', allowed: false, reason: expect.stringMatching(/^denied by client ci/) } });
  });

  it('refuses an intent it cannot take, and a client that is not a known key, saying what to send', async () => {
    expect(await call('/playground', { body: { intent: 'x'.repeat(2001) } })).toMatchObject({ status: 400, json: { code: 'VALIDATION_ERROR', error: 'intent is 2001 characters, over the 2000 the playground takes; an agent\'s intent is a sentence or two' } });
    expect(await call('/playground', { body: {} })).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^intent is required/) } });
    expect(await call('/playground', { body: { intent: '   ' } })).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^intent is empty/) } });
    expect(await call('/playground', { body: { intent: 'read it', client: 'key_ffffffff' } })).toMatchObject({ status: 404, json: { error: expect.stringMatching(/not found: key key_ffffffff/) } });
    expect(await call('/playground', { body: { intent: 'read it', client: 'ci' } })).toMatchObject({ status: 400, json: { error: expect.stringMatching(/is not a key id/) } });
    expect(await call('/playground', { body: { intent: 'read it', context: 7 } })).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^context must be a text/) } });
  });
});
