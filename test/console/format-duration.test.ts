import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/console/format-duration.js';

describe('formatDuration', () => {
  it('shows milliseconds under a second, tenths of seconds under a minute', () => {
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(999.4)).toBe('999 ms');
    expect(formatDuration(999.6)).toBe('1.0 s');
    expect(formatDuration(12_345)).toBe('12.3 s');
  });

  it('shows minutes and seconds, hours and minutes, days and hours past that', () => {
    // The overview's p99 that read "120198 ms" (issue 41).
    expect(formatDuration(120_198)).toBe('2 min 0 s');
    expect(formatDuration(59_960)).toBe('1 min 0 s');
    expect(formatDuration(3_599_600)).toBe('1 h 0 min');
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000)).toBe('3 h 5 min');
    expect(formatDuration(52 * 3_600_000)).toBe('2 d 4 h');
  });

  it('shows a dash for what is not a duration', () => {
    for (const ms of [Number.NaN, -1, Number.POSITIVE_INFINITY]) expect(formatDuration(ms)).toBe('-');
  });
});
