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
