import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { uuidv7 } from '../../src/kernel/uuidv7.js';
import { uniqueName, useKernelServer, type Answer, type ConnectedRunner, type WireEvent } from '../fixtures/kernel/kernel-server.js';

/**
 * The v0 spec's conformance checklist (V0-API.md §18), one test per item, on both backends: the
 * kernel served on 127.0.0.1 with a bearer token required, and driven only as an agent, a runner
 * and a client written against the spec drive it (HTTP JSON and SSE). The kernel's clock runs
 * `skew` ahead of the real one, which the tests move for deadlines and retry backoffs; the
 * watcher passes are run by the tests (`reaper.sweep()`); the job queue is scanned every 100 ms.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-kernel-conformance-'));
const policyFile = path.join(dir, 'kernel-policy.yaml');
writeFileSync(
  policyFile,
  `rules:
  # Listed first but decided after order-early: priority, not file order, decides (§15.4).
  - id: order-late
    priority: 61
    when: { tool_id: ordered }
    then: { decision: allow }
  - id: ask-first
    priority: 10
    when: { tool_ids: ["deploy_*"] }
    then: { decision: require_approval, reason: "deploys need a person" }
  - id: quick
    priority: 20
    when: { tool_ids: ["slow_*"] }
    then: { decision: allow, timeout_ms: 1000 }
  - id: limited
    priority: 30
    when: { tool_id: search }
    then: { decision: allow }
    rate_limit: { max: 2, window: 1m }
  - id: safe-shell
    priority: 40
    when:
      tool_id: shell_exec
      arguments:
        - { field: command, pattern: "^(ls|cat|echo|pwd)" }
        - { field: timeout, max: 30 }
        - { field: cwd, required: true }
    then: { decision: allow, reason: "safe commands" }
  - id: deny-shell
    priority: 50
    when: { tool_id: shell_exec }
    then: { decision: deny, reason: "Shell commands denied by default" }
  - id: order-early
    priority: 60
    when: { tool_id: ordered }
    then: { decision: deny, reason: "the lower priority decides" }
  - id: globs
    priority: 70
    when: { tool_ids: ["web_*", "fs_*"] }
    then: { decision: allow }
  - id: tools
    priority: 80
    when: { tool_ids: ["tool_*"] }
    then: { decision: allow }
default: { decision: deny, reason: "No explicit allow rule matched" }
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let skew = 0;
const now = (): Date => new Date(Date.now() + skew);

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/;
const OK = { status: 200, body: { status: 'ok' } };
/** §3: a non-2xx body is exactly `{"error", "code"}`. */
const refusal = (status: number, code: string, error: string | RegExp = /./): Answer => ({ status, body: { error: typeof error === 'string' ? error : expect.stringMatching(error), code } });
const ofStep = (events: WireEvent[], stepId: string) => events.filter((e) => e.step_id === stepId).map((e) => [e.type, e.payload]);
const typed = (events: WireEvent[]) => events.map((e) => e.type);

describe.each(kernelBackends({ policyFile, now, reaperIntervalMs: 0, queueIntervalMs: 100 }))('on %s', (_backend, open) => {
  const k = useKernelServer(open, { bearerToken: true });
  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await k.post('/v0/executions', body);
    expect(res.status).toBe(201);
    return res.body['id'] as string;
  };
  /** No job reaches `runner` over three scans of the queue. */
  const idle = (runner: ConnectedRunner) => expect(runner.nextJob(350)).rejects.toThrow(/no job.assigned/);

  it('§18.1 health() answers without a token though one is required, and ready() says ready', async () => {
    expect((await k.request('GET', '/v0/executions', { token: null })).status).toBe(401);
    expect(await k.request('GET', '/v0/health', { token: null })).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await k.request('GET', '/v0/ready', { token: null })).toEqual({ status: 200, body: { status: 'ready' } });
    expect(await k.request('GET', '/v0/health', { token: 'wrong' })).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await k.request('GET', '/v0/ready', { token: 'wrong' })).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it('§18.2 a wrong or missing token is 401 UNAUTHORIZED on every other route, the streams included, before the body is read', async () => {
    const id = await create({ agent_id: uniqueName('locked') });
    const routes: [string, string][] = [
      ['POST', '/v0/executions'],
      ['GET', '/v0/executions'],
      ['GET', `/v0/executions/${id}`],
      ['POST', `/v0/executions/${id}/cancel`],
      ['POST', `/v0/executions/${id}/signal`],
      ['GET', `/v0/executions/${id}/events`],
      ['GET', `/v0/executions/${id}/stream`],
      ['GET', '/v0/agents/stream?agent_id=a&consumer_id=a-c'],
      ['POST', '/v0/agents/intent'],
      ['POST', '/v0/agents/step-result'],
      ['GET', '/v0/runners/stream?runner_id=r&consumer_id=r-c&capabilities=t'],
      ['POST', '/v0/runners/r/results'],
      ['POST', '/v0/runners/steps/s/started'],
      ['POST', '/v0/runners/r/capabilities'],
      ['DELETE', '/v0/runners/r'],
    ];
    for (const [method, route] of routes) {
      for (const token of [null, 'wrong', `${k.token as string}x`]) {
        const answer = await k.request(method, route, { token, ...(method === 'POST' ? { raw: '{"not json' } : {}) });
        expect(answer, `${method} ${route} with ${token === null ? 'no token' : 'a wrong token'}`).toEqual(refusal(401, 'UNAUTHORIZED'));
      }
    }
    expect(await k.status(id)).toBe('pending');
  });

  it('§18.3 createExecution answers 201 with a UUID id, its input and labels echoed, pending while no agent is connected', async () => {
    const agent = uniqueName('a');
    const res = await k.post('/v0/executions', { agent_id: agent, input: { q: 'x' }, labels: { env: 'dev' } });
    expect(res).toEqual({
      status: 201,
      body: { id: expect.stringMatching(UUID7), status: 'pending', agent_id: agent, input: { q: 'x' }, labels: { env: 'dev' }, created_at: expect.stringMatching(RFC3339), updated_at: expect.stringMatching(RFC3339) },
    });
    expect(await k.get(`/v0/executions/${res.body['id'] as string}`)).toEqual({ status: 200, body: res.body });
  });

  it('§18.4 a create without agent_id or with bad JSON is 400 VALIDATION_ERROR; getExecution("nope") is 404 NOT_FOUND', async () => {
    expect(await k.post('/v0/executions', { input: { q: 'x' } })).toEqual(refusal(400, 'VALIDATION_ERROR'));
    expect(await k.post('/v0/executions', { agent_id: '' })).toEqual(refusal(400, 'VALIDATION_ERROR'));
    expect(await k.request('POST', '/v0/executions', { raw: '{"agent_id": ' })).toEqual(refusal(400, 'VALIDATION_ERROR'));
    expect(await k.get('/v0/executions/nope')).toEqual(refusal(404, 'NOT_FOUND', 'not found: execution nope'));
  });

  it('§18.5 listExecutions filters by status, agent and labels, newest first, pages by next_cursor ("" at the end); a bad status is 400', async () => {
    const agent = uniqueName('lister');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await create({ agent_id: agent, labels: { team: i % 2 === 0 ? 'even' : 'odd', idx: String(i) } }));
    const newestFirst = [...made].reverse();
    const list = async (query: string) => (await k.get(`/v0/executions?agent_id=${agent}&limit=50${query}`)).body as { executions: Record<string, unknown>[]; next_cursor: string };
    const ids = async (query: string) => (await list(query)).executions.map((e) => e['id']);

    const all = await list('');
    expect(all.executions.map((e) => e['id'])).toEqual(newestFirst);
    expect(all.next_cursor).toBe('');
    expect(all.executions[0]).toEqual({ id: made[4], status: 'pending', agent_id: agent, labels: { team: 'even', idx: '4' }, created_at: expect.stringMatching(RFC3339), updated_at: expect.stringMatching(RFC3339) });

    expect(await ids('&label=team:even')).toEqual([made[4], made[2], made[0]]);
    expect(await ids('&label=team:even&label=idx:2')).toEqual([made[2]]);

    const pages: unknown[][] = [];
    let cursor = '';
    do {
      const page = (await k.get(`/v0/executions?agent_id=${agent}&limit=2${cursor === '' ? '' : `&cursor=${cursor}`}`)).body as { executions: { id: string }[]; next_cursor: string };
      pages.push(page.executions.map((e) => e.id));
      cursor = page.next_cursor;
    } while (cursor !== '');
    expect(pages).toEqual([newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)]);

    expect((await k.post(`/v0/executions/${made[1] as string}/cancel`, {})).status).toBe(200);
    expect(await ids('&status=cancelled')).toEqual([made[1]]);
    expect(await ids('&status=pending')).toEqual(newestFirst.filter((id) => id !== made[1]));
    expect(await k.get('/v0/executions?status=done&limit=50')).toEqual(refusal(400, 'VALIDATION_ERROR', /invalid status "done"/));
  });

  it('§18.6 cancelling a pending execution makes it cancelled with execution.cancelled; a second cancel is 409 CONFLICT', async () => {
    const id = await create({ agent_id: uniqueName('c') });
    const cancelled = await k.request('POST', `/v0/executions/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id, status: 'cancelled' });
    expect((await k.events(id)).map((e) => [e.sequence, e.type, e.payload])).toEqual([
      [1, 'execution.created', expect.anything()],
      [2, 'execution.cancelled', { reason: 'cancelled by request' }],
    ]);
    expect(await k.request('POST', `/v0/executions/${id}/cancel`)).toEqual(refusal(409, 'CONFLICT', /^execution is in terminal state/));
  });

  it('§18.7 a connecting agent is assigned each pending execution, with its raw input; each gets execution.started and runs', async () => {
    const agent = uniqueName('agent');
    const input = '{"zeta":{"b":1,"a":[true,null]},"alpha":"x"}';
    const first = await create({ agent_id: agent, input: JSON.parse(input) as unknown, labels: { env: 'dev' } });
    const second = await create({ agent_id: agent, input: 'plain' });
    const stream = await k.connectAgent(agent);
    const assigned = new Map<unknown, Record<string, unknown>>();
    for (let i = 0; i < 2; i++) {
      const data = (await stream.next('execution.assigned')).data as Record<string, unknown>;
      assigned.set(data['execution_id'], data);
    }
    expect(assigned.get(first)).toEqual({ execution_id: first, session_id: expect.stringMatching(UUID7), agent_id: agent, input: JSON.parse(input) as unknown, labels: { env: 'dev' } });
    expect(JSON.stringify(assigned.get(first)?.['input'])).toBe(input);
    expect(assigned.get(second)).toEqual({ execution_id: second, session_id: expect.stringMatching(UUID7), agent_id: agent, input: 'plain' });
    for (const id of [first, second]) {
      expect(await k.status(id)).toBe('running');
      expect((await k.events(id)).map((e) => [e.type, e.payload])).toEqual([
        ['execution.created', expect.anything()],
        ['execution.started', { session_id: assigned.get(id)?.['session_id'], consumer_id: `${agent}-c` }],
      ]);
    }
  });

  it('§18.8 an execution created while its agent is connected is assigned at once', async () => {
    const agent = uniqueName('agent');
    const stream = await k.connectAgent(agent);
    const res = await k.post('/v0/executions', { agent_id: agent, input: { q: 'now' } });
    expect(res.status).toBe(201);
    expect(res.body['status']).toBe('running');
    expect((await stream.next('execution.assigned')).data).toMatchObject({ execution_id: res.body['id'], agent_id: agent, input: { q: 'now' } });
  });

  it('§18.9 two consumers of one agent_id share its executions round-robin; a stream without consumer_id is 400', async () => {
    const agent = uniqueName('pool');
    const a = await k.connectAgent(agent, `${agent}-a`);
    const b = await k.connectAgent(agent, `${agent}-b`);
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push(await create({ agent_id: agent }));
    const take = async (stream: typeof a) => [((await stream.next('execution.assigned')).data as { execution_id: string }).execution_id, ((await stream.next('execution.assigned')).data as { execution_id: string }).execution_id];
    expect(await take(a)).toEqual([made[0], made[2]]);
    expect(await take(b)).toEqual([made[1], made[3]]);
    expect((await k.events(made[1] as string))[1]?.payload).toMatchObject({ consumer_id: `${agent}-b` });
    expect(await k.get(`/v0/agents/stream?agent_id=${agent}`)).toEqual(refusal(400, 'VALIDATION_ERROR', 'agent_id and consumer_id query params are required'));
  });

  it('§18.10 complete with an output completes the execution with it; the log is created, started, intent.accepted, completed', async () => {
    const a = await k.startedAgent();
    expect(await a.intent({ type: 'complete', output: { answer: 42 } })).toEqual({ status: 200, body: { accepted: true } });
    expect((await k.get(`/v0/executions/${a.id}`)).body).toMatchObject({ status: 'completed', output: { answer: 42 } });
    expect((await k.events(a.id)).map((e) => [e.sequence, e.type, e.payload])).toEqual([
      [1, 'execution.created', expect.anything()],
      [2, 'execution.started', expect.anything()],
      [3, 'intent.accepted', { intent_type: 'complete', details: { output: { answer: 42 } } }],
      [4, 'execution.completed', { output: { answer: 42 } }],
    ]);
  });

  it('§18.11 fail with "boom" fails the execution with execution.failed error "boom"', async () => {
    const a = await k.startedAgent();
    expect(await a.intent({ type: 'fail', error: 'boom' })).toEqual({ status: 200, body: { accepted: true } });
    expect(await k.status(a.id)).toBe('failed');
    expect((await k.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['intent.accepted', { intent_type: 'fail', details: { error: 'boom' } }],
      ['execution.failed', { error: 'boom' }],
    ]);
  });

  it('§18.12 a local tool is step.created (max_attempts 1) then step.completed with its output, pushed as tool.result; a throwing one is step.failed, not retryable', async () => {
    const a = await k.startedAgent();
    const invoked = await a.invoke('tool_read', { path: 'README.md' });
    expect(invoked).toEqual({ status: 200, body: { accepted: true, step_id: expect.stringMatching(UUID7) } });
    const stepId = invoked.body['step_id'] as string;
    expect(await a.report(stepId, { success: true, data: { text: '# Kiwi' } })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { text: '# Kiwi' } });
    expect(ofStep(await k.events(a.id), stepId)).toEqual([
      ['step.created', { tool_id: 'tool_read', tool_version: 0, arguments: { path: 'README.md' }, max_attempts: 1, attempt: 1, deadline: expect.stringMatching(RFC3339) }],
      ['step.completed', { result: { text: '# Kiwi' } }],
    ]);

    const failing = (await a.invoke('tool_burn')).body['step_id'] as string;
    expect(await a.report(failing, { success: false, error: 'disk on fire' })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: failing, status: 'failed', error: 'disk on fire' });
    expect(ofStep(await k.events(a.id), failing)).toEqual([
      ['step.created', expect.objectContaining({ max_attempts: 1 })],
      ['step.failed', { error: 'disk on fire', retryable: false }],
    ]);
  });

  it('§18.13 a denied tool is accepted:false with the reason and its rule, intent.denied with rule_id, and no step', async () => {
    const a = await k.startedAgent();
    expect(await a.invoke('shell_exec', { command: 'rm -rf /' })).toEqual({ status: 200, body: { accepted: false, error: 'policy denied: Shell commands denied by default (rule: deny-shell)' } });
    const log = await k.events(a.id);
    expect(log.at(-1)).toMatchObject({
      type: 'intent.denied',
      payload: { intent_type: 'invoke_tool', tool_id: 'shell_exec', arguments: { command: 'rm -rf /' }, idempotency_key: `${a.id}:shell_exec:1a2b3c4d`, reason: expect.stringContaining('Shell commands denied by default'), rule_id: 'deny-shell' },
    });
    expect(typed(log)).toEqual(['execution.created', 'execution.started', 'intent.denied']);
  });

  it('§18.14 a rate limit of 2 per 1m denies the third call of one agent and tool; another agent is not affected', async () => {
    const a = await k.startedAgent();
    expect((await a.invoke('search', { q: 1 })).body).toMatchObject({ accepted: true });
    expect((await a.invoke('search', { q: 2 })).body).toMatchObject({ accepted: true });
    expect(await a.invoke('search', { q: 3 })).toEqual({ status: 200, body: { accepted: false, error: 'rate limit exceeded: max 2 per 1m (rule: limited)' } });
    expect((await k.events(a.id)).at(-1)).toMatchObject({ type: 'intent.denied', payload: { tool_id: 'search', reason: 'rate limit exceeded: max 2 per 1m', rule_id: 'limited' } });
    const b = await k.startedAgent();
    expect((await b.invoke('search', { q: 1 })).body).toMatchObject({ accepted: true });
  });

  it('§18.15 rules decide by priority, unmatched calls take the default, tool_ids globs and argument predicates (pattern, max, required) apply', async () => {
    const a = await k.startedAgent();
    const decided = async (tool: string, args?: unknown) => (await a.invoke(tool, args)).body;
    const accepted = { accepted: true, step_id: expect.stringMatching(UUID7) };
    expect(await decided('ordered')).toEqual({ accepted: false, error: 'policy denied: the lower priority decides (rule: order-early)' });
    expect(await decided('launch_rockets')).toEqual({ accepted: false, error: 'policy denied: No explicit allow rule matched (rule: default)' });
    expect((await k.events(a.id)).at(-1)?.payload).toMatchObject({ rule_id: 'default' });
    expect(await decided('web_search_deep')).toEqual(accepted);
    expect(await decided('fs_read')).toEqual(accepted);
    expect(await decided('fs.read_file')).toEqual({ accepted: false, error: 'policy denied: No explicit allow rule matched (rule: default)' });
    const shellDenied = { accepted: false, error: 'policy denied: Shell commands denied by default (rule: deny-shell)' };
    expect(await decided('shell_exec', { command: 'ls -la', timeout: 30, cwd: '/tmp' })).toEqual(accepted);
    expect(await decided('shell_exec', { command: 'ls -la', cwd: '/tmp' })).toEqual(accepted); // max: a missing field passes
    expect(await decided('shell_exec', { command: 'sudo ls', timeout: 10, cwd: '/tmp' })).toEqual(shellDenied); // pattern
    expect(await decided('shell_exec', { command: 7, cwd: '/tmp' })).toEqual(shellDenied); // pattern: strings only
    expect(await decided('shell_exec', { command: 'ls', timeout: 31, cwd: '/tmp' })).toEqual(shellDenied); // max
    expect(await decided('shell_exec', { command: 'ls', timeout: 10 })).toEqual(shellDenied); // required
    expect(await decided('shell_exec', { command: 'ls', timeout: 10, cwd: '' })).toEqual(shellDenied); // required: "" fails
    expect(await decided('shell_exec')).toEqual(shellDenied); // no arguments: the rule does not match
  });

  it('§18.16 require_approval answers pending_approval, blocks the execution with step.approval_required and execution.blocked; intents while blocked are 409', async () => {
    const a = await k.startedAgent();
    const tool = uniqueName('deploy');
    const asked = await a.invoke(tool, { env: 'prod' });
    expect(asked).toEqual({ status: 200, body: { accepted: true, step_id: expect.stringMatching(UUID7), pending_approval: true } });
    const stepId = asked.body['step_id'] as string;
    expect(await k.status(a.id)).toBe('blocked');
    expect((await k.events(a.id)).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['execution.created', undefined, expect.anything()],
      ['execution.started', undefined, expect.anything()],
      ['step.created', stepId, expect.objectContaining({ tool_id: tool, arguments: { env: 'prod' }, attempt: 1 })],
      ['step.approval_required', stepId, { tool_id: tool, arguments: { env: 'prod' }, remote: false, reason: 'deploys need a person' }],
      ['execution.blocked', undefined, { reason: 'approval', ref: stepId, tool_id: tool, arguments: { env: 'prod' } }],
    ]);
    const blocked = refusal(409, 'CONFLICT', `execution is blocked: execution ${a.id} is blocked pending approval`);
    expect(await a.invoke('tool_read')).toEqual(blocked);
    expect(await a.intent({ type: 'complete' })).toEqual(blocked);
  });

  it('§18.17 step.approve approved:true resolves the approval, resumes, the tool runs and the execution completes; approved:false fails the step', async () => {
    const a = await k.startedAgent();
    const tool = uniqueName('deploy');
    const stepId = (await a.invoke(tool, { env: 'prod' })).body['step_id'] as string;
    expect(await a.signal('step.approve', { step_id: stepId, approved: true })).toEqual(OK);
    expect((await a.stream.next('approval.resolved')).data).toEqual({ execution_id: a.id, step_id: stepId, approved: true, session_id: a.session });
    expect(await k.status(a.id)).toBe('running');
    expect((await k.events(a.id)).slice(-3).map((e) => [e.type, e.payload])).toEqual([
      ['signal.received', { signal_type: 'step.approve', payload: { step_id: stepId, approved: true } }],
      ['step.dispatched', { runner_id: '', job_id: '', deadline: expect.stringMatching(RFC3339) }],
      ['execution.resumed', { reason: 'approval granted' }],
    ]);
    expect(await a.report(stepId, { success: true, data: 'deployed' })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: 'deployed' });
    expect(await a.intent({ type: 'complete', output: 'shipped' })).toEqual({ status: 200, body: { accepted: true } });
    expect(await k.status(a.id)).toBe('completed');

    const d = await k.startedAgent();
    const denied = (await d.invoke(tool)).body['step_id'] as string;
    expect(await d.signal('step.approve', { step_id: denied, approved: false })).toEqual(OK);
    expect((await d.stream.next('approval.resolved')).data).toEqual({ execution_id: d.id, step_id: denied, approved: false, session_id: d.session });
    expect((await k.events(d.id)).slice(-2).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['step.failed', denied, { error: 'approval denied by human', retryable: false }],
      ['execution.resumed', undefined, { reason: 'approval denied' }],
    ]);
    expect(await k.status(d.id)).toBe('running');
  });

  it('§18.18 a remote tool goes to a capable runner as job.assigned; the log shows created (max 3), dispatched, started, completed; the agent gets the value', async () => {
    const tool = uniqueName('tool_remote');
    const runner = await k.connectRunner(uniqueName('runner'), [tool, 'tool_other']);
    const a = await k.startedAgent();
    const invoked = await a.invoke(tool, { q: 'x', opts: { deep: true } }, { remote: true });
    expect(invoked).toEqual({ status: 200, body: { accepted: true, step_id: expect.stringMatching(UUID7) } });
    const stepId = invoked.body['step_id'] as string;
    const job = await runner.nextJob();
    expect(job).toMatchObject({ id: expect.stringMatching(UUID7), execution_id: a.id, step_id: stepId, attempt: 1, tool_id: tool, arguments: { q: 'x', opts: { deep: true } }, deadline: expect.stringMatching(RFC3339) });
    expect(await runner.started(job)).toEqual(OK);
    expect(await runner.report(job, { success: true, data: { hits: 3 } })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'succeeded', result: { hits: 3 } });
    expect(ofStep(await k.events(a.id), stepId)).toEqual([
      ['step.created', { tool_id: tool, tool_version: 0, arguments: { q: 'x', opts: { deep: true } }, max_attempts: 3, attempt: 1, deadline: job.deadline }],
      ['step.dispatched', { runner_id: '', job_id: job.id, deadline: job.deadline }],
      ['step.started', { runner_id: runner.id }],
      ['step.completed', { result: { hits: 3 } }],
    ]);
  });

  it('§18.19 a remote call made before any runner exists is delivered when a capable runner connects, with a step.dispatched naming it', async () => {
    const tool = uniqueName('tool_late');
    const a = await k.startedAgent();
    const stepId = (await a.invoke(tool, { n: 1 }, { remote: true })).body['step_id'] as string;
    const runner = await k.connectRunner(uniqueName('runner'), [tool]);
    const job = await runner.nextJob();
    expect(job).toMatchObject({ step_id: stepId, attempt: 1, tool_id: tool, arguments: { n: 1 } });
    expect(ofStep(await k.events(a.id), stepId).filter(([type]) => type === 'step.dispatched')).toEqual([
      ['step.dispatched', { runner_id: '', job_id: job.id, deadline: job.deadline }],
      ['step.dispatched', { runner_id: runner.id, job_id: job.id, deadline: job.deadline }],
    ]);
  });

  it('§18.20 one runner connection gets several jobs one after another, each freed by its result (no consumer_id), never two at once', async () => {
    const tool = uniqueName('tool_one');
    const runner = await k.connectRunner(uniqueName('runner'), [tool]);
    const a = await k.startedAgent();
    for (const n of [1, 2, 3]) expect((await a.invoke(tool, { n }, { remote: true })).body['accepted']).toBe(true);
    const ran: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await runner.nextJob();
      await idle(runner);
      ran.push(job.arguments);
      expect(await runner.report(job, { success: true, data: i })).toEqual(OK);
    }
    expect(ran).toEqual(expect.arrayContaining([{ n: 1 }, { n: 2 }, { n: 3 }]));
  });

  it('§18.21 a retryable runner error is retried (attempt 2 after ≥2 s, then 3) then fails to the agent; a non-retryable one fails at once', async () => {
    const tool = uniqueName('tool_flaky');
    const runner = await k.connectRunner(uniqueName('runner'), [tool]);
    const a = await k.startedAgent();
    const stepId = (await a.invoke(tool, { q: 1 }, { remote: true })).body['step_id'] as string;
    const first = await runner.nextJob();
    expect(first.attempt).toBe(1);
    expect(await runner.report(first, { success: false, error: 'busy', retryable: true })).toEqual(OK);
    expect(ofStep(await k.events(a.id), stepId).slice(-2)).toEqual([
      ['step.failed', { error: 'busy', retryable: true }],
      ['step.retried', { next_attempt: 2 }],
    ]);
    skew += 1000;
    await idle(runner); // 2 s before attempt 2
    skew += 1000;
    const second = await runner.nextJob();
    expect(second).toMatchObject({ step_id: stepId, attempt: 2, tool_id: tool, arguments: { q: 1 } });
    expect(second.id).not.toBe(first.id);
    expect(await runner.report(second, { success: false, error: 'busy', retryable: true })).toEqual(OK);
    skew += 3000;
    await idle(runner); // 4 s before attempt 3
    skew += 1000;
    const third = await runner.nextJob();
    expect(third).toMatchObject({ step_id: stepId, attempt: 3 });
    expect(await runner.report(third, { success: false, error: 'still busy', retryable: true })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: stepId, status: 'failed', error: 'still busy' });
    expect(ofStep(await k.events(a.id), stepId).map(([type, payload]) => (type === 'step.failed' || type === 'step.retried' ? [type, payload] : type))).toEqual([
      'step.created',
      'step.dispatched',
      ['step.failed', { error: 'busy', retryable: true }],
      ['step.retried', { next_attempt: 2 }],
      'step.dispatched',
      ['step.failed', { error: 'busy', retryable: true }],
      ['step.retried', { next_attempt: 3 }],
      'step.dispatched',
      ['step.failed', { error: 'still busy', retryable: false }],
    ]);

    const hard = (await a.invoke(tool, { q: 2 }, { remote: true })).body['step_id'] as string;
    expect(await runner.report(await runner.nextJob(), { success: false, error: 'bad input' })).toEqual(OK);
    expect((await a.stream.next('tool.result')).data).toEqual({ execution_id: a.id, step_id: hard, status: 'failed', error: 'bad input' });
    expect(ofStep(await k.events(a.id), hard).slice(-1)).toEqual([['step.failed', { error: 'bad input', retryable: false }]]);
  });

  it('§18.22 a result for a resolved step is 409 CONFLICT, for an unknown step 404 NOT_FOUND', async () => {
    const tool = uniqueName('tool_done');
    const runner = await k.connectRunner(uniqueName('runner'), [tool]);
    const a = await k.startedAgent();
    await a.invoke(tool, undefined, { remote: true });
    const job = await runner.nextJob();
    expect(await runner.report(job, { success: true, data: 1 })).toEqual(OK);
    expect(await runner.report(job, { success: true, data: 2 })).toEqual(refusal(409, 'CONFLICT', 'step already resolved'));
    expect(await runner.report({ ...job, step_id: 'nope' }, { success: true })).toEqual(refusal(404, 'NOT_FOUND', 'not found: step nope'));

    const local = (await a.invoke('tool_read')).body['step_id'] as string;
    expect(await a.report(local, { success: true })).toEqual(OK);
    expect(await a.report(local, { success: true })).toEqual(refusal(409, 'CONFLICT', 'step already resolved'));
    expect(await a.report('nope', { success: true })).toEqual(refusal(404, 'NOT_FOUND', 'not found: step nope'));
  });

  it('§18.23 an agent that disconnects returns its running execution to pending; on reconnect it is assigned again with a new session and the cancelled step in history', async () => {
    const a = await k.startedAgent();
    const stepId = (await a.invoke('tool_read', { path: 'a' })).body['step_id'] as string;
    a.stream.close();
    await expect.poll(() => k.status(a.id)).toBe('pending');
    expect((await k.events(a.id)).slice(-3).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['agent.timeout', undefined, { session_id: a.session }],
      ['step.cancelled', stepId, { reason: 'agent disconnected' }],
      ['execution.reset', undefined, { reason: 'agent_disconnect', from_status: 'running' }],
    ]);
    const back = await k.connectAgent(a.agent);
    const assigned = (await back.next('execution.assigned')).data as Record<string, unknown>;
    expect(assigned).toEqual({
      execution_id: a.id,
      session_id: expect.stringMatching(UUID7),
      agent_id: a.agent,
      input: null,
      history: [{ step_id: stepId, tool_id: 'tool_read', status: 'cancelled', arguments: { path: 'a' }, error: 'agent disconnected', completed_at: expect.stringMatching(RFC3339) }],
    });
    expect(assigned['session_id']).not.toBe(a.session);
    expect(await k.status(a.id)).toBe('running');
  });

  it('§18.24 the old session then gets 401; a session used for another execution gets 400', async () => {
    const a = await k.startedAgent();
    a.stream.close();
    await expect.poll(() => k.status(a.id)).toBe('pending');
    const back = await k.connectAgent(a.agent);
    const session = ((await back.next('execution.assigned')).data as { session_id: string }).session_id;
    const complete = (executionId: string, sessionId: string) => k.post('/v0/agents/intent', { execution_id: executionId, session_id: sessionId, intent: { type: 'complete' } });
    expect(await complete(a.id, a.session)).toEqual(refusal(401, 'UNAUTHORIZED', `session not found: session ${a.session}`));
    const other = await create({ agent_id: a.agent });
    const otherSession = ((await back.next('execution.assigned')).data as { session_id: string }).session_id;
    expect(await complete(a.id, otherSession)).toEqual(refusal(400, 'VALIDATION_ERROR'));
    expect(await complete(other, session)).toEqual(refusal(400, 'VALIDATION_ERROR'));
    expect(await complete(a.id, session)).toEqual({ status: 200, body: { accepted: true } });
  });

  it('§18.25 a blocked execution stays blocked when its agent disconnects', async () => {
    const a = await k.startedAgent();
    expect(await a.intent({ type: 'wait', signal_type: 'go' })).toEqual({ status: 200, body: { accepted: true } });
    a.stream.close();
    // The disconnect is handled once the session is gone: the agent's next call is then a 401.
    await expect.poll(async () => (await a.intent({ type: 'complete' })).status).toBe(401);
    expect(await k.status(a.id)).toBe('blocked');
    expect(typed(await k.events(a.id)).slice(-2)).toEqual(['intent.accepted', 'execution.blocked']);
  });

  it('§18.26 a wait blocks on its signal; the signal resumes the execution and is pushed with its execution_id and payload', async () => {
    const a = await k.startedAgent();
    expect(await a.intent({ type: 'wait', signal_type: 'go' })).toEqual({ status: 200, body: { accepted: true } });
    expect(await k.status(a.id)).toBe('blocked');
    expect((await k.events(a.id)).at(-1)).toMatchObject({ type: 'execution.blocked', payload: { reason: 'signal', ref: 'go' } });
    expect(await a.signal('go', { ok: true })).toEqual(OK);
    expect((await a.stream.next('signal.received')).data).toEqual({ execution_id: a.id, signal_type: 'go', payload: { ok: true } });
    expect(await k.status(a.id)).toBe('running');
    expect((await k.events(a.id)).slice(-2).map((e) => [e.type, e.payload])).toEqual([
      ['signal.received', { signal_type: 'go', payload: { ok: true } }],
      ['execution.resumed', { reason: 'signal received: go' }],
    ]);
  });

  it('§18.27 a signal sent before the wait is consumed by it without blocking, and pushed again after the answer', async () => {
    const a = await k.startedAgent();
    expect(await a.signal('ready', { n: 1 })).toEqual(OK);
    expect((await a.stream.next('signal.received')).data).toEqual({ execution_id: a.id, signal_type: 'ready', payload: { n: 1 } });
    expect(await a.intent({ type: 'wait', signal_type: 'ready' })).toEqual({ status: 200, body: { accepted: true } });
    // What waitSignal, listening only from its answer on, resolves with.
    expect((await a.stream.next('signal.received')).data).toEqual({ execution_id: a.id, signal_type: 'ready', payload: { n: 1 } });
    expect(await k.status(a.id)).toBe('running');
    expect((await k.events(a.id)).slice(-3).map((e) => [e.type, e.payload])).toEqual([
      ['signal.received', { signal_type: 'ready', payload: { n: 1 } }],
      ['intent.accepted', { intent_type: 'wait', details: { signal_type: 'ready' } }],
      ['execution.resumed', { reason: 'signal received: ready' }],
    ]);
  });

  it('§18.28 a signal to an ended execution, and complete or fail with a step open, are 409 CONFLICT', async () => {
    const a = await k.startedAgent();
    await a.invoke('tool_read');
    expect(await a.intent({ type: 'complete' })).toEqual(refusal(409, 'CONFLICT', 'conflict: cannot complete with active steps in progress'));
    expect(await a.intent({ type: 'fail', error: 'boom' })).toEqual(refusal(409, 'CONFLICT', 'conflict: cannot fail with active steps in progress'));
    expect(await k.status(a.id)).toBe('running');
    const b = await k.startedAgent();
    expect((await b.intent({ type: 'complete' })).status).toBe(200);
    expect(await b.signal('go')).toEqual(refusal(409, 'CONFLICT', /^execution is in terminal state/));
  });

  it('§18.29 getEvents numbers events from 1 without gaps, honours after_sequence and limit (at most 1000), latest_sequence is the last returned, [] and 0 for an unknown id', async () => {
    // 1004 events, written in one transaction as the gateway records a chat (the kernel's own
    // writeChats), under the client whose key reads them: 501 invokes over HTTP made as many in ~4 s.
    const id = uuidv7();
    const at = new Date().toISOString();
    const events = Array.from({ length: 1004 }, () => ({ id: uuidv7(), type: 'step.created', timestamp: at, payload: '{}', causationId: id, correlationId: id }));
    await k.kernel.writeChats([{ id, create: { client: 'kernel-client', agentId: uniqueName('chat'), input: '{}', labels: {}, createdAt: at }, events, steps: [] }]);
    const page = async (query: string) => {
      const body = (await k.get(`/v0/executions/${id}/events${query}`)).body as { events: WireEvent[]; latest_sequence: number };
      return { sequences: body.events.map((e) => e.sequence), latest: body.latest_sequence };
    };
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    expect(await page('?after_sequence=0&limit=5000')).toEqual({ sequences: range(1, 1000), latest: 1000 });
    expect(await page('?after_sequence=1000&limit=1000')).toEqual({ sequences: range(1001, 1004), latest: 1004 });
    expect(await page('?after_sequence=2&limit=3')).toEqual({ sequences: [3, 4, 5], latest: 5 });
    expect(await page('')).toEqual({ sequences: range(1, 100), latest: 100 });
    expect(await page('?after_sequence=1004&limit=100')).toEqual({ sequences: [], latest: 0 });
    expect(await k.get('/v0/executions/nope/events?after_sequence=0&limit=100')).toEqual({ status: 200, body: { events: [], latest_sequence: 0 } });
  });

  it('§18.30 streamEvents replays then tails (event: type, id: sequence), sends :heartbeat within 5 s, ends after the terminal event; after_sequence starts after it', async () => {
    // The streams' heartbeat timers (setInterval, every 5 s) run on a clock the test moves, so
    // the 5 s are not waited for; everything else (HTTP, the database) keeps real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    onTestFinished(() => void vi.useRealTimers());
    const agent = uniqueName('watched');
    const id = await create({ agent_id: agent, input: { q: 1 } });
    const watch = await k.sse(`/v0/executions/${id}/stream`);
    expect(watch.status).toBe(200);
    const created = await watch.next('execution.created');
    expect(created).toEqual({ id: '1', event: 'execution.created', data: expect.objectContaining({ id: expect.stringMatching(UUID7), execution_id: id, type: 'execution.created', sequence: 1, schema_version: 1, payload: { agent_id: agent, input: { q: 1 }, labels: null } }) });
    const agentStream = await k.connectAgent(agent);
    const session = ((await agentStream.next('execution.assigned')).data as { session_id: string }).session_id;
    expect(await watch.next('execution.started')).toMatchObject({ id: '2', data: { sequence: 2, type: 'execution.started' } });
    vi.advanceTimersByTime(5_000);
    await expect.poll(() => watch.comments.includes('heartbeat'), { timeout: 6_000, interval: 20 }).toBe(true);
    expect(await k.post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'complete', output: 'ok' } })).toEqual({ status: 200, body: { accepted: true } });
    expect(await watch.next('intent.accepted')).toMatchObject({ id: '3', data: { sequence: 3 } });
    expect(await watch.next('execution.completed')).toMatchObject({ id: '4', data: { sequence: 4, payload: { output: 'ok' } } });
    await watch.ended;

    const late = await k.sse(`/v0/executions/${id}/stream?after_sequence=2`);
    expect(await late.next('intent.accepted')).toMatchObject({ id: '3' });
    expect(await late.next('execution.completed')).toMatchObject({ id: '4' });
    await late.ended;
    await expect(late.next('execution.created', 0)).rejects.toThrow(/ended/);
  }, 15_000);

  it('§18.31 a missed step deadline (timeout_ms 1000, silent runner) yields step.timed_out and execution.failed "step timed out" on the next watcher pass', async () => {
    const tool = uniqueName('slow');
    const runner = await k.connectRunner(uniqueName('runner'), [tool]);
    const a = await k.startedAgent();
    const stepId = (await a.invoke(tool, {}, { remote: true })).body['step_id'] as string;
    const job = await runner.nextJob();
    expect(Date.parse(job.deadline) - Date.parse((await k.events(a.id)).find((e) => e.type === 'step.created')?.timestamp ?? '')).toBe(1000);
    skew += 500;
    await k.kernel.reaper.sweep();
    expect(await k.status(a.id)).toBe('running');
    skew += 600;
    await k.kernel.reaper.sweep();
    expect(await k.status(a.id)).toBe('failed');
    expect((await k.events(a.id)).slice(-2).map((e) => [e.type, e.step_id, e.payload])).toEqual([
      ['step.timed_out', stepId, {}],
      ['execution.failed', undefined, { error: 'step timed out' }],
    ]);
  });

  it('§18.32 updateCapabilities routes the new tool to the runner and stops its old ones', async () => {
    const [t1, t2] = [uniqueName('tool_old'), uniqueName('tool_new')];
    const runner = await k.connectRunner(uniqueName('runner'), [t1]);
    expect(await k.post(`/v0/runners/${runner.id}/capabilities`, { tools: [t2] })).toEqual(OK);
    const a = await k.startedAgent();
    await a.invoke(t1, { n: 1 }, { remote: true });
    await a.invoke(t2, { n: 2 }, { remote: true });
    const job = await runner.nextJob();
    expect(job).toMatchObject({ tool_id: t2, arguments: { n: 2 } });
    expect(await runner.report(job, { success: true })).toEqual(OK);
    await idle(runner);
  });
});
