import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { verifySignature } from '../../src/registry/signature.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * Annealing on failure (`annealing: { on_failure: true }` in the policy) through the gateway's
 * threads, on a copy of the demo with a recorded-stream upstream: a thread that fails with a tool
 * error is annealed from its transcript (the recorded answer is the new file), and run again once
 * on the new version; a denied run is left as it failed, and so is one whose annealing is refused.
 */

let served: DemoGateway;

const fixer = (version: string, step: string): string => `# fixer

\`\`\`xml
<directive name="fixer" version="${version}">
  <metadata>
    <description>Report what changed since the last release</description>
    <model tier="balanced"/>
    <limits turns="5"/>
    <permissions>
      <read resource="filesystem" path="**"/>
      <execute resource="tool" id="git_diff"/>
      <execute resource="shell" action="git"/>
    </permissions>
  </metadata>
  <process><step name="read"><description>${step}</description></step></process>
</directive>
\`\`\`
`;

const annealAnswer = (file: string) => openAiStream(['There are no release tags here.\n<<<DIRECTIVE FILE\n', file, 'DIRECTIVE FILE>>>\n'], { usage: [1000, 200] });
const failingRun = () => [openAiStream(['[TOOL: git_diff {"ref": "no-such-release"}]']), openAiStream(['There is no such release.'])];

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-anneal-on-failure-',
    config: 'model_tiers: { balanced: gpt-4o-mini }',
    prepare(root) {
      writeFileSync(path.join(root, '.ai', 'directives', 'fixer.md'), fixer('1.0.0', 'Diff against the release'));
      appendFileSync(path.join(root, '.ai', 'config', 'policy.yaml'), '\nannealing: { on_failure: true }\n');
      // A repository with one commit and no release tag: git_diff runs for real against it.
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], { cwd: root, stdio: 'ignore' });
      git('init', '-q');
      git('add', 'README.md');
      git('commit', '-qm', 'first');
    },
  });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe('annealing on failure', () => {
  it('anneals a directive from the thread that failed with a tool error, runs it again once on the new version, and counts it', async () => {
    served.llm.replyOnce(...failingRun(), annealAnswer(fixer('1.0.1', 'Diff against HEAD: there are no release tags')), openAiStream(['[TOOL: git_diff {"ref": "HEAD"}]']), openAiStream(['Nothing changed since HEAD.']));
    const outcome = await served.gateway.threads.run({ directive: 'fixer', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', result: 'Nothing changed since HEAD.', anneal: { from_version: '1.0.0', version: '1.0.1' } });
    expect(outcome.failure).toBeUndefined();
    // Two turns of the failed run, the annealing's answer, two turns of the retry: all the caller's.
    expect(Object.values(outcome.usage?.models ?? {}).reduce<[number, number]>(([input, output], m) => [input + m.input_tokens, output + m.output_tokens], [0, 0])).toEqual([1040, 220]);
    const failedId = (outcome.anneal as { failed_thread: string }).failed_thread;
    const store = fileThreadStore(served.root);
    expect((await store.read(failedId)).at(-1)).toMatchObject({ type: 'end', failure: 'tool_error' });
    expect((await store.read(outcome.id))[0]).toMatchObject({ directive: 'fixer', version: '1.0.1', retry_of: failedId });
    const written = readFileSync(path.join(served.root, '.ai', 'directives', 'fixer.v1.0.1.md'), 'utf8');
    expect(verifySignature('directive', written).status).toBe('valid');
    expect(readFileSync(path.join(served.root, '.ai', 'directives', 'fixer.md'), 'utf8')).toBe(fixer('1.0.0', 'Diff against the release'));

    const out: string[] = [];
    expect(await runCli(['directives', 'list', '--project', served.root], { env: { ...served.env, PATH: process.env['PATH'] }, cwd: served.root, io: { out: (l) => out.push(l), err: () => undefined } })).toBe(0);
    expect(out.find((l) => l.startsWith('fixer'))).toMatch(/^fixer {2}1\.0\.1 {2}runs .*\(annealed on failure: 1 retried, 1 succeeded\)$/);
  }, 60_000);

  it('then runs the new version, and a failure of it anneals that version, not the one it replaced', async () => {
    served.llm.replyOnce(...failingRun(), annealAnswer(fixer('1.0.2', 'Diff against HEAD')), openAiStream(['[TOOL: git_diff {"ref": "no-such-release"}]']), openAiStream(['Still no such release.']));
    const outcome = await served.gateway.threads.run({ directive: 'fixer', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', failure: 'tool_error', anneal: { from_version: '1.0.1', version: '1.0.2' } });
    // The retry failed too, and is not retried again.
    expect(existsSync(path.join(served.root, '.ai', 'directives', 'fixer.v1.0.3.md'))).toBe(false);
  }, 60_000);

  it('leaves a denied run as it failed: nothing is annealed', async () => {
    served.llm.replyOnce(openAiStream(['[TOOL: word_count {"path": "README.md"}]']), openAiStream(['Not allowed.']));
    const before = served.llm.requests.length;
    const outcome = await served.gateway.threads.run({ directive: 'fixer', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', failure: 'denied' });
    expect(outcome.anneal).toBeUndefined();
    expect(served.llm.requests.length - before).toBe(2);
  }, 60_000);

  it("says why when the model's annealing is refused, and leaves the failure as it was", async () => {
    served.llm.replyOnce(...failingRun(), openAiStream(['I would rather not rewrite it.']));
    const outcome = await served.gateway.threads.run({ directive: 'fixer', client: 'local' });
    expect(outcome).toMatchObject({ status: 'completed', failure: 'tool_error', anneal: { refused: expect.stringMatching(/the model's answer was not written: it has no file between/) } });
  }, 60_000);
});
