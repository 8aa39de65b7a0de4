import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { isKiwiError } from '../../src/base/errors.js';
import { loadDirectiveHooks } from '../../src/hooks/hook-runner.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { ApprovalAsk } from '../../src/proxy/approval.js';
import type { CallOutcome, ToolCall, ToolCaller } from '../../src/proxy/tool-call.js';
import { createTempProject, FIXTURES, type TempProject } from '../helpers/temp-project.js';

/**
 * Hooks and approvals on real calls: a temp project whose policy has hooks of every action, real
 * subprocess tools, a real webhook receiver on 127.0.0.1, and the audit log read back from disk.
 */

const ECHO = (id: string, extra = ''): string => `tool_id: ${id}
tool_type: script
executor: subprocess
version: "1.0.0"
description: print argv
config: { command: node, script: echo_args.mjs, args: ["{script}", "{text}"]${extra} }
parameters:
  - { name: text, type: string, required: true }
${id.startsWith('deploy') ? 'requires_approval: true\n' : ''}`;

let temp: TempProject;
let project: Project;
let receiver: Server;
let port = 0;
const received: { path: string; body: Record<string, unknown> }[] = [];

function policy(webhookPort: number): string {
  return `version: 1
tools: [echo_args, deploy, deploy_once, publish_docs, hang, rate_me]
commands: [{ executable: node }]
rate_limits:
  per_tool: { rate_me: { max: 1, per_ms: 600000 }, deploy_once: { max: 1, per_ms: 600000 } }
approvals: { tools: ["publish_*"], timeout_s: 1 }
hooks:
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text.contains("rm -rf")
    deny: no recursive deletes here
  - when: event.name == "after_call" and tool.id == "echo_args"
    annotate: echo ran
  - when: event.name == "denied" or event.name == "limit"
    webhook: "http://127.0.0.1:${webhookPort}/denials"
  - when: event.name == "error" and event.code == "timeout"
    directive: { name: handle_timeout, inputs: { tool: "\${tool.id}", missing: "\${event.detail.nope}" } }
  - when: tool.id == "echo_args" and arguments.text == "needs a person"
    require_approval: true
  - when: tool.id == "echo_args" and arguments.text == "tell the closed port"
    webhook: "http://127.0.0.1:1/closed"
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "tell both"
    webhook: "http://127.0.0.1:1/closed"
    fallthrough: true
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "tell both"
    webhook: "http://127.0.0.1:${webhookPort}/both"
  - when: event.name == "before_call" and tool.id == "deploy_once"
    webhook: "http://127.0.0.1:${webhookPort}/before"
  - when: event.name == "before_call" and tool.id == "echo_args" and arguments.text == "bad" and arguments.nothere == "x"
    annotate: never
  - when: event.name == "error" and has(arguments.extra)
    annotate: unchecked arguments reached a hook
`;
}

beforeAll(async () => {
  receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(body) as Record<string, unknown> });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  port = (receiver.address() as { port: number }).port;
  temp = createTempProject();
  temp.write('.ai/tools/test/echo_args.mjs', readFileSync(path.join(FIXTURES, 'proxy', 'echo_args.mjs'), 'utf8'));
  temp.write('.ai/tools/test/hang.mjs', readFileSync(path.join(FIXTURES, 'proxy', 'hang.mjs'), 'utf8'));
  temp.write('.ai/tools/test/echo_args.yaml', ECHO('echo_args'));
  temp.write('.ai/tools/test/deploy.yaml', ECHO('deploy'));
  temp.write('.ai/tools/test/deploy_once.yaml', ECHO('deploy_once'));
  temp.write('.ai/tools/test/publish_docs.yaml', ECHO('publish_docs'));
  temp.write('.ai/tools/test/rate_me.yaml', ECHO('rate_me'));
  temp.write('.ai/tools/test/not_granted.yaml', ECHO('not_granted'));
  temp.write('.ai/tools/test/hang.yaml', `tool_id: hang
tool_type: script
executor: subprocess
version: "1.0.0"
description: never ends
config: { command: node, script: hang.mjs, args: ["{script}"], timeout_ms: 300 }
`);
  temp.write('.ai/config/policy.yaml', policy(port));
  project = await openProject({ projectDir: temp.root, env: { PATH: process.env['PATH'] }, session: 'hooks-test' });
});

afterAll(async () => {
  await project?.close();
  receiver?.close();
  temp?.remove();
});

const call = (tool: string, args: unknown, extra: Pick<ToolCall, 'run'> & { caller?: Partial<ToolCaller> } = {}): Promise<CallOutcome> =>
  project.proxy.call({ target: { tool, args }, caller: { session: 'hooks-test', client: 'tester', source: 'gateway', ...extra.caller }, ...(extra.run ? { run: extra.run } : {}) });

async function auditOf(callId: string) {
  await project.audit.flush();
  const records = await readAuditTail({ dir: project.auditDir, limit: 500, session: 'hooks-test' });
  const record = records.find((r) => r.call_id === callId);
  expect(record, `no audit record for ${callId}`).toBeDefined();
  return record!;
}

describe('hooks on calls', () => {
  it('a deny hook refuses the call before it runs; the denial fires the webhook with the event', async () => {
    received.length = 0;
    const outcome = await call('echo_args', { text: 'sudo rm -rf /' });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/no recursive deletes here \(hook at .ai\/config\/policy.yaml:\d+\)/);
    const record = await auditOf(outcome.callId);
    expect(record.decision).toBe('deny');
    expect(record.notes).toEqual([expect.stringMatching(/^webhook sent to 127\.0\.0\.1:\d+ \(hook at .ai\/config\/policy.yaml:\d+\)$/)]);
    expect(received).toHaveLength(1);
    expect(received[0]?.path).toBe('/denials');
    expect(received[0]?.body).toMatchObject({ event: { name: 'denied', code: 'hook_denied' }, tool: { id: 'echo_args' }, arguments: { text: 'sudo rm -rf /' }, client: { name: 'tester', source: 'gateway' } });
  });

  it('a webhook gets the event redacted as the audit log is: no key the log hides leaves the machine (issue 22)', async () => {
    received.length = 0;
    const key = 'sk-live-4eC39HqLyjWDarjtT1zdp7dc';
    const outcome = await call('echo_args', { text: `rm -rf with ${key} and password=hunter22` });
    expect(outcome.status).toBe('denied');
    const sent = JSON.stringify(received[0]?.body);
    expect(sent).not.toContain(key);
    expect(sent).not.toContain('hunter22');
    const text = (received[0]?.body['arguments'] as { text: string }).text;
    expect(text).toBe('rm -rf with [redacted:api-key] and password=[redacted:secret]');
    expect((await auditOf(outcome.callId)).args).toEqual({ text });
  });

  it('an annotate hook after the call adds its note to the audit record', async () => {
    const outcome = await call('echo_args', { text: 'hello' });
    expect(outcome.status).toBe('ok');
    expect((await auditOf(outcome.callId)).notes).toEqual(['echo ran']);
  });

  it('a timeout fires the error event: the directive hook asks for handle_timeout with its inputs filled', async () => {
    const outcome = await call('hang', {});
    expect(outcome.status).toBe('error');
    expect(outcome.directives).toEqual([{ name: 'handle_timeout', inputs: { tool: 'hang', missing: '${event.detail.nope}' } }]);
    expect((await auditOf(outcome.callId)).notes).toEqual([expect.stringContaining('a hook asks to run directive handle_timeout')]);
  });

  it('a rate limit fires the limit event with code rate_limited', async () => {
    expect((await call('rate_me', { text: 'one' })).status).toBe('ok');
    received.length = 0;
    const second = await call('rate_me', { text: 'two' });
    expect(second.status).toBe('denied');
    expect(received[0]?.body).toMatchObject({ event: { name: 'limit', code: 'rate_limited' }, tool: { id: 'rate_me' } });
  });

  it('a limit that stops a chat request fires the limit event outside any call', async () => {
    received.length = 0;
    const fired = await project.proxy.limitReached({ caller: { session: 'hooks-test', client: 'tester', source: 'gateway' }, run: { cost: { turns: 8 }, limits: { turns: 8 } } }, 'turns', { turns: 8 });
    expect(fired.notes).toEqual([expect.stringMatching(/^webhook sent to /)]);
    expect(received[0]?.body).toMatchObject({ event: { name: 'limit', code: 'turns', detail: { turns: 8 } }, tool: { id: '' }, client: { name: 'tester' }, cost: { turns: 8 } });
  });

  it('a webhook that fails on before_call refuses the call (hooks fail closed)', async () => {
    const outcome = await call('echo_args', { text: 'tell the closed port' });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/^the webhook of the hook at .ai\/config\/policy.yaml:\d+ failed, so the call is refused/);
  });

  it("several webhooks of one event (the first falling through) are all sent, and noted in the hooks' order; the first that fails is the reason", async () => {
    received.length = 0;
    const outcome = await call('echo_args', { text: 'tell both' });
    expect(outcome.status).toBe('denied');
    expect(received.map((r) => r.path).sort()).toEqual(['/both', '/denials']);
    const notes = (await auditOf(outcome.callId)).notes ?? [];
    expect(notes).toEqual([
      // The audit cuts long strings, so only the head of the failure shows.
      expect.stringMatching(/^webhook to 127\.0\.0\.1:1 failed \(hook at .ai\/config\/policy.yaml:\d+/),
      expect.stringMatching(/^webhook sent to 127\.0\.0\.1:\d+ \(hook at .ai\/config\/policy.yaml:\d+\)$/),
      // The denial's own webhook.
      expect.stringMatching(/^webhook sent to /),
    ]);
    const [closedLine, bothLine] = notes.slice(0, 2).map((n) => Number(/policy\.yaml:(\d+)/.exec(n)?.[1]));
    expect(closedLine).toBeLessThan(bothLine as number);
    if (outcome.status === 'denied') expect(outcome.reason).toContain(`the webhook of the hook at .ai/config/policy.yaml:${closedLine} failed`);
  });

  it('a condition that fails at run time refuses the call, naming the hook', async () => {
    const outcome = await call('echo_args', { text: 'bad' });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/^hook at .ai\/config\/policy.yaml:\d+ failed, so the call is refused: .*nothere/);
  });

  it('a call refused for unknown arguments reaches its error hooks without them (issue 22)', async () => {
    const outcome = await call('echo_args', { text: 'hi', extra: Array.from({ length: 4000 }, (_, i) => i) });
    expect(outcome.status).toBe('error');
    if (outcome.status === 'error') expect(outcome.error.code).toBe('INVALID_INPUT');
    expect((await auditOf(outcome.callId)).notes ?? []).not.toContain('unchecked arguments reached a hook');
  });

  it('a call the policy refuses before its arguments are checked sends its denial webhook without them', async () => {
    received.length = 0;
    const outcome = await call('not_granted', { text: 'hi', extra: ['anything'] });
    expect(outcome.status).toBe('denied');
    expect(received[0]?.body).toMatchObject({ event: { name: 'denied', code: 'permission_denied' }, tool: { id: 'not_granted' } });
    expect(received[0]?.body['arguments']).toEqual({});
  });

  it("a directive's hooks apply to calls made under it, after the policy's", async () => {
    const hooks = loadDirectiveHooks('.ai/directives/careful.md', [{ when: 'directive.name == "careful" and tool.id == "echo_args"', line: 7, action: { kind: 'deny', reason: 'careful never echoes' } }]);
    const under = await call('echo_args', { text: 'hi' }, { run: { directive: { name: 'careful', hooks } } });
    expect(under.status).toBe('denied');
    if (under.status === 'denied') expect(under.reason).toBe('careful never echoes (hook at .ai/directives/careful.md:7)');
    expect((await call('echo_args', { text: 'hi' })).status).toBe('ok');
  });
});

describe('approvals on calls', () => {
  it('a tool with requires_approval is denied when the caller cannot ask a person', async () => {
    const outcome = await call('deploy', { text: 'v1' }, { caller: { source: 'cli' } });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/requires_approval.*this caller cannot ask a person/);
    expect((await auditOf(outcome.callId)).approval).toMatchObject({ approved: false, decided_by: 'gateway' });
  });

  it('runs once a person grants it, and audits who did', async () => {
    const asks: ApprovalAsk[] = [];
    const outcome = await call('deploy', { text: 'v2' }, { run: { approve: async (ask) => (asks.push(ask), { approved: true, decidedBy: 'alice' }) } });
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    expect(asks[0]).toMatchObject({ tool: 'deploy', arguments: { text: 'v2' }, reason: expect.stringMatching(/requires_approval/) });
    const record = await auditOf(outcome.callId);
    expect(record.approval).toMatchObject({ approved: true, decided_by: 'alice' });
    expect(record.decision).toBe('allow');
  });

  it('a reused result that needs approval is asked for and run once: one rate-limit token, one before_call', async () => {
    const grant = async () => ({ approved: true, decidedBy: 'alice' });
    // The speculation ran as another client, so the reuse starts with a full bucket of exactly one call.
    const earlier = await call('deploy_once', { text: 'v4' }, { caller: { client: 'speculator' }, run: { approve: grant } });
    expect(earlier.status, JSON.stringify(earlier)).toBe('ok');
    if (earlier.status !== 'ok') return;
    received.length = 0;
    let asked = 0;
    const outcome = await project.proxy.reuse({ target: { tool: 'deploy_once', args: { text: 'v4' } }, caller: { session: 'hooks-test', client: 'tester', source: 'gateway' }, run: { approve: async () => (asked++, grant()) } }, earlier);
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    expect(asked).toBe(1);
    expect(received.map((r) => r.path)).toEqual(['/before']);
    expect(received[0]?.body).toMatchObject({ event: { name: 'before_call' }, tool: { id: 'deploy_once' }, client: { name: 'tester' } });
    const record = await auditOf(outcome.callId);
    expect(record).toMatchObject({ decision: 'allow', approval: { approved: true, decided_by: 'alice' } });
    expect(record.notes).toEqual([expect.stringMatching(/^webhook sent to 127\.0\.0\.1:\d+ \(hook at .ai\/config\/policy.yaml:\d+\)$/)]);
    // The one token is spent: the next call of the tool by this client is over the limit.
    expect((await call('deploy_once', { text: 'v5' }, { run: { approve: grant } })).status).toBe('denied');
  });

  it('does not run when the person denies it, and says why', async () => {
    const outcome = await call('echo_args', { text: 'needs a person' }, { run: { approve: async () => ({ approved: false, decidedBy: 'bob', reason: 'not today' }) } });
    expect(outcome).toMatchObject({ status: 'denied', reason: 'not today' });
    expect((await auditOf(outcome.callId)).approval).toMatchObject({ approved: false, decided_by: 'bob', reason: 'not today' });
  });

  it("no answer within the policy's timeout is a denial, and the question is withdrawn", async () => {
    let withdrawn: unknown;
    const outcome = await call('publish_docs', { text: 'v3' }, { run: { approve: (ask) =>
        new Promise((_resolve, reject) => {
          ask.signal.addEventListener('abort', () => {
            withdrawn = ask.signal.reason;
            reject(new Error('withdrawn'));
          });
        }) } });
    expect(outcome.status).toBe('denied');
    if (outcome.status === 'denied') expect(outcome.reason).toMatch(/no one answered within 1 s/);
    expect(withdrawn).toBe('timeout');
    expect((await auditOf(outcome.callId)).approval).toMatchObject({ approved: false, decided_by: 'timeout' });
  });
});

describe('hooks in the policy file are checked when it loads', () => {
  const load = (hooks: string): string => {
    try {
      parsePolicy(`version: 1\ntools: [a]\nhooks:\n${hooks}`, '.ai/config/policy.yaml', temp.root);
    } catch (error) {
      if (isKiwiError(error)) return error.message;
      throw error;
    }
    return 'loaded';
  };

  it('names the line and column of a bad condition, with a hint for a misspelt variable', () => {
    expect(load('  - when: tool.id == "a"\n    deny: no\n  - when: toool.id == "b"\n    deny: no\n')).toMatch(/^\.ai\/config\/policy\.yaml:6:11: hook condition "toool\.id == \\"b\\"": Unknown variable: toool \(did you mean "tool"\?\)/);
  });

  it('points inside the quotes of a quoted condition', () => {
    expect(load('  - when: "== tool.id"\n    deny: no\n')).toMatch(/^\.ai\/config\/policy\.yaml:4:12: /);
  });

  it('refuses a hook with no action or two', () => {
    expect(load('  - when: tool.id == "a"\n')).toMatch(/hooks\[0\]: must have exactly one action/);
    expect(load('  - when: tool.id == "a"\n    deny: no\n    annotate: x\n')).toMatch(/exactly one action/);
  });

  it('refuses a webhook that is not http(s) or carries credentials, and an unknown field', () => {
    expect(load('  - when: tool.id == "a"\n    webhook: "file:///etc/passwd"\n')).toMatch(/hooks\[0\]\.webhook: must be an http/);
    expect(load('  - when: tool.id == "a"\n    webhook: "https://u:p@example.com/x"\n')).toMatch(/without credentials/);
    expect(load('  - when: tool.id == "a"\n    denny: no\n')).toMatch(/hooks\[0\]\.denny: unknown field \(did you mean "deny"\?\); the fields here are when, deny/);
  });

  it('refuses a retry without a bound, or past the most allowed', () => {
    expect(load('  - when: "true"\n    retry: {}\n')).toMatch(/hooks\[0\]\.retry\.max/);
    expect(load('  - when: "true"\n    retry: { max: 11 }\n')).toMatch(/must be at most 10/);
    expect(load('  - when: "true"\n    retry: { max: 0 }\n')).toMatch(/must be at least 1/);
  });

  it('refuses two actions, a steering option on a plain directive, and a bad timeout', () => {
    expect(load('  - when: "true"\n    skip: no\n    fail: no\n')).toMatch(/exactly one action: deny, require_approval, annotate, directive, webhook, retry, skip, fail, abort, continue/);
    expect(load('  - when: "true"\n    directive: { name: x, timeout_s: 5 }\n')).toMatch(/timeout_s and retries go with `steer: true` only/);
    expect(load('  - when: "true"\n    directive: { name: x, steer: true, timeout_s: 0 }\n')).toMatch(/timeout_s: must be at least 1/);
    expect(load('  - when: "true"\n    continue: false\n')).toMatch(/must be true/);
    expect(load('  - when: "true"\n    annotate: x\n    fallthrough: "yes"\n')).toMatch(/fallthrough/);
  });

  it('loads good steering ones', () => {
    expect(load('  - when: "true"\n    directive: { name: x, steer: true, timeout_s: 30, retries: 2 }\n  - when: "true"\n    abort: stop\n    fallthrough: true\n')).toBe('loaded');
  });

  it('loads a good one', () => {
    expect(load('  - when: event.name == "before_call" and not (tool.id in ["a", "b"])\n    require_approval: true\n')).toBe('loaded');
  });
});
