import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiCompletion, openAiStream } from '../helpers/openai-sse.js';
import type { ReceivedRequest } from '../helpers/replay-llm-server.js';

/**
 * Issue 40's scenario, as a new user meets it: fifteen plain-words intents against the demo tools,
 * with the shipped settings and an OpenAI-compatible upstream. The upstream is a local server
 * replaying OpenAI's wire format; the side requests' answers are written by hand as a model might
 * answer (no model runs here): nine calls whose every value the intent states, and six that no
 * checked call can come of (two declines, a tool it was not shown, a guessed value, a parameter
 * the tool lacks, a call asked for by naming a tool). The gateway must run what the model chose
 * and ask back the rest with menus whose every entry the caller may run.
 */

type Answer = { name: string; args: Record<string, unknown> } | { content: string };

interface Step {
  intent: string;
  /** The side request's recorded answer. */
  model: Answer;
  /** The call that runs, or undefined: asked back. */
  runs?: { tool: string; arguments: Record<string, unknown> };
}

const ran = (tool: string, args: Record<string, unknown>): Pick<Step, 'model' | 'runs'> => ({ model: { name: tool, args }, runs: { tool, arguments: args } });

const STEPS: Step[] = [
  { intent: 'show the last 3 commits', ...ran('git_log', { count: 3 }) },
  { intent: 'is the working tree clean?', ...ran('git_status', {}) },
  { intent: 'what changed since v0.1.0', ...ran('git_diff', { ref: 'v0.1.0' }) },
  { intent: 'what is in the docs folder', ...ran('list_directory', { path: 'docs' }) },
  { intent: 'how many words does docs/guide.md have', ...ran('word_count', { path: 'docs/guide.md' }) },
  { intent: 'show me the first 200 bytes of CHANGELOG.md', ...ran('read_file', { path: 'CHANGELOG.md', max_bytes: 200 }) },
  { intent: 'count the lines in package.json', ...ran('word_count', { path: 'package.json' }) },
  { intent: 'find the files matching *.md in docs', ...ran('search_files', { path: 'docs', pattern: '*.md' }) },
  { intent: 'what files are at the top of the project', ...ran('list_directory', { path: '.' }) },

  // Retrieval ranks git_diff below the five tools shown ("differs" is not "changed"): the ceiling no model passes.
  { intent: 'show what differs from HEAD', model: { content: 'None of these compares the tree with a commit.' } },
  { intent: 'deploy the staging build', model: { content: 'None of these functions deploys anything.' } },
  { intent: 'write the release notes for 1.2', model: { name: 'release_note', args: { version: '1.2' } } },
  { intent: 'count the words in the notes file', model: { name: 'word_count', args: { path: 'notes.txt' } } },
  { intent: 'show the commits of last week', model: { name: 'git_log', args: { since: 'last week' } } },
  { intent: 'help me with the list_directory functionality', model: { content: 'Which folder should I list?' } },
];

interface KiwiEvent {
  type: string;
  reason?: string;
  candidates?: string[];
  fallback?: { outcome: string };
  call?: { tool: string; arguments: Record<string, unknown> };
  text?: string;
  status?: string;
  isError?: boolean;
}

/** Tools the demo has but the caller's policy does not list: they fit some intents, and must never be shown or offered. */
const DENIED = ['release_note', 'count_words_fast'];

function prepare(root: string): void {
  const dir = path.join(root, '.ai', 'tools', 'project');
  writeFileSync(
    path.join(dir, 'release_note.yaml'),
    ['tool_id: release_note', 'tool_type: script', 'executor: node_runtime', 'version: "1.0.0"', 'description: "Write the release notes for a version"', 'config: { script: save_note.mjs, args: ["{script}"] }', 'parameters:', '  - { name: version, type: string, required: true, description: "The version released" }', ''].join('\n'),
  );
  writeFileSync(
    path.join(dir, 'count_words_fast.yaml'),
    ['tool_id: count_words_fast', 'tool_type: script', 'executor: python_runtime', 'version: "1.0.0"', 'description: "Count the words in a file, fast"', 'config: { script: word_count.py, args: ["{script}", "{path}"] }', 'parameters:', '  - { name: path, type: string, required: true, description: "The file whose words to count" }', ''].join('\n'),
  );
  // A small project of its own: a git history with a tag, and the files the intents name.
  mkdirSync(path.join(root, 'docs'));
  writeFileSync(path.join(root, 'docs', 'guide.md'), '# Guide\n\nStart the gateway, then point a client at it.\n');
  writeFileSync(path.join(root, 'CHANGELOG.md'), '# Changelog\n\n## 0.1.0\n\n- First release.\n');
  writeFileSync(path.join(root, 'package.json'), '{\n  "name": "demo",\n  "version": "0.1.0"\n}\n');
  const env = { ...process.env, HOME: root, GIT_AUTHOR_NAME: 'Demo', GIT_AUTHOR_EMAIL: 'demo@example.com', GIT_COMMITTER_NAME: 'Demo', GIT_COMMITTER_EMAIL: 'demo@example.com' };
  const git = (...args: string[]): void => void execFileSync('git', args, { cwd: root, env, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', 'docs', 'CHANGELOG.md', 'package.json', 'README.md');
  git('commit', '-q', '-m', 'First release');
  git('tag', 'v0.1.0');
  writeFileSync(path.join(root, 'docs', 'guide.md'), '# Guide\n\nStart the gateway, then point any client at it.\n');
  git('commit', '-q', '-am', 'Guide: any client');
}

/** The intent a side request asks about: the first line of its last message. */
const intentOf = (request: ReceivedRequest): string | undefined => {
  const body = request.body as { stream?: boolean; tools?: unknown; messages?: { content: string }[] } | undefined;
  if (body?.stream === true || body?.tools === undefined) return undefined;
  return body.messages?.at(-1)?.content.split('\n')[0];
};

describe('fifteen plain-words intents against the demo tools, default settings, a replayed upstream', () => {
  let served: DemoGateway;
  let key: string;
  let allowed: string[];
  const asked: string[] = [];

  beforeAll(async () => {
    served = await serveDemoGateway({ prefix: 'kiwi-plain-scenario-', prepare, config: 'budgets:\n  default: { tokens: 1000000 }\n' });
    key = (await createKey(path.join(served.root, KEY_FILE), 'scenario')).key;
    allowed = (parse(readFileSync(path.join(served.root, '.ai', 'config', 'policy.yaml'), 'utf8')) as { tools: string[] }).tools;
    const answers = new Map(STEPS.map((s) => [s.intent, s.model]));
    served.llm.route((request) => {
      const intent = intentOf(request);
      const answer = intent === undefined ? undefined : answers.get(intent);
      if (intent === undefined) return undefined;
      asked.push(intent);
      // A side request about an intent the scenario does not have is a failure the test shows.
      return answer === undefined ? { status: 500, body: `no recorded answer for "${intent}"` } : openAiCompletion(answer);
    });
  }, 120_000);

  afterAll(async () => {
    await served?.close();
  });

  it.each(STEPS)('$intent', async (step) => {
    const { llm } = served;
    llm.replyOnce(openAiStream([`On it. [TOOL: ${step.intent}]`]), openAiStream(['Done.']));
    const before = llm.requests.length;
    const client = new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: key, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Please help with the project.' }] });
    const events = (completion as unknown as { kiwi: { events: KiwiEvent[] } }).kiwi.events;

    // One side request, about this intent, showing only tools the caller may run.
    const sides = llm.requests.slice(before).filter((r) => intentOf(r) !== undefined);
    expect(sides.map(intentOf), JSON.stringify(events)).toEqual([step.intent]);
    const shown = (sides[0]?.body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name);
    expect(shown.filter((name) => !allowed.includes(name))).toEqual([]);

    const call = events.find((e) => e.type === 'call');
    if (step.runs !== undefined) {
      expect(call?.call).toEqual(step.runs);
      const result = events.find((e) => e.type === 'result');
      expect({ status: result?.status, isError: result?.isError ?? false }, result?.text).toEqual({ status: 'ok', isError: false });
    } else {
      expect(call).toBeUndefined();
      const unresolved = events.find((e) => e.type === 'unresolved');
      expect(unresolved?.fallback?.outcome).toMatch(/^(declined|failed|refused)$/);
      // The menu: every entry a tool the caller may run, and the next turn shown nothing else.
      expect(unresolved?.candidates?.filter((c) => !allowed.includes(c))).toEqual([]);
      const feedback = JSON.stringify((await llm.request(before + 2)).body);
      for (const denied of DENIED) expect(feedback).not.toContain(denied);
    }
  });

  it('asked the model once per intent, and charged every side request to the client', async () => {
    expect([...asked].sort()).toEqual(STEPS.map((s) => s.intent).sort());
    await served.gateway.budgets?.settled();
    const usage = await served.gateway.budgets?.usage.of('scenario');
    // Each chat: two turns of 10 + 5 tokens, and one side request of 300 + 20.
    expect(usage?.used.tokens).toBe(STEPS.length * (2 * 15 + 320));
  });
});
