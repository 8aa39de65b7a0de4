import { describe, expect, it } from 'vitest';
import { createToolMenu, menuText } from '../../src/loop/tool-menu.js';
import type { Retrieval } from '../../src/resolver/types.js';
import { makeTool } from '../helpers/make-tool.js';

const TOOLS = new Map(['read_file', 'write_file', 'git_log', 'git_push'].map((id) => [id, makeTool({ id, type: 'api', description: `${id.replace('_', ' ')} in the project` })]));

function fakeRetrieve(order: string[]) {
  const asked: string[] = [];
  const retrieve = async (text: string): Promise<Retrieval> => {
    asked.push(text);
    return { intent: text, candidates: order.map((tool, i) => ({ tool, score: 1 - i / 10 })), confidence: 0.9, timings: { embedMs: 0, searchMs: 0, totalMs: 0 } };
  };
  return { retrieve, asked };
}

describe('tool menu', () => {
  it('lists the top tools the caller may run, by id with one line, and searches a repeated message once', async () => {
    const { retrieve, asked } = fakeRetrieve(['git_push', 'git_log', 'read_file', 'unknown_tool', 'write_file']);
    const menu = createToolMenu({ retrieve, tools: TOOLS }, { size: 2 });
    let checks = 0;
    const caller = { scope: 'a', allowed: (id: string) => (checks++, id !== 'git_push') };
    expect(await menu('show the recent commits', caller)).toEqual(['git_log — git log in the project', 'read_file — read file in the project']);
    const checked = checks;
    expect(await menu('  show the recent commits ', caller)).toHaveLength(2);
    expect(checks).toBe(checked);
    // Another caller's rights give another menu from the same search.
    expect(await menu('show the recent commits', { scope: 'b', allowed: () => true })).toEqual(['git_push — git push in the project', 'git_log — git log in the project']);
    expect(asked).toEqual(['show the recent commits']);
    expect(await menu('anything', { scope: 'c', allowed: () => false })).toEqual([]);
  });

  it('lists a catalog no larger than the menu whole, without a search, for any message', async () => {
    const { retrieve, asked } = fakeRetrieve(['git_push']);
    const menu = createToolMenu({ retrieve, tools: TOOLS }, { size: 4 });
    const caller = { scope: 'a', allowed: (id: string) => id !== 'git_push' };
    const all = ['read_file — read file in the project', 'write_file — write file in the project', 'git_log — git log in the project'];
    expect(await menu('show the recent commits', caller)).toEqual(all);
    expect(await menu('write a note', caller)).toEqual(all);
    expect(await menu('write a note', { scope: 'b', allowed: () => false })).toEqual([]);
    expect(asked).toEqual([]);
  });

  it('is off at size 0 and for an empty message, and renders as an instruction block', async () => {
    const { retrieve, asked } = fakeRetrieve(['read_file']);
    const anyone = { scope: 'x', allowed: () => true };
    expect(await createToolMenu({ retrieve, tools: TOOLS }, { size: 0 })('read it', anyone)).toEqual([]);
    expect(await createToolMenu({ retrieve, tools: TOOLS })('   ', anyone)).toEqual([]);
    expect(asked).toEqual([]);
    expect(menuText([], 'TOOL')).toBe('');
    expect(menuText(['read_file — read a file'], 'TOOL')).toBe('Tools likely useful for this request (call one exactly to run it: [TOOL: id {…its arguments as JSON…}]):\n- read_file — read a file');
  });
});
