import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * A directive whose `<permissions>` allow read_file, word_count and the files server, and whose
 * `<tools>` names only read_file and the files server: its thread is told of read_file alone (the
 * server is not in its permissions), and word_count is refused naming the tag, audited as a denial.
 */

const NARROW = `# Narrow

\`\`\`xml
<directive name="narrow" version="1.0.0">
  <metadata>
    <description>Read the README and nothing else</description>
    <model tier="balanced"/>
    <permissions>
      <read resource="filesystem" path="**"/>
      <execute resource="tool" id="read_file"/>
      <execute resource="tool" id="word_count"/>
      <execute resource="shell" action="node"/>
      <execute resource="shell" action="python3"/>
    </permissions>
    <tools>
      <tool>read_file</tool>
      <tool id="files"/>
    </tools>
  </metadata>
  <process><step name="read"><description>Read the README</description></step></process>
</directive>
\`\`\`
`;

let served: DemoGateway;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-directive-tools-',
    config: 'model_tiers: { balanced: gpt-4o-mini }',
    prepare(root) {
      writeFileSync(path.join(root, '.ai', 'directives', 'narrow.md'), NARROW);
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe('a directive thread under <tools>', () => {
  it('is offered the named tools only, runs them, and is refused a tool its permissions allow but <tools> does not name', async () => {
    served.llm.replyOnce(
      openAiStream(['Reading. [TOOL: read_file {"path": "README.md"}]']),
      openAiStream(['Counting. [TOOL: word_count {"path": "README.md"}]']),
      openAiStream(['Done: read it.']),
    );
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'narrow', inputs: {}, client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', steps_taken: 2, result: 'Done: read it.' });

    const requests = served.llm.requests.slice(before);
    const system = (requests[0]?.body as { messages: { content: string }[] }).messages[0]?.content ?? '';
    expect(system).toMatch(/only these tools are allowed here[^\n]*\nread_file\n/);
    expect(JSON.stringify(requests[2]?.body)).toContain("denied by directive narrow's <tools>: `word_count` is not named there (it names `read_file`, `files`)");

    const lines = await fileThreadStore(served.root).read(outcome.id);
    expect(lines.filter((l) => l.type === 'result').map((l) => [l.type === 'result' && l.tool, l.type === 'result' && l.status])).toEqual([
      ['read_file', 'ok'],
      ['word_count', 'denied'],
    ]);
    const audited = async () => (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 100 })).filter((r) => r.session === outcome.id).map((r) => [r.tool, r.decision]);
    await expect.poll(audited).toEqual([
      ['read_file', 'allow'],
      ['word_count', 'deny'],
    ]);
  }, 60_000);
});
