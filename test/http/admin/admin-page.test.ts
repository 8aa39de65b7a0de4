import { describe, expect, it } from 'vitest';
import { pageOf, toolsById } from '../../../src/http/admin/admin-page.js';
import { makeTool, toolMap } from '../../helpers/make-tool.js';

describe('pages of the tool catalog', () => {
  const tools = toolsById(toolMap(...['git_log', 'read_file', 'git_diff', 'save_note', 'word_count'].map((id) => makeTool({ id }))));

  it('goes through the catalog in order of id, the last page saying so', () => {
    expect(tools.map((t) => t.id)).toEqual(['git_diff', 'git_log', 'read_file', 'save_note', 'word_count']);
    const first = pageOf(tools, { limit: 2 });
    expect([first.items.map((t) => t.id), first.nextCursor]).toEqual([['git_diff', 'git_log'], 'git_log']);
    const last = pageOf(tools, { limit: 3, cursor: 'git_log' });
    expect([last.items.map((t) => t.id), last.nextCursor]).toEqual([['read_file', 'save_note', 'word_count'], null]);
  });

  it('goes on after a cursor whose tool is gone, and past the end is an empty last page', () => {
    expect(pageOf(tools, { limit: 1, cursor: 'list_directory' }).items.map((t) => t.id)).toEqual(['read_file']);
    expect(pageOf(tools, { limit: 5, cursor: 'zzz' })).toEqual({ items: [], nextCursor: null });
  });
});
