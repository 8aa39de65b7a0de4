import { cpSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import { REPO_ROOT } from '../../helpers/temp-project.js';

/** `kiwi pipelines` where it needs no gateway (an integration file only for the seconds its module takes to import): the list with the files that did not load, and what it refuses before opening one. */

let root: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-pipelines-cli-')));
  for (const folder of ['directives', 'pipelines']) cpSync(path.join(REPO_ROOT, '.ai', folder), path.join(root, '.ai', folder), { recursive: true });
  writeFileSync(path.join(root, '.ai', 'pipelines', 'broken.yaml'), 'name: broken\nversion: "1.0.0"\ndescription: d\nstages:\n  - { name: a, directive: review_changes, inputs: { focus: "${stages.b.result}" } }\n');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

async function kiwi(...argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['pipelines', ...argv, '--project', root], { env: { HOME: root, KIWI_USER_DIR: path.join(root, 'none') }, cwd: root, io: { out: (l) => out.push(l), err: (l) => err.push(l), write: () => undefined } });
  return { code, out, err };
}

describe('kiwi pipelines', () => {
  it('lists the pipelines with their stages, and the files that did not load with their line and why', async () => {
    const { code, out, err } = await kiwi('list');
    expect(code).toBe(0);
    expect(out).toEqual(['release_check  1.0.0  review → note  — Review the uncommitted changes, then write a release note from the review']);
    expect(err).toEqual(['kiwi: .ai/pipelines/broken.yaml:5:60: stages[0].inputs.focus: ${stages.b.result}: no stage "b" runs before this one; a stage reads only stages of earlier groups']);
  });

  it.each([
    [['show'], /^kiwi pipelines: usage: kiwi pipelines list \| run NAME/],
    [['list', 'extra'], /^kiwi pipelines: usage:/],
    [['resume', '0195aaaa-bbbb-4ccc-8ddd-eeeeffff1000', '--input', 'a=b'], /^kiwi pipelines: --input is for run: a resumed run goes on with the inputs it started with$/],
    [['show', '../../etc/passwd'], /^kiwi pipelines: INVALID_INPUT: "\.\.\/\.\.\/etc\/passwd" is not a pipeline run id/],
    [['show', '0195aaaa-bbbb-4ccc-8ddd-eeeeffff1000'], /^kiwi pipelines: NOT_FOUND: no pipeline run 0195aaaa-bbbb-4ccc-8ddd-eeeeffff1000 among the 2000 most recent threads/],
    [['list', '--steps'], /^kiwi pipelines: --steps is for run and resume/],
  ])('refuses %j, saying why', async (argv, expected) => {
    const { code, err } = await kiwi(...argv);
    expect(code).not.toBe(0);
    expect(err.join('\n')).toMatch(expected);
  });
});
