import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { openProject } from '../../src/project/open-project.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { allowTools, copyDemoProject } from '../helpers/demo-project.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * Intents that name the demo's directive or knowledge entry, through `kiwi serve`'s wiring on a copy
 * of the demo `.ai/`: the resolved call carries `item`, the tool proxy runs a directive as a thread
 * (granted like a thread tool) and answers a knowledge entry with its content, and both are audited.
 */

let served: DemoGateway;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-items-',
    config: 'model_tiers: { balanced: gpt-4o-mini }',
    prepare: (root) => allowTools(root, ['review_changes']),
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

async function chat(text: string): Promise<string> {
  const response = await fetch(`${served.server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }] }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]?.message.content ?? '';
}

const audited = async (tool: string) => (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 200 })).filter((r) => r.tool === tool);

describe('directives and knowledge named by intents, through the gateway', () => {
  it('answers a knowledge intent with the entry, read-only and audited', async () => {
    served.llm.replyOnce(openAiStream(['Checking the rules. [TOOL: kiwi-permissions {}]']), openAiStream(['Calls are default deny.']));
    const before = served.llm.requests.length;
    expect(await chat('how are calls permitted?')).toMatch(/Calls are default deny\./);
    const followUp = JSON.stringify(served.llm.requests[before + 1]?.body);
    expect(followUp).toMatch(/How Kiwi Gateway decides whether a call may run/);
    expect(followUp).toMatch(/Nothing runs unless/);
    await expect.poll(async () => (await audited('kiwi-permissions')).map((r) => [r.item, r.decision, r.source])).toEqual([['knowledge', 'allow', 'gateway']]);
  }, 60_000);

  it('runs a directive intent as a thread, with its inputs, and feeds its outcome back', async () => {
    served.llm.replyOnce(
      openAiStream(['Starting a review. [TOOL: review_changes {"focus": "docs"}]']),
      openAiStream(['Review: nothing risky.']),
      openAiStream(['The review found nothing risky.']),
    );
    const before = served.llm.requests.length;
    expect(await chat('review my changes')).toMatch(/The review found nothing risky\./);
    const thread = served.llm.requests[before + 1]?.body as { messages: { content: string }[] };
    expect(thread.messages.at(-1)?.content).toBe('Run the directive review_changes with the inputs {"focus":"docs"}.');
    const followUp = JSON.stringify(served.llm.requests[before + 2]?.body);
    expect(followUp).toMatch(/\\"status\\": \\"completed\\"/);
    const id = /\\"thread\\": \\"([0-9a-f-]{36})\\"/.exec(followUp)?.[1] as string;
    expect((await fileThreadStore(served.root).read(id))[0]).toMatchObject({ type: 'thread', directive: 'review_changes', inputs: { focus: 'docs' }, depth: 1 });
    await expect.poll(async () => (await audited('review_changes')).map((r) => [r.item, r.decision, r.source])).toEqual([['directive', 'allow', 'gateway']]);
  }, 60_000);

  it('refuses a directive input it does not declare, and a directive that is not there', async () => {
    const project = served.gateway.project;
    const caller = { session: 's', client: 'local', source: 'gateway' as const };
    const narrow = await project.proxy.call({ target: { tool: 'review_changes', item: 'directive', args: { fokus: 'x' } }, caller });
    expect(narrow).toMatchObject({ status: 'error', error: { code: 'INVALID_INPUT', message: expect.stringMatching(/has no input "fokus"; its inputs are focus/) } });
    const unknown = await project.proxy.call({ target: { tool: 'kiwi-permissions', item: 'directive' }, caller });
    expect(unknown).toMatchObject({ status: 'error', error: { code: 'TOOL_NOT_FOUND', message: expect.stringMatching(/no directive `kiwi-permissions`; there are `git_checkpoint`, `release_note`, `retry_on_timeout`, `review_changes`, `skip_duplicate_note`/) } });
  });

  it('refuses a directive outside the gateway, as a thread tool is refused, and denies one the policy does not list', async () => {
    const root = copyDemoProject('kiwi-items-cli-');
    try {
      const project = await openProject({ projectDir: root, env: { PATH: process.env['PATH'] }, userDir: path.join(root, 'no-user-tier') });
      try {
        const call = { caller: { session: 's', client: 'local', source: 'cli' as const }, target: { tool: 'review_changes', item: 'directive' as const } };
        expect(await project.proxy.call(call)).toMatchObject({ status: 'denied', reason: expect.stringMatching(/tool `review_changes` is not in `tools`/) });
        const read = await project.proxy.call({ ...call, target: { tool: 'kiwi-permissions', item: 'knowledge' } });
        expect(read).toMatchObject({ status: 'ok', result: { isError: false, text: expect.stringMatching(/^# How Kiwi Gateway decides/), data: { id: 'kiwi-permissions', tags: ['permissions', 'policy', 'audit'] } } });
        allowTools(root, ['review_changes']);
      } finally {
        await project.close();
      }
      const allowed = await openProject({ projectDir: root, env: { PATH: process.env['PATH'] }, userDir: path.join(root, 'no-user-tier') });
      try {
        const outcome = await allowed.proxy.call({ target: { tool: 'review_changes', item: 'directive' }, caller: { session: 's', client: 'local', source: 'cli' } });
        expect(outcome).toMatchObject({ status: 'error', error: { code: 'CHAIN_INVALID', message: expect.stringMatching(/as a thread, which only the gateway runs/) } });
      } finally {
        await allowed.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
