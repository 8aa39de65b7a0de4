import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGatewayDatabase } from '../../src/kernel/gateway-database.js';
import type { SqlDb } from '../../src/store/sql/sql-db.js';
import { sqlThreadStore } from '../../src/threads/sql-thread-store.js';
import { isThreadOver, MAX_TEXT_CHARS, type ThreadHeader, type ThreadLine, type ThreadWriter } from '../../src/threads/thread-store.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { postgresDatabase } from '../helpers/run-resources.js';
import { REPO_ROOT } from '../helpers/temp-project.js';
import { refusal } from '../helpers/expect-failure.js';
import { readPipelineRun } from '../../src/threads/pipeline-runs.js';

/** Two stores on one Postgres database stand for two replicas sharing a server (DATABASE_URL). */
describe.skipIf(!postgresAvailable())('threads in Postgres', () => {
  let server: PostgresServer;
  let db: SqlDb;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    server = await postgresDatabase();
    db = await openGatewayDatabase(server.url, { maxConnections: 4 }); // migrated: the threads tables are new in 15
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await db?.close();
    await server?.stop();
  });

  const header = (id: string = randomUUID(), fields: Partial<ThreadHeader> = {}): ThreadHeader => ({ type: 'thread', id, directive: 'review_changes', inputs: { focus: 'docs' }, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString(), ...fields });
  const resumed = { type: 'resume', client: 'local', model: 'gpt-4o-mini', at: new Date().toISOString() } as const;
  const types = (lines: readonly ThreadLine[]): string[] => lines.map((l) => l.type);

  it("keeps a stage thread's pipeline in its header, so any replica reads a pipeline run's state from its threads", async () => {
    const [a, b] = [sqlThreadStore(db), sqlThreadStore(db)];
    const run = randomUUID();
    const stage = (name: string) => ({ pipeline: { run, name: 'release_check', stage: name, inputs: { focus: 'src' } } });
    const first = await a.create(header(randomUUID(), stage('review')));
    await first.append({ type: 'end', status: 'completed', result: 'looks fine', steps_taken: 1, ended_at: new Date().toISOString() });
    await first.close();
    const secondId = randomUUID();
    const second = await a.create(header(secondId, stage('note')));
    await (await a.create(header(randomUUID(), { pipeline: { run: randomUUID(), name: 'other', stage: 'x', inputs: {} } }))).close();

    const state = await readPipelineRun(b, run);
    expect(state).toMatchObject({ run, pipeline: 'release_check', inputs: { focus: 'src' } });
    expect([...state.stages].map(([name, t]) => [name, t.end?.status, t.running])).toEqual([['note', undefined, true], ['review', 'completed', false]]);
    await second.close(); // its process let go without an end: cut short
    expect((await readPipelineRun(b, run)).stages.get('note')).toMatchObject({ header: { id: secondId }, running: false });
    expect(await refusal(readPipelineRun(b, randomUUID()))).toMatch(/^NOT_FOUND: no pipeline run .* among the 2000 most recent threads/);
    expect(await refusal(readPipelineRun(b, '../etc'))).toBe('INVALID_INPUT: "../etc" is not a pipeline run id; `kiwi pipelines runs` shows them');
  });

  it('lists, reads and follows on one replica, line by line, a thread another writes', async () => {
    const [a, b] = [sqlThreadStore(db), sqlThreadStore(db)];
    const id = randomUUID();
    const writer = await a.create(header(id));
    expect(await b.readHeader(id)).toMatchObject({ id, directive: 'review_changes', client: 'local', inputs: { focus: 'docs' } });
    expect((await b.list()).find((t) => t.header.id === id)).toMatchObject({ running: true });
    // Each line is there for the other replica as soon as append resolves, and moves the stamp followers look at.
    const before = await b.stamp(id);
    expect(await b.stamp(id)).toBe(before);
    await writer.append({ type: 'turn', turn: 1, text: 'Looking.' });
    expect(await b.stamp(id)).not.toBe(before);
    expect(types(await b.read(id))).toEqual(['thread', 'turn']);
    expect(await isThreadOver(b, id, await b.read(id))).toBe(false);
    await writer.append({ type: 'call', call_id: 'c1', tool: 'git_status', arguments: {} });
    await writer.append({ type: 'result', call_id: 'c1', tool: 'git_status', status: 'ok', text: 'clean' });
    expect(types(await b.read(id))).toEqual(['thread', 'turn', 'call', 'result']);
    await writer.append({ type: 'end', status: 'completed', result: 'done', steps_taken: 1, ended_at: new Date().toISOString() });
    await writer.close();
    const lines = await b.read(id);
    expect(lines.at(-1)).toMatchObject({ type: 'end', status: 'completed', result: 'done' });
    expect(await isThreadOver(b, id, lines)).toBe(true);
    // Newest first, with its end.
    expect((await b.list())[0]).toMatchObject({ header: { id }, end: { status: 'completed' }, running: false });
  });

  it('refuses to resume a thread its writer still holds, on any replica, and resumes it once let go', async () => {
    const [a, b] = [sqlThreadStore(db, { holderName: 'replica a' }), sqlThreadStore(db)];
    const id = randomUUID();
    const writer = await a.create(header(id));
    await writer.append({ type: 'turn', turn: 1, text: 'Working.' });
    expect(await b.isRunning(id)).toBe(true);
    expect(await refusal(b.reopen(id, resumed))).toMatch(new RegExp(`^CONFLICT: thread ${id} is still running \\(replica a\\); wait for it to end, or stop that process \\(if it has died, the thread is free within 45 s\\)$`));
    // Nor by the holder itself a second time.
    expect(await refusal(a.reopen(id, resumed))).toMatch(/^CONFLICT: thread .* is still running/);
    await writer.close();
    expect(await b.isRunning(id)).toBe(false);
    const again = await b.reopen(id, { ...resumed, message: 'go on' });
    await again.append({ type: 'turn', turn: 2, text: 'Going on.' });
    expect(await a.isRunning(id)).toBe(true);
    // The first writer, closed, writes nothing more.
    await writer.append({ type: 'turn', turn: 9, text: 'late' });
    await again.close();
    expect(types(await a.read(id))).toEqual(['thread', 'turn', 'resume', 'turn']);
    expect(await refusal(b.reopen(randomUUID(), resumed))).toMatch(/^NOT_FOUND: no thread /);
  });

  it('lets another replica resume a thread once the process writing it is killed, not before', async () => {
    const id = randomUUID();
    const holdMs = 1500;
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'test', 'helpers', 'thread-holder.ts'), server.url, id, String(holdMs)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const [said] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
    expect(said.toString()).toBe('holding\n');
    const b = sqlThreadStore(db);
    // It renews its hold while it lives, writing nothing: past its first hold, still refused.
    const heldUntil = async (): Promise<number> => ((await db.query<{ held_until: Date }>('select held_until from threads where id = $1', [id]))[0]?.held_until as Date).getTime();
    const first = await heldUntil();
    await expect.poll(heldUntil, { timeout: 5_000, interval: 100 }).toBeGreaterThan(first);
    expect(await refusal(b.reopen(id, resumed))).toMatch(new RegExp(`^CONFLICT: thread ${id} is still running \\(holder ${child.pid}\\); .* free within [12] s\\)$`));

    child.kill('SIGKILL');
    await once(child, 'exit');
    // Within its hold of 1.5 s the thread is free, and goes on after the dead process's lines.
    let taken: ThreadWriter | undefined;
    await expect.poll(async () => (taken ??= await b.reopen(id, resumed).catch(() => undefined)) !== undefined, { timeout: 5_000, interval: 100 }).toBe(true);
    await taken?.append({ type: 'turn', turn: 2, text: 'Taken over.' });
    await taken?.close();
    expect(types(await b.read(id))).toEqual(['thread', 'turn', 'resume', 'turn']);
  }, 20_000);

  it('refuses the next line of a writer that lost its thread to another (silent past its hold), writing nothing', async () => {
    const [a, b] = [sqlThreadStore(db, { holderName: 'replica a', holdMs: 60_000 }), sqlThreadStore(db)];
    const id = randomUUID();
    const stalled = await a.create(header(id));
    // As if replica a had been paused (or cut off from the database) for longer than its hold.
    await db.query("update threads set held_until = now() - interval '1 second' where id = $1", [id]);
    const heir = await b.reopen(id, resumed);
    expect(await refusal(stalled.append({ type: 'turn', turn: 1, text: 'too late' }))).toBe(`CONFLICT: thread ${id} was taken over by another process: this one (replica a) did not renew its hold for 60000 ms; the line was not written`);
    await stalled.close(); // lets go of nothing: the thread is the heir's
    expect(await a.isRunning(id)).toBe(true);
    await heir.close();
    expect(types(await a.read(id))).toEqual(['thread', 'resume']);
  });

  it('cuts long texts and huge arguments when written, refuses a first line over 1 MiB, and stops a read at 32 MiB', async () => {
    const store = sqlThreadStore(db);
    const id = randomUUID();
    const writer = await store.create(header(id));
    await writer.append({ type: 'turn', turn: 1, text: 'é'.repeat(MAX_TEXT_CHARS + 10) });
    await writer.append({ type: 'call', call_id: 'c1', tool: 'write_file', arguments: { content: 'x'.repeat(2 * 1024 * 1024) } });
    await writer.close();
    const [, turn, call] = await store.read(id);
    expect(turn).toMatchObject({ type: 'turn', text: `${'é'.repeat(MAX_TEXT_CHARS)}… (10 more characters)` });
    expect(call).toMatchObject({ type: 'call', tool: 'write_file', arguments: `(arguments of ${2 * 1024 * 1024 + 14} characters, not kept: more than a thread's line holds)` });

    const big = randomUUID();
    expect(await refusal(store.create(header(big, { inputs: { blob: 'x'.repeat(1024 * 1024) } })))).toMatch(new RegExp(`^PAYLOAD_TOO_LARGE: thread ${big}'s inputs make its first line \\d+ bytes, more than the 1048576`));
    expect(await refusal(store.readHeader(big))).toMatch(/^NOT_FOUND/);

    // The size is checked before any line is read.
    await db.query('update threads set bytes = 40000000 where id = $1', [id]);
    expect(await refusal(store.read(id))).toBe(`PAYLOAD_TOO_LARGE: thread ${id} is 40000000 bytes, more than the ${32 * 1024 * 1024} read back; read it in the threads table of DATABASE_URL with other tools`);
  });

  it("answers a stamp only for a thread that exists, by a thread's id", async () => {
    const store = sqlThreadStore(db);
    await expect(store.stamp(randomUUID())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.stamp("x' or '1'='1")).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('takes an id only as a thread id, never a path or SQL, and leaves out forged lines and headers', async () => {
    const store = sqlThreadStore(db);
    for (const id of ['../../etc/passwd', "x' or '1'='1", '']) {
      expect(await refusal(store.read(id))).toMatch(/^INVALID_INPUT: .* is not a thread id/);
      expect(await refusal(store.reopen(id, resumed))).toMatch(/^INVALID_INPUT/);
      expect(await refusal(store.create(header(id)))).toMatch(/^INVALID_INPUT/);
    }
    const id = randomUUID();
    const writer = await store.create(header(id));
    await writer.append({ type: 'turn', turn: 1, text: 'real' });
    await writer.close();
    // Rows written by something else: not JSON, a turn without its text, a second header, a line of another type.
    const forged = ['{"type":"turn","turn":2,"te', '{"type":"turn","turn":2}', JSON.stringify(header(id, { client: 'mallory' })), '{"type":"shell","command":"rm -rf /"}', '"a string"'];
    for (const [i, line] of forged.entries()) await db.query('insert into thread_lines (thread_id, seq, line) values ($1, $2, $3)', [id, 10 + i, line]);
    await db.query('update threads set lines = 20 where id = $1', [id]);
    expect(await store.read(id)).toEqual([expect.objectContaining({ type: 'thread', client: 'local' }), { type: 'turn', turn: 1, text: 'real' }]);

    // A thread whose header names another thread (or no thread) is not listed, and has no header.
    const other = randomUUID();
    await db.query("insert into threads (id, client, directive, header, last_line, lines, bytes, written_at) values ($1, 'local', 'd', $2, $2, 1, 10, now())", [other, JSON.stringify(header(randomUUID()))]);
    expect((await store.list()).map((t) => t.header.id)).not.toContain(other);
    expect(await refusal(store.readHeader(other))).toMatch(/^NOT_FOUND/);
  });

  it('lists the most recently written first, at most as many as asked for (the admin API pages on that)', async () => {
    const store = sqlThreadStore(db);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const writers: ThreadWriter[] = [];
    for (const id of [a, b, c]) writers.push(await store.create(header(id)));
    await writers[0]?.append({ type: 'turn', turn: 1, text: 'a goes on' });
    for (const w of writers) await w.close();
    expect((await store.list(2)).map((t) => t.header.id)).toEqual([a, c]);
    expect((await store.list(3)).map((t) => t.header.id)).toEqual([a, c, b]);
  });
});
