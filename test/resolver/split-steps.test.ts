import { describe, expect, it } from 'vitest';
import { catalogActionWords, splitSteps, type StepSplit } from '../../src/resolver/split-steps.js';
import { planSteps } from '../../src/resolver/step-plan.js';
import type { Resolution } from '../../src/resolver/types.js';
import { makeTool } from '../helpers/make-tool.js';

const ACTIONS = new Set(['check', 'send', 'search', 'read', 'compare', 'archive', 'list', 'get']);

function texts(split: StepSplit): string[] | StepSplit['kind'] {
  return split.kind === 'steps' ? split.steps.map((s) => s.text) : split.kind;
}

describe('splitSteps: explicit sequencing', () => {
  it.each([
    ['check the quota and then send the report to #ops', ['check the quota', 'send the report to #ops']],
    ['check the quota, then send the report', ['check the quota', 'send the report']],
    ['check the quota then send the report', ['check the quota', 'send the report']],
    ['First check the quota, then send the report. Finally, archive it.', ['check the quota', 'send the report', 'archive it']],
    ['Get the weather in Paris. After that, send it to Bob.', ['Get the weather in Paris', 'send it to Bob']],
    ['Also, afterwards, list the files. Also, next, read the newest one', ['list the files', 'read the newest one']],
    ['list the files. Next, read the newest one', ['list the files', 'read the newest one']],
    ['list the files and afterwards read the newest one', ['list the files', 'read the newest one']],
    ['Do this: 1. check the quota 2. send the report', ['Do this: check the quota', 'send the report']],
    ['1) check the quota\n2) send the report\n3) archive it', ['check the quota', 'send the report', 'archive it']],
    ["get the users' files and then send them", ["get the users' files", 'send them']],
    ['read_file {"path": "a.txt"} and then read_file {"path": "b.txt"}', ['read_file {"path": "a.txt"}', 'read_file {"path": "b.txt"}']],
  ])('%j', (intent, steps) => {
    expect(texts(splitSteps(intent))).toEqual(steps);
  });
});

describe('splitSteps: one intent stays one', () => {
  it.each([
    'search for cats and dogs',
    'compare A and B',
    'send the report to Alice and Bob',
    'read_file {"path": "notes; then more", "mode": "a and then b"}',
    'read_file(path="x; y", then="z")',
    '`deploy; then rollback`',
    'say "check it and then send it"',
    "say 'check it, then send it'",
    'say “check it, then send it”',
    'if the quota is low then send a report',
    'when the build finishes, then deploy it',
    'what has changed since then',
    'send it after that meeting',
    'find the next train to Paris',
    'then',
    'check the quota ; ; then',
    'I received the code "456789"; could you please verify me?',
    'version 1. of the file, 2 copies',
    '',
    'echo {"text": "unclosed and then more',
  ])('%j', (intent) => {
    expect(splitSteps(intent, { actionWords: ACTIONS }).kind).toBe('single');
  });
});

describe('splitSteps: a plain "and"', () => {
  it('is a weak candidate only when both sides start with an action word of the catalog', () => {
    const split = splitSteps('check the quota and send the report to #ops', { actionWords: ACTIONS });
    expect(split).toEqual({
      kind: 'steps',
      steps: [
        { text: 'check the quota', weak: false, clause: 'check the quota and send the report to #ops' },
        { text: 'send the report to #ops', weak: true, clause: 'check the quota and send the report to #ops' },
      ],
    });
    expect(splitSteps('Please check the quota and also send the report', { actionWords: ACTIONS }).kind).toBe('steps');
    expect(texts(splitSteps('list the files; read the newest one', { actionWords: ACTIONS }))).toEqual(['list the files', 'read the newest one']);
  });

  it('never splits without action words, at a name, or before a single word', () => {
    expect(splitSteps('check the quota and send the report').kind).toBe('single');
    expect(splitSteps('list the files; read the newest one').kind).toBe('single');
    expect(splitSteps('compare Send and Archive', { actionWords: ACTIONS }).kind).toBe('single');
    expect(splitSteps('check the quota and send', { actionWords: ACTIONS }).kind).toBe('single');
    expect(splitSteps('the quota and send the report', { actionWords: ACTIONS }).kind).toBe('single');
    expect(splitSteps('Please search for and send me the confirmation email', { actionWords: ACTIONS }).kind).toBe('single');
  });
});

describe('splitSteps: the cap', () => {
  it('refuses more explicit steps than maxSteps, saying how many and what to do', () => {
    const split = splitSteps('a then b then c then d then e then f');
    expect(split).toEqual({ kind: 'too-many', count: 6, reason: expect.stringMatching(/6 steps, and one intent may have at most 5; nothing was run: write the steps as separate intents/) });
    expect(splitSteps('a then b then c', { maxSteps: 2 }).kind).toBe('too-many');
    expect(texts(splitSteps('a then b then c then d then e'))).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('drops candidates at a plain "and" that would pass the cap, instead of refusing', () => {
    const split = splitSteps('check the quota and send the report, then check the disk and send the log', { actionWords: ACTIONS, maxSteps: 3 });
    expect(texts(split)).toEqual(['check the quota and send the report', 'check the disk and send the log']);
    expect(texts(splitSteps('check the quota and send the report, then check the disk and send the log', { actionWords: ACTIONS }))).toHaveLength(4);
  });
});

describe('catalogActionWords', () => {
  it('takes the first word of each id and description, leaving out short and closed-class words', () => {
    const words = catalogActionWords([
      makeTool({ id: 'sendSlackMessage', description: 'Post a message to a channel' }),
      makeTool({ id: 'weather.get', description: 'The weather for a city' }),
      makeTool({ id: 'go', description: '' }),
      makeTool({ id: 'Discount', description: '' }),
    ]);
    expect([...words].sort()).toEqual(['post', 'send', 'weather']);
  });
});

const timings = { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 };
/** "<verb> …" resolves to the tool `<verb>_tool`, except verbs listed as unknown. */
function scripted(unknown: string[] = []) {
  const asked: string[] = [];
  const resolve = (text: string): Promise<Resolution> => {
    asked.push(text);
    const verb = /^\w+/.exec(text)?.[0] ?? '';
    if (unknown.includes(verb)) return Promise.resolve({ status: 'unresolved', reason: 'no', missing: [], confidence: 0, candidates: [], timings, notes: [] });
    return Promise.resolve({ status: 'resolved', call: { tool: `${verb}_tool`, arguments: {} }, confidence: 0.9, candidates: [], timings, notes: [] });
  };
  return { asked, resolve };
}

describe('planSteps', () => {
  it('keeps a split at "and" when both sides resolve on their own, and carries their resolutions', async () => {
    const { asked, resolve } = scripted();
    const plan = await planSteps('check the quota and send the report', resolve, { actionWords: ACTIONS });
    expect(plan.kind === 'steps' ? plan.steps.map((s) => [s.text, s.resolution?.status]) : plan).toEqual([
      ['check the quota', 'resolved'],
      ['send the report', 'resolved'],
    ]);
    expect(asked).toEqual(['check the quota', 'send the report']);
  });

  it('takes the clause back whole when a side does not resolve, or both resolve to one tool from different words', async () => {
    expect(await planSteps('check the quota and send the report', scripted(['send']).resolve, { actionWords: ACTIONS })).toEqual({ kind: 'single' });
    const sameTool = (text: string): Promise<Resolution> =>
      Promise.resolve({ status: 'resolved', call: { tool: 'search', arguments: { q: text } }, confidence: 0.9, candidates: [], timings, notes: [] });
    expect(await planSteps('search for cats and get dogs', sameTool, { actionWords: ACTIONS })).toEqual({ kind: 'single' });
    const same = await planSteps('read a.txt and read b.txt', sameTool, { actionWords: ACTIONS });
    expect(same.kind === 'steps' ? same.steps.map((s) => s.text) : same).toEqual(['read a.txt', 'read b.txt']);
  });

  it('resolves nothing ahead for explicit steps, and refuses too many', async () => {
    const { asked, resolve } = scripted();
    const plan = await planSteps('check the quota and then send the report', resolve, { actionWords: ACTIONS });
    expect(plan).toEqual({ kind: 'steps', steps: [{ text: 'check the quota' }, { text: 'send the report' }] });
    expect(asked).toEqual([]);
    expect(await planSteps('a then b then c', resolve, { maxSteps: 2 })).toEqual({ kind: 'refused', reason: expect.stringMatching(/at most 2/) });
  });
});
