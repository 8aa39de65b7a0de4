import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openResolverRuntime } from '../../src/resolver/resolver-runtime.js';
import { makeTool } from '../helpers/make-tool.js';

/**
 * Gateways started together on one project each open its search index: opening may rebuild the
 * tables and the first sync fills them, so they take turns (two at once used to leave one dead,
 * LanceDB: "entered unreachable code"). Real LanceDB tables on disk and the real encoder.
 */
const TOOLS = [
  makeTool({ id: 'read_file', description: 'Read a text file from the project', parameters: [{ name: 'path', type: 'string', required: true, format: 'path' }] }),
  makeTool({ id: 'git_status', description: 'Show which files changed in the git working tree' }),
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-index-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('building the search index, from several openers at once', () => {
  it('lets one build while the other waits, then the other finds it built', async () => {
    const said: string[] = [];
    const open = (who: string) => openResolverRuntime({ tools: TOOLS, indexDir: dir, model: null, log: (line) => said.push(`${who}: ${line}`) });
    const first = await open('first');
    const opening = open('second');
    await expect.poll(() => said.some((l) => l.startsWith(`second: waiting for process ${process.pid}, which is building the search index in ${dir}`))).toBe(true);
    expect(await first.sync()).toMatchObject({ added: 2, rebuilt: true });
    const second = await opening;
    expect(await second.sync()).toMatchObject({ added: 0, unchanged: 2, rebuilt: false });
    const found = await second.resolver.resolve('read the file README.md');
    expect(found).toMatchObject({ call: { tool: 'read_file' } });
    await Promise.all([first.close(), second.close()]);
  });

  it('takes over a lock whose process is gone, and stops waiting when told to', async () => {
    writeFileSync(path.join(dir, '.build.lock'), '2147483646'); // no such process
    const runtime = await openResolverRuntime({ tools: TOOLS, indexDir: dir, model: null });
    const stop = new AbortController();
    let told = false;
    const waiting = openResolverRuntime({ tools: TOOLS, indexDir: dir, model: null, signal: stop.signal, log: () => (told = true) });
    await expect.poll(() => told).toBe(true);
    stop.abort(new Error('the gateway is stopping'));
    await expect(waiting).rejects.toThrow('the gateway is stopping');
    expect(await runtime.sync()).toMatchObject({ added: 2 });
    await runtime.close();
  });
});
