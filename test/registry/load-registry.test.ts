import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { loadRegistry } from '../../src/registry/load-registry.js';

const FIXTURE_PROJECT = path.resolve(import.meta.dirname, '../fixtures/registry/project');
const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-registry-')));
  temps.push(dir);
  return dir;
}

function write(root: string, relative: string, text: string | Buffer): string {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const tool = (id: string, executor = 'subprocess') => `tool_id: ${id}\ntool_type: runtime\nexecutor: ${executor}\n`;

describe('loadRegistry on the fixture project', () => {
  it('loads tools, legacy scripts, directives and knowledge, and reports the bad file', async () => {
    const registry = await loadRegistry({ projectDir: FIXTURE_PROJECT, userDir: tempDir() });
    expect([...registry.tools.keys()].sort()).toEqual(['legacy_echo', 'weather_forecast']);
    expect(registry.tools.get('legacy_echo')).toMatchObject({
      executor: 'bash_runtime',
      version: '1.0',
      parameters: [{ name: 'text', type: 'string', required: true, description: 'What to echo' }],
      source: { tier: 'project', path: path.join(FIXTURE_PROJECT, '.ai/scripts/legacy_echo.yml') },
    });
    expect(registry.tools.get('weather_forecast')?.mutatesState).toBe(false);

    const research = registry.directives.get('research');
    expect(research).toMatchObject({
      modelTier: 'reasoning',
      limits: { turns: 20, tokens: 50000, spawns: 2, duration: 600, spend: 1.5 },
      permissions: [
        { kind: 'read', resource: 'filesystem', path: 'docs/**' },
        { kind: 'execute', resource: 'tool', id: 'weather_forecast' },
        { kind: 'execute', resource: 'kiwi-mcp', action: 'search' },
      ],
    });
    expect(registry.knowledge.get('20260124-api-patterns')).toMatchObject({ title: 'API patterns', tags: ['api', 'retries'] });

    expect(registry.errors).toHaveLength(1);
    expect(registry.errors[0]).toMatchObject({
      kind: 'tool',
      field: 'tool_type',
      file: path.join(FIXTURE_PROJECT, '.ai/tools/broken.yaml'),
    });
    expect(registry.errors[0]?.message).toMatch(/^\.ai\/tools\/broken\.yaml:2:12: tool_type: "scrpt" is not a tool type; .*\(did you mean "script"\?\)$/);
    expect(registry.shadowed).toEqual([]);
  });

  it('loads the repository\'s own .ai/tools without errors', async () => {
    const registry = await loadRegistry({ projectDir: REPO_ROOT, userDir: tempDir() });
    expect(registry.errors.map((e) => e.message)).toEqual([]);
    expect(registry.tools.get('subprocess')?.executor).toBeNull();
  });
});

describe('tiers', () => {
  it('lets the project tier win over the user tier and records what it shadowed', async () => {
    const project = tempDir();
    const user = tempDir();
    write(project, '.ai/tools/shared.yaml', tool('shared', 'subprocess'));
    write(user, '.ai/tools/shared.yaml', tool('shared', 'http_client'));
    write(user, '.ai/tools/mine.yaml', tool('mine'));
    write(user, '.ai/knowledge/k.md', '---\nid: k\ntitle: K\nentry_type: learning\n---\n');

    const registry = await loadRegistry({ projectDir: project, userDir: user });
    expect(registry.tools.get('shared')).toMatchObject({ executor: 'subprocess', source: { tier: 'project' } });
    expect(registry.tools.get('mine')?.source).toEqual({ tier: 'user', path: path.join(user, '.ai/tools/mine.yaml') });
    expect(registry.knowledge.get('k')?.source.tier).toBe('user');
    expect(registry.shadowed).toEqual([
      {
        id: 'shared',
        kind: 'tool',
        winner: { tier: 'project', path: path.join(project, '.ai/tools/shared.yaml') },
        loser: { tier: 'user', path: path.join(user, '.ai/tools/shared.yaml') },
      },
    ]);
    expect(registry.errors).toEqual([]);
  });

  it('names user-tier files by their full path', async () => {
    const user = tempDir();
    write(user, '.ai/tools/bad.yaml', 'tool_id: bad\n');
    const registry = await loadRegistry({ projectDir: tempDir(), userDir: user });
    expect(registry.errors[0]?.message.startsWith(`${path.join(user, '.ai/tools/bad.yaml')}:`)).toBe(true);
  });

  it('loads a folder that is both project and user once', async () => {
    const dir = tempDir();
    write(dir, '.ai/tools/a.yaml', tool('a'));
    const registry = await loadRegistry({ projectDir: dir, userDir: dir });
    expect(registry.tools.get('a')?.source.tier).toBe('project');
    expect(registry.shadowed).toEqual([]);
    expect(registry.errors).toEqual([]);
  });

  it('treats missing .ai folders as empty', async () => {
    const registry = await loadRegistry({ projectDir: tempDir(), userDir: path.join(tempDir(), 'nowhere') });
    expect(registry).toEqual({ tools: new Map(), directives: new Map(), knowledge: new Map(), errors: [], warnings: [], shadowed: [] });
  });
});

describe('duplicates and bad files', () => {
  it('reports duplicate ids within one tier naming both files, and loads neither', async () => {
    const project = tempDir();
    const user = tempDir();
    write(project, '.ai/tools/a/dup.yaml', tool('dup'));
    write(project, '.ai/scripts/dup.yml', tool('dup'));
    write(user, '.ai/tools/dup.yaml', tool('dup'));
    const registry = await loadRegistry({ projectDir: project, userDir: user });
    expect(registry.tools.has('dup')).toBe(false);
    const messages = registry.errors.map((e) => e.message).sort();
    expect(messages).toEqual([
      '.ai/scripts/dup.yml: tool_id: tool "dup" is also defined in .ai/tools/a/dup.yaml; ids must be unique within the project tier — rename or delete one (none of them is loaded until then)',
      '.ai/tools/a/dup.yaml: tool_id: tool "dup" is also defined in .ai/scripts/dup.yml; ids must be unique within the project tier — rename or delete one (none of them is loaded until then)',
    ]);
  });

  it('keeps loading the other files when one is bad', async () => {
    const project = tempDir();
    write(project, '.ai/tools/a.yaml', tool('a'));
    write(project, '.ai/tools/b.yaml', 'tool_id: [\n');
    write(project, '.ai/directives/d.md', '<directive name="d"><metadata>');
    write(project, '.ai/knowledge/k.md', 'no front matter');
    write(project, '.ai/tools/c.yaml', tool('c'));
    const registry = await loadRegistry({ projectDir: project, userDir: tempDir() });
    expect([...registry.tools.keys()].sort()).toEqual(['a', 'c']);
    expect(registry.errors.map((e) => e.kind).sort()).toEqual(['directive', 'knowledge', 'tool']);
  });

  it('skips files over the size cap with an error', async () => {
    const project = tempDir();
    write(project, '.ai/tools/big.yaml', `${tool('big')}# ${'x'.repeat(1024 * 1024)}\n`);
    write(project, '.ai/tools/small.yaml', tool('small'));
    const registry = await loadRegistry({ projectDir: project, userDir: tempDir() });
    expect(registry.tools.has('big')).toBe(false);
    expect(registry.tools.has('small')).toBe(true);
    expect(registry.errors.map((e) => e.message)).toEqual([
      '.ai/tools/big.yaml: is larger than 1 MiB; it was skipped — keep registry files small and move data out of .ai',
    ]);
  });

  it('honours a smaller size cap and a file count cap', async () => {
    const project = tempDir();
    write(project, '.ai/tools/a.yaml', tool('a'));
    write(project, '.ai/tools/b.yaml', tool('b'));
    write(project, '.ai/tools/c.yaml', tool('c'));
    const capped = await loadRegistry({ projectDir: project, userDir: tempDir(), maxFiles: 2 });
    expect([...capped.tools.keys()].sort()).toEqual(['a', 'b']);
    expect(capped.errors[0]?.message).toContain('more than 2 registry files in this tier');
    const small = await loadRegistry({ projectDir: project, userDir: tempDir(), maxFileBytes: 10 });
    expect(small.tools.size).toBe(0);
    expect(small.errors[0]?.message).toContain('is larger than 10 bytes');
  });

  it('rejects files that are not UTF-8', async () => {
    const project = tempDir();
    write(project, '.ai/tools/latin1.yaml', Buffer.from([0x74, 0x6f, 0x6f, 0x6c, 0x5f, 0x69, 0x64, 0x3a, 0x20, 0xe9, 0x0a]));
    const registry = await loadRegistry({ projectDir: project, userDir: tempDir() });
    expect(registry.errors.map((e) => e.message)).toEqual(['.ai/tools/latin1.yaml: is not valid UTF-8; save it as UTF-8']);
  });

  it('does not follow symlinks out of the .ai folder, but follows those inside it', async () => {
    const project = tempDir();
    const outside = tempDir();
    const secret = write(outside, 'evil.yaml', tool('evil'));
    mkdirSync(path.join(outside, 'dir'));
    write(outside, 'dir/also.yaml', tool('also'));
    const inside = write(project, '.ai/shared/real.yaml', tool('linked'));
    write(project, '.ai/tools/plain.yaml', tool('plain'));
    symlinkSync(secret, path.join(project, '.ai/tools/evil.yaml'));
    symlinkSync(path.join(outside, 'dir'), path.join(project, '.ai/tools/outside-dir'));
    symlinkSync(inside, path.join(project, '.ai/tools/linked.yaml'));
    symlinkSync(path.join(project, '.ai/tools'), path.join(project, '.ai/tools/loop'));

    const registry = await loadRegistry({ projectDir: project, userDir: tempDir() });
    expect([...registry.tools.keys()].sort()).toEqual(['linked', 'plain']);
    const messages = registry.errors.map((e) => e.message).sort();
    expect(messages).toHaveLength(2);
    expect(messages[0]).toBe(`.ai/tools/evil.yaml: is a symlink to ${secret}, outside the .ai folder; it was skipped — copy the file into .ai instead`);
    expect(messages[1]).toContain('.ai/tools/outside-dir: is a symlink to');
  });

  it('stops with TOOL_CANCELLED when the signal has fired', async () => {
    const project = tempDir();
    write(project, '.ai/tools/a.yaml', tool('a'));
    const controller = new AbortController();
    controller.abort();
    const error = await loadRegistry({ projectDir: project, userDir: tempDir(), signal: controller.signal }).catch((e: unknown) => e);
    expect(isKiwiError(error, 'TOOL_CANCELLED')).toBe(true);
  });
});

describe('loadRegistry with pipelines', () => {
  const directive = (name: string) => `# ${name}\n\n\`\`\`xml\n<directive name="${name}" version="1.0.0">\n  <metadata><description>${name}</description><permissions></permissions></metadata>\n</directive>\n\`\`\`\n`;
  const pipeline = (name: string, stageDirective = 'review') => `name: ${name}\nversion: "1.0.0"\ndescription: ${name}\nstages:\n  - { name: s, directive: ${stageDirective} }\n`;

  it('checks them against the directives of both tiers; a name twice in a tier loads neither, and the project tier shadows the user tier', async () => {
    const [project, user] = [tempDir(), tempDir()];
    write(user, '.ai/directives/review.md', directive('review'));
    write(project, '.ai/pipelines/good.yaml', pipeline('good'));
    write(project, '.ai/pipelines/nested/bad.yml', pipeline('bad', 'deploy'));
    write(project, '.ai/pipelines/twice-a.yaml', pipeline('twice'));
    write(project, '.ai/pipelines/twice-b.yaml', pipeline('twice'));
    write(user, '.ai/pipelines/good.yaml', pipeline('good'));
    const registry = await loadRegistry({ projectDir: project, userDir: user });
    expect([...(registry.pipelines?.keys() ?? [])]).toEqual(['good']);
    expect(registry.pipelines?.get('good')?.source).toEqual({ path: path.join(project, '.ai/pipelines/good.yaml'), tier: 'project' });
    expect(registry.shadowed).toEqual([{ id: 'good', kind: 'pipeline', winner: { path: path.join(project, '.ai/pipelines/good.yaml'), tier: 'project' }, loser: { path: path.join(user, '.ai/pipelines/good.yaml'), tier: 'user' } }]);
    expect(registry.errors.map((e) => [e.kind, e.message])).toEqual([
      ['pipeline', '.ai/pipelines/nested/bad.yml:5:27: stages[0].directive: no directive "deploy" loaded; the directives are review'],
      ['pipeline', '.ai/pipelines/twice-a.yaml: name: pipeline "twice" is also defined in .ai/pipelines/twice-b.yaml; names must be unique within the project tier — rename or delete one (none of them is loaded until then)'],
      ['pipeline', '.ai/pipelines/twice-b.yaml: name: pipeline "twice" is also defined in .ai/pipelines/twice-a.yaml; names must be unique within the project tier — rename or delete one (none of them is loaded until then)'],
    ]);
  });
});
