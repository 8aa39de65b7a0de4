import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { argumentsDigest } from '../../src/base/arguments-digest.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { uniqueName, useKernelServer, type Job } from '../fixtures/kernel/kernel-server.js';

/**
 * Every object belongs to a client (issue 22, findings 1, 2, 3, 5 and 13 of the attack run): on
 * the kernel's v0 API served with keys, carol — a client like alice — can neither see nor steer
 * alice's executions, sessions, steps or runners, and no key answers its own approval. Each
 * test is an attack that worked before owners were recorded.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-tenancy-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(
  policyFile,
  `rules:
  - id: ask
    priority: 10
    when: { tool_ids: ["deploy_*"] }
    then: { decision: require_approval, reason: "deploys need a person" }
  - id: tools
    priority: 20
    when: { tool_ids: ["read_file", "word_count"] }
    then: { decision: allow }
default: { decision: deny, reason: "No explicit allow rule matched" }
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const [embedded] = kernelBackends({ policyFile, reaperIntervalMs: 0, queueIntervalMs: 100 });
const k = useKernelServer((embedded as NonNullable<typeof embedded>)[1], {
  bearerToken: true,
  keys: {
    // alice's app makes executions for her agent, which runs with its own key of her client.
    alice: { roles: ['client', 'agent'], agents: ['alice-*'] },
    carol: { roles: ['client', 'agent'], agents: ['carol-*'] },
    'carol-runner': { roles: ['runner'], tools: ['word_count'] },
    ops: { roles: ['runner'], tools: ['read_file'] },
    reviewer: { roles: ['approver'] },
    root: { roles: ['admin'] },
    // An app, its agent service and a runner, each with a key of one role, as the Rebuno SDK runs them.
    app: { roles: ['client'] },
    bot: { roles: ['agent'], agents: ['sdk-*'] },
    'root-bot': { roles: ['admin', 'agent'], agents: ['alice-*'] },
  },
});

const as = (client: string) => ({ authorization: `Bearer ${k.tokenOf(client)}` });
const send = (client: string, method: string, p: string, body?: unknown) => k.request(method, p, { token: k.tokenOf(client), ...(body === undefined ? {} : { body }) });
const noEvents = { status: 200, body: { events: [], latest_sequence: 0 } };
const notFound = (what: string) => ({ status: 404, body: { error: `not found: ${what}`, code: 'NOT_FOUND' } });

/** alice's agent connected (an agent id of its own, so that no other test's executions reach it), and an execution of alice's assigned to it. */
async function aliceRunning(input: unknown = { task: 'read package.json' }) {
  const agent = uniqueName('alice-bot');
  const consumer = uniqueName('c');
  const stream = await k.sse(`/v0/agents/stream?agent_id=${agent}&consumer_id=${consumer}`, as('alice'));
  const made = await send('alice', 'POST', '/v0/executions', { agent_id: agent, input });
  expect(made.status).toBe(201);
  const id = made.body['id'] as string;
  const session = ((await stream.next('execution.assigned')).data as { session_id: string }).session_id;
  const intent = (client: string, intent: unknown, sessionId = session) => send(client, 'POST', '/v0/agents/intent', { execution_id: id, session_id: sessionId, intent });
  return { agent, id, session, consumer, stream, intent };
}

describe('tenancy on the v0 API', () => {
  it('finding 1: another client neither lists, reads nor streams an execution, nor its events; the owner does', async () => {
    const a = await aliceRunning({ secret: 'alice-only' });
    const listed = await send('carol', 'GET', '/v0/executions?limit=200');
    expect(listed.status).toBe(200);
    expect((listed.body['executions'] as { id: string }[]).map((e) => e.id)).not.toContain(a.id);
    expect(await send('carol', 'GET', `/v0/executions/${a.id}`)).toEqual(notFound(`execution ${a.id}`));
    // Events of an unknown id are an empty page (the spec's §18.29): so are those of another's.
    expect(await send('carol', 'GET', `/v0/executions/${a.id}/events`)).toEqual(noEvents);
    const stream = await fetch(`${k.url}/v0/executions/${a.id}/stream`, { headers: as('carol') });
    expect(stream.status).toBe(404);
    await stream.body?.cancel();
    // The same answer as for an id that does not exist: the id tells nothing.
    expect(await send('carol', 'GET', '/v0/executions/0190a8b2-0000-7000-8000-000000000000')).toEqual(notFound('execution 0190a8b2-0000-7000-8000-000000000000'));

    expect((await send('alice', 'GET', `/v0/executions/${a.id}`)).body).toMatchObject({ id: a.id, input: { secret: 'alice-only' } });
    expect(((await send('alice', 'GET', '/v0/executions?limit=200')).body['executions'] as { id: string }[]).map((e) => e.id)).toContain(a.id);
    // An approver reads every client's executions, to see what a call would do.
    expect((await send('reviewer', 'GET', `/v0/executions/${a.id}`)).status).toBe(200);
  });

  it("finding 1: a step's result reaches only its execution's readers", async () => {
    const a = await aliceRunning();
    const stepId = (await a.intent('alice', { type: 'invoke_tool', tool_id: 'read_file', arguments: { path: 'package.json' } })).body['step_id'] as string;
    expect((await send('alice', 'POST', '/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: stepId, success: true, data: { content: 'PRIVATE' } })).status).toBe(200);
    expect(JSON.stringify((await send('alice', 'GET', `/v0/executions/${a.id}/events`)).body)).toContain('PRIVATE');
    expect(await send('carol', 'GET', `/v0/executions/${a.id}/events`)).toEqual(noEvents);
  });

  it('finding 2: another client cannot cancel or signal an execution, nor act in its session', async () => {
    const a = await aliceRunning();
    expect(await send('carol', 'POST', `/v0/executions/${a.id}/cancel`)).toEqual(notFound(`execution ${a.id}`));
    expect(await send('carol', 'POST', `/v0/executions/${a.id}/signal`, { signal_type: 'go', payload: { from: 'carol' } })).toEqual(notFound(`execution ${a.id}`));
    // Even with the session id in hand: to carol's key it is a session that does not exist, as a made-up one is.
    const noSession = (id: string) => ({ status: 401, body: { error: `session not found: session ${id}`, code: 'UNAUTHORIZED' } });
    expect(await a.intent('carol', { type: 'complete', output: 'forged by carol' })).toEqual(noSession(a.session));
    expect(await a.intent('carol', { type: 'complete', output: 'forged by carol' }, 'made-up')).toEqual(noSession('made-up'));
    expect(await send('carol', 'POST', '/v0/agents/step-result', { execution_id: a.id, session_id: a.session, step_id: 'x', success: true })).toEqual(noSession(a.session));
    // A key that sees the execution but serves no agent of it is told what it lacks.
    expect(await a.intent('reviewer', { type: 'complete', output: 'forged' })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/only a key that serves agent/) } });
    expect(await k.status(a.id)).toBe('running');
    const log = (await send('alice', 'GET', `/v0/executions/${a.id}/events`)).body['events'] as { type: string }[];
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started']);
  });

  it('finding 2: session and consumer ids reach only a key that serves the agent', async () => {
    const a = await aliceRunning();
    const started = (key: string) => send(key, 'GET', `/v0/executions/${a.id}/events`).then((r) => (r.body['events'] as { type: string; payload: Record<string, unknown> }[]).find((e) => e.type === 'execution.started')?.payload);
    expect(await started('alice')).toEqual({ session_id: a.session, consumer_id: a.consumer });
    expect(await started('reviewer')).toEqual({});
  });

  it("finding 2: an agent stream of another client's agent id is refused, and never takes over alice's", async () => {
    const a = await aliceRunning();
    const refused = await fetch(`${k.url}/v0/agents/stream?agent_id=${a.agent}&consumer_id=${a.consumer}`, { headers: as('carol') });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'FORBIDDEN', error: expect.stringMatching(/does not serve agent "alice-bot_/) });
    // alice's stream still gets her next execution.
    const next = (await send('alice', 'POST', '/v0/executions', { agent_id: a.agent })).body['id'] as string;
    expect(((await a.stream.next('execution.assigned')).data as { execution_id: string }).execution_id).toBe(next);
  });

  it("finding 2: another client's key serving the same agent id replaces none of alice's streams and cannot use her session", async () => {
    const a = await aliceRunning();
    // The suite's `kernel-client` key serves every agent id: another client on alice's agent, with her consumer id.
    const other = await k.sse(`/v0/agents/stream?agent_id=${a.agent}&consumer_id=${a.consumer}`);
    // Both streams stay: the next two executions go one to each, round-robin.
    const made = [];
    for (let i = 0; i < 2; i += 1) made.push((await send('alice', 'POST', '/v0/executions', { agent_id: a.agent })).body['id'] as string);
    const got = [((await a.stream.next('execution.assigned')).data as { execution_id: string }).execution_id, ((await other.next('execution.assigned')).data as { execution_id: string }).execution_id];
    expect(got.sort()).toEqual([...made].sort());
    // alice's session is hers: the other client's key is told it does not exist.
    const forged = await k.request('POST', '/v0/agents/intent', { body: { execution_id: a.id, session_id: a.session, intent: { type: 'complete', output: 'forged' } } });
    expect(forged).toEqual({ status: 401, body: { error: `session not found: session ${a.session}`, code: 'UNAUTHORIZED' } });
    expect((await a.intent('alice', { type: 'complete', output: 'done' })).body).toEqual({ accepted: true });
  });
});

describe('one key per role', () => {
  it('runs an execution end to end with a client key, an agent key and a runner key, none of which can do the others\' part', async () => {
    const agent = uniqueName('sdk-agent');
    const bot = await k.sse(`/v0/agents/stream?agent_id=${agent}&consumer_id=${agent}-c`, as('bot'));
    const opsRunner = uniqueName('ops-runner');
    const runner = await k.sse(`/v0/runners/stream?runner_id=${opsRunner}&consumer_id=${opsRunner}-c&capabilities=read_file`, as('ops'));
    // An agent or runner key makes no executions.
    expect((await send('bot', 'POST', '/v0/executions', { agent_id: agent })).status).toBe(403);
    const id = (await send('app', 'POST', '/v0/executions', { agent_id: agent, input: { path: 'README.md' } })).body['id'] as string;
    const assigned = (await bot.next('execution.assigned')).data as { execution_id: string; session_id: string; input: unknown };
    expect(assigned).toMatchObject({ execution_id: id, input: { path: 'README.md' } });
    // The app's key serves no agent: it cannot act in the session it made the execution for.
    const intent = (key: string, body: unknown) => send(key, 'POST', '/v0/agents/intent', { execution_id: id, session_id: assigned.session_id, intent: body });
    expect((await intent('app', { type: 'complete', output: 'x' })).status).toBe(403);
    const stepId = (await intent('bot', { type: 'invoke_tool', tool_id: 'read_file', arguments: { path: 'README.md' }, remote: true })).body['step_id'] as string;
    const job = (await runner.next('job.assigned')).data as Job;
    expect((await send('ops', 'POST', `/v0/runners/steps/${stepId}/started`, { execution_id: id, runner_id: opsRunner })).status).toBe(200);
    expect((await send('ops', 'POST', `/v0/runners/${opsRunner}/results`, { job_id: job.id, execution_id: id, step_id: stepId, success: true, data: 'hello' })).status).toBe(200);
    expect((await bot.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded', result: 'hello' });
    expect((await intent('bot', { type: 'complete', output: { text: 'hello' } })).body).toEqual({ accepted: true });
    expect((await send('app', 'GET', `/v0/executions/${id}`)).body).toMatchObject({ status: 'completed', output: { text: 'hello' } });
    // The runner sees nothing of the execution it served a step of.
    expect((await send('ops', 'GET', `/v0/executions/${id}`)).status).toBe(404);
  });
});

describe('runners are their clients', () => {
  it('finding 3: a key without the runner role serves nothing, and a runner key only its own tools', async () => {
    const asClient = await fetch(`${k.url}/v0/runners/stream?runner_id=${uniqueName('r')}&consumer_id=c&capabilities=read_file`, { headers: as('carol') });
    expect(asClient.status).toBe(403);
    await asClient.body?.cancel();
    const outside = await fetch(`${k.url}/v0/runners/stream?runner_id=${uniqueName('r')}&consumer_id=c&capabilities=read_file`, { headers: as('carol-runner') });
    expect(outside.status).toBe(403);
    expect(await outside.json()).toMatchObject({ code: 'FORBIDDEN', error: expect.stringMatching(/does not serve "read_file"/) });
    expect((await send('carol-runner', 'POST', `/v0/runners/${uniqueName('r')}/tools`, { tools: [{ id: 'read_file' }] })).status).toBe(403);
    expect((await send('carol-runner', 'POST', `/v0/runners/${uniqueName('r')}/capabilities`, { tools: ['read_file'] })).status).toBe(403);
  });

  it("finding 3: nobody else reports, starts or unregisters ops' runner's job, nor settles an agent's local step", async () => {
    const opsRunner = uniqueName('ops-runner');
    const stream = await k.sse(`/v0/runners/stream?runner_id=${opsRunner}&consumer_id=${opsRunner}-c&capabilities=read_file`, as('ops'));
    const a = await aliceRunning();
    const stepId = (await a.intent('alice', { type: 'invoke_tool', tool_id: 'read_file', arguments: { path: 'README.md' }, remote: true })).body['step_id'] as string;
    const job = (await stream.next('job.assigned')).data as Job;
    expect(job).toMatchObject({ step_id: stepId, tool_id: 'read_file' });

    const result = (runnerId: string, data: unknown) => ({ job_id: job.id, execution_id: job.execution_id, step_id: job.step_id, success: true, data });
    // As ops' runner: its id is another client's.
    expect(await send('carol-runner', 'POST', `/v0/runners/${opsRunner}/results`, result(opsRunner, 'FORGED'))).toEqual(notFound(`runner ${opsRunner}`));
    expect(await send('carol-runner', 'POST', `/v0/runners/steps/${stepId}/started`, { execution_id: job.execution_id, runner_id: opsRunner })).toEqual(notFound(`runner ${opsRunner}`));
    // As a runner of her own: the job was never hers.
    const mine = uniqueName('carol-r');
    expect(await send('carol-runner', 'POST', `/v0/runners/${mine}/results`, result(mine, 'FORGED'))).toEqual(notFound(`step ${stepId}`));
    expect(await send('carol-runner', 'DELETE', `/v0/runners/${opsRunner}`)).toEqual(notFound(`runner ${opsRunner}`));

    // The real runner's result is the one that counts.
    expect(await send('ops', 'POST', `/v0/runners/${opsRunner}/results`, result(opsRunner, 'real'))).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await a.stream.next('tool.result')).data).toMatchObject({ step_id: stepId, status: 'succeeded', result: 'real' });

    // A local step is the agent's to settle: no runner reports it.
    const local = (await a.intent('alice', { type: 'invoke_tool', tool_id: 'word_count', arguments: { path: 'README.md' } })).body['step_id'] as string;
    expect(await send('carol-runner', 'POST', `/v0/runners/${mine}/results`, { job_id: 'x', execution_id: a.id, step_id: local, success: true, data: 'FORGED LOCAL RESULT' })).toEqual(notFound(`step ${local}`));
    expect(await send('ops', 'POST', `/v0/runners/${opsRunner}/results`, { job_id: 'x', execution_id: a.id, step_id: local, success: true, data: 'FORGED' })).toEqual(notFound(`step ${local}`));
    expect(await send('ops', 'DELETE', `/v0/runners/${opsRunner}`)).toEqual({ status: 200, body: { status: 'ok' } });
  });
});

describe('approvals', () => {
  async function waiting() {
    const a = await aliceRunning();
    const args = { env: 'prod', version: '1.2.3' };
    const stepId = (await a.intent('alice', { type: 'invoke_tool', tool_id: 'deploy_app', arguments: args })).body['step_id'] as string;
    expect(await k.status(a.id)).toBe('blocked');
    const approve = (client: string, extra: Record<string, unknown> = {}) => send(client, 'POST', `/v0/executions/${a.id}/signal`, { signal_type: 'step.approve', payload: { step_id: stepId, approved: true, ...extra } });
    return { ...a, stepId, args, approve };
  }

  it('finding 5: an agent does not approve its own step on /v0, nor does a key without the approver role', async () => {
    const w = await waiting();
    expect(await w.approve('alice')).toEqual({ status: 403, body: { error: expect.stringMatching(/approver role/), code: 'FORBIDDEN' } });
    expect(await w.approve('carol')).toEqual(notFound(`execution ${w.id}`));
    // An admin key that is also alice's agent is the call's own too.
    expect(await w.approve('root-bot')).toMatchObject({ status: 403, body: { error: expect.stringMatching(/cannot answer its approvals/) } });
    expect(await k.status(w.id)).toBe('blocked');
    expect(await w.approve('reviewer')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await k.status(w.id)).toBe('running');
  });

  it("an admin answers another client's approval", async () => {
    const w = await waiting();
    expect(await w.approve('root')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await k.status(w.id)).toBe('running');
  });

  it('a grant names the call it was given for: another tool or other arguments run nothing', async () => {
    const w = await waiting();
    expect(await w.approve('reviewer', { tool_id: 'deploy_other' })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/names tool "deploy_other", but step .* calls deploy_app/) } });
    expect(await w.approve('reviewer', { arguments_digest: argumentsDigest({ env: 'dev', version: '1.2.3' }) })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/other arguments/) } });
    expect(await k.status(w.id)).toBe('blocked');
    // Keys in another order are the same arguments.
    expect(await w.approve('reviewer', { tool_id: 'deploy_app', arguments_digest: argumentsDigest({ version: '1.2.3', env: 'prod' }) })).toEqual({ status: 200, body: { status: 'ok' } });
  });
});

describe('ids', () => {
  it('finding 13: a control character in an id is a 400, never a 500', async () => {
    for (const p of ['/v0/executions/%00/events', '/v0/executions/a%00b', '/v0/executions/%0a/stream']) {
      expect(await send('alice', 'GET', p)).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR', error: expect.stringMatching(/control character/) } });
    }
    expect(await send('ops', 'DELETE', '/v0/runners/r%00')).toMatchObject({ status: 400 });
    expect(await send('alice', 'POST', '/v0/agents/intent', { execution_id: 'a\u0000b', session_id: 's', intent: { type: 'complete' } })).toMatchObject({ status: 400 });
  });
});
