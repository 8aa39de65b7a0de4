import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSelection, readStamp, renewStamp, writeSelection } from '../../src/store/registry-tier/tier-selection.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-selection-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the embedded tier's saved selection", () => {
  const cache = path.join(dir, '.ai', 'tools', '.registry');
  const manifest = path.join(cache, 'greet@1.0.0-abc', 'tools', 'demo', 'greet.yaml');
  const issue = { kind: 'tool' as const, file: 'registry.yaml', message: 'pins.x: x@1.0.0 is not loaded' };
  mkdirSync(path.dirname(manifest), { recursive: true });
  writeFileSync(manifest, 'tool_id: greet\n');

  it('is read back, manifests from disk, only for the same stamp and pins', async () => {
    const stampFile = path.join(dir, 'registry.stamp');
    expect(await readStamp(stampFile)).toBeUndefined();
    await renewStamp(stampFile);
    const stamp = (await readStamp(stampFile))!;
    expect(stamp).toMatch(/^[0-9a-f]{32}$/);
    await writeSelection(cache, stamp, { greet: '1.0.0' }, { found: [{ kind: 'tool', label: { file: manifest, display: 'registry:greet@1.0.0/tools/demo/greet.yaml' }, text: 'ignored' }], issues: [issue] });
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toEqual({
      found: [{ kind: 'tool', label: { file: manifest, display: 'registry:greet@1.0.0/tools/demo/greet.yaml' }, text: 'tool_id: greet\n' }],
      issues: [issue],
    });
    await renewStamp(stampFile);
    expect(await readSelection(cache, (await readStamp(stampFile))!, { greet: '1.0.0' })).toBeUndefined();
    expect(await readSelection(cache, stamp, {})).toBeUndefined();
    expect(await readSelection(cache, stamp, { greet: '1.1.0' })).toBeUndefined();
  });

  it('is not used when it names a file outside its folder, a file that is gone, or is not what it writes', async () => {
    const file = path.join(cache, 'selection.json');
    const good = readFileSync(file, 'utf8');
    const stamp = (JSON.parse(good) as { stamp: string }).stamp;
    writeFileSync(file, good.replace(JSON.stringify(manifest), JSON.stringify(path.join(dir, 'elsewhere.yaml'))));
    writeFileSync(path.join(dir, 'elsewhere.yaml'), 'tool_id: evil\n');
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, good.replace(JSON.stringify(manifest), JSON.stringify(path.join(cache, 'gone.yaml'))));
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, '{"stamp": 1}');
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, 'not json');
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toBeUndefined();
    writeFileSync(file, good);
    expect(await readSelection(cache, stamp, { greet: '1.0.0' })).toBeDefined();
  });
});
