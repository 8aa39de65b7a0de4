import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import { serveGateway, type ServedGateway } from '../../helpers/serve-gateway.js';
import { createTempProject, REPO_ROOT } from '../../helpers/temp-project.js';
import { openSse, type SseClient } from '../../fixtures/kernel/sse-client.js';
import { kiwiCli } from '../../helpers/run-resources.js';

/**
 * `kiwi executions` and `kiwi approvals` against a running gateway's kernel (embedded PGlite on
 * disk), with an agent that speaks the v0 API over HTTP and SSE.
 */

const project = createTempProject();
project.write('.ai/config/kernel-policy.yaml', 'rules:\n  - { id: ask, priority: 1, when: { tool_id: deploy }, then: { decision: require_approval, reason: "deploys need a person" } }\n');
let served: ServedGateway;
let agent: SseClient;

beforeAll(async () => {
  served = await serveGateway(project.root);
  agent = await openSse(`${served.server.url}/v0/agents/stream?agent_id=ops&consumer_id=ops-1`);
}, 60_000);
afterAll(async () => {
  agent?.close();
  await served?.close();
  project.remove();
});

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: { ...served.env, KIWI_PORT: String(served.server.port) }, cwd: project.root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  return (await (await fetch(`${served.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as Record<string, unknown>;
}

describe('kiwi approvals', () => {
  it('lists the call that waits for a person, grants it, and the agent hears of it', async () => {
    const id = (await post('/v0/executions', { agent_id: 'ops', labels: { env: 'staging' } }))['id'] as string;
    const session = ((await agent.next('execution.assigned')).data as { session_id: string }).session_id;
    const asked = await post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: 'deploy', arguments: { env: 'staging' } } });
    const stepId = asked['step_id'] as string;

    const list = await kiwi('approvals', 'list');
    expect(list.code, list.err).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${stepId}  deploy \\{"env":"staging"\\}  \\(agent ops, execution ${id}, since `));
    const granted = await kiwi('approvals', 'grant', stepId);
    expect(granted.out).toBe(`granted: deploy {"env":"staging"} (step ${stepId}, execution ${id})`);
    expect((await agent.next('approval.resolved')).data).toMatchObject({ execution_id: id, step_id: stepId, approved: true });
    expect((await kiwi('approvals', 'list')).out).toBe('nothing waits for approval');

    const again = await kiwi('approvals', 'grant', stepId);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/no call waits for approval as step/);
    expect((await kiwi('approvals', 'grant')).code).toBe(2);
    expect((await kiwi('approvals', 'grant', stepId, '--reason', 'x')).err).toMatch(/--reason goes with deny/);
  });

  // Only root can start a process as a uid that has no passwd entry, where os.userInfo() throws.
  it.runIf(process.getuid?.() === 0)('answers as "unknown" for a uid with no passwd entry and no USER', async () => {
    const id = (await post('/v0/executions', { agent_id: 'ops' }))['id'] as string;
    const session = ((await agent.next('execution.assigned')).data as { session_id: string }).session_id;
    const stepId = (await post('/v0/agents/intent', { execution_id: id, session_id: session, intent: { type: 'invoke_tool', tool_id: 'deploy', arguments: { env: 'prod' } } }))['step_id'] as string;
    const env = { PATH: process.env['PATH'], HOME: project.root, KIWI_PORT: String(served.server.port) };
    // Asynchronous: the gateway answering it runs in this process.
    const { stdout } = await promisify(execFile)(process.execPath, [...kiwiCli(), 'approvals', 'grant', stepId], { cwd: REPO_ROOT, uid: 4242, gid: 4242, env });
    expect(stdout.trim()).toBe(`granted: deploy {"env":"prod"} (step ${stepId}, execution ${id})`);
    const events = (await kiwi('executions', 'events', id, '--json')).out.split('\n').map((l) => JSON.parse(l) as { type: string; payload: Record<string, unknown> });
    expect(events.find((e) => e.type === 'signal.received')?.payload).toMatchObject({ payload: { decided_by: 'unknown' } });
  });
});

describe('kiwi executions', () => {
  it('lists, shows, prints the events of and cancels executions', async () => {
    const id = (await post('/v0/executions', { agent_id: 'nobody', input: { q: 1 }, labels: { team: 'cli' } }))['id'] as string;
    const list = await kiwi('executions', 'list', '--label', 'team:cli');
    expect(list.code, list.err).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${id}  pending    nobody  \\S+  team:cli$`));
    expect(JSON.parse((await kiwi('executions', 'show', id, '--json')).out)).toMatchObject({ id, status: 'pending', input: { q: 1 } });
    expect((await kiwi('executions', 'cancel', id)).out).toBe(`${id} cancelled`);
    const events = await kiwi('executions', 'events', id);
    expect(events.out.split('\n').map((l) => l.trim().split(/\s+/).slice(0, 1).concat(l.trim().split(/\s+/)[2] ?? ''))).toEqual([
      ['1', 'execution.created'],
      ['2', 'execution.cancelled'],
    ]);
    expect((await kiwi('executions', 'events', id, '--after', '1', '--json')).out.split('\n').map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['execution.cancelled']);
  });

  it('says what went wrong: an unknown id, a second cancel, no action, no gateway', async () => {
    expect(await kiwi('executions', 'show', 'nope')).toMatchObject({ code: 1, err: 'kiwi executions: NOT_FOUND: not found: execution nope' });
    expect((await kiwi('executions')).code).toBe(2);
    expect((await kiwi('executions', 'frob')).err).toMatch(/unknown action "frob"/);
    expect((await kiwi('executions', 'events', 'x', '--after', '-1')).code).toBe(2);
    const gone = await kiwi('executions', 'list', '--url', 'http://127.0.0.1:9');
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/no Kiwi gateway answers at http:\/\/127\.0\.0\.1:9/);
  });
});
