import { describe, expect, it } from 'vitest';
import { exampleCall } from '../../src/resolver/example-call.js';
import { makeTool } from '../helpers/make-tool.js';

const READ = makeTool({
  id: 'read_file',
  type: 'script',
  description: 'Read a text file',
  parameters: [
    { name: 'path', type: 'string', required: true },
    { name: 'max_bytes', type: 'integer', required: false, default: 65536 },
    { name: 'encoding', type: 'string', required: false },
  ],
});

describe('exampleCall', () => {
  it('writes `id {}` for a tool without parameters, never a parameter it does not have', () => {
    expect(exampleCall(makeTool({ id: 'git_status', type: 'script', description: 'Show the status' }))).toBe('git_status {}');
    const text = { intent: 'git status for "value"' };
    expect(exampleCall(makeTool({ id: 'git_status', type: 'script', description: 'Show the status' }), { values: { name: 'value' }, text })).toBe('git_status {}');
  });

  it('keeps the values the text holds, shows a placeholder for every other required parameter, and leaves unread optional ones out', () => {
    expect(exampleCall(READ)).toBe('read_file {"path": "<path>"}');
    expect(exampleCall(READ, { values: { path: 'notes.txt', max_bytes: 200 }, text: { intent: 'read "notes.txt", the first 200 bytes' } })).toBe('read_file {"path": "notes.txt", "max_bytes": 200}');
    // A value the words do not hold (misread, or made up) is not offered: the placeholder stands in.
    expect(exampleCall(READ, { values: { path: 'README.md', max_bytes: 4096 }, text: { intent: 'read the notes, the first 200 bytes' } })).toBe('read_file {"path": "<path>"}');
    expect(exampleCall(READ, { values: { path: 'notes.txt' }, text: { intent: 'read it', context: 'we were looking at notes.txt' } })).toBe('read_file {"path": "notes.txt"}');
  });
});
