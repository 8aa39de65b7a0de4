import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeChats, type ChatWrite } from '../../src/kernel/chat-rows.js';
import { createExecutions, type Executions } from '../../src/kernel/executions.js';
import { KERNEL_MIGRATIONS } from '../../src/kernel/kernel-migrations.js';
import { KERNEL_STATE_DIR } from '../../src/kernel/open-kernel.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { openPgliteDb } from '../../src/store/sql/pglite-db.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import { embeddedKernelRoot } from '../helpers/run-resources.js';

/**
 * A chat written whole (it ended before its first write, with no step) is one row of
 * kernel_executions, its events folded into it; the log, the list's label filter and a read
 * after a sequence show it exactly as they show a chat written in parts.
 */

let dir: ReturnType<typeof embeddedKernelRoot> | undefined;
let db: SqlDb;
let executions: Executions;

beforeAll(async () => {
  dir = embeddedKernelRoot('kiwi-chat-rows-');
  db = await openPgliteDb(path.join(dir.root, KERNEL_STATE_DIR));
  await migrate(db, KERNEL_MIGRATIONS);
  executions = createExecutions(db);
}, 30_000);

afterAll(async () => {
  await db?.close();
  dir?.remove();
});

let n = 0;
const at = '2026-12-08T00:00:00.000Z';
const event = (id: string, type: string, payload: unknown, stepId?: string) => ({ id: `${id}-e${n++}`, type, timestamp: at, payload: JSON.stringify(payload), causationId: `${id}-c`, correlationId: `${id}-c`, ...(stepId ? { stepId } : {}) });
const create = (labels: Record<string, string>) => ({ client: 'alice', agentId: 'gateway', input: '{"model":"m"}', labels, createdAt: at });
const end = { status: 'completed' as const, at, output: '{"text":"hi"}' };

function wholeChat(id: string, labels: Record<string, string>): ChatWrite {
  return { id, create: create(labels), events: [event(id, 'execution.created', {}), event(id, 'execution.started', {}), event(id, 'execution.completed', { output: 'hi' })], steps: [], end };
}

const write = (writes: ChatWrite[]) => db.transaction((tx) => writeChats(tx, writes, 'instance'));
const rowsOf = async (table: string, column: string, id: string) => (await db.query<{ n: number }>(`select count(*)::integer as n from ${table} where ${column} = $1`, [id]))[0]?.n;

describe('a chat written whole', () => {
  it('is one row: no rows of the log or of the labels, its events in its own column', async () => {
    await write([wholeChat('whole-1', { kind: 'chat', model: 'm' })]);
    expect(await rowsOf('kernel_executions', 'id', 'whole-1')).toBe(1);
    expect(await rowsOf('kernel_events', 'execution_id', 'whole-1')).toBe(0);
    expect(await rowsOf('kernel_execution_labels', 'execution_id', 'whole-1')).toBe(0);
  });

  it('reads back as the log: numbered from 1, with ids, steps, payloads and links; after a sequence; at most the limit', async () => {
    const chat = wholeChat('whole-2', { kind: 'chat' });
    await write([chat]);
    const log = await executions.events('whole-2', 0, 100);
    expect(log.map((e) => [e.sequence, e.type, e.id, e.causationId])).toEqual(chat.events.map((e, i) => [i + 1, e.type, e.id, e.causationId]));
    expect(log[2]).toMatchObject({ executionId: 'whole-2', payload: { output: 'hi' }, timestamp: at, correlationId: 'whole-2-c' });
    expect((await executions.events('whole-2', 1, 1)).map((e) => e.type)).toEqual(['execution.started']);
    expect(await executions.events('whole-2', 3, 100)).toEqual([]);
    expect(await executions.get('whole-2')).toMatchObject({ status: 'completed', output: { text: 'hi' }, labels: { kind: 'chat' } });
  });

  it("is found by the list's label filter, as a chat written in parts is, and not by another value", async () => {
    await write([wholeChat('whole-3', { kind: 'chat', model: 'rare-model' })]);
    const parts: ChatWrite = { id: 'parts-3', create: create({ kind: 'chat', model: 'rare-model' }), events: [event('parts-3', 'execution.created', {})], steps: [] };
    await write([parts]);
    await write([{ id: 'parts-3', events: [event('parts-3', 'execution.completed', {})], steps: [], end }]);
    const found = await executions.list({ labels: { model: 'rare-model' }, limit: 10 });
    expect(found.executions.map((e) => e.id).sort()).toEqual(['parts-3', 'whole-3']);
    expect((await executions.list({ labels: { model: 'rare-model', kind: 'thread' }, limit: 10 })).executions).toEqual([]);
    // The chat written in parts keeps the log's rows: one for each event.
    expect(await rowsOf('kernel_events', 'execution_id', 'parts-3')).toBe(2);
    expect((await executions.events('parts-3', 0, 10)).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it('is not a chat that opened a step, or that waits for a person: those are written as rows', async () => {
    const step = { id: 'step-4', toolId: 'read_file', arguments: '{}', status: 'succeeded' as const, deadline: '2099-01-01T00:00:00.000Z', createdAt: at, result: '"ok"', completedAt: at };
    await write([{ ...wholeChat('stepped-4', { kind: 'chat' }), steps: [step] }]);
    expect(await rowsOf('kernel_events', 'execution_id', 'stepped-4')).toBe(3);
    expect(await rowsOf('kernel_steps', 'execution_id', 'stepped-4')).toBe(1);
    await write([{ id: 'blocked-4', create: create({ kind: 'chat' }), events: [event('blocked-4', 'execution.blocked', {})], steps: [], block: 'step-x' }]);
    expect(await executions.get('blocked-4')).toMatchObject({ status: 'blocked' });
    expect(await rowsOf('kernel_events', 'execution_id', 'blocked-4')).toBe(1);
  });
});
