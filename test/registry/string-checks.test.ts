import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateArgs } from '../../src/executor/validate-args.js';
import { loadRegistry } from '../../src/registry/load-registry.js';
import { formatProblem } from '../../src/registry/string-formats.js';
import { compilePattern, MAX_MATCHED_CHARS, MAX_PATTERN_CHARS } from '../../src/registry/string-pattern.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { ToolParameter } from '../../src/registry/types.js';
import { readExactCall } from '../../src/resolver/exact-call.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

const LABEL = { file: '/p/.ai/tools/x.yaml', display: '.ai/tools/x.yaml' };

function manifest(properties: Record<string, unknown>): string {
  return `tool_id: t\ntool_type: mcp_tool\nexecutor: server\nparameters: ${JSON.stringify({ type: 'object', properties })}\n`;
}

function parsed(text: string) {
  const result = parseToolManifest(text, LABEL, 'project');
  if (!result.ok) throw new Error(`expected a valid manifest, got:\n${result.issues.map((i) => i.message).join('\n')}`);
  return result;
}

const one = (param: ToolParameter) => makeTool({ id: 'codes', parameters: [param] });

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('pattern on import', () => {
  it('keeps a pattern RE2 compiles, with no warning', () => {
    const result = parsed(manifest({ code: { type: 'string', pattern: '^[A-Z]{3}$' } }));
    expect(result.value.parameters).toEqual([{ name: 'code', type: 'string', required: false, pattern: '^[A-Z]{3}$' }]);
    expect(result.warnings).toBeUndefined();
  });

  it('loads a tool whose pattern uses lookahead, leaves the pattern out and warns naming the tool file, parameter and why', () => {
    const result = parsed(manifest({ password: { type: 'string', pattern: '^(?=.*\\d).{8,}$' } }));
    expect(result.value.parameters).toEqual([{ name: 'password', type: 'string', required: false }]);
    expect(result.warnings?.map((w) => w.message)).toEqual([
      expect.stringMatching(
        /^\.ai\/tools\/x\.yaml(:\d+:\d+)?: parameters\.properties\.password\.pattern: the pattern of parameter `password` is not enforced: RE2 cannot compile it: .*\(\?=.*lookaround and backreferences are not supported.*; the tool loads, and its values are not checked against the pattern$/,
      ),
    ]);
    // Nothing downstream meets the dropped pattern: any value passes.
    expect(validateArgs(result.value, { password: 'short' })).toEqual({ password: 'short' });
  });

  it('warns about a backreference and about a pattern over the length cap', () => {
    const back = parsed(manifest({ pair: { type: 'string', pattern: '^(a)\\1$' } }));
    expect(back.warnings?.[0]?.message).toContain('parameter `pair` is not enforced: RE2 cannot compile it');
    const long = parsed(manifest({ blob: { type: 'string', pattern: 'a'.repeat(MAX_PATTERN_CHARS + 1) } }));
    expect(long.warnings?.[0]?.message).toContain(`parameter \`blob\` is not enforced: it is longer than ${MAX_PATTERN_CHARS} characters`);
    expect(long.value.parameters[0]?.pattern).toBeUndefined();
  });

  it('reports the warning from loadRegistry and still loads the tool', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-pattern-')));
    temps.push(dir);
    mkdirSync(path.join(dir, '.ai/tools'), { recursive: true });
    writeFileSync(path.join(dir, '.ai/tools/lookbehind.yaml'), 'tool_id: lookbehind\ntool_type: runtime\nexecutor: subprocess\nparameters:\n  - { name: price, type: string, pattern: "(?<=\\\\$)\\\\d+" }\n');
    const registry = await loadRegistry({ projectDir: dir, userDir: path.join(dir, 'home') });
    expect(registry.errors).toEqual([]);
    expect(registry.tools.get('lookbehind')?.parameters).toEqual([{ name: 'price', type: 'string', required: false }]);
    expect(registry.warnings.map((w) => w.message)).toEqual([
      expect.stringMatching(/^\.ai\/tools\/lookbehind\.yaml:5:\d+: parameters\[0\]\.pattern: the pattern of parameter `price` is not enforced: RE2 cannot compile it/),
    ]);
  });
});

describe('pattern on call arguments', () => {
  const code = one({ name: 'code', type: 'string', required: true, pattern: '^[A-Z]{3}$', description: 'ISO currency code' });

  it('accepts a matching value and refuses another, saying the pattern and what the parameter is', () => {
    expect(validateArgs(code, { code: 'EUR' })).toEqual({ code: 'EUR' });
    expect(() => validateArgs(code, { code: 'euro' })).toThrow('tool codes: argument `code` must match the pattern "^[A-Z]{3}$" (ISO currency code); got "euro"');
  });

  it('searches anywhere in the value unless the pattern anchors itself, as JSON Schema does', () => {
    const loose = one({ name: 'ref', type: 'string', required: true, pattern: '[0-9]{4}' });
    expect(validateArgs(loose, { ref: 'order-2024-x' })).toEqual({ ref: 'order-2024-x' });
    expect(() => validateArgs(loose, { ref: 'order-x' })).toThrow(/must match the pattern "\[0-9\]\{4\}"/);
  });

  it('reads ECMAScript escapes RE2 writes differently (\\uXXXX, \\u{…})', () => {
    const accented = one({ name: 'w', type: 'string', required: true, pattern: '^caf\\u00e9 \\u{1F600}$' });
    expect(validateArgs(accented, { w: 'café 😀' })).toEqual({ w: 'café 😀' });
    expect(() => validateArgs(accented, { w: 'cafe 😀' })).toThrow(/must match the pattern/);
    // An escaped backslash before u is a backslash and a u, not a code point.
    expect(compilePattern('^\\\\u0041$').ok && (compilePattern('^\\\\u0041$') as { test: (v: string) => boolean }).test('\\u0041')).toBe(true);
  });

  it('answers a catastrophic-backtracking pattern on a long near-miss value (RE2 does not backtrack)', () => {
    const evil = one({ name: 's', type: 'string', required: true, pattern: '^(a+)+$' });
    expect(() => validateArgs(evil, { s: `${'a'.repeat(5000)}!` })).toThrow(/must match the pattern "\^\(a\+\)\+\$"/);
    expect(validateArgs(evil, { s: 'a'.repeat(5000) })).toEqual({ s: 'a'.repeat(5000) });
  });

  it('refuses a value over the length cap instead of matching it', () => {
    const any = one({ name: 's', type: 'string', required: true, pattern: 'a' });
    expect(() => validateArgs(any, { s: 'a'.repeat(MAX_MATCHED_CHARS + 1) })).toThrow(`argument \`s\` is ${MAX_MATCHED_CHARS + 1} characters long; a value with a pattern may have at most ${MAX_MATCHED_CHARS}`);
  });

  it('leaves a pattern RE2 cannot compile unenforced on a tool built without the registry', () => {
    expect(validateArgs(one({ name: 's', type: 'string', required: true, pattern: '(?=x)' }), { s: 'y' })).toEqual({ s: 'y' });
  });

  it('refuses an exact call whose argument does not match, with the fix', () => {
    const call = readExactCall('codes {"code": "usd"}', toolMap(code));
    expect(call).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('argument `code` must match the pattern "^[A-Z]{3}$"') });
    expect(readExactCall('codes {"code": "USD"}', toolMap(code))).toMatchObject({ kind: 'call', args: { code: 'USD' } });
  });
});

describe('format on import', () => {
  it('keeps JSON Schema formats it checks and drops them on non-strings, where JSON Schema ignores them', () => {
    const result = parsed(
      manifest({
        when: { type: ['string', 'null'], format: 'date-time' },
        at: { type: 'string', format: 'time' },
        id: { type: 'string', format: 'uuid' },
        host: { type: 'string', format: 'ipv4' },
        host6: { type: 'string', format: 'ipv6' },
        stamp: { type: 'integer', format: 'date-time' },
        home: { type: 'string', format: 'hostname' },
      }),
    );
    expect(result.value.parameters.map((p) => [p.name, p.format])).toEqual([
      ['when', 'date-time'], ['at', 'time'], ['id', 'uuid'], ['host', 'ipv4'], ['host6', 'ipv6'], ['stamp', undefined], ['home', undefined],
    ]);
  });

  it('still refuses the gateway\'s own path format on a non-string', () => {
    const result = parseToolManifest(manifest({ p: { type: 'integer', format: 'path' } }), LABEL, 'project');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues[0]?.message).toContain('format applies only to type: string');
  });
});

describe('format on call arguments', () => {
  const cases: Array<[string, string[], string[], string]> = [
    ['date', ['2024-02-29', '1999-12-31'], ['2023-02-29', '2024-13-01', '15/03/2024', 'tomorrow'], 'must be a date written YYYY-MM-DD, e.g. 2024-03-15'],
    ['date-time', ['2024-03-15T14:30:00Z', '2024-03-15 14:30:00.5+02:00'], ['2024-03-15T14:30', '2024-03-15T14:30:00', '2024-02-30T10:00:00Z'], 'must be a date and time with its offset (RFC 3339), e.g. 2024-03-15T14:30:00Z'],
    ['time', ['14:30:00', '23:59:59.5+01:00'], ['2pm', '24:00:00', '14:30'], 'must be a time written HH:MM:SS (24-hour, an offset may follow), e.g. 14:30:00'],
    ['email', ['ann@example.com', 'a.b+c@mail.example.org'], ['ann', 'ann@', 'ann@example', 'a b@example.com'], 'must be an e-mail address, e.g. name@example.com'],
    ['uri', ['https://example.com/x?y=1', 'mailto:ann@example.com'], ['example.com', 'www.example.com/x', '/relative/path'], 'must be an absolute URL with its scheme, e.g. https://example.com/page'],
    ['url', ['http://localhost:8080/'], ['localhost/x'], 'must be an absolute URL with its scheme'],
    ['uuid', ['123e4567-e89b-12d3-a456-426614174000'], ['123e4567e89b12d3a456426614174000', 'not-a-uuid'], 'must be a UUID, e.g. 123e4567-e89b-12d3-a456-426614174000'],
    ['ipv4', ['192.0.2.1'], ['256.1.1.1', '192.0.2', '::1'], 'must be an IPv4 address, e.g. 192.0.2.1'],
    ['ipv6', ['2001:db8::1', '::1'], ['192.0.2.1', '2001:db8:::1'], 'must be an IPv6 address, e.g. 2001:db8::1'],
  ];
  for (const [format, good, bad, message] of cases) {
    it(`checks format ${format} and says what to write`, () => {
      const tool = one({ name: 'v', type: 'string', required: true, format: format as ToolParameter['format'] & string });
      for (const value of good) expect(validateArgs(tool, { v: value })).toEqual({ v: value });
      for (const value of bad) expect(() => validateArgs(tool, { v: value }), value).toThrow(`tool codes: argument \`v\` ${message}`);
    });
  }

  it('does not check path here (the permission context does) nor formats it does not model', () => {
    expect(formatProblem('path', '../../etc/passwd')).toBeUndefined();
    expect(formatProblem('hostname', '!!')).toBeUndefined();
  });
});
