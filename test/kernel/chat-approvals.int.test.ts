import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { allowTools } from '../helpers/demo-project.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * A chat's call that needs a person: the client's stream says it waits (with the step to answer),
 * the chat's execution is blocked on that step, `kiwi approvals` lists and answers it, and the
 * answer (or the timeout) decides whether the tool runs. `kiwi serve`'s gateway on a copy of the
 * demo `.ai/`; the upstream is a local server replaying recorded streams.
 */

let served: DemoGateway;
let url: string;

interface WireEvent {
  type: string;
  step_id?: string;
  payload: Record<string, unknown>;
}

beforeAll(async () => {
  served = await serveDemoGateway({
    prepare(root) {
      const dir = path.join(root, '.ai', 'tools', 'project');
      writeFileSync(path.join(dir, 'ship.mjs'), "let s = ''; process.stdin.on('data', (c) => (s += c)); process.stdin.on('end', () => process.stdout.write(`shipped ${JSON.parse(s).version}`));\n");
      writeFileSync(
        path.join(dir, 'ship_release.yaml'),
        'tool_id: ship_release\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: "Ship a release to production"\nrequires_approval: true\nconfig:\n  script: ship.mjs\nparameters:\n  - { name: version, type: string, required: true }\n',
      );
      allowTools(root, ['ship_release']);
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      writeFileSync(policy, readFileSync(policy, 'utf8').replace(/^ {2}timeout_s: \d+$/m, '  timeout_s: 4'));
    },
  });
  url = served.server.url;
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function events(id: string, key?: string): Promise<WireEvent[]> {
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  return ((await (await fetch(`${url}/v0/executions/${id}/events`, { headers })).json()) as { events: WireEvent[] }).events;
}

async function story(id: string): Promise<WireEvent[]> {
  await expect.poll(async () => (await events(id)).at(-1)?.type, { timeout: 10_000 }).toMatch(/^execution\.(completed|failed|cancelled)$/);
  return events(id);
}

/** A streamed chat whose first turn asks for `ship_release`; resolves once the stream says the call waits. */
async function chatThatWaits(version: string, apiKey = 'not-used') {
  served.llm.replyOnce(openAiStream([`Shipping. [TOOL: ship_release {"version": "${version}"}]`]), openAiStream(['Done.']));
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
  const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `ship ${version}` }] }).withResponse();
  const executionId = response.headers.get('x-kiwi-execution-id') as string;
  const iterator = stream[Symbol.asyncIterator]();
  let text = '';
  let waiting: Record<string, unknown> | undefined;
  while (waiting === undefined) {
    const next = await iterator.next();
    if (next.done) throw new Error(`the stream ended before the call waited: ${text}`);
    text += next.value.choices[0]?.delta.content ?? '';
    const kiwi = (next.value as unknown as { kiwi?: Record<string, unknown> }).kiwi;
    if (kiwi?.['type'] === 'approval') waiting = kiwi;
  }
  const rest = (async () => {
    let more = '';
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) more += next.value.choices[0]?.delta.content ?? '';
    return more;
  })();
  return { executionId, stepId: String(waiting['stepId']), waiting, text, rest };
}

/** The audit as written so far (the log writes behind the calls). */
const audit = () => readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 50 });

async function cli(args: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runCli(args, { env: { PATH: process.env['PATH'], USER: 'alice' }, cwd: served.root, io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
  return { code, out };
}

describe("a chat's call that needs a person", () => {
  it('waits: the stream says so, the execution is blocked, `kiwi approvals grant` lets it run, and the audit says who granted it', async () => {
    const chat = await chatThatWaits('v2.1');
    expect(chat.waiting).toMatchObject({ tool: 'ship_release', executionId: chat.executionId, reason: expect.stringMatching(/requires_approval/) });
    expect(chat.text).toMatch(/waiting for approval .*kiwi approvals grant [0-9a-f-]{36}/);
    const execution = (await (await fetch(`${url}/v0/executions/${chat.executionId}`)).json()) as Record<string, unknown>;
    expect(execution['status']).toBe('blocked');

    const listed = await cli(['approvals', 'list', '--url', url, '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.out[0] ?? '[]')).toContainEqual(expect.objectContaining({ executionId: chat.executionId, stepId: chat.stepId, toolId: 'ship_release', arguments: { version: 'v2.1' }, agentId: 'gateway' }));
    const granted = await cli(['approvals', 'grant', chat.stepId, '--url', url]);
    expect(granted.out.join('\n')).toMatch(/^granted: ship_release/);

    expect(await chat.rest).toMatch(/shipped v2\.1[\s\S]*Done\./);
    const log = await story(chat.executionId);
    expect(log.map((e) => e.type)).toEqual([
      'execution.created',
      'execution.started',
      'intent.accepted',
      'step.created',
      'step.approval_required',
      'execution.blocked',
      'signal.received',
      'step.dispatched',
      'execution.resumed',
      'step.completed',
      'turn.started',
      'execution.completed',
    ]);
    expect(log[6]?.payload).toMatchObject({ signal_type: 'step.approve', payload: { step_id: chat.stepId, approved: true, decided_by: 'alice (key local)' } });
    await expect.poll(async () => (await audit()).find((r) => r.tool === 'ship_release' && r.decision === 'allow')?.approval).toMatchObject({ approved: true, decided_by: 'alice (key local)' });
  }, 60_000);

  it('does not run when a person denies it through the v0 API; the step fails once, saying why', async () => {
    const chat = await chatThatWaits('v2.2');
    const signal = await fetch(`${url}/v0/executions/${chat.executionId}/signal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: chat.stepId, approved: false, reason: 'freeze until Monday' } }),
    });
    expect(signal.status).toBe(200);
    const rest = await chat.rest;
    expect(rest).toMatch(/denied: freeze until Monday/);
    expect(rest).not.toMatch(/shipped/);
    const log = await story(chat.executionId);
    expect(log.filter((e) => e.type === 'step.failed')).toEqual([expect.objectContaining({ step_id: chat.stepId, payload: { error: 'freeze until Monday', retryable: false } })]);
    expect(log.at(-1)?.type).toBe('execution.completed');
  }, 60_000);

  it('is denied when no one answers within the timeout, and the denial is recorded as the timeout’s', async () => {
    const chat = await chatThatWaits('v2.3');
    const rest = await chat.rest;
    expect(rest).toMatch(/denied: no one answered within 4 s/);
    const log = await story(chat.executionId);
    expect(log.filter((e) => e.type === 'step.failed')).toHaveLength(1);
    expect(log.find((e) => e.type === 'signal.received')?.payload).toMatchObject({ payload: { approved: false, decided_by: 'timeout' } });
    await expect.poll(async () => (await audit()).find((r) => r.tool === 'ship_release' && (r.args as { version?: string }).version === 'v2.3')?.approval).toMatchObject({ approved: false, decided_by: 'timeout' });
  }, 60_000);
});

describe("an MCP client's call that needs a person", () => {
  it('waits on its step: the client is told how to answer through progress, and the call runs once granted', async () => {
    const client = new Client({ name: 'approvals-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    try {
      const told: string[] = [];
      const running = client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'ship_release', parameters: { version: 'v3.0' } } }, undefined, {
        onprogress: (p) => void told.push(p.message ?? ''),
        resetTimeoutOnProgress: true,
      });
      await expect.poll(() => told.join('\n'), { timeout: 15_000 }).toMatch(/waiting for approval .*kiwi approvals grant [0-9a-f-]{36}/);
      const stepId = /kiwi approvals grant ([0-9a-f-]{36})/.exec(told.join('\n'))?.[1] as string;
      const granted = await cli(['approvals', 'grant', stepId, '--url', url]);
      expect(granted.out.join('\n')).toMatch(/^granted: ship_release \{"version":"v3\.0"\}/);
      const result = (await running) as { content: { type: string; text: string }[]; isError?: boolean };
      expect(result.isError).not.toBe(true);
      expect(result.content.map((c) => c.text).join('')).toContain('shipped v3.0');
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe("an MCP 2026-07-28 client's call that needs a person (the real 2.x client, no session)", () => {
  it('is handed back as input_required naming its execution; the SDK retries round by round and gets the result once granted', async () => {
    const client = new ModernClient({ name: 'approvals-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(new URL(`${url}/mcp`)));
    try {
      const call = { name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'ship_release', parameters: { version: 'v5.0' } } };
      const first = (await client.callTool(call, { allowInputRequired: true })) as unknown as { resultType: string; _meta: Record<string, string> };
      expect(first).toMatchObject({ resultType: 'input_required', _meta: { 'kiwi.gateway/waiting': expect.stringMatching(/waiting for approval .*kiwi approvals grant [0-9a-f-]{36}/) } });
      const executionId = first._meta['kiwi.gateway/execution_id'] as string;
      const stepId = /kiwi approvals grant ([0-9a-f-]{36})/.exec(first._meta['kiwi.gateway/waiting'] ?? '')?.[1] as string;
      expect((await events(executionId)).map((e) => e.type)).toContain('step.approval_required');
      // The SDK's own driver follows the wait (its requestState) while a person grants it.
      const state = (first as unknown as { requestState: string }).requestState;
      const following = client.callTool({ ...call, requestState: state } as unknown as Parameters<ModernClient['callTool']>[0]);
      const granted = await cli(['approvals', 'grant', stepId, '--url', url]);
      expect(granted.out.join('\n')).toMatch(/^granted: ship_release \{"version":"v5\.0"\}/);
      const result = (await following) as { content: { type: string; text: string }[]; isError?: boolean };
      expect(result.isError).not.toBe(true);
      expect(result.content.map((c) => c.text).join('')).toContain('shipped v5.0');
      expect((await story(executionId)).at(-1)?.type).toBe('execution.completed');
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('with client keys', () => {
  it('the client whose chat waits cannot approve its own call, even with the approver role; an approver of another client can, and is recorded', async () => {
    const agent = (await createKey(path.join(served.root, KEY_FILE), 'agent', { roles: ['client', 'approver'] })).key;
    const ops = (await createKey(path.join(served.root, KEY_FILE), 'ops', { roles: ['approver'] })).key;
    const carol = (await createKey(path.join(served.root, KEY_FILE), 'carol')).key;
    // The gateway reads its key file again within a second or two: from then on every request needs a key.
    await expect.poll(async () => (await fetch(`${url}/v0/executions`)).status, { timeout: 10_000 }).toBe(401);
    const chat = await chatThatWaits('v2.4', agent);
    const self = await fetch(`${url}/v0/executions/${chat.executionId}/signal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${agent}` },
      body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: chat.stepId, approved: true, decided_by: 'a human, honest' } }),
    });
    expect(self.status).toBe(403);
    expect(await self.json()).toMatchObject({ code: 'FORBIDDEN', error: expect.stringMatching(/client agent made execution .* so it cannot answer its approvals/) });
    expect(((await (await fetch(`${url}/v0/executions/${chat.executionId}`, { headers: { authorization: `Bearer ${ops}` } })).json()) as { status: string }).status).toBe('blocked');
    // Another client neither sees the chat nor stops it (issue 22: carol read and cancelled alice's chat).
    const asCarol = { authorization: `Bearer ${carol}` };
    expect((await fetch(`${url}/v0/executions/${chat.executionId}`, { headers: asCarol })).status).toBe(404);
    expect((await fetch(`${url}/v0/executions/${chat.executionId}/cancel`, { method: 'POST', headers: asCarol })).status).toBe(404);
    expect(await (await fetch(`${url}/v0/executions/${chat.executionId}/events`, { headers: asCarol })).json()).toEqual({ events: [], latest_sequence: 0 });
    expect(((await (await fetch(`${url}/v0/executions?limit=200`, { headers: asCarol })).json()) as { executions: unknown[] }).executions).toEqual([]);

    const granted = await cli(['approvals', 'grant', chat.stepId, '--url', url, '--key', ops, '--as', 'bob']);
    expect(granted.out.join('\n')).toMatch(/^granted: ship_release/);
    expect(await chat.rest).toMatch(/shipped v2\.4/);
    await expect.poll(async () => (await audit()).find((r) => r.tool === 'ship_release' && (r.args as { version?: string }).version === 'v2.4')?.approval).toMatchObject({ approved: true, decided_by: 'bob (key ops)' });
  }, 60_000);

  it("keeps and shows a call's client key and .env value redacted, as the audit log does; the approver's grant still runs the real call", async () => {
    const agent = (await createKey(path.join(served.root, KEY_FILE), 'agent2', { roles: ['client'] })).key;
    const admin = (await createKey(path.join(served.root, KEY_FILE), 'root', { roles: ['admin'] })).key;
    const asAdmin = { authorization: `Bearer ${admin}` };
    await expect.poll(async () => (await fetch(`${url}/admin/v1/approvals`, { headers: asAdmin })).status, { timeout: 10_000 }).toBe(200);
    const stolen = `kiwi_0123abcd_${'Q'.repeat(43)}`;
    const chat = await chatThatWaits(`v3 ${stolen} DB_PASSWORD=hunter2hunter2`, agent);

    const { approvals } = (await (await fetch(`${url}/admin/v1/approvals`, { headers: asAdmin })).json()) as { approvals: { step_id: string; arguments: { version: string }; arguments_digest: string }[] };
    const shown = approvals.find((a) => a.step_id === chat.stepId);
    expect(shown?.arguments.version).toBe('v3 [redacted:kiwi-key] DB_PASSWORD=[redacted:secret]');
    const grant = await fetch(`${url}/admin/v1/approvals/${chat.stepId}`, { method: 'POST', headers: { ...asAdmin, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'grant', arguments_digest: shown?.arguments_digest }) });
    expect(grant.status).toBe(200);
    // The tool ran with the real arguments: the chat's own client sees its own value.
    expect(await chat.rest).toContain(`shipped v3 ${stolen} DB_PASSWORD=hunter2hunter2`);

    await expect.poll(async () => (await events(chat.executionId, agent)).at(-1)?.type, { timeout: 10_000 }).toMatch(/^execution\.(completed|failed)$/);
    const detail = await (await fetch(`${url}/admin/v1/executions/${chat.executionId}`, { headers: asAdmin })).text();
    const v0 = JSON.stringify(await events(chat.executionId, agent));
    for (const text of [detail, v0]) {
      expect(text).toContain('[redacted:kiwi-key]');
      expect(text).not.toContain(stolen);
      expect(text).not.toContain('hunter2hunter2');
    }
  }, 60_000);
});
