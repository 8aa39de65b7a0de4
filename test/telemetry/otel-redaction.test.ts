import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracedResolve } from '../../src/runs/traced-loop.js';
import type { Resolution } from '../../src/resolver/types.js';
import { createOtelTracing, type OtelTracing } from '../../src/telemetry/otel-tracing.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';

/**
 * Spans carry what the gateway was asked (an intent, a reason, an error), and a collector is read
 * by more people than the audit log: what they carry is redacted with the audit log's rules
 * (issue 39: `kiwi.intent` held a key the audit log redacts). A local OTLP/HTTP receiver keeps
 * what it is sent, as in otel-traces.int.test.ts.
 */

const KEY = `kiwi_0123abcd_${'Q'.repeat(43)}`;
const ENV = 'DB_PASSWORD=hunter2hunter2';

let receiver: OtlpReceiver;
let tracing: OtelTracing;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  tracing = createOtelTracing({ endpoint: `${receiver.url}/v1/traces`, serviceName: 'kiwi-test', serviceVersion: '0' });
});

afterAll(async () => {
  await tracing?.close();
  await receiver?.close();
});

describe('spans', () => {
  it("carry an intent's, a reason's and an error's secrets redacted", async () => {
    const unresolved = { status: 'unresolved', reason: `no tool takes ${ENV}`, confidence: 0, candidates: [], notes: [], timings: {} } as unknown as Resolution;
    // The key sits past the 512th character once the intent is cut: redacted before the cut, its shape is whole.
    const intent = `${'x'.repeat(490)} ship ${KEY} with ${ENV}`;
    await tracedResolve(async () => unresolved, tracing)(intent, { context: '' });
    await expect(tracing.span('kiwi.tool.run', { 'kiwi.note': `Authorization: Bearer ${KEY}` }, () => Promise.reject(new Error(`failed with ${ENV}`)))).rejects.toThrow();
    await tracing.flush();
    const sent = receiver.requests.map((r) => r.body).join('\n');
    expect(sent).toContain('kiwi.intent.resolve');
    expect(sent).toContain('[redacted:');
    expect(sent).not.toContain('hunter2hunter2');
    expect(sent).not.toContain('QQQQQQQQQQ');
  });
});
