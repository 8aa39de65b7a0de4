import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_REGISTRY_DIR, openRegistryTierDatabase, type OpenedRegistryTier } from '../../src/kernel/registry-tier-database.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openPostgresDb } from '../../src/store/sql/postgres-db.js';
import { openPgliteDb } from '../../src/store/sql/pglite-db.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import { KERNEL_MIGRATIONS } from '../../src/kernel/kernel-migrations.js';
import { sqlRegistryTier } from '../../src/store/registry-tier/sql-registry-tier.js';
import { tierFile, type NewVersion } from '../../src/store/registry-tier/tier-version.js';
import { registryTierBackends, type TierPlace } from '../helpers/registry-tier-backends.js';

/** Bytes a text round trip could change: a BOM, CRLF, NUL, bytes that are not UTF-8, a lone CR; and plain UTF-8 (kept as text). */
const AWKWARD = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a\r\nb\rc\n'), Buffer.from([0, 0xff, 0xfe, 0x80])]);
const UTF8 = Buffer.from('\ufeffcafé — ünïcode\r\n');
const PLAIN = Buffer.from('línea\r\nzwei\tdrei \u{1F95D}\n');

const version = (v: string, script = `console.log("${v}")\n`, over: Partial<NewVersion> = {}): NewVersion => ({
  id: 'greet',
  type: 'tool',
  version: v,
  folder: 'tools/demo',
  manifest: 'greet.yaml',
  signature: null,
  files: [tierFile('greet.yaml', Buffer.from(`tool_id: greet\nversion: "${v}"\n`)), tierFile('lib/greet.mjs', Buffer.from(script)), tierFile('data.bin', AWKWARD), tierFile('notes.txt', UTF8), tierFile('plain.txt', PLAIN)],
  ...over,
});

for (const [name, open] of registryTierBackends()) {
  describe(`the registry tier on ${name}`, () => {
    let place: TierPlace;
    let opened: OpenedRegistryTier;
    let closed = false;
    beforeAll(async () => {
      place = await open();
      opened = (await openRegistryTierDatabase({ env: place.env, userDir: place.userDir, create: false }))!;
    });
    afterAll(async () => {
      if (!closed) await opened?.close();
      await place?.stop();
    });

    it('keeps every version byte for byte, the highest as latest, whatever order they came in', async () => {
      const { tier } = opened;
      expect(await tier.push(version('1.0.0'), 'ana@test')).toEqual({ status: 'added', latest: '1.0.0' });
      expect(await tier.push(version('1.10.0'), 'ana@test')).toEqual({ status: 'added', latest: '1.10.0' });
      expect(await tier.push(version('1.2.0'), 'bo@test')).toEqual({ status: 'added', latest: '1.10.0' });
      const got = await tier.get('greet', '1.0.0');
      const byPath = (files: Array<{ path: string; bytes: Buffer }>) => Object.fromEntries(files.map((f) => [f.path, f.bytes.toString('hex')]));
      expect(byPath(got!.files)).toEqual(byPath(version('1.0.0').files));
      expect((await tier.get('greet'))?.version).toBe('1.10.0');
      expect(await tier.get('greet', '3.0.0')).toBeUndefined();
      expect(await tier.get('nobody')).toBeUndefined();
      const all = await tier.versions('greet');
      expect(all.map((v) => [v.version, v.pushedBy])).toEqual([['1.10.0', 'ana@test'], ['1.2.0', 'bo@test'], ['1.0.0', 'ana@test']]);
      expect(all[0]?.files).toContainEqual({ path: 'data.bin', size: AWKWARD.length, digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(await tier.list()).toEqual([{ id: 'greet', type: 'tool', latest: '1.10.0', versions: 3, updatedAt: expect.any(String) }]);
    });

    it('is idempotent for an unchanged version and refuses the same version with other content', async () => {
      const { tier } = opened;
      expect(await tier.push(version('1.0.0'), 'ana@test')).toEqual({ status: 'unchanged', latest: '1.10.0' });
      const changed = await tier.push(version('1.0.0', 'console.log("tampered")\n'), 'eve@test');
      expect(changed).toEqual({ status: 'conflict', message: expect.stringMatching(/greet@1\.0\.0 is already in the registry with different content, and versions never change; raise its version \(e\.g\. 1\.0\.1\)/) });
      expect((await tier.get('greet', '1.0.0'))?.files.find((f) => f.path === 'lib/greet.mjs')?.bytes.toString()).toBe('console.log("1.0.0")\n');
      const asKnowledge = await tier.push(version('5.0.0', 'x', { type: 'knowledge', folder: 'knowledge' }), 'ana@test');
      expect(asKnowledge).toEqual({ status: 'conflict', message: expect.stringMatching(/"greet" is a tool in the registry, not a knowledge; ids are unique/) });
      await expect(tier.push(version('1.3.0', 'x', { folder: 'tools/../../etc' }), 'eve@test')).rejects.toThrow(/folder "tools\/\.\.\/\.\.\/etc": the path has an empty/);
    });

    it('gives the versions a project pins, and nothing it does not pin', async () => {
      const { tier } = opened;
      await tier.push({ ...version('0.1.0'), id: 'other', files: [tierFile('greet.yaml', Buffer.from('tool_id: other\n'))] }, 'ana@test');
      const pick = async (pins: Record<string, string>) => (await tier.pinned(pins)).map((v) => `${v.id}@${v.version}`);
      expect(await pick({})).toEqual([]);
      expect(await pick({ greet: '1.2.0' })).toEqual(['greet@1.2.0']);
      expect(await pick({ other: '0.1.0', greet: '1.10.0' })).toEqual(['greet@1.10.0', 'other@0.1.0']);
      // A pin of a version that is not there leaves the item out; the loader says so (project-registry.ts).
      expect(await pick({ greet: '9.9.9', absent: '1.0.0', other: '0.1.0' })).toEqual(['other@0.1.0']);
    });

    it('never lets a version change underneath, and refuses rows changed behind its back', async () => {
      closed = true;
      await opened.close();
      const db = await rawDb(place);
      try {
        const encodings = await db.query("select path, encoding from tool_version_files where tool_id = 'greet' and version = '1.0.0' order by path");
        // Readable text stays text in the database; the rest is base64.
        expect(encodings).toEqual([
          { path: 'data.bin', encoding: 'base64' },
          { path: 'greet.yaml', encoding: 'utf8' },
          { path: 'lib/greet.mjs', encoding: 'utf8' },
          { path: 'notes.txt', encoding: 'base64' },
          { path: 'plain.txt', encoding: 'utf8' },
        ]);
        await expect(db.query("update tool_version_files set content = 'x' where tool_id = 'greet' and version = '1.2.0' and path = 'lib/greet.mjs'")).rejects.toThrow(/registry versions are immutable/);
        await expect(db.query("delete from tool_versions where tool_id = 'greet' and version = '1.2.0'")).rejects.toThrow(/registry versions are immutable/);
        await db.exec('alter table tool_version_files disable trigger tool_version_files_immutable');
        await db.query("update tool_version_files set content = 'console.log(\"evil\")' where tool_id = 'greet' and version = '1.2.0' and path = 'lib/greet.mjs'");
        await db.exec('alter table tool_version_files enable trigger tool_version_files_immutable');
        await expect(sqlRegistryTier(db, 'raw').get('greet', '1.2.0')).rejects.toThrow(/raw: greet@1\.2\.0 is damaged \(file lib\/greet\.mjs does not match its digest\)/);
      } finally {
        await db.close();
      }
    });
  });
}

/** A second connection to the tier's database, for what kiwi never does. PGlite admits one process: the tier's is closed first. */
async function rawDb(place: TierPlace): Promise<SqlDb> {
  const url = place.env['DATABASE_URL'];
  const db = url === undefined ? await openPgliteDb(path.join(place.userDir, EMBEDDED_REGISTRY_DIR)) : await openPostgresDb(url);
  await migrate(db, KERNEL_MIGRATIONS);
  return db;
}
