import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { API_STATUS, ERROR_CODES, type ErrorCode, isKiwiError, KiwiError, toHttpStatus } from '../../src/base/errors.js';
import { toErrorOut } from '../../src/http/chat/errors-out.js';
import { apiError } from '../../src/http/server/json-api.js';

/**
 * As undici's test/errors.js checks every error it brands: each code is raised somewhere, each
 * edge maps it (a non-500 for every code that is not a bug) and docs/troubleshooting.md lists it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const CODES = Object.keys(ERROR_CODES) as ErrorCode[];
const NOT_BUGS = CODES.filter((code) => code !== 'INTERNAL');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((file) => file !== path.join(ROOT, 'src/base/errors.ts'));
}

const SOURCES = sources(path.join(ROOT, 'src')).map((file) => readFileSync(file, 'utf8'));

/** The code as a value that becomes an error (an argument, a ternary's branch, a return); a comparison, a set or a map of codes reads one and does not count. */
function raised(code: ErrorCode): boolean {
  const literal = `'${code}'`;
  return SOURCES.some((text) => {
    for (let at = text.indexOf(literal); at !== -1; at = text.indexOf(literal, at + 1)) {
      const before = text.slice(Math.max(0, at - 60), at);
      const line = text.slice(text.lastIndexOf('\n', at) + 1, text.indexOf('\n', at));
      if (/(?:===|!==|case)\s*$/.test(before) || /isKiwiError\([^()]*,\s*$/.test(before) || /new Set\(|Set<|Record</.test(line)) continue;
      return true;
    }
    return false;
  });
}

async function v0Answer(error: unknown): Promise<{ status: number; body: { error: string; code: string }; retryAfter: string | null; bugs: unknown[] }> {
  const bugs: unknown[] = [];
  const app = new Hono().get('/x', (c) => apiError(c, error, (bug) => bugs.push(bug)));
  const res = await app.request('/x');
  return { status: res.status, body: (await res.json()) as { error: string; code: string }, retryAfter: res.headers.get('retry-after'), bugs };
}

describe('every error code', () => {
  it.each(CODES)('%s is raised somewhere in src/', (code) => {
    expect(raised(code)).toBe(true);
  });

  it.each(NOT_BUGS)('%s keeps its status and message on both chat protocols', (code) => {
    for (const protocol of ['openai', 'anthropic'] as const) {
      const out = toErrorOut(new KiwiError(code, 'what to fix'), protocol, 'req-1');
      expect(out.status).toBe(ERROR_CODES[code].http);
      expect(out.status).not.toBe(500);
      expect(out.message).toBe('what to fix');
      expect(out.code).toBe(ERROR_CODES[code].chat);
    }
  });

  it.each(NOT_BUGS)('%s is its v0 code on /v0 and the admin API, shown and not logged as a bug', async (code) => {
    const { status, body, bugs } = await v0Answer(new KiwiError(code, 'what to fix'));
    expect(body).toEqual({ error: 'what to fix', code: ERROR_CODES[code].api });
    expect(status).toBe(API_STATUS[ERROR_CODES[code].api]);
    expect(status).not.toBe(500);
    expect(bugs).toEqual([]);
  });

  it.each(CODES)('%s has its row in docs/troubleshooting.md', (code) => {
    const docs = readFileSync(path.join(ROOT, 'docs/troubleshooting.md'), 'utf8');
    const row = ERROR_CODES[code];
    const chat = row.chat === undefined ? `${row.http}` : `${row.http} \`${row.chat}\``;
    expect(docs.split('\n')).toContain(`| \`${code}\` | ${chat} | ${API_STATUS[row.api]} \`${row.api}\` | ${row.doc} |`);
  });

  it('the docs list no code the gateway does not have', () => {
    const docs = readFileSync(path.join(ROOT, 'docs/troubleshooting.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Error codes'));
    const listed = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...CODES].sort());
  });
});

describe('the /v0 and admin mappings the Rebuno SDK reads', () => {
  // The SDK turns these into its error classes; they were answered so before the one table.
  it.each([
    ['INVALID_INPUT', 400, 'VALIDATION_ERROR'],
    ['INVALID_POLICY', 400, 'VALIDATION_ERROR'],
    ['PAYLOAD_TOO_LARGE', 400, 'VALIDATION_ERROR'],
    ['REQUEST_TIMEOUT', 400, 'VALIDATION_ERROR'],
    ['UNAUTHORIZED', 401, 'UNAUTHORIZED'],
    ['POLICY_DENIED', 403, 'FORBIDDEN'],
    ['NOT_FOUND', 404, 'NOT_FOUND'],
    ['TOOL_NOT_FOUND', 404, 'NOT_FOUND'],
    ['CONFLICT', 409, 'CONFLICT'],
    ['QUOTA_EXCEEDED', 409, 'CONFLICT'],
    ['UNAVAILABLE', 503, 'SERVICE_UNAVAILABLE'],
  ] as const)('%s stays %i %s', async (code, status, v0) => {
    const answer = await v0Answer(new KiwiError(code, 'm'));
    expect([answer.status, answer.body.code]).toEqual([status, v0]);
  });

  it('a rate limit comes with the spec\'s Retry-After: 5', async () => {
    const answer = await v0Answer(new KiwiError('RATE_LIMITED', 'busy'));
    expect([answer.status, answer.body.code, answer.retryAfter]).toEqual([429, 'RATE_LIMITED', '5']);
  });

  it('an INTERNAL KiwiError or any other thrown value is a bug: logged, its message kept on the server', async () => {
    for (const error of [new KiwiError('INTERNAL', 'secret detail'), new Error('secret detail')]) {
      const answer = await v0Answer(error);
      expect([answer.status, answer.body]).toEqual([500, { error: 'internal error', code: 'INTERNAL_ERROR' }]);
      expect(answer.bugs).toEqual([error]);
    }
  });
});

describe('the Symbol.for brand', () => {
  // What a KiwiError made by a second copy of src/base/errors.ts looks like to this one.
  const foreign = (code: string): Error => Object.assign(new Error('from another copy'), { name: 'KiwiError', code, details: undefined, [Symbol.for('kiwi.error')]: true });

  it('a KiwiError of another copy of the module is a KiwiError here, with its status', () => {
    const error = foreign('NOT_FOUND');
    expect(isKiwiError(error)).toBe(true);
    expect(isKiwiError(error, 'NOT_FOUND')).toBe(true);
    expect(error instanceof KiwiError).toBe(true);
    expect(toHttpStatus(error)).toBe(404);
  });

  it('an unbranded error with a code, or a branded one with a code this copy lacks, is not', () => {
    expect(isKiwiError(Object.assign(new Error('m'), { code: 'NOT_FOUND' }))).toBe(false);
    expect(isKiwiError(foreign('NO_SUCH_CODE'))).toBe(false);
    expect(toHttpStatus(foreign('NO_SUCH_CODE'))).toBe(500);
    expect(isKiwiError(new KiwiError('CONFLICT', 'm'), 'NOT_FOUND')).toBe(false);
  });

  it('the edges answer a foreign KiwiError by its code, not as a bug', async () => {
    expect(toErrorOut(foreign('TOOL_NOT_FOUND'), 'openai', 'r')).toEqual({ status: 404, message: 'from another copy' });
    expect((await v0Answer(foreign('TOOL_NOT_FOUND'))).status).toBe(404);
  });
});
