import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracedResolve } from '../../src/app/traced-loop.js';
import type { Resolution } from '../../src/resolver/types.js';
import { createOtelTracing, type OtelTracing } from '../../src/telemetry/otel-tracing.js';

/**
 * Spans carry what the gateway was asked (an intent, a reason, an error), and a collector is read
 * by more people than the audit log: what they carry is redacted with the audit log's rules
 * (issue 39: `kiwi.intent` held a key the audit log redacts). A local OTLP/HTTP receiver keeps
 * what it is sent, as in otel-traces.int.test.ts.
 */

const KEY = `kiwi_0123abcd_${'Q'.repeat(43)}`;
const ENV = 'DB_PASSWORD=hunter2hunter2';

let receiver: Server;
let tracing: OtelTracing;
const bodies: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  tracing = createOtelTracing({ endpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`, serviceName: 'kiwi-test', serviceVersion: '0' });
});

afterAll(async () => {
  await tracing?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('spans', () => {
  it("carry an intent's, a reason's and an error's secrets redacted", async () => {
    const unresolved = { status: 'unresolved', reason: `no tool takes ${ENV}`, confidence: 0, candidates: [], notes: [], timings: {} } as unknown as Resolution;
    // The key sits past the 512th character once the intent is cut: redacted before the cut, its shape is whole.
    const intent = `${'x'.repeat(490)} ship ${KEY} with ${ENV}`;
    await tracedResolve(async () => unresolved, tracing)(intent, { context: '' });
    await expect(tracing.span('kiwi.tool.run', { 'kiwi.note': `Authorization: Bearer ${KEY}` }, () => Promise.reject(new Error(`failed with ${ENV}`)))).rejects.toThrow();
    await tracing.flush();
    const sent = bodies.join('\n');
    expect(sent).toContain('kiwi.intent.resolve');
    expect(sent).toContain('[redacted:');
    expect(sent).not.toContain('hunter2hunter2');
    expect(sent).not.toContain('QQQQQQQQQQ');
  });
});
