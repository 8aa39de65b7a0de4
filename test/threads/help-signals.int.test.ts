import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { type ThreadLine } from '../../src/threads/thread-store.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * `help` signals in a thread, through the gateway as `kiwi serve` wires it, on a recorded-stream
 * upstream: the agent's `[TOOL: help …]` is read before resolution, written to the transcript,
 * audited under the thread with the policy's and the directive's hooks, and answered; an
 * escalation ends the thread with its message.
 */

let served: DemoGateway;

const HELPFUL = `# helpful

\`\`\`xml
<directive name="helpful" version="1.0.0">
  <metadata>
    <description>Read the README, asking for help when stuck</description>
    <model tier="balanced"/>
    <permissions>
      <read resource="filesystem" path="**"/>
      <execute resource="tool" id="read_file"/>
    </permissions>
    <hooks>
      <hook><when>event.name == "help" and event.action == "stuck"</when><annotate>stuck under helpful</annotate></hook>
    </hooks>
  </metadata>
  <process><step name="read"><description>Read the README</description></step></process>
</directive>
\`\`\`
`;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-help-',
    config: 'model_tiers: { balanced: gpt-4o-mini }',
    prepare(root) {
      writeFileSync(path.join(root, '.ai', 'directives', 'helpful.md'), HELPFUL);
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      writeFileSync(policy, readFileSync(policy, 'utf8').replace('hooks:\n', 'hooks:\n  - when: event.name == "help" and event.action == "escalate"\n    annotate: escalated to a person\n'));
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const audited = async (session: string) => (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 200 })).filter((r) => r.session === session);
const helpLines = (lines: ThreadLine[]) => lines.filter((l): l is Extract<ThreadLine, { type: 'help' }> => l.type === 'help');

describe('help signals in a thread', () => {
  it('stuck and checkpoint are recorded, audited and answered; escalate ends the thread with its message', async () => {
    served.llm.replyOnce(
      openAiStream(['I cannot see a config. [TOOL: help stuck: cannot find the config file]']),
      openAiStream(['Reading instead. [TOOL: read_file {"path": "README.md"}] [TOOL: help checkpoint: the README is read]']),
      openAiStream(['[TOOL: help escalate: a person must choose the database] [TOOL: read_file {"path": "package.json"}]']),
    );
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'helpful', client: 'local' });
    expect(outcome).toMatchObject({ status: 'escalated', result: 'a person must choose the database', steps_taken: 1 });

    const requests = served.llm.requests.slice(before).map((r) => r.body as { messages: { role: string; content: string }[] });
    expect(requests).toHaveLength(3);
    expect(requests[0]?.messages[0]?.content).toContain('[TOOL: help escalate: what a person must decide] ends this run');
    expect(requests[1]?.messages.at(-1)?.content).toMatch(/Intent: help stuck: cannot find the config file\nYour "stuck" signal is recorded\. Try another way/);
    expect(requests[2]?.messages.at(-1)?.content).toMatch(/Intent: help checkpoint: the README is read\nYour checkpoint is recorded/);

    const lines = await fileThreadStore(served.root).read(outcome.id);
    expect(helpLines(lines).map((l) => [l.action, l.message])).toEqual([
      ['stuck', 'cannot find the config file'],
      ['checkpoint', 'the README is read'],
      ['escalate', 'a person must choose the database'],
    ]);
    expect(lines.at(-1)).toMatchObject({ type: 'end', status: 'escalated', result: 'a person must choose the database' });
    // The intent after the escalation never ran.
    expect(lines.filter((l) => l.type === 'call').map((l) => (l.type === 'call' ? l.arguments : undefined))).toEqual([{ path: 'README.md' }]);

    await expect.poll(async () => (await audited(outcome.id)).map((r) => [r.tool, r.help, r.source, r.notes])).toEqual([
      ['help', 'stuck', 'thread', ['stuck under helpful']],
      ['read_file', undefined, 'thread', undefined],
      ['help', 'checkpoint', 'thread', undefined],
      ['help', 'escalate', 'thread', ['escalated to a person']],
    ]);

    const shown: string[] = [];
    expect(await runCli(['threads', 'show', outcome.id, '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => shown.push(l), err: () => undefined } })).toBe(0);
    expect(shown.filter((l) => l.startsWith('! help '))).toEqual(['! help stuck: cannot find the config file', '! help checkpoint: the README is read', '! help escalate: a person must choose the database']);
    expect(shown.at(-2)).toMatch(/^ended .*: escalated, 1 step\(s\), failure: escalated$/);
    expect(shown.at(-1)).toMatch(/^used: /);
  }, 60_000);
});
