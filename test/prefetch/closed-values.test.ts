import { describe, expect, it } from 'vitest';
import { closedValues } from '../../src/prefetch/closed-values.js';
import type { Tool } from '../../src/registry/types.js';

const npm = { parameters: [{ name: 'name', type: 'string', required: true }, { name: 'registry', type: 'string', required: false, default: 'npmjs' }] } as unknown as Tool;
const info = (args: Record<string, unknown>) => ({ tool: 'npm_package_info', arguments: args });

describe('closed values (what a speculative run may take from streamed text)', () => {
  it('refuses a value whose quote is still open: the snapshot may have cut it', () => {
    expect(closedValues('I will get the npm package info of "ev', info({ name: 'ev' }), npm)).toBe(false);
    expect(closedValues('read the file “src/sec', info({ name: 'src/sec' }), npm)).toBe(false);
    expect(closedValues('read "a.txt" and then “src/sec"', info({ name: 'src/sec"' }), npm)).toBe(false);
  });

  it('refuses a value that is not quoted at all, or another kind of value the agent wrote', () => {
    expect(closedValues('get the npm package info of eventsource', info({ name: 'eventsource' }), npm)).toBe(false);
    expect(closedValues('list "src" recursively', info({ name: 'src', recursive: true }), npm)).toBe(false);
    expect(closedValues('"a" and "b"', info({ name: [] }), npm)).toBe(false);
  });

  it('takes values inside closed quotes, quoted numbers, items of a quoted list, and schema defaults', () => {
    expect(closedValues('I will get the npm package info of "eventsource".', info({ name: 'eventsource' }), npm)).toBe(true);
    expect(closedValues("look up 'eventsource' next", info({ name: 'eventsource' }), npm)).toBe(true);
    expect(closedValues('the order "87" and « lot »', info({ name: 'lot', id: 87 }), npm)).toBe(true);
    expect(closedValues('packages "ws, undici" of "ev', info({ name: ['ws', 'undici'] }), npm)).toBe(true);
    expect(closedValues('the package "ws"', info({ name: 'ws', registry: 'npmjs' }), npm)).toBe(true);
    expect(closedValues('the package "ws"', info({ name: 'ws', registry: 'github' }), npm)).toBe(false);
    expect(closedValues('anything', info({}), undefined)).toBe(true);
  });
});

describe('closed values: JSON keys of an exact call still being written (issue 22)', () => {
  const readFile = { parameters: [{ name: 'path', type: 'string', required: true }] } as unknown as Tool;
  const read = (path: string) => ({ tool: 'read_file', arguments: { path } });

  it('refuses a key taken for a value, with its colon written or still to come', () => {
    expect(closedValues('[TOOL: read_file {"path":', read('path'), readFile)).toBe(false);
    expect(closedValues('[TOOL: read_file {"path" : "src/', read('path'), readFile)).toBe(false);
    expect(closedValues('[TOOL: read_file {"path"', read('path'), readFile)).toBe(false);
    expect(closedValues("[TOOL: read_file {'path':", read('path'), readFile)).toBe(false);
    expect(closedValues('[TOOL: word_count {"encoding": "utf8", "path"', read('path'), readFile)).toBe(false);
  });

  it('takes the value once it is written and its quote closed', () => {
    expect(closedValues('[TOOL: read_file {"path": "src/a.ts"', read('src/a.ts'), readFile)).toBe(true);
    expect(closedValues('[TOOL: read_file {"path":"path"}', read('path'), readFile)).toBe(true);
    expect(closedValues('read "notes.txt" and then "todo.txt"', read('todo.txt'), readFile)).toBe(true);
  });
});
