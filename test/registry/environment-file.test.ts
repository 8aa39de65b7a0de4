import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEnvironment } from '../../src/registry/environment-file.js';
import { readEnvironment, writeEnvironment } from '../../src/registry/environment-folder.js';
import { itemDigest, pinnedItems } from '../../src/registry/environment-pins.js';
import type { Directive, Registry } from '../../src/registry/types.js';

const label = { file: '/p/.ai/environments/e.yaml', display: '.ai/environments/e.yaml' };
const DIGEST = `sha256:${'a'.repeat(64)}`;
const valid = `name: e\ndirective: { name: d, version: "1.0.0", digest: "${DIGEST}" }\n`;

const problem = (text: string): string => {
  try {
    parseEnvironment(text, label, 'e');
  } catch (error) {
    return (error as Error).message;
  }
  return 'parsed';
};

describe('an environment file', () => {
  it('reads what `kiwi env save` writes', () => {
    const env = parseEnvironment(`${valid}inputs: { focus: src }\ntools: [{ id: t, version: "2.0.0", digest: "${DIGEST}" }]\nmodel_tier: fast\n`, label, 'e');
    expect(env).toMatchObject({ name: 'e', directive: { name: 'd', version: '1.0.0' }, inputs: { focus: 'src' }, tools: [{ id: 't', version: '2.0.0' }], knowledge: [], modelTier: 'fast' });
  });

  it('says where each mistake is and what to write', () => {
    expect(problem(`${valid}toolz: []\n`)).toMatch(/\.ai\/environments\/e\.yaml:3:1: .*toolz/);
    expect(problem('name: e\ndirective: { name: d, version: "1", digest: "md5:x" }\n')).toMatch(/e\.yaml:2:\d+: directive\.digest: must be "sha256:" and 64 hex digits/);
    expect(problem(valid.replace('name: e', 'name: other'))).toMatch(/name: is "other" but the file is e\.yaml; make them the same/);
    expect(problem(`${valid}model_tier: fast\nmodel: gpt-4o\n`)).toMatch(/give model_tier or model, not both/);
    expect(problem(`${valid}tools: [{ id: t, version: "1", digest: "${DIGEST}" }, { id: t, version: "1", digest: "${DIGEST}" }]\n`)).toMatch(/t listed more than once/);
    expect(problem(`${valid}tools: [{ id: "../x", version: "1", digest: "${DIGEST}" }]\n`)).toMatch(/tools\[0\]\.id: must be an id like git_status/);
    expect(problem('name: e\nname: e\n')).toMatch(/invalid YAML/);
  });
});

describe('the environments folder', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'kiwi-env-folder-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const env = { name: 'e', description: '', directive: { name: 'd', version: '1.0.0', digest: DIGEST }, inputs: {}, tools: [], knowledge: [] };

  it('writes an environment once, replaces it only when told, and reads it back', async () => {
    expect(await writeEnvironment(root, env, false)).toBe(path.join('.ai', 'environments', 'e.yaml'));
    await expect(writeEnvironment(root, env, false)).rejects.toThrow(/e\.yaml exists; pass --force to replace it/);
    await writeEnvironment(root, { ...env, description: 'second' }, true);
    expect((await readEnvironment(root, 'e')).description).toBe('second');
  });

  it('refuses a name that is a path, and a file that links out of the folder', async () => {
    await expect(readEnvironment(root, '../e')).rejects.toThrow(/is not an environment name/);
    const outside = path.join(root, 'outside.yaml');
    writeFileSync(outside, valid.replace('name: e', 'name: linked'));
    mkdirSync(path.join(root, '.ai', 'environments'), { recursive: true });
    symlinkSync(outside, path.join(root, '.ai', 'environments', 'linked.yaml'));
    await expect(readEnvironment(root, 'linked')).rejects.toThrow(/links to .*outside\.yaml, outside \.ai\/environments/);
  });

  it('refuses a file too large to be an environment', async () => {
    writeFileSync(path.join(root, '.ai', 'environments', 'big.yaml'), `# ${'x'.repeat(70_000)}\n${valid}`);
    await expect(readEnvironment(root, 'big')).rejects.toThrow(/is 701\d\d bytes, more than the 65536 an environment may be/);
  });
});

describe('pins', () => {
  const directive = (version: string, description: string): Directive =>
    ({ name: 'd', version, description, limits: {}, permissions: [], xml: `<directive version="${version}"/>`, body: '', signature: null, source: { path: `/p/d.v${version}.md`, tier: 'project' } }) as Directive;
  const older = directive('1.0.0', 'first');
  const newer = directive('1.0.1', 'annealed');
  const registry = (d: Directive[]): Registry => ({ tools: new Map(), directives: new Map([['d', d[0] as Directive]]), knowledge: new Map(), errors: [], warnings: [], shadowed: [], olderDirectives: new Map([['d', d.slice(1)]]) });
  const env = (d: Directive) => ({ ...parseEnvironment(valid, label, 'e'), directive: { name: 'd', version: d.version, digest: itemDigest(d) } });

  it('runs the pinned version of a directive while its file is there, after a newer one was written', () => {
    expect(pinnedItems(registry([newer, older]), env(older)).directive.description).toBe('first');
    expect(() => pinnedItems(registry([newer]), env(older))).toThrow(/directive d is now 1\.0\.1, not 1\.0\.0/);
  });

  it('does not count where a file is or when it was signed as a change', () => {
    expect(itemDigest({ ...older, source: { path: '/elsewhere.md', tier: 'user' }, signature: { timestamp: 'now', hash: 'h' } })).toBe(itemDigest(older));
    expect(itemDigest({ ...older, description: 'changed' })).not.toBe(itemDigest(older));
  });
});
