import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { createIntentScanner } from '../../src/intent/intent-scanner.js';
import { createDemoProvider, loadDemoTurns, parseDemoTurns, selectDemoTurn, type DemoScript } from '../../src/llm/demo-provider.js';
import type { ChatMessage, ChatRequest } from '../../src/llm/types.js';
import { failure } from '../helpers/expect-failure.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { drain, streamFailure, textOf } from './collect-events.js';

const SHIPPED = path.join(REPO_ROOT, '.ai', 'demo', 'agent-turns.yaml');
const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeYaml(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

const SCRIPT: DemoScript = {
  closing: 'All done.',
  default: { turns: ['I am the fallback. [TOOL: list the entries of the directory "."]'] },
  conversations: [
    { name: 'words', match: ['Words', 'word   count'], turns: ['Counting. [TOOL: count the words in "README.md"]', 'That is the count.'] },
    { name: 'status', match: ['what changed', 'words about git'], turns: ['[TOOL: show the git status of the project]'], closing: 'Status done.' },
  ],
};

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const ask = (...messages: ChatMessage[]): ChatRequest => ({ model: 'kiwi-demo', messages });

describe('demo model: which turn it replays', () => {
  it('picks the turn by the number of assistant messages after the first user message, then repeats the closing', () => {
    const first = [{ role: 'system' as const, content: 'Use [TOOL: …] intents.' }, user('How many WORDS are in the readme?')];
    const t0 = selectDemoTurn(SCRIPT, first);
    expect(t0).toEqual({ conversation: 'words', turn: 0, closing: false, text: '(offline demo model) Counting. [TOOL: count the words in "README.md"]' });
    const afterOne = [...first, assistant(t0.text), user('Tool results: 42 words')];
    expect(selectDemoTurn(SCRIPT, afterOne)).toMatchObject({ turn: 1, closing: false, text: '(demo model) That is the count.' });
    const afterTwo = [...afterOne, assistant('x'), user('what changed?')];
    expect(selectDemoTurn(SCRIPT, afterTwo)).toEqual({ conversation: 'words', turn: 2, closing: true, text: '(demo model) All done.' });
    expect(selectDemoTurn(SCRIPT, [...afterTwo, assistant('y')])).toMatchObject({ turn: 3, closing: true, text: '(demo model) All done.' });
  });

  it('matches whole words and phrases, case-insensitively, spaces collapsed; the first conversation in the file wins', () => {
    expect(selectDemoTurn(SCRIPT, [user('give me a WORD\n count')]).conversation).toBe('words');
    expect(selectDemoTurn(SCRIPT, [user('some words about git')]).conversation).toBe('words');
    expect(selectDemoTurn(SCRIPT, [user('What Changed here')]).conversation).toBe('status');
    expect(selectDemoTurn(SCRIPT, [user('my passwords leaked')]).conversation).toBe('default');
  });

  it('looks only at the first user message, so tool results in later user messages never switch conversations', () => {
    const t = selectDemoTurn(SCRIPT, [user('what changed'), assistant('a'), user('README.md has 42 words')]);
    expect(t).toEqual({ conversation: 'status', turn: 1, closing: true, text: '(demo model) Status done.' });
  });

  it('answers anything unmatched with the default conversation, and with no user message at all', () => {
    expect(selectDemoTurn(SCRIPT, [user('hello there')]).text).toBe('(offline demo model) I am the fallback. [TOOL: list the entries of the directory "."]');
    expect(selectDemoTurn(SCRIPT, [{ role: 'system', content: 'be brief' }]).conversation).toBe('default');
  });

  it('without a script, says it is the offline demo model, how to configure a real upstream, and shows one intent', async () => {
    const demo = createDemoProvider();
    const c = await demo.complete(ask(user('hello')));
    expect(c.text.startsWith('(offline demo model) ')).toBe(true);
    expect(c.text).toMatch(/OPENAI_API_KEY/);
    expect(c.text).toMatch(/KIWI_UPSTREAM_URL/);
    expect(c.text.match(/\[TOOL: [^\]]+\]/g)).toHaveLength(1);
  });
});

describe('demo model: streaming', () => {
  it('streams one start, text in pieces of about six characters that split the intent, and one finish', async () => {
    const demo = createDemoProvider({ turns: SCRIPT });
    const { events, error } = await drain(demo.stream(ask(user('count the words'))));
    expect(error).toBeUndefined();
    expect(events[0]).toMatchObject({ type: 'start', model: 'kiwi-demo' });
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'stop' });
    const texts = events.filter((e) => e.type === 'text').map((e) => e.text);
    expect(texts.every((t) => t.length <= 6)).toBe(true);
    expect(texts.some((t) => t.includes('[TOOL: count'))).toBe(false);
    expect(textOf(events)).toBe('(offline demo model) Counting. [TOOL: count the words in "README.md"]');
    const scanner = createIntentScanner();
    const scanned = [...texts.flatMap((t) => scanner.push(t)), ...scanner.end()];
    expect(scanned.filter((e) => e.type === 'intent').map((e) => e.text)).toEqual(['count the words in "README.md"']);
  });

  it('cuts between code points, never inside a surrogate pair, with the chunk size asked for', async () => {
    const demo = createDemoProvider({ turns: { default: { turns: ['🥝🥝🥝 kiwi 🥝'] } }, chunkChars: 2 });
    const { events } = await drain(demo.stream(ask(user('hi'))));
    const texts = events.filter((e) => e.type === 'text').map((e) => e.text);
    expect(texts.every((t) => !/[\uD800-\uDBFF]$/.test(t) && !/^[\uDC00-\uDFFF]/.test(t))).toBe(true);
    expect(textOf(events)).toBe('(offline demo model) 🥝🥝🥝 kiwi 🥝');
  });

  it('complete() returns the whole turn with rough usage (characters / 4)', async () => {
    const demo = createDemoProvider({ turns: SCRIPT });
    const request = ask(user('what changed'));
    const c = await demo.complete(request);
    const streamed = textOf((await drain(demo.stream(request))).events);
    expect(c.text).toBe(streamed);
    expect(c.model).toBe('kiwi-demo');
    expect(c.id).toMatch(/^demo-/);
    expect(c.finish).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: Math.ceil('what changed'.length / 4), outputTokens: Math.ceil(c.text.length / 4) } });
  });

  it("answers the gateway's side request from its recorded calls, saying so, and calls none it has no recording for", async () => {
    const script: DemoScript = { ...SCRIPT, calls: [{ intent: 'Count the words in  "README.md"', tool: 'word_count', arguments: { path: 'README.md' } }] };
    const demo = createDemoProvider({ turns: script });
    const shown = { tools: [{ name: 'word_count', parameters: { type: 'object' } }, { name: 'read_file', parameters: { type: 'object' } }] };
    const side = (intent: string, tools = shown): ChatRequest => ({ model: 'kiwi-demo', messages: [{ role: 'system', content: 'Call the one function…' }, user(`${intent}\n\nEarlier in the conversation (only for values the request refers to):\nI will count them.`)], clientTools: tools, sideRequest: true });

    const called = await demo.complete(side('count the words in "README.md"'));
    expect(called.toolCalls).toEqual([{ id: expect.stringMatching(/^call_demo_/), name: 'word_count', arguments: '{"path":"README.md"}' }]);
    expect(called.text).toBe('(offline demo model) A recorded answer to the gateway\'s side request: word_count {"path":"README.md"}');
    expect(called.finish.reason).toBe('tool_calls');
    expect(called.finish.usage?.inputTokens).toBeGreaterThan(0);

    // Another intent, or the recorded tool not among those shown: no call, and it says why.
    for (const request of [side('count the lines in "README.md"'), side('count the words in "README.md"', { tools: [{ name: 'read_file', parameters: { type: 'object' } }] })]) {
      const none = await demo.complete(request);
      expect(none.toolCalls).toBeUndefined();
      expect(none.text).toBe('(offline demo model) I have no recorded call for this side request, so I call none.');
    }
    // A client's own request with tools is a turn as before.
    expect((await demo.complete({ ...side('words'), sideRequest: false })).text).toMatch(/^\(offline demo model\) Counting\./);
  });

  it('refuses a recorded call that is not well formed, naming the field', () => {
    expect(() => parseDemoTurns('calls:\n  - { intent: "x", tool: "a b" }\n', 'turns.yaml')).toThrow(/turns\.yaml:2:\d+: calls\[0\]\.tool: must be 1 to 64 letters/);
    expect(() => parseDemoTurns('calls:\n  - { intent: "x", tool: t, arguments: [1] }\n', 'turns.yaml')).toThrow(/calls\[0\]\.arguments: must be an object/);
  });

  it('honours stop sequences and max tokens (4 characters a token), as a model would', async () => {
    const demo = createDemoProvider({ turns: SCRIPT });
    const stopped = await demo.complete({ ...ask(user('words')), stop: ['[TOOL'] });
    expect(stopped.text).toBe('(offline demo model) Counting. ');
    const cut = await demo.complete({ ...ask(user('words')), maxTokens: 3 });
    expect(cut.text).toBe('(offline dem');
    expect(cut.finish.reason).toBe('length');
  });

  it('stops with TOOL_CANCELLED when the signal fires mid-stream, and before it starts', async () => {
    const demo = createDemoProvider({ turns: SCRIPT });
    const controller = new AbortController();
    const seen: string[] = [];
    const { error } = await drain(
      (async function* () {
        for await (const e of demo.stream(ask(user('words')), controller.signal)) {
          if (e.type === 'text') {
            seen.push(e.text);
            controller.abort();
          }
          yield e;
        }
      })(),
    );
    expect(error).toBeInstanceOf(KiwiError);
    expect((error as KiwiError).code).toBe('TOOL_CANCELLED');
    expect(seen).toHaveLength(1);
    const { events } = await streamFailure(demo.stream(ask(user('words')), AbortSignal.abort()), 'TOOL_CANCELLED');
    expect(events).toEqual([]);
    await failure(demo.complete(ask(user('words')), AbortSignal.abort()), 'TOOL_CANCELLED');
  });

  it('wakes from a chunk delay as soon as the signal fires', async () => {
    const demo = createDemoProvider({ turns: SCRIPT, chunkDelayMs: 10_000 });
    const controller = new AbortController();
    const iterator = demo.stream(ask(user('words')), controller.signal)[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toMatchObject({ type: 'start' });
    const next = iterator.next();
    controller.abort();
    await failure(next, 'TOOL_CANCELLED');
  });

  it('refuses requests once closed, and bad requests and options with INVALID_INPUT', async () => {
    const demo = createDemoProvider({ turns: SCRIPT });
    await failure(demo.complete({ model: 'kiwi-demo', messages: [] }), 'INVALID_INPUT');
    expect(() => createDemoProvider({ chunkChars: 0 })).toThrow(/chunkChars/);
    expect(() => createDemoProvider({ turns: SCRIPT, turnsFile: SHIPPED })).toThrow(/turnsFile or turns, not both/);
    expect(() => createDemoProvider({ turns: { conversations: [{ name: 'x', match: [], turns: ['a'] }] } })).toThrow(/conversations\[0\]\.match: give at least one word or phrase/);
    await demo.close();
    await failure(demo.complete(ask(user('hi'))), 'INTERNAL');
    expect(demo.kind).toBe('demo');
  });
});

describe('demo model: the agent-turns file', () => {
  const bad = (text: string): string => {
    const file = writeYaml(`bad-${Math.random().toString(36).slice(2)}.yaml`, text);
    try {
      loadDemoTurns(file);
    } catch (error) {
      expect(error).toBeInstanceOf(KiwiError);
      expect((error as KiwiError).code).toBe('INVALID_INPUT');
      return (error as KiwiError).message.replace(file, 'FILE');
    }
    throw new Error('expected the file to be refused');
  };

  it('names file:line:column, the field and what to write', () => {
    expect(bad('conversations:\n  - name: a\n    match: [x]\n    turns: []\n')).toBe(
      'FILE:4:12: conversations[0].turns: give at least one turn; see the format described at the top of .ai/demo/agent-turns.yaml',
    );
    expect(bad('conversations:\n  - name: a\n    match: x\n    turns: [t]\n')).toMatch(/^FILE:3:12: conversations\[0\]\.match: must be a list of words or phrases/);
    expect(bad('conversations:\n  - name: a\n    mach: [x]\n    turns: [t]\n')).toMatch(/^FILE:3:5: conversations\[0\]\.mach: unknown field \(did you mean "match"\?\)/);
    expect(bad('default:\n  turns: [a]\nclosing: "bye [TOOL: run it again]"\n')).toMatch(/^FILE:3:10: closing: a closing turn must not contain a \[TOOL: …\] intent/);
    expect(bad('conversations:\n  - name: a\n    turns: [t]\n')).toMatch(/^FILE:2:5: conversations\[0\]\.match: is required: the words or phrases/);
    expect(bad('conversations:\n  - name: "has space"\n    match: [x]\n    turns: [t]\n')).toMatch(/^FILE:2:11: conversations\[0\]\.name: must be 1 to 64 letters/);
    expect(bad('conversations: [\n  {name: a\n')).toMatch(/^FILE:\d+:\d+: invalid YAML/);
    expect(bad('closing: a\nclosing: b\n')).toMatch(/^FILE:2:1: invalid YAML/);
    expect(bad(`default:\n  turns: ["${'x'.repeat(300 * 1024)}"]\n`)).toMatch(/larger than 262144 bytes/);
  });

  it('falls back to the built-in script when the file does not exist', async () => {
    const demo = createDemoProvider({ turnsFile: path.join(dir, 'missing.yaml') });
    expect((await demo.complete(ask(user('what changed')))).text).toMatch(/^\(offline demo model\) I replay recorded turns/);
  });

  it('parses text directly, and an empty file is the built-in default conversation', () => {
    expect(parseDemoTurns('', 'x.yaml')).toEqual({});
    expect(selectDemoTurn(parseDemoTurns('', 'x.yaml'), [user('hi')]).text).toMatch(/offline demo model/);
  });

  describe('the shipped .ai/demo/agent-turns.yaml', () => {
    const script = loadDemoTurns(SHIPPED);

    it.each([
      ['what changed in this repo?', 'what-changed'],
      ['How many words are in the README?', 'readme-words'],
      ['read package.json', 'package-json'],
      ['show me the recent commits', 'recent-commits'],
      ['Please read /etc/passwd', 'denied-read'],
      ['hello', 'default'],
    ])('routes "%s" to %s', (question, conversation) => {
      expect(selectDemoTurn(script, [user(question)]).conversation).toBe(conversation);
    });

    it('records a side-request answer for the plain-words intents its conversations write', () => {
      const calls = script.calls ?? [];
      const intents = (text: string): string[] => {
        const scanner = createIntentScanner();
        return [...scanner.push(text), ...scanner.end()].flatMap((e) => (e.type === 'intent' ? [e.text] : []));
      };
      expect(calls.map((c) => c.intent)).toEqual(expect.arrayContaining([...intents(script.default?.turns[0] ?? ''), 'count the words in "README.md"']));
      expect(calls.find((c) => c.intent === 'count the words in "README.md"')).toEqual({ intent: 'count the words in "README.md"', tool: 'word_count', arguments: { path: 'README.md' } });
    });

    it('has exactly one well-formed intent in every first turn, and says it is the demo in every reply', () => {
      const all = [...(script.conversations ?? []), { name: 'default', match: [], ...(script.default ?? { turns: [] }) }];
      expect(all.length).toBeGreaterThanOrEqual(5);
      for (const c of all) {
        const scanner = createIntentScanner();
        const events = [...scanner.push(c.turns[0] ?? ''), ...scanner.end()];
        expect(events.filter((e) => e.type === 'invalid'), c.name).toEqual([]);
        expect(events.filter((e) => e.type === 'intent'), c.name).toHaveLength(1);
        const question = c.match[0] ?? 'hello';
        const messages: ChatMessage[] = [user(question)];
        for (let turn = 0; turn <= c.turns.length; turn++) {
          const t = selectDemoTurn(script, messages);
          expect(t.conversation).toBe(c.name);
          expect(t.text).toMatch(/^\((offline )?demo model\) /);
          messages.push(assistant(t.text), user('results'));
        }
      }
    });
  });
});
