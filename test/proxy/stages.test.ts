import { describe, expect, it } from 'vitest';
import type { AuditLog } from '../../src/audit/audit-log.js';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { createLoopDetector } from '../../src/audit/loop-detector.js';
import { KiwiError } from '../../src/base/errors.js';
import { loadDirectiveHooks } from '../../src/hooks/hook-runner.js';
import type { HookAction } from '../../src/hooks/hook-types.js';
import { createPermissionContext, emptyRules } from '../../src/policy/permission-context.js';
import { createRateLimiter } from '../../src/policy/rate-limiter.js';
import type { HttpClient } from '../../src/primitives/http-client.js';
import type { CallHookDeps } from '../../src/proxy/call-hooks.js';
import { composeStages, newCallState, refused, succeeded, type CallHandler, type CallStage, type CallState } from '../../src/proxy/call-state.js';
import { approvalStage } from '../../src/proxy/stages/approval-stage.js';
import { auditStage } from '../../src/proxy/stages/audit-stage.js';
import { budgetStage } from '../../src/proxy/stages/budget-stage.js';
import { checkpointStage } from '../../src/proxy/stages/checkpoint-stage.js';
import { hookEventsStage } from '../../src/proxy/stages/hook-events-stage.js';
import { hookGateStage } from '../../src/proxy/stages/hook-gate-stage.js';
import { loopCheckStage } from '../../src/proxy/stages/loop-check-stage.js';
import { rateLimitStage } from '../../src/proxy/stages/rate-limit-stage.js';
import { reuseResult } from '../../src/proxy/stages/run-plan.js';
import { createRunningCalls } from '../../src/proxy/running-calls.js';
import { gatewayStopping } from '../../src/base/abort.js';
import type { CallRun, ToolCall, ToolCaller } from '../../src/proxy/tool-call.js';
import type { Tool } from '../../src/registry/types.js';

/** Each stage alone, around fakes: a handler that records it was reached, an audit log in memory, hooks that note which event fired. */

type CallOver = { caller?: Partial<ToolCaller>; run?: CallRun };
const request = (over: CallOver = {}): ToolCall => ({ target: { tool: 'echo', args: { text: 'hi' } }, caller: { session: 's1', client: 'alice', source: 'cli', ...over.caller }, ...(over.run ? { run: over.run } : {}) });
const tool = (over: Partial<Tool> = {}): Tool => ({ id: 'echo', type: 'script', mutatesState: false, parameters: [], ...over }) as unknown as Tool;
const state = (over: CallOver = {}, t: Tool | undefined = tool(), reusedFrom?: string): CallState => newCallState(request(over), 'call-1', t, reusedFrom);

function reached(): CallHandler & { calls: CallState[] } {
  const calls: CallState[] = [];
  const handler = async (call: CallState) => {
    calls.push(call);
    return succeeded(call, { text: 'ran', isError: false });
  };
  return Object.assign(handler, { calls });
}

const noHttp = {} as HttpClient;
/** An annotate hook per event name: the call's notes say which events fired, in order. */
function noteEvents(...events: string[]): CallHookDeps {
  const hooks = events.map((name, i) => ({ when: `event.name == "${name}"`, line: i + 1, action: { kind: 'annotate', text: name } as HookAction }));
  return { hooks: loadDirectiveHooks('policy.yaml', hooks), http: noHttp };
}
const hookActing = (when: string, action: HookAction): CallHookDeps => ({ hooks: loadDirectiveHooks('policy.yaml', [{ when, line: 1, action }]), http: noHttp });

describe('composeStages', () => {
  it('runs the stages first-outermost and lets a stage answer without the rest', async () => {
    const order: string[] = [];
    const mark = (name: string): CallStage => (next) => async (call) => {
      order.push(`${name} in`);
      const outcome = await next(call);
      order.push(`${name} out`);
      return outcome;
    };
    const end = reached();
    await composeStages([mark('a'), mark('b')], end)(state());
    expect(order).toEqual(['a in', 'b in', 'b out', 'a out']);

    const stop: CallStage = () => (call) => Promise.resolve(refused(call, 'no', 'permission_denied'));
    const inner = reached();
    const outcome = await composeStages([mark('a'), stop], inner)(state());
    expect(outcome).toMatchObject({ status: 'denied', reason: 'no' });
    expect(inner.calls).toHaveLength(0);
  });
});

describe('audit stage', () => {
  const memoryLog = () => {
    const records: AuditRecord[] = [];
    return { records, audit: { append: (r: AuditRecord) => void records.push(r) } as unknown as AuditLog };
  };

  it('writes one record for an allowed call, with what the stages found, and times the outcome', async () => {
    const { records, audit } = memoryLog();
    let clock = 100;
    const call = state();
    const outcome = await composeStages([auditStage({ audit, now: () => clock })], async (c) => {
      c.planned = { plan: { kind: 'read', result: { text: 'x', isError: false } }, args: {} };
      c.verdict = { allowed: true, args: {}, reason: 'allowed by test' };
      c.cleared = true;
      c.stuck = true;
      c.checkpoint = 'cp1';
      c.notes.push('a note');
      clock += 5;
      return succeeded(c, { text: 'ran', isError: false });
    })(call);
    expect(outcome).toMatchObject({ status: 'ok', durationMs: 5, stuck: true, callId: 'call-1' });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ decision: 'allow', reason: 'allowed by test', tool: 'echo', client: 'alice', session: 's1', stuck: true, checkpoint: 'cp1', notes: ['a note'], duration_ms: 5, sandbox: 'none', sandbox_reason: 'nothing ran' });
  });

  it('records a refusal as a deny that ran nothing, and a thrown error as an error outcome', async () => {
    const { records, audit } = memoryLog();
    const denied = await composeStages([auditStage({ audit, now: () => 0 })], async (c) => refused(c, 'not in tools', 'permission_denied'))(state());
    expect(denied).toMatchObject({ status: 'denied', stuck: false });
    const failed = await composeStages([auditStage({ audit, now: () => 0 })], () => Promise.reject(new KiwiError('TOOL_TIMEOUT', 'too slow')))(state());
    expect(failed).toMatchObject({ status: 'error', error: { code: 'TOOL_TIMEOUT', message: 'too slow' } });
    const policy = await composeStages([auditStage({ audit, now: () => 0 })], () => Promise.reject(new KiwiError('POLICY_DENIED', 'private address')))(state());
    expect(policy).toMatchObject({ status: 'denied', reason: 'private address' });
    expect(records.map((r) => [r.decision, r.reason, r.error?.code])).toEqual([
      ['deny', 'not in tools', undefined],
      ['deny', 'too slow', 'TOOL_TIMEOUT'],
      ['deny', 'private address', undefined],
    ]);
    expect(records[0]).toMatchObject({ sandbox: 'none', sandbox_reason: 'nothing ran' });
  });
});

describe('running calls stage', () => {
  const memoryLog = () => {
    const records: AuditRecord[] = [];
    return { records, audit: { append: (r: AuditRecord) => void records.push(r) } as unknown as AuditLog };
  };
  /** A tool run that waits for its signal, as a subprocess does, and fails TOOL_CANCELLED; `started` settles once it runs. */
  function waitsForSignal(): { handler: CallHandler; started: Promise<void> } {
    let begun = (): void => undefined;
    const started = new Promise<void>((resolve) => (begun = resolve));
    const handler: CallHandler = (c) =>
      new Promise((_, reject) => {
        c.cleared = true; // past the gates: it runs
        begun();
        c.request.run?.signal?.addEventListener('abort', () => reject(new KiwiError('TOOL_CANCELLED', 'node was cancelled while running and its process tree was ended')), { once: true });
      });
    return { handler, started };
  }

  it('lists a call while it runs; cancelAll aborts it with the gateway stopping and resolves once its record says cancelled', async () => {
    const { records, audit } = memoryLog();
    const running = createRunningCalls({ now: () => 7 });
    const run = waitsForSignal();
    const calling = composeStages([running.stage, auditStage({ audit, now: () => 0 })], run.handler)(state({ caller: { source: 'mcp' } }));
    await run.started;
    expect(running.list()).toEqual([{ callId: 'call-1', tool: 'echo', session: 's1', client: 'alice', source: 'mcp', startedAt: 7 }]);
    const cut = await running.cancelAll(gatewayStopping(10_000));
    expect(cut.map((c) => c.callId)).toEqual(['call-1']);
    // Resolved only once the record was written.
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ decision: 'allow', cancelled: 'gateway stopping', error: { code: 'TOOL_CANCELLED' } });
    expect(await calling).toMatchObject({ status: 'error', error: { code: 'TOOL_CANCELLED' } });
    expect(running.list()).toEqual([]);
  });

  it("passes the caller's own abort on, and the record keeps its words; a call that ends leaves the list", async () => {
    const { records, audit } = memoryLog();
    const running = createRunningCalls();
    const run = waitsForSignal();
    const client = new AbortController();
    const calling = composeStages([running.stage, auditStage({ audit, now: () => 0 })], run.handler)(state({ run: { signal: client.signal } }));
    await run.started;
    client.abort(new KiwiError('TOOL_CANCELLED', 'thread t1 was cancelled'));
    await calling;
    expect(records[0]?.cancelled).toBe('thread t1 was cancelled');
    await composeStages([running.stage, auditStage({ audit, now: () => 0 })], reached())(state());
    expect(records[1]?.cancelled).toBeUndefined();
    expect(running.list()).toEqual([]);
    expect(await running.cancelAll(gatewayStopping(0))).toEqual([]);
  });
});

describe('rate limit stage', () => {
  it('refuses the call past the policy limit as rate_limited and never runs it', async () => {
    const rules = { ...emptyRules(), rateLimits: { perTool: { echo: { max: 1, perMs: 60_000 } } } };
    const context = createPermissionContext('/p', rules, 'policy');
    const stage = rateLimitStage({ context, rateLimiter: createRateLimiter() });
    const end = reached();
    const chain = composeStages([stage], end);
    expect((await chain(state())).status).toBe('ok');
    const second = state();
    expect(await chain(second)).toMatchObject({ status: 'denied' });
    expect(second.refusal).toBe('rate_limited');
    expect(end.calls).toHaveLength(1);
  });
});

describe('hook stages', () => {
  it('the gate refuses on a deny hook and hands a hook that asks for a person on', async () => {
    const deny = state();
    const end = reached();
    expect(await composeStages([hookGateStage(hookActing('tool.id == "echo"', { kind: 'deny', reason: 'never echo' }))], end)(deny)).toMatchObject({ status: 'denied', reason: 'never echo (hook at policy.yaml:1)' });
    expect(deny.refusal).toBe('hook_denied');
    expect(end.calls).toHaveLength(0);

    const ask = state();
    await composeStages([hookGateStage(hookActing('true', { kind: 'require_approval' }))], end)(ask);
    expect(ask.hookAsks).toBeDefined();
    expect(end.calls).toEqual([ask]);
  });

  it('the events stage fires after_call, denied, limit or error on how the call ended', async () => {
    const events = noteEvents('after_call', 'denied', 'limit', 'error');
    const run = async (inner: CallHandler): Promise<string[]> => {
      const call = state();
      await composeStages([hookEventsStage(events, inner)], inner)(call);
      return call.notes;
    };
    expect(await run(reached())).toEqual(['after_call']);
    expect(await run(async (c) => refused(c, 'no', 'permission_denied'))).toEqual(['denied']);
    expect(await run(async (c) => refused(c, 'slow down', 'rate_limited'))).toEqual(['limit']);
    expect(await run(() => Promise.reject(new KiwiError('TOOL_TIMEOUT', 'too slow')))).toEqual(['error']);
  });
});

describe('approval stage', () => {
  const hooks = noteEvents('approval');
  const rules = { tools: ['echo'], timeoutMs: 60_000 };

  it('clears a call that needs no person', async () => {
    const call = state();
    const end = reached();
    await composeStages([approvalStage({ rules: undefined, hooks, now: () => 0 })], end)(call);
    expect(call.cleared).toBe(true);
    expect(call.approval).toBeUndefined();
  });

  it('refuses a call that needs a person when the caller cannot ask one, and keeps the answer', async () => {
    const call = state();
    const end = reached();
    const outcome = await composeStages([approvalStage({ rules, hooks, now: () => 0 })], end)(call);
    expect(outcome.status).toBe('denied');
    expect(call).toMatchObject({ cleared: false, refusal: 'approval_denied', approval: { approved: false, decided_by: 'gateway' }, notes: ['approval'] });
    expect(end.calls).toHaveLength(0);
  });

  it('runs the call once the person grants it', async () => {
    const call = state({ run: { approve: async () => ({ approved: true, decidedBy: 'bob' }) } });
    const end = reached();
    expect((await composeStages([approvalStage({ rules, hooks, now: () => 0 })], end)(call)).status).toBe('ok');
    expect(call).toMatchObject({ cleared: true, approval: { approved: true, decided_by: 'bob' } });
  });
});

describe('loop check, checkpoint and budget stages', () => {
  it('marks the third identical call of a client in one session as stuck', async () => {
    const stage = loopCheckStage(createLoopDetector({ threshold: 3 }));
    const calls = [state(), state(), state()];
    for (const c of calls) await composeStages([stage], reached())(c);
    expect(calls.map((c) => c.stuck)).toEqual([false, false, true]);
  });

  it("counts each session of a client apart, and each client's: a new MCP session starts with no repeats", async () => {
    const stage = loopCheckStage(createLoopDetector({ threshold: 2 }));
    const calls = [state({ caller: { session: 'one' } }), state({ caller: { session: 'two' } }), state({ caller: { session: 'one', client: 'other' } }), state({ caller: { session: 'one' } })];
    for (const c of calls) await composeStages([stage], reached())(c);
    expect(calls.map((c) => c.stuck)).toEqual([false, false, false, true]);
  });

  it('takes a checkpoint before a tool that may change state, never before a read-only one', async () => {
    const taken: string[] = [];
    const stage = checkpointStage({ before: async ({ tool }) => (taken.push(tool), `cp-${tool}`) });
    const writes = state({}, tool({ mutatesState: true }));
    await composeStages([stage], reached())(writes);
    const reads = state({}, tool({ mutatesState: false }));
    await composeStages([stage], reached())(reads);
    expect(taken).toEqual(['echo']);
    expect([writes.checkpoint, reads.checkpoint]).toEqual(['cp-echo', undefined]);
  });

  it('counts every call asked on the request budget, refused ones too', async () => {
    let counted = 0;
    const budget = { countToolCall: () => void counted++ };
    await composeStages([budgetStage()], reached())(state({ run: { budget } }));
    await composeStages([budgetStage()], async (c) => refused(c, 'no', 'permission_denied'))(state({ run: { budget } }));
    await composeStages([budgetStage()], reached())(state());
    expect(counted).toBe(2);
  });
});

describe('reuse result', () => {
  it('answers with the earlier result, or runs the call itself once a person was asked; the record says which', async () => {
    const records: AuditRecord[] = [];
    const audit = { append: async (r: AuditRecord) => void records.push(r) } as unknown as AuditLog;
    const earlier = { callId: 'pre-1', tool: 'echo', durationMs: 1, stuck: false, status: 'ok' as const, result: { text: 'prefetched', isError: false } };
    const run = reached();
    const reusing = (c: CallState) => composeStages([auditStage({ audit, now: () => 0 })], reuseResult(earlier, run))(c);
    const reused = state({}, tool(), 'pre-1');
    reused.cleared = true;
    expect(await reusing(reused)).toMatchObject({ status: 'ok', result: { text: 'prefetched' } });
    expect(records[0]?.reused).toBe('pre-1');

    const asked = state({}, tool(), 'pre-1');
    asked.cleared = true;
    asked.approval = { approved: true, decided_by: 'bob', waited_ms: 3 };
    expect(await reusing(asked)).toMatchObject({ result: { text: 'ran' } });
    expect(records[1]?.reused).toBeUndefined();
    expect(run.calls).toEqual([asked]);
  });
});
