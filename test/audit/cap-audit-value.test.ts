import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { serializeAuditRecord } from '../../src/audit/audit-record.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { TRUNCATED_KEY, auditValueJson, capText } from '../../src/audit/cap-audit-value.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const CAPS = { maxLineBytes: 64 * 1024 - 1, maxStringChars: 1024, maxArgsBytes: 8 * 1024, maxResultBytes: 8 * 1024 };

function rec(extra: Partial<AuditRecord> = {}): AuditRecord {
  return { ts: '2025-03-04T10:00:00.000Z', session: 's1', call_id: 'c1', tool: 'read_file', args: {}, decision: 'deny', duration_ms: 1, ...extra };
}

describe('auditValueJson', () => {
  it('cuts a long string to half the cap, with its full size and the hash an investigator can match', () => {
    const payload = `/${'../'.repeat(20_000)}etc/passwd`;
    const out = JSON.parse(auditValueJson({ path: payload, mode: 'r' }, 1024) as string);
    expect(out.mode).toBe('r');
    expect(out.path).toEqual({ [TRUNCATED_KEY]: true, bytes: payload.length, sha256: sha256(payload), preview: payload.slice(0, 512) });
  });

  it('leaves strings up to the cap alone', () => {
    const value = { a: 'x'.repeat(1024), b: [1, true, null, 'y'] };
    expect(auditValueJson(value, 1024)).toBe(JSON.stringify(value));
  });

  it('hashes the redacted text, so a hash cannot confirm a guessed secret', () => {
    const body = `${'# padding\n'.repeat(200)}DB_PASSWORD=hunter2\n`;
    const out = JSON.parse(auditValueJson(body, 1024) as string);
    const redacted = body.replace('hunter2', '[redacted:secret]');
    expect(out.sha256).toBe(sha256(redacted));
    expect(out.sha256).not.toBe(sha256(body));
    expect(out.bytes).toBe(redacted.length);
  });

  it('redacts values under secret names and secret shapes anywhere, keys and nesting kept', () => {
    const args = { url: 'https://x.test', headers: { Authorization: 'Basic dXNlcjpwYXNz', 'x-trace': 'abc' }, password: 'hunter2', pin_hint: 'hunter2?', retries: 3, api_key: 12345, note: 'key AKIAIOSFODNN7EXAMPLE' };
    expect(JSON.parse(auditValueJson(args, 1024) as string)).toEqual({
      url: 'https://x.test',
      headers: { Authorization: '[redacted:secret]', 'x-trace': 'abc' },
      password: '[redacted:secret]',
      pin_hint: 'hunter2?',
      retries: 3,
      api_key: '[redacted:secret]',
      note: 'key [redacted:aws-key]',
    });
  });

  it('caps a long key and bounds nesting depth', () => {
    const key = 'k'.repeat(5000);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i += 1) deep = [deep];
    const out = JSON.parse(auditValueJson({ [key]: 1, deep }, 1024) as string);
    const [cappedKey] = Object.keys(out);
    expect(cappedKey).toMatch(/^k+…\[truncated: 5000 bytes, sha256 [0-9a-f]{64}\]$/);
    expect((cappedKey as string).length).toBeLessThanOrEqual(1024);
    expect(JSON.stringify(out.deep)).toContain(`"${TRUNCATED_KEY}":true`);
    expect(JSON.stringify(out.deep).length).toBeLessThan(1000);
  });

  it('writes what JSON.stringify would for dates, undefined and non-finite numbers', () => {
    const value = { when: new Date('2025-01-02T03:04:05.000Z'), gone: undefined, list: [undefined, Number.NaN, () => 1], inf: Infinity };
    expect(auditValueJson(value, 1024)).toBe(JSON.stringify(value));
    expect(auditValueJson(undefined, 1024)).toBeUndefined();
  });
});

describe('capText', () => {
  it('redacts, and cuts with size and hash past the cap', () => {
    expect(capText('denied: token=abc123', 1024)).toBe('denied: token=[redacted:secret]');
    const long = `path ${'a'.repeat(60_000)} is outside the read globs`;
    const out = capText(long, 1024);
    expect(out.length).toBeLessThanOrEqual(1024);
    expect(out).toBe(`${long.slice(0, out.indexOf('…'))}…[truncated: ${long.length} bytes, sha256 ${sha256(long)}]`);
  });
});

describe('serializeAuditRecord', () => {
  it('turns a denied call with a 60 KB path into a record of a few KB', () => {
    const path = `/tmp/${'A'.repeat(60_000)}`;
    const line = serializeAuditRecord(rec({ args: { path }, reason: `path ${path} is outside the read globs` }), CAPS);
    expect(Buffer.byteLength(line)).toBeLessThan(3 * 1024);
    const parsed = JSON.parse(line);
    expect(parsed.args.path).toMatchObject({ [TRUNCATED_KEY]: true, bytes: path.length, sha256: sha256(path) });
    expect(parsed.reason).toMatch(/…\[truncated: 60036 bytes, sha256 [0-9a-f]{64}\]$/);
  });

  it('keeps a secret a tool read out of the result, the args, the reason and the error', () => {
    const secret = 'sk-ant-api03-R2D2c3poBB8L1ke5kyWalker00';
    const record = rec({
      decision: 'allow',
      args: { text: `OPENAI_API_KEY=${secret}` },
      result: { text: `API_KEY=${secret}\nDEBUG=1\n`, is_error: false },
      reason: `allowed for Bearer ${secret}`,
      error: { code: 'UPSTREAM_HTTP', message: `401 for key ${secret}` },
    });
    const line = serializeAuditRecord(record, CAPS);
    expect(line).not.toContain('R2D2c3po');
    expect(JSON.parse(line).result).toEqual({ text: 'API_KEY=[redacted:api-key]\nDEBUG=1\n', is_error: false });
  });

  it('replaces args past maxArgsBytes by one marker with size and hash of the capped JSON', () => {
    const args = { items: Array.from({ length: 3000 }, (_, i) => `item-${i}`) };
    const line = serializeAuditRecord(rec({ args }), CAPS);
    const parsed = JSON.parse(line);
    const json = JSON.stringify(args);
    expect(parsed.args).toMatchObject({ [TRUNCATED_KEY]: true, bytes: json.length, sha256: sha256(json) });
    expect(json.startsWith(parsed.args.preview)).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(parsed.args))).toBeLessThanOrEqual(8 * 1024);
  });
});
