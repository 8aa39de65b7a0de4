import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';

/**
 * OpenTelemetry traces from the whole gateway to a local OTLP/HTTP receiver (a plain HTTP server
 * that keeps what it is sent, as a collector would receive it): a chat whose intent runs a tool
 * makes one trace, request → chat → upstream turns, the intent's resolution, each stage of the
 * tool proxy and the tool's run; the kernel's writes have spans too; the trace id is in the
 * response's header and the call's audit record.
 */

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

describe('OpenTelemetry traces', () => {
  let receiver: OtlpReceiver;
  let served: DemoGateway;
  /** The spans of every trace export received so far. */
  const spans = (): OtlpSpan[] =>
    receiver.requests
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) => (JSON.parse(r.body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)));

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    served = await serveDemoGateway({ extraEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'kiwi-test' } });
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await receiver?.close();
  });

  it('sends a trace of a chat, from the request down to the tool run, and names it in the response and the audit', async () => {
    served.llm.replyOnce(openAiStream(['Counting: [TOOL: word_count {"path": "README.md"}]']), openAiStream(['Done.']));
    const res = await fetch(`${served.server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count the words' }] }) });
    expect(res.status).toBe(200);
    await res.text();
    const traceId = res.headers.get('x-kiwi-trace-id') ?? '';
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    await expect.poll(() => spans().some((s) => s.traceId === traceId && s.name === 'POST /v1/chat/completions'), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => spans().filter((s) => s.traceId === traceId).length, { timeout: 5000 }).toBeGreaterThan(12);
    const mine = spans().filter((s) => s.traceId === traceId);
    const byId = new Map(mine.map((s) => [s.spanId, s]));
    const named = (name: string) => mine.filter((s) => s.name === name);
    const parentOf = (s: OtlpSpan | undefined) => (s?.parentSpanId ? byId.get(s.parentSpanId) : undefined);

    const root = named('POST /v1/chat/completions');
    expect(root).toHaveLength(1);
    expect(root[0]?.parentSpanId ?? '').toBe('');
    const chat = named('kiwi.chat');
    expect(chat).toHaveLength(1);
    expect(parentOf(chat[0])?.name).toBe('POST /v1/chat/completions');
    expect(named('kiwi.upstream.turn').map((s) => parentOf(s)?.name)).toEqual(['kiwi.chat', 'kiwi.chat']);
    const resolve = named('kiwi.intent.resolve');
    expect(resolve).toHaveLength(1);
    expect(parentOf(resolve[0])?.name).toBe('kiwi.chat');
    const attrs = Object.fromEntries((resolve[0]?.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attrs).toMatchObject({ 'kiwi.intent': 'word_count {"path": "README.md"}', 'kiwi.resolution.decision': 'run', 'kiwi.tool': 'word_count' });
    // The proxy's stages nest, outermost first, and the tool's run is inside the last.
    const chain: string[] = [];
    for (let s = named('kiwi.tool.run')[0]; s !== undefined && s.name !== 'kiwi.chat'; s = parentOf(s)) chain.unshift(s.name);
    expect(chain).toEqual(['kiwi.proxy.audit', 'kiwi.proxy.budget', 'kiwi.proxy.hook_events', 'kiwi.proxy.plan', 'kiwi.proxy.authorize', 'kiwi.proxy.isolation', 'kiwi.proxy.rate_limit', 'kiwi.proxy.hooks', 'kiwi.proxy.approval', 'kiwi.proxy.loop_check', 'kiwi.proxy.checkpoint', 'kiwi.tool.run']);
    await expect.poll(() => spans().some((s) => s.name === 'kiwi.kernel.write'), { timeout: 5000 }).toBe(true);
    expect(receiver.requests.every((r) => r.contentType.startsWith('application/json'))).toBe(true);

    // The audit log writes behind the calls.
    const recorded = async () => (await readAuditTail({ dir: path.join(served.root, '.ai', 'logs', 'audit'), limit: 10 })).find((r) => r.tool === 'word_count')?.trace_id;
    await expect.poll(recorded, { timeout: 5000 }).toBe(traceId);
  }, 60_000);
});
