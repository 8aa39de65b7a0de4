import { mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveChain } from '../../src/executor/chain.js';
import { planCall } from '../../src/executor/plan.js';
import { validateArgs } from '../../src/executor/validate-args.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-plan-')));
const outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-outside-')));
afterAll(() => {
  for (const dir of [root, outside]) rmSync(dir, { recursive: true, force: true });
});
const ctx = { root, env: { PATH: '/usr/bin', HOME: '/root', SECRET_TOKEN: 's3cret', KIWI_X: 'x', API_KEY: 'k' } };

describe('planCall: subprocess', () => {
  const git = makeTool({
    id: 'git_log',
    executor: 'subprocess',
    config: { command: 'git', args: ['log', '-n', '{count}', '{paths}', '{maybe}'], env_allowlist: ['KIWI_*'] },
    parameters: [
      { name: 'count', type: 'integer', required: true },
      { name: 'paths', type: 'array', required: false },
      { name: 'maybe', type: 'string', required: false },
    ],
  });

  it('builds an argv array, spreads lists, drops absent optionals and records which elements came from arguments', () => {
    const plan = planCall(resolveChain(toolMap(git), 'git_log'), { count: 3, paths: ['a b', 'c;d'] }, ctx);
    expect(plan.kind).toBe('subprocess');
    if (plan.kind !== 'subprocess') return;
    expect(plan.argv).toEqual(['git', 'log', '-n', '3', 'a b', 'c;d']);
    expect(plan.fromParams).toEqual([{ index: 3, param: 'count' }, { index: 4, param: 'paths' }, { index: 5, param: 'paths' }]);
    expect(plan.cwd).toBe(root);
  });

  it('passes only the base variables and the allowlist to the child', () => {
    const plan = planCall(resolveChain(toolMap(git), 'git_log'), { count: 1 }, ctx);
    if (plan.kind !== 'subprocess') throw new Error('expected subprocess');
    expect(plan.env).toEqual({ PATH: '/usr/bin', HOME: '/root', LANG: 'C.UTF-8', KIWI_X: 'x' });
  });

  it('refuses a cwd outside the project', () => {
    const t = makeTool({ id: 't', config: { command: 'ls', cwd: '../..' } });
    expect(() => planCall(resolveChain(toolMap(t), 't'), {}, ctx)).toThrow(/outside the project root/);
  });

  it('points {script} at the script beside the manifest and passes args as JSON on stdin', () => {
    const dir = path.join(root, '.ai', 'tools');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'hello.py'), 'print(1)\n');
    const rt = makeTool({ id: 'python_runtime', type: 'runtime', executor: 'subprocess', config: { command: 'python3', args: ['{script}'], stdin: '{args_json}' } });
    const t = makeTool({ id: 'hello', executor: 'python_runtime', config: { script: 'hello.py' }, source: { path: path.join(dir, 'hello.yaml'), tier: 'project' } });
    const plan = planCall(resolveChain(toolMap(t, rt), 'hello'), { who: 'x' }, ctx);
    if (plan.kind !== 'subprocess') throw new Error('expected subprocess');
    expect(plan.argv).toEqual(['python3', path.join(dir, 'hello.py')]);
    expect(plan.stdin).toBe('{"who":"x"}');
  });

  it('refuses a script that is missing or escapes its folder through a symlink', () => {
    const dir = path.join(root, 'tools2');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(outside, 'evil.py'), 'print(1)\n');
    symlinkSync(path.join(outside, 'evil.py'), path.join(dir, 'evil.py'));
    const source = { path: path.join(dir, 'x.yaml'), tier: 'project' as const };
    const missing = makeTool({ id: 'm', config: { command: 'python3', args: ['{script}'], script: 'nope.py' }, source });
    const evil = makeTool({ id: 'e', config: { command: 'python3', args: ['{script}'], script: 'evil.py' }, source });
    expect(() => planCall(resolveChain(toolMap(missing), 'm'), {}, ctx)).toThrow(/script `nope.py` does not exist/);
    expect(() => planCall(resolveChain(toolMap(evil), 'e'), {}, ctx)).toThrow(/resolves outside the tool's folder/);
  });

  it('says which config field is wrong', () => {
    const t = makeTool({ id: 't', config: { args: ['x'] } });
    expect(() => planCall(resolveChain(toolMap(t), 't'), {}, ctx)).toThrow(/tool t .*config\.command for subprocess/);
  });
});

describe('planCall: api', () => {
  const api = makeTool({
    id: 'weather',
    type: 'api',
    executor: 'http_client',
    config: {
      method: 'post',
      url_template: 'http://127.0.0.1:1/v1/{city}?units={units}',
      headers: { 'X-API-Key': '${API_KEY}' },
      body_template: { city: '{city}', days: '{days}' },
      response_transform: { pick: 'data.items', max_items: 2 },
    },
    parameters: [
      { name: 'city', type: 'string', required: true },
      { name: 'units', type: 'string', required: false, default: 'metric' },
      { name: 'days', type: 'integer', required: false },
    ],
  });

  it('encodes URL params, fills headers from env and builds a JSON body', () => {
    const args = validateArgs(api, { city: 'São Paulo/../x', days: 3 });
    const plan = planCall(resolveChain(toolMap(api), 'weather'), args, ctx);
    if (plan.kind !== 'http') throw new Error('expected http');
    expect(plan.request.url).toBe('http://127.0.0.1:1/v1/S%C3%A3o%20Paulo%2F..%2Fx?units=metric');
    expect(plan.request.method).toBe('POST');
    expect(plan.request.headers).toEqual({ 'X-API-Key': 'k', 'content-type': 'application/json' });
    expect(JSON.parse(plan.request.body as string)).toEqual({ city: 'São Paulo/../x', days: 3 });
    expect(plan.transform).toEqual({ pick: 'data.items', maxItems: 2 });
  });

  it('adds `query` entries encoded, leaves out one that is an argument the call did not give, and fills the rest from env', () => {
    const search = makeTool({
      id: 'find',
      type: 'api',
      executor: 'http_client',
      config: { url_template: 'http://127.0.0.1:1/v1/items?fixed=1', query: { 'page[size]': '{size}', q: '{q}', key: '${API_KEY}', label: 'by {q}' } },
      parameters: [
        { name: 'q', type: 'string', required: true },
        { name: 'size', type: 'integer', required: false },
      ],
    });
    const url = (args: Record<string, unknown>): string => {
      const plan = planCall(resolveChain(toolMap(search), 'find'), validateArgs(search, args), ctx);
      if (plan.kind !== 'http') throw new Error('expected http');
      return plan.request.url;
    };
    expect(url({ q: 'a b&c' })).toBe('http://127.0.0.1:1/v1/items?fixed=1&q=a+b%26c&key=k&label=by+a+b%26c');
    expect(url({ q: 'x', size: 5 })).toBe('http://127.0.0.1:1/v1/items?fixed=1&page%5Bsize%5D=5&q=x&key=k&label=by+x');
  });
});

describe('validateArgs', () => {
  const t = makeTool({
    id: 'v',
    parameters: [
      { name: 'n', type: 'integer', required: true },
      { name: 'mode', type: 'string', required: false, enum: ['a', 'b'], default: 'a' },
    ],
  });
  it('fills defaults', () => expect(validateArgs(t, { n: 1 })).toEqual({ n: 1, mode: 'a' }));
  it('names a missing required argument', () => expect(() => validateArgs(t, {})).toThrow(/missing required argument `n`/));
  it('names an unknown argument and lists the real ones', () => expect(() => validateArgs(t, { n: 1, nn: 2 })).toThrow(/unknown argument `nn`; its parameters are n, mode/));
  it('checks types', () => expect(() => validateArgs(t, { n: 1.5 })).toThrow(/`n` must be an integer, got number 1.5/));
  it('checks enums', () => expect(() => validateArgs(t, { n: 1, mode: 'c' })).toThrow(/must be one of "a", "b"/));
  it('checks minimum and maximum (JSON Schema)', () => {
    const ranged = makeTool({ id: 'r', parameters: [{ name: 'year', type: 'integer', required: true, minimum: 1900, maximum: 2100 }] });
    expect(validateArgs(ranged, { year: 2026 })).toEqual({ year: 2026 });
    expect(() => validateArgs(ranged, { year: 1800 })).toThrow(/`year` must be at least 1900, got 1800/);
    expect(() => validateArgs(ranged, { year: 3000 })).toThrow(/`year` must be at most 2100, got 3000/);
  });
  it('refuses NUL bytes', () => expect(() => validateArgs(makeTool({ id: 's', parameters: [{ name: 's', type: 'string', required: true }] }), { s: 'a\u0000b' })).toThrow(/NUL byte/));
  it('keeps a parameter called __proto__ as an own property', () => {
    const proto = makeTool({ id: 'p', parameters: [{ name: '__proto__', type: 'string', required: true }] });
    const out = validateArgs(proto, JSON.parse('{"__proto__": "x"}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('x');
  });
  it('refuses non-object arguments', () => expect(() => validateArgs(t, [1])).toThrow(/must be a JSON object/));
});
