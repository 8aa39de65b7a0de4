import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run bench -- side-request --only recall` as a user runs it (tsx, a process of its own): the
 * candidate recall on a toy datasets folder. Checks what the run did and wrote, never its timings.
 * The turns part, two gateways booted against the bench's replay, is left to the bench itself
 * (about 30 s here, most of the suite's budget for one file); its logic is unit-tested
 * (side-request.test.ts).
 */

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

const CATALOG = [
  { name: 'getWeather', description: 'Get the current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city' } }, required: ['city'] } },
  { name: 'sendEmail', description: 'Send an email to someone', parameters: { type: 'object', properties: { to: { type: 'string' }, body: { type: 'string' } }, required: ['to', 'body'] } },
  { name: 'convertCurrency', description: 'Convert an amount of money from one currency to another', parameters: { type: 'object', properties: { amount: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } }, required: ['amount', 'from', 'to'] } },
];
const CASES = [
  { id: 't1', intent: 'What is the weather like in Lisbon today?', calls: [{ name: 'getWeather', arguments: { city: ['Lisbon'] } }] },
  { id: 't2', intent: 'Email Ana that the meeting moved to Friday', calls: [{ name: 'sendEmail', arguments: { to: ['Ana'], body: ['the meeting moved to Friday'] } }] },
  { id: 't3', intent: 'How much is 20 euros in dollars?', calls: [{ name: 'convertCurrency', arguments: { amount: [20], from: ['EUR'], to: ['USD'] } }] },
  { id: 't4', intent: 'Check the weather in Oslo, then email it to Ana', calls: [{ name: 'getWeather', arguments: null }, { name: 'sendEmail', arguments: null }] },
];

interface Result {
  bench: string;
  candidate_recall: { default_candidates: number; catalogs: { dataset: string; pool: number; sampled: number; asked: number; ran: number; not_asked: Record<string, number>; recall: Record<string, number | null> }[] };
}

describe('npm run bench -- side-request', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-side-bench-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('measures the recall of the candidates the side request shows, per catalog', async () => {
    const toy = path.join(dir, 'datasets', 'toy');
    mkdirSync(toy, { recursive: true });
    writeFileSync(path.join(toy, 'catalog.jsonl'), CATALOG.map((t) => JSON.stringify(t)).join('\n'));
    writeFileSync(path.join(toy, 'test.jsonl'), CASES.map((c) => JSON.stringify(c)).join('\n'));
    const out = path.join(dir, 'side.json');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/main.ts', 'side-request', '--only', 'recall', '--sample', '10', '--datasets', path.join(dir, 'datasets'), '--out', out], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: dir },
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).toMatch(/\ntoy\s/);

    const r = JSON.parse(readFileSync(out, 'utf8')) as Result;
    expect(r.bench).toBe('side-request');
    expect(r.candidate_recall.default_candidates).toBe(5);
    const [toyRecall] = r.candidate_recall.catalogs;
    expect(toyRecall).toMatchObject({ dataset: 'toy', pool: 3, sampled: 3 });
    const notAsked = Object.values(toyRecall?.not_asked ?? {}).reduce((a, b) => a + b, 0);
    expect((toyRecall?.asked ?? 0) + (toyRecall?.ran ?? 0) + notAsked).toBe(3);
    expect(Object.keys(toyRecall?.recall ?? {})).toEqual(['at_1', 'at_3', 'at_5', 'at_8']);
  }, 150_000);
});
