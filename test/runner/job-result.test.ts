import { describe, expect, it } from 'vitest';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import { jobResult, MAX_DATA_BYTES } from '../../src/runner/job-result.js';

/** How a runner reports a tool call's outcome to the kernel (§7.2), and when it lets the kernel retry. */

const base = { callId: 'c', tool: 'lookup', durationMs: 3, stuck: false };
const ok = (text: string, extra: Partial<{ data: unknown; exitCode: number | null; status: number; isError: boolean }> = {}): CallOutcome => ({ ...base, status: 'ok', result: { text, isError: false, ...extra } });
const error = (code: string, message = 'went wrong'): CallOutcome => ({ ...base, status: 'error', error: { code, message } });

describe('job results', () => {
  it("succeeds with the tool's text and what it gave besides", () => {
    expect(jobResult(ok('{"n":1}', { data: { n: 1 }, exitCode: 0 }), true)).toEqual({ success: true, data: { text: '{"n":1}', data: { n: 1 }, exit_code: 0 } });
    expect(jobResult(ok('nope', { status: 200 }), true)).toEqual({ success: true, data: { text: 'nope', http_status: 200 } });
  });

  it('fails, for good, a call the tool itself answered with an error, keeping its output', () => {
    expect(jobResult(ok('no such branch\n', { exitCode: 2, isError: true }), true)).toEqual({ success: false, error: 'lookup reported an error (exit code 2): no such branch', retryable: false, data: { text: 'no such branch\n', exit_code: 2 } });
    expect(jobResult(ok('', { status: 503, isError: true }), true)).toMatchObject({ error: 'lookup reported an error (HTTP 503)', retryable: false });
  });

  it('fails a denial, an unknown tool and bad arguments for good', () => {
    expect(jobResult({ ...base, status: 'denied', reason: 'tool `lookup` is not in `tools`' }, true)).toEqual({ success: false, error: 'denied: tool `lookup` is not in `tools`', retryable: false });
    for (const code of ['TOOL_NOT_FOUND', 'INVALID_INPUT', 'SPAWN_FAILED', 'OUTPUT_TOO_LARGE', 'CHAIN_INVALID']) expect(jobResult(error(code), true)).toMatchObject({ retryable: false });
  });

  it('lets the kernel retry a timeout, a lost connection or a cancelled run of a read-only tool, never of one that mutates state', () => {
    for (const code of ['TOOL_TIMEOUT', 'HTTP_TIMEOUT', 'MCP_TIMEOUT', 'UPSTREAM_HTTP', 'TOOL_CANCELLED']) {
      expect(jobResult(error(code), true)).toEqual({ success: false, error: `${code}: went wrong`, retryable: true });
      expect(jobResult(error(code), false)).toMatchObject({ retryable: false });
    }
  });

  it('cuts an output too large for the kernel to its start, and an error line to what the kernel keeps', () => {
    const big = jobResult(ok('\u0001'.repeat(2 * MAX_DATA_BYTES), { data: ['x'] }), true);
    expect(big.success).toBe(true);
    const data = (big as { data: { text: string; data?: unknown; truncated?: { bytes: number } } }).data;
    expect(Buffer.byteLength(JSON.stringify(data))).toBeLessThanOrEqual(MAX_DATA_BYTES);
    expect(data.text.length).toBeGreaterThan(MAX_DATA_BYTES / 8);
    expect(data.data).toBeUndefined();
    expect(data.truncated?.bytes).toBeGreaterThan(2 * MAX_DATA_BYTES);
    const long = jobResult(error('TOOL_TIMEOUT', 'z'.repeat(10_000)), true) as { error: string };
    expect(long.error).toHaveLength(4000);
    expect(long.error.endsWith('…')).toBe(true);
  });
});
