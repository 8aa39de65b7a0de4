import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import { createHttpClient, type HttpClient } from '../../src/primitives/http-client.js';
import { loadRecording, startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { drain, streamFailure, textOf } from './collect-events.js';

let llm: ReplayLlmServer;
let http: HttpClient;

beforeEach(async () => {
  llm = await startReplayLlmServer();
  http = createHttpClient();
});

afterEach(async () => {
  await http.close();
  await llm.close();
});

const post = (path: string, body = '{"model":"m"}') => http.request({ method: 'POST', url: `${llm.url}${path}`, headers: { 'content-type': 'application/json' }, body });

describe('replay LLM server', () => {
  it('serves a recording byte for byte with its status and headers, and records the request', async () => {
    llm.reply({ recording: 'anthropic-tool-intent', splitBytes: 3 });
    const res = await post('/v1/messages', '{"model":"claude","stream":true}');
    const recorded = loadRecording('anthropic-tool-intent');
    expect(res.status).toBe(200);
    expect(res.headers['request-id']).toBe('req_011CR6p3bW8F4s5rY9tqZ1Xk');
    expect(res.body).toBe(recorded.body);
    const seen = await llm.request(0);
    expect(seen).toMatchObject({ method: 'POST', path: '/v1/messages', body: { model: 'claude', stream: true }, rawBody: '{"model":"claude","stream":true}' });
    expect(seen.headers['content-type']).toBe('application/json');
    expect(await seen.closed).toBe('finished');
  });

  it('serves a named recording only on its provider path, keeping the answer for the right request', async () => {
    llm.replyOnce('openai-plain');
    const wrong = await post('/v1/messages');
    expect(wrong.status).toBe(404);
    expect(JSON.parse(wrong.body)).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(wrong.body).toContain('is served at POST /v1/chat/completions');
    expect((await post('/v1/chat/completions')).status).toBe(200);
    expect((await post('/v1/chat/completions')).body).toContain('no answer was set');
  });

  it('answers replyOnce answers in order before the standing one', async () => {
    llm.reply('openai-complete');
    llm.replyOnce({ status: 503 }, 'openai-429');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post('/v1/chat/completions')).status);
    expect(statuses).toEqual([503, 429, 200]);
  });

  it('fails with a status in the shape of the provider the path belongs to', async () => {
    llm.reply({ status: 529 });
    expect(JSON.parse((await post('/v1/messages')).body)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(JSON.parse((await post('/v1/chat/completions')).body)).toMatchObject({ error: { type: 'server_error' } });
  });

  it('can reset the connection mid-stream, which the provider reports as UPSTREAM_HTTP', async () => {
    const provider = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, http });
    llm.reply({ recording: 'openai-plain', resetAfterChunks: 3 });
    const { events, error } = await streamFailure(provider.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), 'UPSTREAM_HTTP');
    expect(textOf(events)).toBe('The capital');
    expect(error.message).toContain('while reading the response body');
    await provider.close();
  });

  it('cuts a stalled exchange on close()', async () => {
    const provider = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, http });
    llm.reply({ recording: 'openai-plain', stallAfterChunks: 1 });
    const reading = drain(provider.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    const seen = await llm.request(0);
    await llm.close();
    expect(await seen.closed).toBe('cut');
    expect((await reading).error).toMatchObject({ code: 'UPSTREAM_HTTP' });
  });
});
