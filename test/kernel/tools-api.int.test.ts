import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { useKernelServer } from '../fixtures/kernel/kernel-server.js';

/**
 * The tool schemas runners publish (V0-API.md §7.5) and unregistering a runner (§7.6), over
 * HTTP and SSE on both backends, behind a client key: the list with and without a prefix, the
 * newest publisher of an id winning, DELETE dropping a runner's schemas, bodies refused with
 * what to fix, and a published tool becoming that runner's capability.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-tools-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(policyFile, 'rules:\n  - { id: all, priority: 1, then: { decision: allow } }\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tag = (): string => Math.random().toString(36).slice(2, 8);

interface ListedTool {
  id: string;
  description: string;
  input_schema: unknown;
  runner_id: string;
  registered_at: string;
}

describe.each(kernelBackends({ policyFile, reaperIntervalMs: 0, queueIntervalMs: 0 }))('on %s', (_backend, open) => {
  const server = useKernelServer(open, { bearerToken: true });
  const auth = (): Record<string, string> => ({ authorization: `Bearer ${server.token as string}` });

  const publish = async (runner: string, tools: unknown): Promise<{ status: number; text: string }> => {
    const res = await fetch(`${server.url}/v0/runners/${runner}/tools`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: JSON.stringify({ tools }) });
    return { status: res.status, text: await res.text() };
  };
  const list = async (prefix?: string): Promise<ListedTool[]> => {
    const res = await fetch(`${server.url}/v0/tools${prefix === undefined ? '' : `?prefix=${encodeURIComponent(prefix)}`}`, { headers: auth() });
    expect(res.status).toBe(200);
    return (await res.json()) as ListedTool[];
  };
  const unregister = async (runner: string): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${server.url}/v0/runners/${runner}`, { method: 'DELETE', headers: auth() });
    return { status: res.status, body: await res.json() };
  };
  const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };

  it('publishes tools (204, no body) and lists them: all, or by prefix (the id itself, or it and `_`)', async () => {
    const p = `git${tag()}`;
    const runner = `r-${tag()}`;
    const ids = [p, `${p}_log`, `${p}_status`, `${p}_`, `${p}lab`, `${p}.diff`, `x${p}_log`];
    expect(await publish(runner, ids.map((id) => ({ id, description: `the ${id} tool`, input_schema: schema })))).toEqual({ status: 204, text: '' });

    const all = await list();
    expect(all.filter((t) => t.runner_id === runner).map((t) => t.id)).toEqual([...ids].sort());
    const first = all.find((t) => t.id === p);
    expect(first).toEqual({ id: p, description: `the ${p} tool`, input_schema: schema, runner_id: runner, registered_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });

    expect((await list(p)).map((t) => t.id)).toEqual([p, `${p}_`, `${p}_log`, `${p}_status`]);
    expect((await list(`${p}_log`)).map((t) => t.id)).toEqual([`${p}_log`]);
    // Not a plain string prefix: `p_l` names neither `p_log` nor anything under `p_l_`.
    expect(await list(`${p}_l`)).toEqual([]);
    expect((await list(`${p}.diff`)).map((t) => t.id)).toEqual([`${p}.diff`]);
    expect((await list('')).length).toBe(all.length);

    // A publish replaces all of the runner's schemas.
    expect((await publish(runner, [{ id: `${p}_log`, input_schema: schema }])).status).toBe(204);
    expect(await list(p)).toEqual([{ id: `${p}_log`, description: '', input_schema: schema, runner_id: runner, registered_at: expect.any(String) }]);
    expect((await publish(runner, [])).status).toBe(204);
    expect(await list(p)).toEqual([]);
  });

  it('lists a tool published by several runners once, from the newest publish', async () => {
    const tool = `search_${tag()}`;
    const [a, b] = [`ra-${tag()}`, `rb-${tag()}`];
    await publish(a, [{ id: tool, description: 'from a' }, { id: `${tool}_a`, description: 'only a' }]);
    await publish(b, [{ id: tool, description: 'from b', input_schema: schema }]);
    expect((await list(tool)).map((t) => [t.id, t.runner_id, t.description])).toEqual([
      [tool, b, 'from b'],
      [`${tool}_a`, a, 'only a'],
    ]);
    await publish(a, [{ id: tool, description: 'a again' }]);
    expect(await list(tool)).toEqual([{ id: tool, description: 'a again', input_schema: null, runner_id: a, registered_at: expect.any(String) }]);
    // Its newest publisher gone, the one before it is listed again.
    expect(await unregister(a)).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await list(tool)).map((t) => [t.runner_id, t.description])).toEqual([[b, 'from b']]);
  });

  it("DELETE /v0/runners/{id} drops the runner's schemas and record: 200, then 404 for a runner it does not know", async () => {
    const tool = `drop_${tag()}`;
    const runner = `rd-${tag()}`;
    await publish(runner, [{ id: tool }]);
    expect((await list(tool)).length).toBe(1);
    expect(await unregister(runner)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await list(tool)).toEqual([]);
    expect(await unregister(runner)).toEqual({ status: 404, body: { error: `not found: runner ${runner}`, code: 'NOT_FOUND' } });
    expect((await unregister(`never-${tag()}`)).status).toBe(404);
  });

  it('refuses a bad body with 400 VALIDATION_ERROR and what to fix, and changes nothing', async () => {
    const runner = `rv-${tag()}`;
    const kept = `kept_${tag()}`;
    await publish(runner, [{ id: kept }]);
    const post = async (body: string, id = runner) => {
      const res = await fetch(`${server.url}/v0/runners/${id}/tools`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body });
      return { status: res.status, body: (await res.json()) as { error: string; code: string } };
    };
    const cases: [body: unknown, message: RegExp][] = [
      [{}, /^tools is required: a list of \{"id", "description", "input_schema"\}/],
      [{ tools: 'git' }, /^tools is required/],
      [{ tools: [1] }, /^tools\[0\] must be an object/],
      [{ tools: [{ id: 'a' }, {}] }, /^tools\[1\]\.id is required/],
      [{ tools: [{ id: 'a'.repeat(257) }] }, /^tools\[0\]\.id is longer than 256 characters$/],
      [{ tools: [{ id: 'a\nb' }] }, /^tools\[0\]\.id contains a control character$/],
      [{ tools: [{ id: 'a' }, { id: 'a' }] }, /^tools\[1\]\.id "a" appears twice/],
      [{ tools: [{ id: 'a', description: 3 }] }, /^tools\[0\]\.description must be a string$/],
      [{ tools: [{ id: 'a', description: 'd'.repeat(8193) }] }, /^tools\[0\]\.description is longer than 8192 characters$/],
      [{ tools: [{ id: 'a', input_schema: ['q'] }] }, /^tools\[0\]\.input_schema must be a JSON Schema object/],
      [{ tools: [{ id: 'a', input_schema: 'object' }] }, /^tools\[0\]\.input_schema must be a JSON Schema object/],
      [{ tools: [{ id: 'a', input_schema: { description: 'x'.repeat(64 * 1024) } }] }, /^tools\[0\]\.input_schema is larger than 64 KiB as JSON$/],
      [{ tools: Array.from({ length: 1001 }, (_, i) => ({ id: `t${i}` })) }, /^tools has 1001 entries; a runner may publish at most 1000$/],
    ];
    for (const [body, message] of cases) {
      const res = await post(JSON.stringify(body));
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
      expect(res.body.error, JSON.stringify(body).slice(0, 80)).toMatch(message);
    }
    expect(await post('{"tools": [')).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await post('[]')).toEqual({ status: 400, body: { error: 'the body must be a JSON object', code: 'VALIDATION_ERROR' } });
    expect(await post('{"tools": []}', 'r'.repeat(257))).toEqual({ status: 400, body: { error: 'the runner id is longer than 256 characters', code: 'VALIDATION_ERROR' } });
    expect((await list(kept)).map((t) => t.runner_id)).toEqual([runner]);
  });

  it('answers 401 without the client key on the tools routes and /metrics', async () => {
    const runner = `ra-${tag()}`;
    const attempts: [string, RequestInit][] = [
      [`/v0/runners/${runner}/tools`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tools: [{ id: 'sneaky' }] }) }],
      ['/v0/tools', {}],
      [`/v0/runners/${runner}`, { method: 'DELETE' }],
      ['/metrics', { headers: { accept: 'text/plain' } }],
    ];
    for (const [route, init] of attempts) {
      const res = await fetch(`${server.url}${route}`, init);
      expect(res.status, route).toBe(401);
      const wrong = await fetch(`${server.url}${route}`, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: 'Bearer kiwi_wrong' } });
      expect(wrong.status, route).toBe(401);
    }
    expect((await list('sneaky')).length).toBe(0);
    const res = await fetch(`${server.url}/metrics`, { headers: { accept: 'text/plain', ...auth() } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE rebuno_active_executions gauge');
  });

  it("makes the published tools the runner's capabilities: an agent's remote call of one reaches it", async () => {
    const runner = `rc-${tag()}`;
    const [old, fresh] = [`old_${tag()}`, `fresh_${tag()}`];
    const stream = await server.sse(`/v0/runners/stream?runner_id=${runner}&consumer_id=${runner}-c&capabilities=${old}`);
    expect((await publish(runner, [{ id: fresh, input_schema: schema }])).status).toBe(204);
    const agent = await server.startedAgent();
    const stepId = (await agent.invoke(fresh, { q: 'x' }, { remote: true })).body['step_id'] as string;
    const job = (await stream.next('job.assigned')).data as { id: string; step_id: string; tool_id: string; execution_id: string };
    expect(job).toMatchObject({ step_id: stepId, tool_id: fresh });
    await server.post(`/v0/runners/${runner}/results`, { job_id: job.id, execution_id: job.execution_id, step_id: stepId, success: true, data: { ok: true } });
    expect((await agent.stream.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded', result: { ok: true } });
    // The publish replaced the capabilities the stream named: a call of the old tool waits in the queue.
    await agent.invoke(old, {}, { remote: true });
    await server.kernel.runners.dispatchQueued();
    await expect(stream.next('job.assigned', 300)).rejects.toThrow(/no job.assigned/);
    // Its last stream gone, the runner's schemas go with it (§7.1).
    stream.close();
    await expect.poll(async () => (await list(fresh)).length).toBe(0);
  });

  it('gives a stream opened after a publish the published tools too', async () => {
    const runner = `rp-${tag()}`;
    const tool = `later_${tag()}`;
    await publish(runner, [{ id: tool }]);
    const stream = await server.sse(`/v0/runners/stream?runner_id=${runner}&consumer_id=${runner}-c`);
    const agent = await server.startedAgent();
    const stepId = (await agent.invoke(tool, {}, { remote: true })).body['step_id'] as string;
    expect(((await stream.next('job.assigned')).data as { step_id: string }).step_id).toBe(stepId);
  });
});
