import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { openSseChannel, type SseChannel } from '../../../src/http/v0/sse-channel.js';

/** An app with one SSE route; `opened` resolves with its channel once a client is connected. */
function sseApp(until?: AbortSignal): { app: Hono; opened: Promise<SseChannel> } {
  let resolve!: (channel: SseChannel) => void;
  const opened = new Promise<SseChannel>((r) => (resolve = r));
  const app = new Hono();
  app.get('/stream', (c) => openSseChannel(c, resolve, until ? { until } : {}));
  return { app, opened };
}

/** Everything the response sends until it ends. */
async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return text;
}

describe('an SSE channel', () => {
  it('ends when the server stops (until aborts), after sending what was queued', async () => {
    const stop = new AbortController();
    const { app, opened } = sseApp(stop.signal);
    const res = await app.request('/stream');
    const channel = await opened;
    expect(channel.send('execution.assigned', { id: 'e-1' }, 7)).toBe(true);
    const all = readAll(res.body as ReadableStream<Uint8Array>);
    stop.abort();
    await channel.closed;
    expect(await all).toBe('retry: 5000\n\nid: 7\nevent: execution.assigned\ndata: {"id":"e-1"}\n\n');
    expect(channel.send('late', {})).toBe(false);
  });

  it('ends at once when the server was already stopping as it opened', async () => {
    const { app, opened } = sseApp(AbortSignal.abort());
    const res = await app.request('/stream');
    await (await opened).closed;
    expect(await readAll(res.body as ReadableStream<Uint8Array>)).toBe('retry: 5000\n\n');
  });

  it('stays open without it until close()', async () => {
    const { app, opened } = sseApp();
    const res = await app.request('/stream');
    const channel = await opened;
    const all = readAll(res.body as ReadableStream<Uint8Array>);
    let ended = false;
    void all.then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(false);
    channel.close();
    expect(await all).toBe('retry: 5000\n\n');
  });
});
