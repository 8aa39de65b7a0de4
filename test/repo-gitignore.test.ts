import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GITIGNORE } from '../src/cli/init-templates.js';
import { REPO_ROOT } from './helpers/temp-project.js';

describe("this repository's .gitignore", () => {
  it('ignores every folder the gateway generates in the demo .ai/, as kiwi init does for a project (docs/registry.md)', () => {
    const generated = GITIGNORE.split('\n').filter((line) => line.startsWith('/'));
    expect(generated.length).toBeGreaterThan(0);
    const ours = readFileSync(path.join(REPO_ROOT, '.gitignore'), 'utf8').split('\n');
    expect(generated.map((line) => `.ai${line}`).filter((entry) => !ours.includes(entry))).toEqual([]);
  });
});
