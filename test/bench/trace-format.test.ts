import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { demoTraces } from '../../bench/prefetch/demo-traces.js';
import { firstPersonStep, planLine } from '../../bench/prefetch/announce.js';
import { isReadOnlyName } from '../../bench/prefetch/catalog-tools.js';
import { replayTrace } from '../../bench/prefetch/replay-trace.js';
import { groupSteps, splitRequest } from '../../bench/prefetch/seal-split.js';
import { intentMarkup, sealTraces } from '../../bench/prefetch/seal-traces.js';
import { tokenize } from '../../bench/prefetch/token-timing.js';
import { parseTraceLine, readTraces, turnText, type Trace } from '../../bench/prefetch/trace-format.js';
import type { BenchCase } from '../../src/datasets/case-file.js';
import { readCases } from '../../src/datasets/case-file.js';
import { KiwiError } from '../../src/base/errors.js';
import { loadDemoTurns } from '../../src/llm/demo-provider.js';
import { failure } from '../helpers/expect-failure.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const FIXTURES = path.join(REPO, 'test', 'fixtures', 'traces');
const VALID = path.join(FIXTURES, 'valid.jsonl');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-traces-'));
  dirs.push(dir);
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

function validTrace(): Record<string, unknown> {
  return JSON.parse(readFileSync(VALID, 'utf8').split('\n')[0] as string) as Record<string, unknown>;
}

/** The message of the KiwiError parseTraceLine throws for `value` (as JSON, or the raw text). */
function parseError(value: unknown): string {
  const line = typeof value === 'string' ? value : JSON.stringify(value);
  try {
    parseTraceLine(line, 'bad.jsonl:7');
  } catch (error) {
    expect(error).toBeInstanceOf(KiwiError);
    expect((error as KiwiError).code).toBe('INVALID_INPUT');
    return (error as KiwiError).message;
  }
  throw new Error('the line was accepted');
}

describe('trace format', () => {
  it('reads a valid file: turns, intents, gold calls, the default group', async () => {
    const traces = await readTraces(VALID);
    expect(traces.map((t) => t.id)).toEqual(['small-1', 'small-2']);
    const [first, second] = traces as [Trace, Trace];
    expect(turnText(first.turns[0] as Trace['turns'][number])).toBe('Reading it.\n[TOOL: read the file "package.json"]');
    expect(first.turns[0]?.intents[0]?.gold).toEqual({ name: 'read_file', arguments: { path: ['package.json'] } });
    expect(first.turns[1]?.intents).toEqual([]);
    expect(second.group).toBe('all');
    expect(second.turns[0]?.intents.map((i) => i.gold?.name ?? null)).toEqual([null, 'list_directory']);
    expect(await readTraces(VALID, { limit: 1 })).toHaveLength(1);
  });

  it('names the line and the field of each kind of bad line', () => {
    const t = validTrace();
    const turns = t['turns'] as Array<{ chunks: Array<{ t: number; text: string }>; intents: Array<{ text: string; gold: unknown }> }>;
    const withTurn0 = (change: (turn: (typeof turns)[number]) => void) => {
      const copy = structuredClone(t);
      change((copy['turns'] as typeof turns)[0] as (typeof turns)[number]);
      return copy;
    };
    expect(parseError('{"id": "x",')).toMatch(/^bad\.jsonl:7: not JSON/);
    expect(parseError('[1, 2]')).toMatch(/^bad\.jsonl:7: line: /);
    const { turns: _turns, ...noTurns } = t;
    expect(parseError(noTurns)).toMatch(/^bad\.jsonl:7: turns: /);
    expect(parseError({ ...t, id: '' })).toMatch(/^bad\.jsonl:7: id: must not be empty/);
    expect(parseError({ ...t, catalog: '' })).toMatch(/catalog: must be "seal-tools", "demo" or the path/);
    expect(parseError({ ...t, turns: [] })).toMatch(/turns: a trace has at least one turn/);
    expect(parseError(withTurn0((turn) => (turn.chunks[2] = { t: -1, text: 'x' })))).toMatch(/turns\[0\]\.chunks\[2\]\.t: must be ms since the turn started/);
    expect(parseError(withTurn0((turn) => (turn.chunks[1] = { t: 20, text: '' })))).toMatch(/turns\[0\]\.chunks\[1\]\.text: must not be empty/);
    expect(parseError(withTurn0((turn) => ((turn.chunks[1] as { t: unknown }).t = '20')))).toMatch(/turns\[0\]\.chunks\[1\]\.t: /);
    expect(parseError(withTurn0((turn) => ((turn.chunks[0] as Record<string, unknown>)['ms'] = 1)))).toMatch(/turns\[0\]\.chunks\[0\]: .*ms/);
    expect(parseError(withTurn0((turn) => ((turn.chunks[3] as { t: number }).t = 5)))).toMatch(/turns\[0\]\.chunks\[3\]\.t: 5 is before the previous chunk's 41/);
    expect(parseError(withTurn0((turn) => (turn.intents = [])))).toMatch(/turns\[0\]: the chunks hold 1 \[TOOL: …\] intent\(s\) but `intents` lists 0/);
    expect(parseError(withTurn0((turn) => ((turn.intents[0] as { text: string }).text = 'read the file')))).toMatch(/turns\[0\]\.intents\[0\]\.text: "read the file" is not the intent in the chunks/);
    expect(parseError(withTurn0((turn) => ((turn.intents[0] as { gold: unknown }).gold = { name: 'read_file', arguments: { path: 'package.json' } })))).toMatch(
      /turns\[0\]\.intents\[0\]\.gold\.arguments\.path: /,
    );
    expect(parseError(withTurn0((turn) => (turn.chunks = [{ t: 0, text: 'x [TOOL: never closed' }])))).toMatch(/turns\[0\]: the text holds a broken intent \(unclosed intent/);
  });

  it('stops a file at its first bad line, and at a repeated id, with file and line', async () => {
    const good = readFileSync(VALID, 'utf8').trim().split('\n');
    const broken = tempFile('broken.jsonl', `${good[0]}\n\n{"id": 3}\n`);
    const e1 = await failure(readTraces(broken), 'INVALID_INPUT');
    expect(e1.message).toContain(`${broken}:3: id: `);
    const repeated = tempFile('repeated.jsonl', `${good[0]}\n${good[0]}\n`);
    const e2 = await failure(readTraces(repeated), 'INVALID_INPUT');
    expect(e2.message).toContain(`${repeated}:2: id: "small-1" is already used on line 1`);
    const e3 = await failure(readTraces(path.join(FIXTURES, 'missing.jsonl')), 'INVALID_INPUT');
    expect(e3.message).toMatch(/missing\.jsonl: cannot be read/);
  });
});

describe('Seal-Tools split', () => {
  const load = async (): Promise<Map<string, BenchCase>> => new Map((await readCases([path.join(FIXTURES, 'seal-cases.jsonl')])).map((c) => [c.id, c]));

  it('splits a request into one sub-request per gold call, connectives removed', async () => {
    const c = (await load()).get('test_out_domain-difficult-94') as BenchCase;
    const split = splitRequest(c.intent, c.calls);
    expect(split.ok).toBe(true);
    if (!split.ok) return;
    expect(split.steps.map((s) => s.gold.name)).toEqual(['checkDatabaseStatus', 'validateUI', 'updateDesign']);
    expect(split.steps[0]?.text).toBe('Please check the status of the MySQL database and provide additional information or error messages if any.');
    expect(split.steps[2]?.text).toBe("Update the details of the design identified as 'QDeRbZKRG' with the new details '2009-09-23'.");
    expect(split.steps.map((s) => firstPersonStep(s.action))).toEqual([
      'check the status of the MySQL database',
      'validate the usability and accessibility of the user interface design',
      "update the details of the design identified as 'QDeRbZKRG'",
    ]);
  });

  it('keeps a preamble with the first step and a "First, …" step with it', async () => {
    const cases = await load();
    const ethics = cases.get('test_out_domain-difficult-96') as BenchCase;
    const split = splitRequest(ethics.intent, ethics.calls);
    expect(split.ok && split.steps.map((s) => s.gold.name)).toEqual(['checkEthicsInArtificialLife', 'getDecisionMakingFramework', 'performSecurityAudit', 'checkAccessRights']);
    expect(split.ok && split.steps[0]?.text).toMatch(/^We need to conduct an ethical evaluation of artificial life\. Check the ethical considerations/);
    expect(split.ok && split.steps[0]?.action).toMatch(/^Check the ethical considerations/);
  });

  it('leaves out a case whose calls are out of text order or whose steps are not self-contained', async () => {
    const film = (await load()).get('test_out_domain-difficult-97') as BenchCase;
    const split = splitRequest(film.intent, film.calls);
    expect(split.ok).toBe(false);
    const two = splitRequest('Get the weather in Paris. Then, book a table.', [
      { name: 'getWeather', arguments: { city: ['Paris'] } },
      { name: 'bookTable', arguments: {} },
      { name: 'sendEmail', arguments: {} },
    ]);
    expect(two).toEqual({ ok: false, reason: '2 steps for 3 calls' });
    expect(groupSteps('Check the disk, and finally, check the logs. Thank you.')).toEqual([['Check the disk'], ['finally, check the logs.']]);
  });

  it('builds the same traces for the same seed; every turn is plan or reasoning, then the intent', async () => {
    const cases = [...(await load()).values()];
    const options = { seed: 7, announced: 3, silent: 2, source: 'fixture' };
    const a = sealTraces(cases, options);
    const b = sealTraces(cases, options);
    expect(JSON.stringify(a.traces)).toBe(JSON.stringify(b.traces));
    expect(a.eligible).toBe(5);
    expect(a.traces.map((t) => t.group).sort()).toEqual(['announced', 'announced', 'announced', 'silent', 'silent']);
    const other = sealTraces(cases, { ...options, seed: 8 });
    expect(JSON.stringify(other.traces)).not.toBe(JSON.stringify(a.traces));
    for (const trace of a.traces) {
      const line = JSON.stringify(trace);
      expect(parseTraceLine(line, 'built').id).toBe(trace.id);
      trace.turns.forEach((turn, i) => {
        const intent = turn.intents[0]?.text as string;
        const text = turnText(turn);
        expect(text.endsWith(`\n${intentMarkup(intent)}`)).toBe(true);
        const said = text.slice(0, text.length - intentMarkup(intent).length - 1);
        if (i === 0) expect(said.split('\n')[0]).toMatch(trace.group === 'silent' ? `I'll work through this in ${trace.turns.length} steps.` : /^Plan: /);
        if (trace.group === 'silent') expect(said.split('\n').at(-1)).toMatch(/^(Starting|Step one|Next step|Continuing|On to the next one|Last step|One more)\.$/);
        else expect(said.split('\n').at(-1)).toMatch(/I'll |let me /);
      });
    }
  });
});

describe('chunk timing', () => {
  it('tokens join back to the text and average about 4 characters', () => {
    const text = 'Next I\'ll check the status of the MySQL database.\n[TOOL: check "db-01" at 12:30, 2021-09-30]';
    const tokens = tokenize(text);
    expect(tokens.join('')).toBe(text);
    expect(text.length / tokens.length).toBeGreaterThan(2.5);
    expect(text.length / tokens.length).toBeLessThan(5.5);
  });

  it('built chunks join to the turn text, start at 0, never go back, stream at 40–60 tokens/s', async () => {
    const cases = await readCases([path.join(FIXTURES, 'seal-cases.jsonl')]);
    const { traces } = sealTraces(cases, { seed: 1, announced: 5, silent: 0, source: 'fixture' });
    const demo = demoTraces(loadDemoTurns(path.join(REPO, '.ai', 'demo', 'agent-turns.yaml')), { seed: 1, source: 'agent-turns.yaml' });
    for (const trace of [...traces, ...demo]) {
      let chunks = 0;
      let ms = 0;
      for (const turn of trace.turns) {
        expect(turn.chunks[0]?.t).toBe(0);
        for (let i = 1; i < turn.chunks.length; i++) expect((turn.chunks[i] as { t: number }).t).toBeGreaterThanOrEqual((turn.chunks[i - 1] as { t: number }).t);
        chunks += turn.chunks.length - 1;
        ms += turn.chunks.at(-1)?.t ?? 0;
      }
      const rate = (chunks * 1000) / ms;
      expect(rate).toBeGreaterThan(30);
      expect(rate).toBeLessThan(80);
    }
    const script = loadDemoTurns(path.join(REPO, '.ai', 'demo', 'agent-turns.yaml'));
    const recorded = [script.default?.turns ?? [], ...(script.conversations ?? []).map((c) => c.turns)];
    expect(demo.map((t) => t.turns.map(turnText))).toEqual(recorded.map((turns) => turns.map((x) => x.trim())));
    expect(demo.flatMap((t) => t.turns.flatMap((turn) => turn.intents.map((i) => i.text)))).toContain('read_file {"path": "package.json"}');
  });

  it('the plan line names the steps, or only how many there are', () => {
    expect(planLine(['check the status of the MySQL database', 'create a new database named "SQLite"'], false)).toBe('Plan: check the status, then create a new database.');
    expect(planLine(['a', 'b', 'c'], true)).toBe("I'll work through this in 3 steps.");
  });

  it('the shipped traces files are valid', async () => {
    for (const name of ['demo.jsonl', 'seal-test-out.jsonl', 'seal-dev.jsonl']) {
      const traces = await readTraces(path.join(REPO, 'bench', 'traces', name));
      expect(traces.length).toBeGreaterThan(name === 'demo.jsonl' ? 3 : 50);
    }
  });
});

describe('replay and catalog tools', () => {
  it('a tool is read-only when its name starts with a read verb at a word break', () => {
    expect(['getWeather', 'check_status', 'search', 'lookupWord', 'calculateTax', 'list'].filter(isReadOnlyName)).toHaveLength(6);
    expect(['createUser', 'listen', 'checkout', 'getaway', 'bookFlight', 'updateDesign', 'countryInfo'].filter(isReadOnlyName)).toEqual([]);
  });

  it('replays a trace through the agent loop: every intent resolved and called in order, answers and turn times recorded', async () => {
    const [trace] = (await readTraces(VALID)) as [Trace];
    const resolved: string[] = [];
    const seen: string[] = [];
    const replay = await replayTrace(
      trace,
      {
        observer: { onText: (t) => seen.push(t), onIntent: (i) => seen.push(`<${i}>`), end: () => seen.push('end') },
        async resolve(intent) {
          resolved.push(intent);
          return { status: 'resolved', call: { tool: 'read_file', arguments: { path: 'package.json' } }, confidence: 1, candidates: [], timings: { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 }, notes: [] };
        },
        async call(call) {
          return { callId: 'c1', tool: call.target.tool, durationMs: 0, stuck: false, status: 'ok', result: { text: 'the file', isError: false } };
        },
      },
      { session: 'test', speed: 1000 },
    );
    expect(resolved).toEqual(['read the file "package.json"']);
    expect(seen.join('')).toBe('Reading it.\n<read the file "package.json">Done.end');
    expect(replay.intents).toHaveLength(1);
    expect(replay.intents[0]).toMatchObject({ turn: 0, tool: 'read_file', gold: { name: 'read_file' }, answer: 'read_file {"path":"package.json"} -> ok', result: 'the file', prefetchedSearch: false, speculativeResult: false });
    expect(replay.intents[0]?.latencyMs).toBeGreaterThanOrEqual(0);
    expect(replay.turnMs).toHaveLength(1);
  });
});
