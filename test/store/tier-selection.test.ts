import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registryTierKey } from '../../src/kernel/registry-tier-database.js';
import { readSelection, writeSelection } from '../../src/store/registry-tier/tier-selection.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-selection-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a project's saved selection of pinned versions", () => {
  const cache = path.join(dir, '.ai', 'tools', '.registry');
  const manifest = path.join(cache, 'greet@1.0.0-abc', 'tools', 'demo', 'greet.yaml');
  const display = 'registry:greet@1.0.0/tools/demo/greet.yaml';
  const embedded = registryTierKey({ env: {}, userDir: '/home/ana' });
  mkdirSync(path.dirname(manifest), { recursive: true });
  writeFileSync(manifest, 'tool_id: greet\n');

  it('is read back, manifests from disk, only for the same tier and pins', async () => {
    await writeSelection(cache, embedded, { greet: '1.0.0' }, [{ kind: 'tool', label: { file: manifest, display }, text: 'ignored' }]);
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toEqual([{ kind: 'tool', label: { file: manifest, display }, text: 'tool_id: greet\n' }]);
    expect(await readSelection(cache, embedded, {})).toBeUndefined();
    expect(await readSelection(cache, embedded, { greet: '1.1.0' })).toBeUndefined();
    expect(await readSelection(cache, registryTierKey({ env: {}, userDir: '/home/bob' }), { greet: '1.0.0' })).toBeUndefined();
    expect(await readSelection(cache, registryTierKey({ env: { DATABASE_URL: 'postgres://kiwi:secret@db/kiwi' }, userDir: '/home/ana' }), { greet: '1.0.0' })).toBeUndefined();
  });

  it('never writes the DATABASE_URL (it may hold a password) into the project', async () => {
    const server = registryTierKey({ env: { DATABASE_URL: 'postgres://kiwi:secret@db/kiwi' }, userDir: '/home/ana' });
    await writeSelection(cache, server, { greet: '1.0.0' }, [{ kind: 'tool', label: { file: manifest, display }, text: 'ignored' }]);
    expect(readFileSync(path.join(cache, 'selection.json'), 'utf8')).not.toMatch(/secret|postgres/);
    expect(await readSelection(cache, server, { greet: '1.0.0' })).toHaveLength(1);
  });

  it('is not used when it names a file outside its folder, a file that is gone, or is not what it writes', async () => {
    await writeSelection(cache, embedded, { greet: '1.0.0' }, [{ kind: 'tool', label: { file: manifest, display }, text: 'ignored' }]);
    const file = path.join(cache, 'selection.json');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace(JSON.stringify(manifest), JSON.stringify(path.join(dir, 'elsewhere.yaml'))));
    writeFileSync(path.join(dir, 'elsewhere.yaml'), 'tool_id: evil\n');
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, good.replace(JSON.stringify(manifest), JSON.stringify(path.join(cache, 'gone.yaml'))));
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, good.replace('"format":3', '"format":2'));
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, '{"tier": 1}');
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, 'not json');
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, good);
    expect(await readSelection(cache, embedded, { greet: '1.0.0' })).toBeDefined();
  });
});
