import { describe, expect, it } from 'vitest';
import { isKiwiError, KiwiError } from '../../src/base/errors.js';
import type { BudgetMeter } from '../../src/budgets/budget-meter.js';
import { createChatJournal } from '../../src/kernel/chat-journal.js';
import type { ChatWrite } from '../../src/kernel/chat-rows.js';
import type { CallOutcome, ToolCall } from '../../src/proxy/tool-call.js';
import { openRunScope } from '../../src/runs/run-scope.js';

/** A journal whose writes land in `writes`; the ids in `cancel` come back as cancelled through the kernel. */
function journal() {
  const writes: ChatWrite[] = [];
  const cancel = new Set<string>();
  const j = createChatJournal({ write: async (batch) => (writes.push(...batch), batch.map((w) => w.id).filter((id) => cancel.has(id))), intervalMs: 1 });
  return { journal: j, writes, cancel };
}

const noKernel = async () => {
  throw new Error('no person is asked in these tests');
};
const start = { client: 'alice', input: { tool: 't' }, labels: { kind: 'mcp', client: 'alice' }, stepDeadlineMs: 60_000 };
const call: ToolCall = { target: { tool: 'echo', args: { text: 'hi' } }, caller: { session: 's1', client: 'alice', source: 'mcp' } };
const ok = (c: ToolCall): Promise<CallOutcome> => Promise.resolve({ callId: 'c1', tool: c.target.tool, durationMs: 1, stuck: false, status: 'ok', result: { text: 'done', isError: false } });

describe('a run scope (runs/run-scope.ts)', () => {
  it("is aborted at once when the caller's signal already is, with the caller's reason", () => {
    const outer = new AbortController();
    outer.abort(new KiwiError('TOOL_CANCELLED', 'the client went away'));
    const scope = openRunScope({ kernel: noKernel }, { ...start, signal: outer.signal });
    expect(scope.signal.aborted).toBe(true);
    expect(isKiwiError(scope.signal.reason, 'TOOL_CANCELLED')).toBe(true);
    expect(scope.cancelled()).toBe(false);
  });

  it('follows the caller until released, and then no longer', async () => {
    const outer = new AbortController();
    const scope = openRunScope({ kernel: noKernel }, { ...start, signal: outer.signal });
    await scope.release();
    outer.abort();
    expect(scope.signal.aborted).toBe(false);
  });

  it('records a call as a step of its execution, settled with the outcome', async () => {
    const j = journal();
    const scope = openRunScope({ journal: j.journal, kernel: noKernel }, start);
    const seen: ToolCall[] = [];
    const outcome = await scope.call(call, { via: 'test' }, (c) => (seen.push(c), ok(c)), () => undefined);
    expect(outcome.status).toBe('ok');
    expect(seen[0]?.run?.approve).toBeTypeOf('function');
    scope.recorded.execution.end('completed', [{ type: 'execution.completed', payload: { output: 'done' } }]);
    await j.journal.flush();
    const steps = j.writes.flatMap((w) => w.steps);
    expect(steps.map((s) => s.status)).toContain('succeeded');
    expect(j.writes[0]?.create).toMatchObject({ client: 'alice', labels: { kind: 'mcp', client: 'alice' } });
  });

  it('without a journal passes the call through unrecorded', async () => {
    const scope = openRunScope({ kernel: noKernel }, start);
    expect(scope.recorded).toBeUndefined();
    const seen: ToolCall[] = [];
    await scope.call(call, {}, (c) => (seen.push(c), ok(c)), () => undefined);
    expect(seen).toEqual([call]);
  });

  it('is cancelled through the kernel: cancelled() says so and the signal fires with the reason asked for', async () => {
    const j = journal();
    const scope = openRunScope({ journal: j.journal, kernel: noKernel }, { ...start, cancelReason: (id) => new KiwiError('TOOL_CANCELLED', `cancelled through ${id}`) });
    j.cancel.add(scope.recorded.execution.id);
    scope.recorded.execution.record([{ type: 'step.created', payload: {} }]);
    await j.journal.flush();
    expect(scope.cancelled()).toBe(true);
    expect(scope.signal.aborted).toBe(true);
    expect((scope.signal.reason as Error).message).toBe(`cancelled through ${scope.recorded.execution.id}`);
  });

  it('ends the budget meter it was admitted with when released', async () => {
    let ended = 0;
    const meter = { end: async () => void ended++ } as unknown as BudgetMeter;
    const scope = openRunScope({ kernel: noKernel }, { ...start, meter });
    expect(scope.meter).toBe(meter);
    await scope.release();
    expect(ended).toBe(1);
  });
});
