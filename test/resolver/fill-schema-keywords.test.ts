import { describe, expect, it } from 'vitest';
import { validateArgs } from '../../src/executor/validate-args.js';
import type { ToolParameter } from '../../src/registry/types.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

type P = Partial<ToolParameter> & Pick<ToolParameter, 'name'>;
const tool = (...parameters: P[]) =>
  makeTool({ id: 'test_tool', parameters: parameters.map((p) => ({ type: 'string', required: false, ...p }) as ToolParameter) });
const NOW = new Date('2026-03-10T12:00:00Z');
const fill = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters), { now: NOW });

describe('the filler and a parameter\'s pattern', () => {
  it('never puts a value that does not match there: the parameter is reported missing instead', () => {
    expect(fill('show rates for Japan', { name: 'code', required: true }).arguments).toEqual({ code: 'Japan' });
    const r = fill('show rates for Japan', { name: 'code', required: true, pattern: '^[A-Z]{3}$' });
    expect(r.arguments).toEqual({});
    expect(r.missing).toEqual(['code']);
  });

  it('leaves a non-matching value to the parameter it fits', () => {
    const plain = fill('Get the quote of Apple Inc', { name: 'symbol', required: true }, { name: 'company', required: true });
    expect(plain.arguments).toEqual({ symbol: 'Apple Inc' });
    const r = fill('Get the quote of Apple Inc', { name: 'symbol', required: true, pattern: '^[A-Z]{1,5}$' }, { name: 'company', required: true });
    expect(r.arguments).toEqual({ company: 'Apple Inc' });
    expect(r.missing).toEqual(['symbol']);
  });

  it('counts a match of a pattern ordinary words fail as evidence, and says so', () => {
    const without = fill('Register AB-123', { name: 'code', required: true });
    const withPattern = fill('Register AB-123', { name: 'code', required: true, pattern: '^[A-Z]{2}-[0-9]{3}$' });
    expect(withPattern.arguments).toEqual({ code: 'AB-123' });
    expect(withPattern.notes).toEqual(['code: id "AB-123" (an identifier, matches its pattern)']);
    expect(withPattern.confidence).toBeGreaterThan(without.confidence);
  });

  it('gives no such evidence for a pattern any word matches', () => {
    const r = fill('Register AB-123', { name: 'code', required: true, pattern: '^[A-Za-z0-9 -]*$' });
    expect(r.arguments).toEqual({ code: 'AB-123' });
    expect(r.notes.join(' ')).not.toContain('pattern');
  });

  it('does not take the request itself for a free-text parameter whose pattern it fails', () => {
    expect(fill('search for cheap flights to Rome', { name: 'query', required: true }).arguments).toEqual({ query: 'cheap flights to Rome' });
    expect(fill('search for cheap flights to Rome', { name: 'query', required: true, pattern: '^[a-z]+$' }).missing).toEqual(['query']);
  });

  it('answers a catastrophic-backtracking pattern on a long near-miss intent', () => {
    const evil: P = { name: 's', required: true, pattern: '^(a+)+$' };
    expect(fill(`check "${'a'.repeat(3000)}!"`, evil).missing).toEqual(['s']);
    expect(fill(`check "${'a'.repeat(3000)}"`, evil).arguments).toEqual({ s: 'a'.repeat(3000) });
  });
});

describe('the filler and a parameter\'s format', () => {
  it('writes a date for format: date as YYYY-MM-DD, relative dates included, whatever the prose says', () => {
    const params: P[] = [{ name: 'restaurant', required: true }, { name: 'day', required: true, format: 'date', description: 'Day of the booking, MM/DD/YYYY' }];
    expect(fill('Book a table at Luigi for tomorrow', ...params).arguments).toEqual({ restaurant: 'Luigi', day: '2026-03-11' });
    expect(fill('Book a table at Luigi for March 14, 2026', ...params).arguments).toEqual({ restaurant: 'Luigi', day: '2026-03-14' });
    // No date in the intent: nothing else is put in the date's place.
    expect(fill('Book a table at Luigi', { name: 'day', required: true, format: 'date' }).missing).toEqual(['day']);
  });

  it('gives an e-mail parameter the address in the text, and nothing when there is none', () => {
    expect(fill('Send the quarterly report to ann@example.com', { name: 'to', required: true, format: 'email' }, { name: 'subject' }).arguments).toEqual({ to: 'ann@example.com' });
    expect(fill('Mail Ann Lee the quarterly report', { name: 'to', required: true, format: 'email' }).missing).toEqual(['to']);
  });

  it('gives a uri parameter an absolute URL, never one without its scheme', () => {
    expect(fill('Check whether https://example.com/status is up', { name: 'target', required: true, format: 'uri' }).arguments).toEqual({ target: 'https://example.com/status' });
    expect(fill('Check whether www.example.com is up', { name: 'target', required: true, format: 'uri' }).missing).toEqual(['target']);
  });

  it('writes a time for format: time as HH:MM:SS', () => {
    expect(fill('Remind me at 2pm to call Bob', { name: 'at', required: true, format: 'time' }).arguments).toEqual({ at: '14:00:00' });
    expect(fill('Remind me at 9:05 to call Bob', { name: 'at', required: true, format: 'time' }).arguments).toEqual({ at: '09:05:00' });
  });

  it('takes a UUID or an IP address only when the text has one', () => {
    const uuid = '123e4567-e89b-12d3-a456-426614174000';
    expect(fill(`Cancel booking ${uuid} please`, { name: 'booking', required: true, format: 'uuid' }).arguments).toEqual({ booking: uuid });
    expect(fill('Cancel booking AB-77 please', { name: 'booking', required: true, format: 'uuid' }).missing).toEqual(['booking']);
    expect(fill('Ping host 10.0.0.12 now', { name: 'address', required: true, format: 'ipv4' }).arguments).toEqual({ address: '10.0.0.12' });
  });

  it('fills only values the argument check then accepts', () => {
    const t = tool({ name: 'day', required: true, format: 'date' }, { name: 'code', required: true, pattern: '^[A-Z]{3}$' }, { name: 'to', format: 'email' });
    const r = fillArguments('Move the EUR payment to 20 March 2026 and tell bob@example.org', t, { now: NOW });
    expect(r.arguments).toEqual({ day: '2026-03-20', code: 'EUR', to: 'bob@example.org' });
    expect(() => validateArgs(t, r.arguments)).not.toThrow();
  });
});
