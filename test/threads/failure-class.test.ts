import { describe, expect, it } from 'vitest';
import { classifyThread } from '../../src/threads/failure-class.js';
import type { ThreadLine, ThreadRecord } from '../../src/threads/thread-store.js';

/** Each class of failure from a transcript, by the documented rules (failure-class.ts). */

const header: ThreadLine = { type: 'thread', id: '0195aaaa-bbbb-4ccc-8ddd-eeeeffff0000', directive: 'd', inputs: {}, model: 'm', client: 'local', depth: 1, started_at: '2026-01-01T00:00:00Z' };
const end = (fields: Partial<Extract<ThreadRecord, { type: 'end' }>> = {}): ThreadRecord => ({ type: 'end', status: 'completed', result: 'r', steps_taken: 1, ended_at: '2026-01-01T00:00:01Z', ...fields });
const result = (status: 'ok' | 'denied' | 'error', isError = false, code?: string): ThreadRecord => ({ type: 'result', call_id: 'c', tool: 't', status, ...(isError ? { is_error: true } : {}), ...(code ? { code } : {}), text: '' });
const unresolved: ThreadRecord = { type: 'unresolved', intent: 'x', reason: 'no tool fits' };
const classify = (...records: ThreadRecord[]) => classifyThread([header, ...records]);

describe('classifyThread', () => {
  it('a run that ended on its own terms, after a successful last call, has no class', () => {
    expect(classify(result('denied'), result('ok'), end())).toBeUndefined();
    expect(classify(end())).toBeUndefined();
    expect(classify(result('ok'), { type: 'help', action: 'checkpoint', message: 'half' }, end())).toBeUndefined();
  });

  it('escalated, cancelled, model_error and error come from how it ended, before anything else', () => {
    expect(classify(result('denied'), end({ status: 'escalated' }))).toBe('escalated');
    expect(classify(result('denied'), end({ status: 'cancelled' }))).toBe('cancelled');
    expect(classify(end({ status: 'failed', code: 'UPSTREAM_HTTP', error: 'upstream answered 500' }))).toBe('model_error');
    expect(classify(end({ status: 'failed', code: 'UNKNOWN_MODEL' }))).toBe('model_error');
    expect(classify(end({ status: 'failed', code: 'INTERNAL' }))).toBe('error');
    expect(classify(end({ status: 'failed' }))).toBe('error');
  });

  it('a limit that stopped it names the limit', () => {
    expect(classify(result('denied'), end({ limit: 'turns' }))).toBe('limit:turns');
    expect(classify(end({ limit: 'budget' }))).toBe('limit:budget');
  });

  it('a run that completed right after a last intent that did not succeed is classified by that intent', () => {
    expect(classify(result('ok'), result('denied'), end())).toBe('denied');
    expect(classify(result('error'), end())).toBe('tool_error');
    expect(classify(result('ok', true), end())).toBe('tool_error');
    expect(classify(result('ok'), unresolved, end())).toBe('unresolved');
    expect(classify(result('ok'), { type: 'help', action: 'stuck', message: 'no config' }, end())).toBe('stuck');
  });

  it("a hook's fail or abort is the policy's answer, classed with refusals, not as a tool's fault (nothing to anneal)", () => {
    expect(classify(result('error', true, 'HOOK_FAILED'), end())).toBe('denied');
    expect(classify(result('error', true, 'TOOL_FAILED'), end())).toBe('tool_error');
    expect(classify(result('error', true, 'HOOK_ABORTED'), end({ status: 'failed', code: 'HOOK_ABORTED' }))).toBe('denied');
  });

  it('the class the end records wins; a thread that has not ended has none', () => {
    expect(classify(result('ok'), end({ failure: 'limit:turns' }))).toBe('limit:turns');
    expect(classify(result('denied'))).toBeUndefined();
  });
});
