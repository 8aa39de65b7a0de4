import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/app/run-cli.js';
import { openRegistryTierDatabase } from '../../../src/kernel/registry-tier-database.js';
import { openProject } from '../../../src/project/open-project.js';
import { registryTierBackends, type TierPlace } from '../../helpers/registry-tier-backends.js';
import { createTempProject, type TempProject } from '../../helpers/temp-project.js';

/**
 * `kiwi registry` end to end (push, pin and run on each database; the rest on one), and the tier
 * as the registry loads it: a tool pushed from one project runs through another project's tool
 * proxy without being in its `.ai/`, at the version the project pins (and not at all unless it
 * pins one), unless a file of the project shadows it.
 */
const manifest = (version: string): string => `tool_id: greet
tool_type: script
executor: subprocess
version: "${version}"
description: "Greets, saying which version it is"
mutates_state: false
config: { command: node, script: greet.mjs, args: ["{script}"] }
`;
// Bytes a text round trip could change: CRLF and no final newline.
const script = (v: string): string => `// greet ${v}\r\nprocess.stdout.write("greet ${v}")`;
const TIPS = `---\nid: tips\ntitle: Tips\nentry_type: learning\nversion: "1.0.0"\n---\nKeep tools small.\n`;
const POLICY = 'version: 1\ntools: [greet]\ncommands:\n  - { executable: node }\n';

const backends = registryTierBackends();
for (const [name, open] of backends) {
  // What the database does not change (checks before a push, pulls, shadowing, errors) runs once,
  // on the last backend (a Postgres server where one is installed): an embedded tier's every
  // command opens PGlite in the process (~0.5 s of CPU). Every backend runs the chain a pin needs.
  const once = it.skipIf(name !== backends.at(-1)?.[0]);
  describe(`kiwi registry on ${name}`, () => {
    let place: TierPlace;
    let author: TempProject;
    let consumer: TempProject;
    let puller: TempProject;
    const v1 = { yaml: manifest('1.0.0'), mjs: script('v1') };

    const kiwi = async (cwd: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(argv, { env: { ...place.env, KIWI_USER_DIR: place.userDir }, cwd, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
      return { code, out: out.join('\n'), err: err.join('\n') };
    };
    const greet = async (): Promise<{ tier: string | undefined; version: string | undefined; output: string; errors: string[]; shadowed: string[] }> => {
      const project = await openProject({ projectDir: consumer.root, userDir: place.userDir, env: place.env, session: 'registry-tier' });
      try {
        const tool = project.registry.tools.get('greet');
        const outcome = tool === undefined ? undefined : await project.proxy.call({ target: { tool: 'greet', args: {} }, caller: { session: 'registry-tier', client: 'registry-tier', source: 'cli' } });
        return {
          tier: tool?.source.tier,
          version: tool?.version,
          output: JSON.stringify(outcome),
          errors: project.registry.errors.map((e) => e.message),
          shadowed: project.registry.shadowed.map((s) => `${s.id}: ${s.winner.tier} over ${s.loser.tier}`),
        };
      } finally {
        await project.close();
      }
    };

    beforeAll(async () => {
      place = await open();
      [author, consumer, puller] = [createTempProject(), createTempProject(), createTempProject()];
      author.write('.ai/tools/demo/greet.yaml', v1.yaml);
      author.write('.ai/tools/demo/greet.mjs', v1.mjs);
      author.write('.ai/knowledge/notes/tips.md', TIPS);
      consumer.write('.ai/config/policy.yaml', POLICY);
    });
    afterAll(async () => {
      for (const p of [author, consumer, puller]) p?.remove();
      await place?.stop();
    });

    it('pushes the named items with progress, keeps a signature, and is idempotent for unchanged versions', async () => {
      expect((await kiwi(author.root, 'sign', '.ai/knowledge/notes/tips.md')).code).toBe(0);
      const first = await kiwi(author.root, 'registry', 'push', '.ai/tools/demo', '.ai/knowledge');
      expect(first).toMatchObject({ code: 0, out: expect.stringMatching(/: 2 added, 0 unchanged, 0 refused/) });
      expect(first.err).toMatch(/\[1\/2\] tool greet@1\.0\.0: added\n\[2\/2\] knowledge tips@1\.0\.0: added/);
      expect((await kiwi(author.root, 'registry', 'push', '.ai/tools/demo', '.ai/knowledge')).out).toMatch(/0 added, 2 unchanged/);
      expect((await kiwi(author.root, 'registry', 'show', 'tips')).out).toMatch(/^tips@1\.0\.0 {2}knowledge {2}pushed .* signed [0-9a-f]{16}$/m);
    });

    once('refuses to push a tool whose script is missing or outside its folder, and pushes nothing of it', async () => {
      const bad = (id: string, script: string): string => manifest('1.0.0').replace('tool_id: greet', `tool_id: ${id}`).replace('script: greet.mjs', `script: ${script}`);
      author.write('.ai/tools/bad/escapes.yaml', bad('escapes', '../demo/greet.mjs'));
      author.write('.ai/tools/bad/missing.yaml', bad('missing', 'gone.mjs'));
      try {
        const refused = await kiwi(author.root, 'registry', 'push', '.ai/tools/bad');
        expect(refused.code).toBe(1);
        expect(refused.err).toMatch(/tool escapes@1\.0\.0: invalid — its file \.\.\/demo\/greet\.mjs leads outside the item's folder; keep scripts beside their manifest/);
        expect(refused.err).toMatch(/tool missing@1\.0\.0: invalid — its file gone\.mjs does not exist next to the manifest/);
        expect(refused.out).toMatch(/0 added, 0 unchanged, 0 refused \(version exists with other content\), 2 invalid/);
        expect((await kiwi(author.root, 'registry', 'show', 'escapes')).code).toBe(1);
      } finally {
        rmSync(path.join(author.root, '.ai', 'tools', 'bad'), { recursive: true });
      }
    });

    it('refuses the same version with other content, and keeps every version pushed', async () => {
      author.write('.ai/tools/demo/greet.mjs', script('v1-edited'));
      const refused = await kiwi(author.root, 'registry', 'push', '.ai/tools/demo');
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/tool greet@1\.0\.0: conflict — tool greet@1\.0\.0 is already in the registry with different content, and versions never change; raise its version \(e\.g\. 1\.0\.1\)/);
      author.write('.ai/tools/demo/greet.yaml', manifest('1.1.0'));
      author.write('.ai/tools/demo/greet.mjs', script('v2'));
      expect((await kiwi(author.root, 'registry', 'push', '.ai/tools/demo')).out).toMatch(/1 added/);
      expect((await kiwi(author.root, 'registry', 'list')).out).toMatch(/^greet {2}tool {2}latest 1\.1\.0 {2}\(2 versions, updated /m);
      const shown = (await kiwi(author.root, 'registry', 'show', 'greet')).out;
      expect(shown).toMatch(/^greet@1\.1\.0 .*\n {2}\.ai\/tools\/demo\/greet\.mjs {2}\d+ bytes\n {2}\.ai\/tools\/demo\/greet\.yaml {2}\d+ bytes {2}\(manifest\)\ngreet@1\.0\.0 /);
    });

    it('loads nothing of the tier into a project that pins nothing, without opening the database', async () => {
      const held = await openRegistryTierDatabase({ env: place.env, userDir: place.userDir, create: false });
      try {
        // Pushed by another project: not in this one's catalog, and the database another process holds is not asked.
        expect(await greet()).toMatchObject({ tier: undefined, errors: [] });
        expect((await kiwi(consumer.root, 'tools', 'list')).out).not.toMatch(/greet|tips/);
      } finally {
        await held?.close();
      }
    });

    it('pins a version with `kiwi registry pin`, runs it, and unpins it', async () => {
      consumer.write('.ai/config/registry.yaml', '# what this project runs from the registry tier\npins: {}\n');
      expect((await kiwi(consumer.root, 'registry', 'pin', 'greet')).out).toBe('pinned tool greet@1.1.0 in .ai/config/registry.yaml; it loads from the next `kiwi run` or gateway start');
      expect(readFileSync(path.join(consumer.root, '.ai', 'config', 'registry.yaml'), 'utf8')).toBe('# what this project runs from the registry tier\npins: { greet: "1.1.0" }\n');
      const latest = await greet();
      expect(latest).toMatchObject({ tier: 'registry', version: '1.1.0', errors: [] });
      expect(latest.output).toContain('"status":"ok"');
      expect(latest.output).toContain('greet v2');
      // The search index embeds it like a file tier's tool, so an intent in words finds it.
      expect((await kiwi(consumer.root, 'index')).out).toMatch(/^indexed 1 tools .*: 1 added/);
      const resolved = await kiwi(consumer.root, 'resolve', 'greets, saying which version it is', '--json');
      expect(JSON.parse(resolved.out).candidates[0]).toMatchObject({ tool: 'greet', textScore: 1 });
      expect((await kiwi(consumer.root, 'registry', 'pin', 'greet@1.0.0')).out).toMatch(/^pinned tool greet@1\.0\.0 in \.ai\/config\/registry\.yaml \(was 1\.1\.0\)/);
      const pinned = await greet();
      expect(pinned).toMatchObject({ tier: 'registry', version: '1.0.0' });
      expect(pinned.output).toContain('greet v1');
      expect((await kiwi(consumer.root, 'registry', 'unpin', 'greet')).out).toMatch(/^unpinned greet \(was 1\.0\.0\)/);
      expect((await greet()).tier).toBeUndefined();
      expect(await kiwi(consumer.root, 'registry', 'unpin', 'greet')).toMatchObject({ code: 1, err: expect.stringMatching(/pins no "greet"; nothing to unpin/) });
      expect(await kiwi(consumer.root, 'registry', 'pin', 'nobody')).toMatchObject({ code: 1, err: expect.stringMatching(/has no nobody; `kiwi registry list` says what it has/) });
      expect(await kiwi(consumer.root, 'registry', 'pin', 'greet@9.0.0')).toMatchObject({ code: 1, err: expect.stringMatching(/has no greet@9\.0\.0; `kiwi registry show greet`/) });
    });

    once('says what is wrong with a pin it cannot load or read', async () => {
      consumer.write('.ai/config/registry.yaml', 'pins:\n  greet: "7.0.0"\n');
      const missing = await greet();
      expect(missing.tier).toBeUndefined();
      expect(missing.errors.join('\n')).toMatch(/registry\.yaml: pins\.greet: greet@7\.0\.0 is not loaded: .* has no such version \(`kiwi registry show greet` lists them\)/);
      consumer.write('.ai/config/registry.yaml', 'pins:\n  greet: 1.2\n');
      await expect(greet()).rejects.toThrow(/registry\.yaml:2:\d+: pins\.greet: YAML reads 1\.2 as a number; quote the version \("1\.2"\)/);
      consumer.write('.ai/config/registry.yaml', 'pin:\n  greet: "1.0.0"\n');
      await expect(greet()).rejects.toThrow(/unknown field pin; the file has one section, pins/);
      rmSync(path.join(consumer.root, '.ai', 'config', 'registry.yaml'));
    });

    once('lets a file of the project shadow the tier item', async () => {
      consumer.write('.ai/config/registry.yaml', 'pins:\n  greet: "1.1.0"\n');
      consumer.write('.ai/tools/mine/greet.yaml', manifest('0.0.1'));
      consumer.write('.ai/tools/mine/greet.mjs', script('local'));
      try {
        const local = await greet();
        expect(local).toMatchObject({ tier: 'project', version: '0.0.1', shadowed: ['greet: project over registry'] });
        expect(local.output).toContain('greet local');
      } finally {
        rmSync(path.join(consumer.root, '.ai', 'tools', 'mine'), { recursive: true });
      }
    });

    once('loads the folders when the tier cannot be read, and says why', async () => {
      const project = await openProject({ projectDir: consumer.root, userDir: place.userDir, env: { ...place.env, DATABASE_URL: 'postgres://kiwi:secret@127.0.0.1:1/nowhere' } });
      try {
        expect(project.registry.tools.has('greet')).toBe(false);
        expect(project.registry.tools.has('subprocess')).toBe(true);
        expect(project.registry.errors.map((e) => e.message)).toEqual([
          expect.stringMatching(/^registry tier: cannot be opened \(cannot connect to the Postgres of DATABASE_URL \(postgres:\/\/kiwi:\*+@127\.0\.0\.1:1\/nowhere\).*\); the versions \.ai\/config\/registry\.yaml pins are not loaded$/),
        ]);
      } finally {
        await project.close();
        rmSync(path.join(consumer.root, '.ai', 'config', 'registry.yaml'));
      }
    });

    once('pulls a pinned version or the latest byte for byte, never over a changed file without --force', async () => {
      const file = (p: string): string => readFileSync(path.join(puller.root, '.ai', p), 'utf8');
      expect((await kiwi(puller.root, 'registry', 'pull', 'greet@1.0.0')).out).toBe('pulled tool greet@1.0.0 into .ai/tools/demo: 2 written, 0 unchanged');
      expect([file('tools/demo/greet.yaml'), file('tools/demo/greet.mjs')]).toEqual([v1.yaml, v1.mjs]);
      expect((await kiwi(puller.root, 'registry', 'pull', 'greet@1.0.0')).out).toMatch(/0 written, 2 unchanged/);
      const refused = await kiwi(puller.root, 'registry', 'pull', 'greet');
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/greet@1\.1\.0 was not pulled: \.ai\/tools\/demo\/greet\.mjs, \.ai\/tools\/demo\/greet\.yaml differ from it .*pull with --force to overwrite/);
      expect(file('tools/demo/greet.mjs')).toBe(v1.mjs);
      expect((await kiwi(puller.root, 'registry', 'pull', 'greet', '--force')).code).toBe(0);
      expect([file('tools/demo/greet.yaml'), file('tools/demo/greet.mjs')]).toEqual([manifest('1.1.0'), script('v2')]);
      expect((await kiwi(puller.root, 'registry', 'pull', 'tips')).code).toBe(0);
      expect(file('knowledge/notes/tips.md')).toBe(readFileSync(path.join(author.root, '.ai', 'knowledge', 'notes', 'tips.md'), 'utf8'));
      expect((await kiwi(puller.root, 'verify', '.ai/knowledge/notes/tips.md')).code).toBe(0);
    });

    once('never writes outside .ai/, and says what is wrong with a bad request', async () => {
      const outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-outside-')));
      try {
        rmSync(path.join(puller.root, '.ai', 'tools', 'demo'), { recursive: true });
        symlinkSync(outside, path.join(puller.root, '.ai', 'tools', 'demo'));
        const escaped = await kiwi(puller.root, 'registry', 'pull', 'greet', '--force');
        expect(escaped).toMatchObject({ code: 1, err: expect.stringMatching(/\.ai\/tools\/demo\/greet\.(yaml|mjs): its folder leads outside \.ai/) });
        rmSync(path.join(puller.root, '.ai', 'tools', 'demo'));
        mkdirSync(path.join(puller.root, '.ai', 'tools', 'demo'));
        symlinkSync(path.join(outside, 'x'), path.join(puller.root, '.ai', 'tools', 'demo', 'greet.mjs'));
        expect((await kiwi(puller.root, 'registry', 'pull', 'greet', '--force')).err).toMatch(/greet\.mjs: is a symlink; a pull writes only plain files/);
        // Every file is checked before the first is written: the manifest beside it was not written either.
        expect(existsSync(path.join(puller.root, '.ai', 'tools', 'demo', 'greet.yaml'))).toBe(false);
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
      expect(await kiwi(puller.root, 'registry', 'pull', '../etc')).toMatchObject({ code: 2, err: expect.stringMatching(/"\.\.\/etc" is not an item id/) });
      expect(await kiwi(puller.root, 'registry', 'pull', 'greet@v1')).toMatchObject({ code: 2, err: expect.stringMatching(/"v1" is not a version; write ID@1\.2\.0/) });
      expect(await kiwi(puller.root, 'registry', 'pull', 'nobody')).toMatchObject({ code: 1, err: expect.stringMatching(/has no nobody; `kiwi registry list` says what it has/) });
      expect(await kiwi(puller.root, 'registry', 'show', 'nobody')).toMatchObject({ code: 1 });
      expect(await kiwi(puller.root, 'registry', 'push', '.ai/nothing-here')).toMatchObject({ code: 1, err: expect.stringMatching(/nothing-here does not exist/) });
      expect(await kiwi(puller.root, 'registry', 'list', 'extra')).toMatchObject({ code: 2 });
      expect(await kiwi(puller.root, 'registry', 'push', '--force')).toMatchObject({ code: 2, err: expect.stringMatching(/--force is for `kiwi registry pull`/) });
    });

    it.skipIf(name !== 'embedded PGlite')('loads pinned versions again without opening the database, and waits for it when it must', async () => {
      consumer.write('.ai/config/registry.yaml', 'pins:\n  greet: "1.1.0"\n');
      await greet(); // reads the database, and saves what it found
      let held = await openRegistryTierDatabase({ env: place.env, userDir: place.userDir, create: false });
      try {
        // A version never changes: the same pins load from disk while another process holds the database.
        const cached = await greet();
        expect(cached).toMatchObject({ tier: 'registry', version: '1.1.0', errors: [] });
        expect(cached.output).toContain('greet v2');
        // Another opener of the database waits for the one that holds it, and is told whom it waits for.
        let told: () => void = () => undefined;
        const waiting = new Promise<void>((resolve) => (told = resolve));
        const second = openRegistryTierDatabase({ env: place.env, userDir: place.userDir, create: false, onWait: () => told() });
        await waiting;
        await held?.close();
        held = await second;
      } finally {
        await held?.close();
      }
      // A push adds a version; the pinned one still runs until the pin changes.
      author.write('.ai/tools/demo/greet.yaml', manifest('1.2.0'));
      author.write('.ai/tools/demo/greet.mjs', script('v3'));
      expect((await kiwi(author.root, 'registry', 'push', '.ai/tools/demo')).out).toMatch(/1 added/);
      expect(await greet()).toMatchObject({ tier: 'registry', version: '1.1.0', errors: [] });
      consumer.write('.ai/config/registry.yaml', 'pins:\n  greet: "1.2.0"\n');
      const pushed = await greet();
      expect(pushed).toMatchObject({ tier: 'registry', version: '1.2.0', errors: [] });
      expect(pushed.output).toContain('greet v3');
      rmSync(path.join(consumer.root, '.ai', 'config', 'registry.yaml'));
    });
  });
}
