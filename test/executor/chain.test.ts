import { describe, expect, it } from 'vitest';
import { mergeConfig, resolveChain, validateChains } from '../../src/executor/chain.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

const python = makeTool({ id: 'python_runtime', type: 'runtime', executor: 'subprocess', config: { command: 'python3', args: ['{script}'], env: { A: '1' } } });
const subprocess = makeTool({ id: 'subprocess', type: 'primitive', executor: null, config: { timeout_ms: 1000, env: { BASE: 'b' } } });

describe('resolveChain', () => {
  it('walks script -> runtime -> primitive and merges configs, the tool on top', () => {
    const script = makeTool({ id: 'enrich', executor: 'python_runtime', config: { script: 'enrich.py', timeout_ms: 5000, env: { A: '2' } } });
    const chain = resolveChain(toolMap(script, python, subprocess), 'enrich');
    expect(chain.links.map((l) => l.id)).toEqual(['enrich', 'python_runtime', 'subprocess']);
    expect(chain.primitive).toBe('subprocess');
    expect(chain.config).toEqual({ command: 'python3', args: ['{script}'], script: 'enrich.py', timeout_ms: 5000, env: { A: '2', BASE: 'b' } });
  });

  it('uses the built-in primitive when .ai/ does not declare one', () => {
    const api = makeTool({ id: 'weather', type: 'api', executor: 'http_client', config: { url_template: 'http://x' } });
    expect(resolveChain(toolMap(api), 'weather').primitive).toBe('http_client');
  });

  it('reports a loop naming the link that closes it', () => {
    const a = makeTool({ id: 'a', type: 'runtime', executor: 'b' });
    const b = makeTool({ id: 'b', type: 'runtime', executor: 'a' });
    expect(() => resolveChain(toolMap(a, b), 'a')).toThrow(/chain a -> b -> a loops: `b` .* names `a` again/);
  });

  it('reports a missing link', () => {
    const t = makeTool({ id: 't', executor: 'ruby_runtime' });
    expect(() => resolveChain(toolMap(t), 't')).toThrow(/names executor `ruby_runtime`, which is not in the registry/);
  });

  it('reports a chain that never reaches a primitive', () => {
    const t = makeTool({ id: 't', executor: 'rt' });
    const rt = makeTool({ id: 'rt', type: 'runtime', executor: null });
    expect(() => resolveChain(toolMap(t, rt), 't')).toThrow(/`rt` .* names no executor/);
  });

  it('reports a declared primitive the gateway does not have', () => {
    const t = makeTool({ id: 't', executor: 'ftp' });
    const ftp = makeTool({ id: 'ftp', type: 'primitive', executor: null });
    expect(() => resolveChain(toolMap(t, ftp), 't')).toThrow(/ends at `ftp`, a primitive the gateway does not have/);
  });

  it('validateChains lists every broken tool and only those', () => {
    const good = makeTool({ id: 'good', executor: 'subprocess' });
    const bad = makeTool({ id: 'bad', executor: 'nope' });
    expect(validateChains(toolMap(good, bad)).map((p) => p.tool.id)).toEqual(['bad']);
  });
});

describe('mergeConfig', () => {
  it('merges objects deeply and replaces arrays', () => {
    expect(mergeConfig({ h: { a: 1, b: 2 }, l: [1, 2] }, { h: { b: 3 }, l: [9] })).toEqual({ h: { a: 1, b: 3 }, l: [9] });
  });
});
