import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { predictorFile } from '../../src/prefetch/predictor-file.js';
import { openPredictorFile } from '../../src/prefetch/predictor-file.js';
import { loadTransitionModel } from '../../src/prefetch/transition-model.js';

/** The gateway's side of .ai/state/predictor.json against a real `kiwi predictor train` run meanwhile. */

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-predictor-file-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
cpSync(path.resolve(import.meta.dirname, '../fixtures/transitions/audit'), path.join(root, '.ai', 'logs', 'audit'), { recursive: true });
mkdirSync(path.join(root, 'models'));
const file = predictorFile(root);

async function train(): Promise<void> {
  const err: string[] = [];
  const code = await runCli(['predictor', 'train', '--project', root], { env: {}, cwd: root, io: { out: () => undefined, err: (l) => err.push(l) } });
  expect(err).toEqual([]);
  expect(code).toBe(0);
}

const observations = async () => (await loadTransitionModel(file))?.stats().observations;

describe('the predictor file a gateway keeps learning', () => {
  it('keeps a model trained while it served, saves on top of its own, and writes nothing when it learned nothing', async () => {
    const serving = await openPredictorFile(file);
    serving.model.observe(null, 'git_status');
    serving.model.observe('git_status', 'git_diff');
    await train();
    const trained = readFileSync(file, 'utf8');
    expect(await serving.save()).toBe('file-changed');
    expect(readFileSync(file, 'utf8')).toBe(trained);
    expect(await observations()).toBe(10);

    const next = await openPredictorFile(file);
    expect(next.model.stats().observations).toBe(10);
    next.model.observe(null, 'git_status');
    expect(await next.save()).toBe('saved');
    expect(await observations()).toBe(11);

    const idle = await openPredictorFile(file);
    const before = readFileSync(file, 'utf8');
    expect(await idle.save()).toBe('nothing-learned');
    expect(readFileSync(file, 'utf8')).toBe(before);
  });
});
