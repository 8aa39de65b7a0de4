import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import type { CallOutcome, ToolCall } from '../../src/proxy/tool-call.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { FIXTURES } from '../helpers/temp-project.js';

/**
 * Steering directives on the gateway as `kiwi serve` wires it, the model a local server replaying
 * recorded streams: the call waits for the directive's thread and its answer decides (skip, fail,
 * abort, continue, retry); an answer with no decision, and one that does not come in time, fail
 * closed. A hook's `abort` stops the thread whose call it was. And the shipped directives: the
 * demo policy's retry_on_timeout on a call that timed out, git_checkpoint in a git work tree.
 */

const JUDGE = `# judge

\`\`\`xml
<directive name="judge" version="1.0.0">
  <metadata>
    <description>Decide whether a call goes ahead</description>
    <model tier="balanced"/>
    <limits turns="1" spawns="0"/>
  </metadata>
  <inputs><input name="tool" type="string" required="false">The tool called</input></inputs>
  <process><step name="decide"><description>Answer with a line decision: continue</description></step></process>
</directive>
\`\`\`
`;

const WORKER = `# worker

\`\`\`xml
<directive name="worker" version="1.0.0">
  <metadata>
    <description>Count the README's words, then read it</description>
    <model tier="balanced"/>
    <permissions>
      <read resource="filesystem" path="**"/>
      <execute resource="tool" id="word_count"/>
      <execute resource="tool" id="read_file"/>
      <execute resource="shell" action="python3"/>
      <execute resource="shell" action="node"/>
    </permissions>
  </metadata>
  <process><step name="count"><description>Count the words of README.md</description></step></process>
</directive>
\`\`\`
`;

const FLAKY = `tool_id: flaky
tool_type: script
executor: subprocess
version: "1.0.0"
description: fails on its first runs
mutates_state: false
config: { command: node, script: flaky.mjs, args: ["{script}", "{key}", "{fail}", "{how}"], timeout_ms: 10000 }
parameters:
  - { name: key, type: string, required: true }
  - { name: fail, type: string, required: true }
  - { name: how, type: string, required: true }
`;

// Its first run hangs until this timeout, and its second must end within it: a node start,
// which a loaded machine has taken over 1.5 s to do.
const SLOW = FLAKY.replace('tool_id: flaky', 'tool_id: flaky_slow').replace('timeout_ms: 10000', 'timeout_ms: 3000');

const HOOKS = `hooks:
  - when: event.name == "before_call" and client.name == "judged"
    directive: { name: judge, steer: true, timeout_s: 30, inputs: { tool: "\${tool.id}" } }
  - when: event.name == "before_call" and client.name == "impatient"
    directive: { name: judge, steer: true, timeout_s: 1 }
  - when: event.name == "after_call" and tool.id == "flaky" and event.detail.result.is_error
    directive: { name: judge, steer: true, retries: 2 }
  - when: event.name == "before_call" and client.name == "aborter" and tool.id == "word_count"
    abort: stop the thread here
`;

let served: DemoGateway;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-steer-',
    config: 'model_tiers: { balanced: gpt-4o-mini, fast: gpt-4o-mini }',
    prepare(root) {
      writeFileSync(path.join(root, '.ai', 'directives', 'judge.md'), JUDGE);
      writeFileSync(path.join(root, '.ai', 'directives', 'worker.md'), WORKER);
      writeFileSync(path.join(root, '.ai', 'tools', 'project', 'flaky.yaml'), FLAKY);
      writeFileSync(path.join(root, '.ai', 'tools', 'project', 'flaky_slow.yaml'), SLOW);
      execFileSync('git', ['init', '-q'], { cwd: root });
      writeFileSync(path.join(root, '.ai', 'tools', 'project', 'flaky.mjs'), readFileSync(path.join(FIXTURES, 'proxy', 'flaky.mjs'), 'utf8'));
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      const text = readFileSync(policy, 'utf8').replace('tools: [', 'tools: [flaky, flaky_slow, ').replace('write: [".ai/notes/**"]', 'write: [".ai/notes/**", "runs/**"]').replace(/^hooks:\n/m, HOOKS);
      writeFileSync(policy, text);
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const call = (client: string, over: Pick<ToolCall, 'target'> | object = {}): Promise<CallOutcome> =>
  served.gateway.project.proxy.call({ target: { tool: 'word_count', args: { path: 'README.md' } }, caller: { session: 'steer-session', client, source: 'cli' }, ...over });
const answer = (...texts: string[]): void => served.llm.replyOnce(...texts.map((t) => openAiStream([t])));
const recordOf = async (callId: string) => {
  await served.gateway.project.audit.flush();
  return (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 200 })).find((r) => r.call_id === callId);
};

describe("a steering directive's answer decides the call", () => {
  it('skip: the call is not run, the thread that decided is in the record', async () => {
    answer('The README needs no counting.\ndecision: skip\nreason: nothing to count');
    const outcome = await call('judged');
    expect(outcome).toMatchObject({ status: 'ok', skipped: expect.stringMatching(/policy\.yaml:\d+$/), result: { text: expect.stringMatching(/^skipped by hook .*: nothing to count$/) } });
    const record = await recordOf(outcome.callId);
    expect(record?.steering).toEqual([{ event: 'before_call', hook: outcome.status === 'ok' ? outcome.skipped : '', decision: 'skip', reason: 'nothing to count', thread: expect.stringMatching(/^[0-9a-f-]{36}$/), attempt: 0 }]);
    const lines = await fileThreadStore(served.root).read(record?.steering?.[0]?.thread ?? '');
    expect(lines[0]).toMatchObject({ type: 'thread', directive: 'judge', inputs: { tool: 'word_count' }, client: 'judged' });
  });

  it('continue: the call runs', async () => {
    answer('decision: continue');
    expect(await call('judged')).toMatchObject({ status: 'ok', result: { isError: false } });
  });

  it("fail and abort: the call does not run, and fails with the thread's reason", async () => {
    answer('decision: fail\nreason: not on Sundays', 'decision: abort\nreason: the run went wrong');
    expect(await call('judged')).toMatchObject({ status: 'error', error: { code: 'HOOK_FAILED', message: expect.stringMatching(/^not on Sundays \(hook at /) } });
    expect(await call('judged')).toMatchObject({ status: 'error', error: { code: 'HOOK_ABORTED' }, abort: expect.stringMatching(/^the run went wrong/) });
  });

  it('retry: a tool that fails twice succeeds on its third run, each retry asked of a thread', async () => {
    answer('decision: retry', 'decision: retry');
    const outcome = await call('local', { target: { tool: 'flaky', args: { key: 'judged-twice', fail: '2', how: 'exit' } } });
    expect(outcome).toMatchObject({ status: 'ok', result: { text: 'ok on run 3' } });
    const record = await recordOf(outcome.callId);
    expect(record?.attempts).toBe(3);
    expect(record?.steering?.map((s) => [s.event, s.decision, s.attempt, typeof s.thread])).toEqual([
      ['after_call', 'retry', 1, 'string'],
      ['after_call', 'retry', 2, 'string'],
    ]);
  });

  it('an answer with no decision fails closed, saying what the thread answered', async () => {
    answer('I would rather not say.');
    const outcome = await call('judged');
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/^hook at .*policy\.yaml:\d+ failed, so the call is refused: steering directive judge's thread [0-9a-f-]{36} answered no decision: no line `decision: …`$/);
  });

  it('an answer that does not come in time fails closed', async () => {
    served.llm.replyOnce({ recording: openAiStream(['thinking']), stallAfterChunks: 1 });
    const outcome = await call('impatient');
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/steering directive judge did not answer within 1 s/);
  });
});

describe('abort', () => {
  it("stops the thread whose call it was, with the hook's reason; its later intents do not run", async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: word_count {"path": "README.md"}] [TOOL: read_file {"path": "README.md"}]']));
    const outcome = await served.gateway.threads.run({ directive: 'worker', client: 'aborter' });
    expect(outcome).toMatchObject({ status: 'failed', error: expect.stringMatching(/^a hook aborted the run at word_count: stop the thread here \(hook at .*policy\.yaml:\d+\)$/) });
    const lines = await fileThreadStore(served.root).read(outcome.id);
    expect(lines.filter((l) => l.type === 'call').map((l) => (l.type === 'call' ? l.tool : ''))).toEqual(['word_count']);
  });
});

describe('the shipped hook directives', () => {
  it("the demo policy's retry_on_timeout: a call that timed out runs again when it answers retry", async () => {
    answer('decision: retry\nreason: a timeout may pass');
    const outcome = await call('local', { target: { tool: 'flaky_slow', args: { key: 'demo-timeout', fail: '1', how: 'hang' } } });
    expect(outcome).toMatchObject({ status: 'ok', result: { text: 'ok on run 2' } });
    const record = await recordOf(outcome.callId);
    expect(record?.steering).toEqual([{ event: 'error', hook: expect.stringMatching(/^\.ai\/config\/policy\.yaml:\d+$/), decision: 'retry', reason: 'a timeout may pass', thread: expect.any(String), attempt: 1 }]);
    const header = (await fileThreadStore(served.root).read(record?.steering?.[0]?.thread ?? ''))[0];
    expect(header).toMatchObject({ directive: 'retry_on_timeout', inputs: { tool: 'flaky_slow', code: 'timeout', message: expect.stringMatching(/did not finish within 3000 ms/) } });
  });

  it('git_checkpoint commits the work tree to the checkpoints ref and answers continue', async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: help checkpoint: before the deploy]']), openAiStream(['decision: continue\nreason: checkpoint taken']));
    const outcome = await served.gateway.threads.run({ directive: 'git_checkpoint', inputs: { why: 'before the deploy' }, client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', result: 'decision: continue\nreason: checkpoint taken' });
    const help = (await fileThreadStore(served.root).read(outcome.id)).find((l) => l.type === 'help');
    expect(help).toMatchObject({ action: 'checkpoint', message: 'before the deploy', checkpoint: expect.stringMatching(/^[0-9a-f]{12,}$/) });
    const tip = execFileSync('git', ['rev-parse', 'refs/kiwi/checkpoints/main'], { cwd: served.root, encoding: 'utf8' }).trim();
    expect(tip.startsWith(help?.type === 'help' ? (help.checkpoint ?? '-') : '-')).toBe(true);
  });
});
