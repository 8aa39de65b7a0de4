import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { copyDemoProject } from '../helpers/demo-project.js';
import { startKiwiServe, type KiwiServeProcess } from '../helpers/kiwi-serve-process.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { postgresDatabase } from '../helpers/run-resources.js';

/**
 * Two `kiwi serve` processes on one project and one Postgres (DATABASE_URL), as replicas: a thread
 * started through one is listed, read and followed through the other and by `kiwi threads`; it is
 * not resumed elsewhere while its replica lives, and is once that replica is killed (SIGKILL).
 */
describe.skipIf(!postgresAvailable())('threads across replicas', () => {
  let root: string;
  let llm: ReplayLlmServer;
  let postgres: PostgresServer;
  let replicas: KiwiServeProcess[] = [];
  const clients: Client[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    [llm, postgres] = await Promise.all([startReplayLlmServer(), postgresDatabase()]);
    root = copyDemoProject('kiwi-thread-replicas-');
    rmSync(path.join(root, '.ai', 'state', 'kernel'), { recursive: true, force: true }); // the kernel is in Postgres
    // A replica silent for 3 s is taken for gone, and lets go of its threads then, instead of 45 s.
    writeFileSync(
      path.join(root, '.ai', 'config', 'gateway.yaml'),
      `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\nmodel_tiers: { balanced: gpt-4o-mini }\nkernel:\n  instance_timeout_ms: 3000\n`,
    );
    env = { DATABASE_URL: postgres.url };
    replicas = await Promise.all([0, 1].map(() => startKiwiServe(root, { env })));
  }, 120_000);

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const r of replicas) r.child.kill('SIGKILL');
    await Promise.allSettled([llm?.close(), postgres?.stop()]);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  type Result = { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text?: string }[] };
  const mcp = async (replica: KiwiServeProcess): Promise<(args: Record<string, unknown>) => Promise<Result>> => {
    const client = new Client({ name: 'thread-replicas', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${replica.url}/mcp`)));
    clients.push(client);
    return async (args) => (await client.callTool({ name: 'execute', arguments: { item_type: 'directive', ...args } })) as Result;
  };
  const kiwi = async (...argv: string[]): Promise<string[]> => {
    const out: string[] = [];
    expect(await runCli([...argv, '--project', root], { env: { PATH: process.env['PATH'], ...env }, cwd: root, io: { out: (l) => out.push(l), err: () => undefined } })).toBe(0);
    return out;
  };

  it('is cancelled through a replica other than the one running it', async () => {
    const [first, second] = replicas as [KiwiServeProcess, KiwiServeProcess];
    const [onFirst, onSecond] = [await mcp(first), await mcp(second)];
    llm.replyOnce({ recording: openAiStream(['Thinking…']), stallAfterChunks: 1 });
    const id = String((await onFirst({ action: 'run', item_id: 'review_changes', async: true, parameters: { focus: 'cancel' } })).structuredContent?.['thread']);
    expect((await onSecond({ action: 'cancel', item_id: id })).structuredContent).toMatchObject({ thread: id, status: 'cancelling' });
    await expect.poll(async () => (await onSecond({ action: 'status', item_id: id })).structuredContent?.['status'], { timeout: 10_000, interval: 200 }).toBe('cancelled');
    // Over: nothing runs it any more, here or there.
    const again = await onSecond({ action: 'cancel', item_id: id });
    expect(again.isError).toBe(true);
    expect(again.content?.[0]?.text).toContain(`thread ${id} is not running`);
  }, 30_000);

  it('is read on every replica while it runs, refused a resume elsewhere until its replica dies, then resumed there', async () => {
    const [first, second] = replicas as [KiwiServeProcess, KiwiServeProcess];
    const [onFirst, onSecond] = [await mcp(first), await mcp(second)];
    // The upstream sends a first chunk and then nothing: the thread runs on the first replica until it dies.
    llm.replyOnce({ recording: openAiStream(['Thinking hard…', ' more']), stallAfterChunks: 2 });
    const started = await onFirst({ action: 'run', item_id: 'review_changes', async: true, parameters: { focus: 'replicas' } });
    const id = String(started.structuredContent?.['thread']);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    expect((await onSecond({ action: 'status', item_id: id })).structuredContent).toMatchObject({ thread: id, directive: 'review_changes', status: 'running', lines: 1 });
    expect((JSON.parse((await kiwi('threads', 'list', '--json'))[0] ?? '[]') as { header: { id: string }; running: boolean }[]).find((t) => t.header.id === id)).toMatchObject({ running: true });
    const refused = await onSecond({ action: 'resume', item_id: id });
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toContain(`thread ${id} is still running (process ${first.child.pid} on `);

    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    // Its hold lapses within the 3 s it was renewed for: the thread shows as cut short, and goes on through the other replica.
    await expect.poll(async () => (await onSecond({ action: 'status', item_id: id })).structuredContent?.['status'], { timeout: 10_000, interval: 200 }).toBe('cut_short');
    llm.replyOnce(openAiStream(['Reviewed, after the crash.']));
    expect((await onSecond({ action: 'resume', item_id: id, parameters: { message: 'the first replica died' } })).structuredContent).toMatchObject({ thread: id, status: 'completed', result: 'Reviewed, after the crash.' });
    const shown = (await kiwi('threads', 'show', id, '--json')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(shown.map((l) => l['type'])).toEqual(['thread', 'resume', 'turn', 'end']);
    expect(shown[0]).toMatchObject({ id, inputs: { focus: 'replicas' } });
    expect(shown[1]).toMatchObject({ message: 'the first replica died' });
    // All of it in Postgres: the replicas share the project folder, but no transcript went there.
    expect(existsSync(path.join(root, '.ai', 'threads'))).toBe(false);
  }, 60_000);
});
