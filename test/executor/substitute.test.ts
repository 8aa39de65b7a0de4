import { describe, expect, it } from 'vitest';
import { placeholders, substitute, substituteDeep } from '../../src/executor/substitute.js';

const scope = (params: Record<string, unknown>, env: Record<string, string> = {}) => ({ params, env, where: 'tool t: config.x' });

describe('substitute', () => {
  it('fills params, env vars and env defaults', () => {
    expect(substitute('{a}-${HOME_DIR}-${MISSING:-fallback}', scope({ a: 'x' }, { HOME_DIR: '/h' }))).toBe('x-/h-fallback');
  });

  it('renders non-string params as JSON and keeps literal braces', () => {
    expect(substitute('{{n}}={n} {o}', scope({ n: 5, o: { k: [1] } }))).toBe('{n}=5 {"k":[1]}');
  });

  it('never substitutes inside a substituted value', () => {
    expect(substitute('{a}', scope({ a: '${SECRET} {b}', b: 'no' }, { SECRET: 'leak' }))).toBe('${SECRET} {b}');
  });

  it('encodes params (and only params) with the given encoder', () => {
    expect(substitute('${BASE}/q?x={q}', scope({ q: 'a b&c=/' }, { BASE: 'http://h/p q' }), encodeURIComponent)).toBe('http://h/p q/q?x=a%20b%26c%3D%2F');
  });

  it('names the missing env var and how to give a default', () => {
    expect(() => substitute('${API_KEY}', scope({}))).toThrow(/API_KEY is not set.*\$\{API_KEY:-default\}/);
  });

  it('names the missing argument', () => {
    expect(() => substitute('x {city}', scope({}))).toThrow(/needs argument `city`/);
  });

  it('keeps JSON types for whole-string params in deep templates and drops absent ones', () => {
    const body = substituteDeep({ n: '{n}', s: 'id-{id}', list: ['{tags}', 'x'], gone: '{absent}' }, scope({ n: 3, id: 7, tags: ['a'] }));
    expect(body).toEqual({ n: 3, s: 'id-7', list: [['a'], 'x'] });
  });

  it('lists placeholders', () => {
    expect(placeholders('{a} ${B} {c} {{d}}')).toEqual(['a', 'c']);
  });
});
