import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createChatJournal } from '../../src/kernel/chat-journal.js';
import { openKernel, type Kernel } from '../../src/kernel/open-kernel.js';
import type { ChatWrite } from '../../src/kernel/chat-rows.js';
import type { UsageSummary } from '../../src/budgets/usage-summary.js';
import { kernelBackends } from '../fixtures/kernel/backends.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { embeddedKernelRoot, postgresDatabase } from '../helpers/run-resources.js';

/**
 * The journal that writes the gateway's chats as executions behind them: batched, in order,
 * kept and retried when the database fails, stopped by a cancel made here or by another
 * gateway on the same database; and what a restart does to a chat that was running.
 */

const chat = { client: 'local', agentId: 'gateway', input: { model: 'm' }, labels: { kind: 'chat' } };
const usageOf = (i: number): UsageSummary => ({ models: { m: { input_tokens: i, output_tokens: 2 * i, spend_usd: i / 1000 }, local: { input_tokens: 1, output_tokens: 1, spend_usd: 'unpriced' } }, spend_usd: i / 1000, unpriced: ['local'] });

describe.each(kernelBackends({ reaperIntervalMs: 0, queueIntervalMs: 0 }))('the chat journal on %s', (_name, open) => {
  let kernel: Kernel;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ kernel, stop } = await open());
  });
  afterAll(async () => {
    await kernel.close();
    await stop();
  });

  it('writes chats as executions in order, many in one batch, with their steps', async () => {
    const journal = createChatJournal({ write: (w) => kernel.writeChats(w), intervalMs: 5 });
    const chats = Array.from({ length: 30 }, () => journal.begin({ ...chat, onCancel: () => undefined }));
    for (const [i, c] of chats.entries()) {
      c.record([{ type: 'intent.accepted', payload: { i } }, { type: 'step.created', stepId: `s-${c.id}`, payload: {} }], { id: `s-${c.id}`, toolId: 't', arguments: '{}', status: 'running', deadline: '2099-01-01T00:00:00.000Z' });
      if (i % 2 === 0) await journal.flush();
      c.record([{ type: 'step.completed', stepId: `s-${c.id}`, payload: { result: i } }], { id: `s-${c.id}`, toolId: 't', arguments: '{}', status: 'succeeded', deadline: '2099-01-01T00:00:00.000Z', result: String(i), completedAt: new Date().toISOString() });
      // Half end in the batch that creates them (an insert), half after one (an update): both keep what they used.
      c.end('completed', [{ type: 'execution.completed', payload: { output: i } }], { output: i, usage: usageOf(i) });
    }
    await journal.close();
    for (const [i, c] of chats.entries()) {
      expect(await kernel.executions.get(c.id)).toMatchObject({ status: 'completed', agentId: 'gateway', output: i, labels: { kind: 'chat' }, usage: usageOf(i) });
      const log = await kernel.executions.events(c.id, 0, 100);
      expect(log.map((e) => `${e.sequence} ${e.type}`)).toEqual(['1 execution.created', '2 execution.started', '3 intent.accepted', '4 step.created', '5 step.completed', '6 execution.completed']);
      // Written together: one time, one correlation, each caused by the one before.
      expect(log[3]?.causationId).toBe(log[2]?.id);
      expect(log[3]?.correlationId).toBe(log[2]?.id);
    }
    const listed = await kernel.executions.list({ labels: { kind: 'chat' }, limit: 100 });
    expect(listed.executions.length).toBeGreaterThanOrEqual(30);
    expect(listed.executions.find((e) => e.id === chats[3]?.id)?.usage).toEqual(usageOf(3));
    // A chat is never handed to an agent: the spec's agent assignment looks only at pending ones.
    expect(listed.executions.every((e) => e.status !== 'pending')).toBe(true);
  });

  /** A journal holding running chats `holdMs`, and a promise of the next write that holds a chat. */
  const journalTelling = (holdMs: number) => {
    const written = new Map<string, () => void>();
    const journal = createChatJournal({
      write: async (w) => {
        const gone = await kernel.writeChats(w);
        for (const { id } of w) written.get(id)?.();
        return gone;
      },
      intervalMs: 5,
      holdMs,
    });
    return { journal, writtenOf: (id: string) => new Promise<void>((resolve) => written.set(id, resolve)) };
  };

  it('with holdMs, writes a chat once, whole, when it ends; flush() writes those still running, as a read in the process does', async () => {
    const batches: ChatWrite[][] = [];
    const journal = createChatJournal({ write: (w) => (batches.push(w), kernel.writeChats(w)), intervalMs: 5, holdMs: 60_000 });
    const short = journal.begin({ ...chat, onCancel: () => undefined });
    const long = journal.begin({ ...chat, onCancel: () => undefined });
    short.record([{ type: 'turn.started', payload: { turn: 2 } }]);
    short.end('completed', [{ type: 'execution.completed', payload: { output: 'done' } }], { output: 'done' });
    await short.written();
    expect(batches.flat().map((w) => [w.id, w.create !== undefined, w.end?.status])).toEqual([[short.id, true, 'completed']]);
    expect((await kernel.executions.events(short.id, 0, 10)).map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'turn.started', 'execution.completed']);
    await journal.flush();
    expect(await kernel.executions.get(long.id)).toMatchObject({ status: 'running' });
    long.end('completed', [{ type: 'execution.completed', payload: {} }]);
    await journal.close();
    expect((await kernel.executions.events(long.id, 0, 10)).map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'execution.completed']);
  });

  it('with holdMs, writes a running chat once it has run that long, and one that opens a step at its next batch', async () => {
    const { journal, writtenOf } = journalTelling(20);
    const running = journal.begin({ ...chat, onCancel: () => undefined });
    await writtenOf(running.id);
    expect(await kernel.executions.get(running.id)).toMatchObject({ status: 'running' });
    const stepped = journal.begin({ ...chat, onCancel: () => undefined });
    const step = { id: `s-${stepped.id}`, toolId: 't', arguments: '{}', status: 'running' as const, deadline: '2099-01-01T00:00:00.000Z' };
    const steppedWritten = writtenOf(stepped.id);
    stepped.record([{ type: 'step.created', stepId: step.id, payload: {} }], step);
    await steppedWritten;
    expect((await kernel.executions.events(stepped.id, 0, 10)).map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'step.created']);
    await journal.close();
  });

  it('with holdMs, writes a chat that ended at the next beat, however long the hold of one still running', async () => {
    const { journal, writtenOf } = journalTelling(600_000);
    const running = journal.begin({ ...chat, onCancel: () => undefined });
    const ended = journal.begin({ ...chat, onCancel: () => undefined });
    const endWritten = writtenOf(ended.id);
    ended.end('completed', [{ type: 'execution.completed', payload: {} }]);
    await endWritten;
    expect(await kernel.executions.get(ended.id)).toMatchObject({ status: 'completed' });
    running.end('completed', []);
    await journal.close();
  });

  it('keeps what a failed write held and writes it, in order, once the database answers', async () => {
    let fail = true;
    const errors: unknown[] = [];
    const journal = createChatJournal({
      write: async (w: ChatWrite[]) => {
        if (fail) throw new Error('database went away');
        return kernel.writeChats(w);
      },
      intervalMs: 5,
      onError: (e) => errors.push(e),
    });
    const c = journal.begin({ ...chat, onCancel: () => undefined });
    await journal.flush();
    c.end('failed', [{ type: 'execution.failed', payload: { error: 'upstream said no' } }]);
    await journal.flush();
    expect(errors.length).toBe(2);
    fail = false;
    await journal.close();
    expect(await kernel.executions.get(c.id)).toMatchObject({ status: 'failed' });
    expect((await kernel.executions.events(c.id, 0, 100)).map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'execution.failed']);
  });

  it('on cancel writes what the chat queued, stops it, and writes nothing after', async () => {
    const k = kernel;
    let stopped = 0;
    const journal = createChatJournal({ write: (w) => k.writeChats(w), intervalMs: 60_000 });
    const c = journal.begin({ ...chat, onCancel: () => (stopped += 1) });
    c.record([{ type: 'intent.accepted', payload: {} }, { type: 'step.created', stepId: `s-${c.id}`, payload: {} }], { id: `s-${c.id}`, toolId: 't', arguments: '{}', status: 'running', deadline: '2099-01-01T00:00:00.000Z' });
    // As the kernel's cancel route does it when the chat runs here (open-kernel.ts).
    expect(await journal.detach(c.id)).toBe(true);
    await k.executions.cancel(c.id);
    expect(stopped).toBe(1);
    c.end('failed', [{ type: 'execution.failed', payload: { error: 'stopped' } }]);
    await journal.close();
    const log = await k.executions.events(c.id, 0, 100);
    expect(log.map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'intent.accepted', 'step.created', 'step.cancelled', 'execution.cancelled']);
    expect(await journal.detach(c.id)).toBe(false);
  });
});

describe('the chat journal when the database stops answering', () => {
  it('records no more than 10,000 chats waiting to be written, and says so of the next', async () => {
    const dir = embeddedKernelRoot();
    onTestFinished(dir.remove);
    const gone = await openKernel({ root: dir.root, reaperIntervalMs: 0, queueIntervalMs: 0 });
    await gone.close();
    const errors: unknown[] = [];
    const journal = createChatJournal({ write: (w) => gone.writeChats(w), intervalMs: 60_000, onError: (e) => errors.push(e) });
    const first = Array.from({ length: 10_000 }, () => journal.begin({ ...chat, onCancel: () => undefined }));
    expect(first.every((c) => c.recorded)).toBe(true);
    const over = journal.begin({ ...chat, onCancel: () => undefined });
    expect(over.recorded).toBe(false);
    await journal.close();
    expect(errors.length).toBeGreaterThan(0);
  });
});

describe.runIf(postgresAvailable() || process.env['KIWI_REQUIRE_POSTGRES'] === '1')('two gateways on one Postgres server', () => {
  it('a chat cancelled through the other gateway stops at its next write, or within the watch interval', async () => {
    const server = await postgresDatabase();
    const options = { root: '/nonexistent', databaseUrl: server.url, reaperIntervalMs: 0, queueIntervalMs: 0 };
    const mine = await openKernel(options);
    const other = await openKernel(options);
    try {
      let stopped = 0;
      const journal = createChatJournal({ write: (w) => mine.writeChats(w), intervalMs: 60_000 });
      const c = journal.begin({ ...chat, onCancel: () => (stopped += 1) });
      await journal.flush();
      await other.executions.cancel(c.id);
      c.record([{ type: 'intent.accepted', payload: {} }]);
      await journal.flush();
      expect(stopped).toBe(1);
      await journal.close();
      expect((await other.executions.events(c.id, 0, 100)).map((e) => e.type)).toEqual(['execution.created', 'execution.started', 'execution.cancelled']);

      // A chat with nothing more to write (a long tool call) hears of it within the watch interval.
      let heard = 0;
      const watching = createChatJournal({ write: (w) => mine.writeChats(w), intervalMs: 60_000, cancelledAmong: (ids) => mine.cancelledAmong(ids), watchMs: 50 });
      const quiet = watching.begin({ ...chat, onCancel: () => (heard += 1) });
      await watching.flush();
      await other.executions.cancel(quiet.id);
      await expect.poll(() => heard, { timeout: 5_000 }).toBe(1);
      await watching.close();
    } finally {
      await mine.close();
      await other.close();
      await server.stop();
    }
  }, 60_000);
});

describe('the embedded kernel on disk', () => {
  // A copy of the run's migrated database (run-resources.ts): what a first start makes, made once.
  const { root, remove } = embeddedKernelRoot();
  afterAll(remove);

  it('is opened by one process at a time', async () => {
    const first = await openKernel({ root, reaperIntervalMs: 0, queueIntervalMs: 0 });
    try {
      await expect(openKernel({ root, reaperIntervalMs: 0, queueIntervalMs: 0 })).rejects.toThrow(/in use by process \d+ \(this one\): stop that gateway first, or set DATABASE_URL/);
    } finally {
      await first.close();
    }
  }, 60_000);

  it('fails, at the next start, a chat that was running when the gateway stopped', async () => {
    const first = await openKernel({ root, reaperIntervalMs: 0, queueIntervalMs: 0 });
    const journal = createChatJournal({ write: (w) => first.writeChats(w) });
    const c = journal.begin({ ...chat, onCancel: () => undefined });
    c.record([{ type: 'step.created', stepId: `s-${c.id}`, payload: {} }], { id: `s-${c.id}`, toolId: 't', arguments: '{}', status: 'running', deadline: '2099-01-01T00:00:00.000Z' });
    await journal.close();
    // Closed without the chat's end, as a crash leaves it.
    await first.close();
    const second = await openKernel({ root, reaperIntervalMs: 0, queueIntervalMs: 0 });
    try {
      expect(await second.executions.get(c.id)).toMatchObject({ status: 'failed' });
      const log = await second.executions.events(c.id, 0, 100);
      expect(log.slice(-2).map((e) => [e.type, e.payload])).toEqual([
        ['step.cancelled', { reason: 'gateway stopped' }],
        ['execution.failed', { error: 'the gateway stopped before the chat ended' }],
      ]);
    } finally {
      await second.close();
    }
  }, 60_000);
});
