import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDemoProject } from '../helpers/demo-project.js';
import { startKiwiServe, type KiwiServeProcess } from '../helpers/kiwi-serve-process.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { serveGateway } from '../helpers/serve-gateway.js';

/**
 * `kiwi serve` on the embedded database, killed with SIGKILL while 8 clients chat with it: every
 * chat answered before the gateway acknowledged its write (its `/metrics` counted it completed)
 * is in the journal after a restart, completed; the chats answered after the last
 * acknowledgement may be lost or end failed, at most those of the batch window (docs/replicas.md).
 * The upstream is a local server replaying a recorded stream.
 */

let root: string;
let llm: ReplayLlmServer;
let first: KiwiServeProcess | undefined;

beforeAll(async () => {
  llm = await startReplayLlmServer();
  llm.reply(openAiStream(['Hello', ' from', ' the', ' model.']));
  root = copyDemoProject('kiwi-kill-');
  writeFileSync(path.join(root, '.ai', 'config', 'gateway.yaml'), `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\n`);
});

afterAll(async () => {
  first?.child.kill('SIGKILL');
  await llm?.close();
  rmSync(root, { recursive: true, force: true });
});

/** One streamed chat read to its end: its execution id. */
async function chat(url: string, n: number): Promise<string> {
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `chat ${n}` }] }) });
  const body = await res.text();
  if (res.status !== 200 || !body.includes('[DONE]')) throw new Error(`chat ${n}: ${res.status} ${body.slice(0, 300)}`);
  return res.headers.get('x-kiwi-execution-id') as string;
}

/** The chats the gateway says it has written as completed (its /metrics, which writes what it holds first). */
async function acknowledged(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { accept: 'text/plain' } })).text();
  const found = /^rebuno_executions_total\{status="completed"\} (\d+)$/m.exec(text);
  return Number(found?.[1] ?? 0);
}

describe('a gateway killed with SIGKILL under load', () => {
  it('keeps every chat whose write it acknowledged; loses at most those answered since', async () => {
    first = await startKiwiServe(root);
    const url = first.url;
    let n = 0;
    const answered: string[] = [];
    let killed = false;
    // 8 clients, each chatting until the gateway is gone.
    const clients = Array.from({ length: 8 }, async () => {
      while (!killed) {
        try {
          answered.push(await chat(url, n++));
        } catch (error) {
          if (!killed) throw error;
        }
      }
    });
    // Acknowledged: every chat answered before a look at /metrics that counts them all.
    await expect.poll(() => answered.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(50);
    const before = answered.slice();
    await expect.poll(() => acknowledged(url), { timeout: 30_000 }).toBeGreaterThanOrEqual(before.length);
    // Then more, unacknowledged, and the kill in the middle of them.
    await expect.poll(() => answered.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(before.length + 50);
    killed = true;
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first?.child.once('exit', resolve));
    await Promise.all(clients);
    const after = answered.slice(before.length);

    const second = await serveGateway(root);
    try {
      const statusOf = async (id: string): Promise<string | undefined> => {
        const res = await fetch(`${second.server.url}/v0/executions/${id}`);
        return res.status === 404 ? undefined : ((await res.json()) as { status: string }).status;
      };
      for (const id of before) expect(await statusOf(id), id).toBe('completed');
      const found = await Promise.all(after.map(statusOf));
      // A chat answered after the last acknowledgement is there completed; or, written while it
      // ran and its end not yet, failed with the gateway (as at any restart); or not there at all.
      for (const status of found) expect([undefined, 'completed', 'failed']).toContain(status);
      const count = (status: string | undefined) => found.filter((s) => s === status).length;
      console.log(`SIGKILL under load: ${before.length} chats acknowledged, all kept; of ${after.length} answered since, ${count('completed')} kept, ${count('failed')} failed, ${count(undefined)} lost`);
    } finally {
      await second.close();
    }
  }, 240_000);
});
