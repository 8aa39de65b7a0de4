import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import { createTempProject, FIXTURES, type TempProject } from '../helpers/temp-project.js';

/**
 * Hooks that steer calls of real subprocess tools (a project opened as `kiwi run` opens it, so no
 * thread can run): the first matching hook acts, `fallthrough` lets the next act too, `retry` runs
 * a tool that fails on its first runs again within its bound, `skip`, `fail`, `abort` and
 * `continue`, a steering directive failing closed where no thread runs, and every decision in
 * the call's audit record read back from disk.
 */

const FLAKY = `tool_id: flaky
tool_type: script
executor: subprocess
version: "1.0.0"
description: fails on its first runs
config: { command: node, script: flaky.mjs, args: ["{script}", "{key}", "{fail}", "{how}"], timeout_ms: 10000 }
parameters:
  - { name: key, type: string, required: true }
  - { name: fail, type: string, required: true }
  - { name: how, type: string, required: true }
`;

// The runs that hang end at this timeout, so it is short; a run that must succeed within it is
// a node start, which a loaded machine has taken over 1.5 s to do.
const FLAKY_HANG = FLAKY.replace('tool_id: flaky', 'tool_id: flaky_hang').replace('timeout_ms: 10000', 'timeout_ms: 3000');


const POLICY = `version: 1
tools: [echo_args, flaky, flaky_hang]
commands: [{ executable: node }]
filesystem: { read: ["**"], write: ["runs/**"] }
hooks:
  - when: event.name == "error" and event.code == "timeout" and arguments.key.startsWith("twice")
    retry: { max: 2 }
  - when: event.name == "error" and event.code == "timeout" and arguments.key.startsWith("once")
    retry: { max: 1 }
  - when: event.name == "after_call" and tool.id == "flaky" and event.detail.result.is_error
    retry: { max: 2 }
  - when: event.name == "error" and event.code == "timeout"
    fail: the tool timed out; try a smaller input
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "skip me"
    skip: echo has nothing to say today
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "fail me"
    fail: echo refuses this text
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "abort me"
    abort: this run must stop
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "judge me"
    directive: { name: judge, steer: true, timeout_s: 5 }
  - when: event.name == "after_call" and tool.id == "echo_args" and arguments.text == "judge me after"
    directive: { name: judge, steer: true }
  - when: event.name == "help"
    skip: no help today
  - when: event.name == "after_call" and arguments.text.startsWith("first")
    annotate: the first
  - when: event.name == "after_call" and arguments.text.startsWith("first")
    annotate: the second
  - when: event.name == "after_call" and arguments.text.startsWith("both")
    annotate: the first
    fallthrough: true
  - when: event.name == "after_call" and arguments.text.startsWith("both")
    annotate: the second
  - when: event.name == "after_call" and tool.id == "echo_args"
    continue: true
  - when: event.name == "after_call" and tool.id == "echo_args"
    annotate: after a continue
`;

let temp: TempProject;
let project: Project;

beforeAll(async () => {
  temp = createTempProject();
  temp.write('.ai/tools/test/echo_args.mjs', readFileSync(path.join(FIXTURES, 'proxy', 'echo_args.mjs'), 'utf8'));
  temp.write('.ai/tools/test/flaky.mjs', readFileSync(path.join(FIXTURES, 'proxy', 'flaky.mjs'), 'utf8'));
  temp.write('.ai/tools/test/echo_args.yaml', readFileSync(path.join(FIXTURES, 'proxy', 'echo_args.yaml'), 'utf8'));
  temp.write('.ai/tools/test/flaky.yaml', FLAKY);
  temp.write('.ai/tools/test/flaky_hang.yaml', FLAKY_HANG);
  temp.write('.ai/config/policy.yaml', POLICY);
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'] }, session: 'steer-test' });
});

afterAll(async () => {
  await project?.close();
  temp?.remove();
});

const call = (tool: string, args: unknown): Promise<CallOutcome> => project.proxy.call({ target: { tool, args }, caller: { session: 'steer-test', client: 'tester', source: 'cli' } });
const line = (text: string): number => POLICY.split('\n').findIndex((l) => l.includes(text)) + 1;

async function auditOf(callId: string) {
  await project.audit.flush();
  const record = (await readAuditTail({ dir: project.auditDir, limit: 500, session: 'steer-test' })).find((r) => r.call_id === callId);
  expect(record, `no audit record for ${callId}`).toBeDefined();
  return record!;
}

describe('the first matching hook acts', () => {
  it('only the first of two matching hooks acts', async () => {
    const outcome = await call('echo_args', { text: 'first of all' });
    expect(outcome.status).toBe('ok');
    expect((await auditOf(outcome.callId)).notes).toEqual(['the first']);
  });

  it('a fallthrough hook lets the next one act too', async () => {
    const outcome = await call('echo_args', { text: 'both of them' });
    expect((await auditOf(outcome.callId)).notes).toEqual(['the first', 'the second']);
  });

  it('continue decides nothing, but is the match: the hooks after it do not act', async () => {
    const outcome = await call('echo_args', { text: 'plain' });
    expect(outcome).toMatchObject({ status: 'ok', result: { text: '["plain"]' } });
    const record = await auditOf(outcome.callId);
    expect(record.notes).toBeUndefined();
    expect(record.steering).toEqual([{ event: 'after_call', hook: `.ai/config/policy.yaml:${line('continue: true') - 1}`, decision: 'continue', attempt: 1 }]);
  });
});

describe('retry', () => {
  it('a tool that times out twice succeeds on its third run with max 2; each run is in the record', async () => {
    const outcome = await call('flaky_hang', { key: 'twice-a', fail: '2', how: 'hang' });
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'ok', result: { text: 'ok on run 3' } });
    const record = await auditOf(outcome.callId);
    expect(record.attempts).toBe(3);
    const hook = `.ai/config/policy.yaml:${line('startsWith("twice")')}`;
    expect(record.steering).toEqual([
      { event: 'error', hook, decision: 'retry', attempt: 1 },
      { event: 'error', hook, decision: 'retry', attempt: 2 },
    ]);
    expect(readFileSync(path.join(temp.root, 'runs', 'twice-a'), 'utf8')).toBe('3');
  });

  it('with max 1 it runs twice and fails; both runs are in the record, and why there was no third', async () => {
    const outcome = await call('flaky_hang', { key: 'once-a', fail: '2', how: 'hang' });
    expect(outcome.status).toBe('error');
    if (outcome.status === 'error') expect(outcome.error.code).toBe('TOOL_TIMEOUT');
    const record = await auditOf(outcome.callId);
    expect(record.attempts).toBe(2);
    expect(record.steering?.map((s) => [s.decision, s.attempt])).toEqual([
      ['retry', 1],
      ['retry', 2],
    ]);
    expect(record.notes).toEqual([expect.stringMatching(/^retry by the hook at .* not taken: it ran 2 times, and the hook allows 1 retry$/)]);
    expect(readFileSync(path.join(temp.root, 'runs', 'once-a'), 'utf8')).toBe('2');
  });

  it('a run that ends with an error exit is retried from after_call', async () => {
    const outcome = await call('flaky', { key: 'exit-a', fail: '1', how: 'exit' });
    expect(outcome).toMatchObject({ status: 'ok', result: { text: 'ok on run 2', isError: false } });
    expect((await auditOf(outcome.callId)).steering).toEqual([{ event: 'after_call', hook: expect.any(String), decision: 'retry', attempt: 1 }]);
  });
});

describe('skip, fail and abort', () => {
  it('skip: the call is not run, and the caller is told so without an error', async () => {
    const outcome = await call('echo_args', { text: 'skip me' });
    const hook = `.ai/config/policy.yaml:${line('"skip me"')}`;
    expect(outcome).toMatchObject({ status: 'ok', skipped: hook, result: { text: `skipped by hook ${hook}: echo has nothing to say today`, isError: false } });
    const record = await auditOf(outcome.callId);
    expect(record).toMatchObject({ decision: 'allow', sandbox: 'none', sandbox_reason: 'nothing ran' });
    expect(record.steering).toEqual([{ event: 'before_call', hook, decision: 'skip', reason: 'echo has nothing to say today', attempt: 0 }]);
  });

  it("fail before the call: it does not run, and fails with the hook's reason", async () => {
    const outcome = await call('echo_args', { text: 'fail me' });
    expect(outcome).toMatchObject({ status: 'error', error: { code: 'HOOK_FAILED', message: `echo refuses this text (hook at .ai/config/policy.yaml:${line('"fail me"')})` } });
    expect((await auditOf(outcome.callId)).sandbox_reason).toBe('nothing ran');
  });

  it("fail after an error: the call's error becomes the hook's reason", async () => {
    const outcome = await call('flaky_hang', { key: 'slow-a', fail: '5', how: 'hang' });
    expect(outcome).toMatchObject({ status: 'error', error: { code: 'HOOK_FAILED', message: expect.stringMatching(/^the tool timed out; try a smaller input \(hook at /) } });
    expect((await auditOf(outcome.callId)).steering).toMatchObject([{ event: 'error', decision: 'fail', attempt: 1 }]);
  });

  it('abort: the call does not run, and its outcome tells the caller to stop the run', async () => {
    const outcome = await call('echo_args', { text: 'abort me' });
    expect(outcome).toMatchObject({ status: 'error', error: { code: 'HOOK_ABORTED' }, abort: expect.stringMatching(/^this run must stop \(hook at /) });
  });
});

describe('events outside a call', () => {
  it('a steering hook on a help signal is noted and changes nothing', async () => {
    const outcome = await project.proxy.help({ caller: { session: 'steer-test', client: 'tester', source: 'cli' } }, { action: 'stuck', message: 'lost' });
    expect(outcome.refused).toBeUndefined();
    expect(outcome.notes).toEqual([`the hook at .ai/config/policy.yaml:${line('event.name == "help"')} steers, which nothing can on a help event: nothing changes`]);
  });
});

describe('a steering directive where no thread can run', () => {
  it('fails closed before the call, saying why', async () => {
    const outcome = await call('echo_args', { text: 'judge me' });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/^hook at .ai\/config\/policy.yaml:\d+ failed, so the call is refused: steering directive judge cannot run: no thread runs here/);
  });

  it('is only noted after the call', async () => {
    const outcome = await call('echo_args', { text: 'judge me after' });
    expect(outcome.status).toBe('ok');
    expect((await auditOf(outcome.callId)).notes).toEqual([expect.stringMatching(/^hook at .* failed: steering directive judge cannot run/)]);
  });
});
