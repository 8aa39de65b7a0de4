import { request, type Dispatcher } from 'undici';

/**
 * The bench's HTTP client: one chat request, timed from just before it is sent to the first
 * content token (the first SSE `data:` whose delta carries non-empty content, parsed from the
 * byte stream as it arrives) and to the end of the response body. In `fast` mode parsing stops
 * at the first token, so that the client's own work stays small and alike for both paths.
 */

const MAX_STREAM_BYTES = 16 * 1024 * 1024;

export interface TimedStream {
  /** To the response's status line and headers. */
  headersMs: number;
  firstTokenMs: number;
  totalMs: number;
  bytes: number;
  /** `full` mode: the content text and every `kiwi` field, in order. */
  content?: string;
  kiwi?: unknown[];
}

interface Chunk {
  choices?: { delta?: { content?: unknown } }[];
  kiwi?: unknown;
}

async function failed(res: Dispatcher.ResponseData, url: string): Promise<never> {
  const text = (await res.body.text()).slice(0, 500);
  throw new Error(`POST ${url} answered ${res.statusCode}: ${text}`);
}

export async function timeStream(dispatcher: Dispatcher, url: string, body: string, mode: 'fast' | 'full'): Promise<TimedStream> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body, dispatcher });
  const headersMs = performance.now() - t0;
  if (res.statusCode !== 200) await failed(res, url);
  const decoder = new TextDecoder();
  let buf = '';
  let tail = '';
  let bytes = 0;
  let firstTokenMs = -1;
  let content = '';
  const kiwi: unknown[] = [];
  let parsing = true;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_STREAM_BYTES) {
      res.body.destroy();
      throw new Error(`POST ${url}: the stream passed ${MAX_STREAM_BYTES} bytes; the bench expects short answers`);
    }
    const text = decoder.decode(chunk, { stream: true });
    tail = (tail + text).slice(-64);
    if (!parsing) continue;
    buf += text;
    let end: number;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, end);
      buf = buf.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') continue;
        const c = JSON.parse(data) as Chunk;
        if (c.kiwi !== undefined) kiwi.push(c.kiwi);
        const delta = c.choices?.[0]?.delta?.content;
        if (typeof delta === 'string' && delta !== '') {
          if (firstTokenMs < 0) firstTokenMs = performance.now() - t0;
          content += delta;
        }
      }
      if (mode === 'fast' && firstTokenMs >= 0) {
        parsing = false;
        break;
      }
    }
  }
  const totalMs = performance.now() - t0;
  if (!tail.endsWith('data: [DONE]\n\n')) throw new Error(`POST ${url}: the stream ended without data: [DONE] (last bytes ${JSON.stringify(tail)})`);
  if (firstTokenMs < 0) throw new Error(`POST ${url}: the stream carried no content token`);
  return mode === 'full' ? { headersMs, firstTokenMs, totalMs, bytes, content, kiwi } : { headersMs, firstTokenMs, totalMs, bytes };
}

export interface TimedJson {
  totalMs: number;
  bytes: number;
}

/** A non-streamed request: time to the whole body, parsed (a client cannot use it before that). */
export async function timeJson(dispatcher: Dispatcher, url: string, body: string): Promise<TimedJson> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher });
  if (res.statusCode !== 200) await failed(res, url);
  const text = await res.body.text();
  const parsed = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] };
  const totalMs = performance.now() - t0;
  if (typeof parsed.choices?.[0]?.message?.content !== 'string') throw new Error(`POST ${url}: the response has no choices[0].message.content`);
  return { totalMs, bytes: Buffer.byteLength(text) };
}
