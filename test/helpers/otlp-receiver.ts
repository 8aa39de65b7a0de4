import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request an OTLP/HTTP exporter sent: its path, content type and body as text. */
export interface OtlpRequest {
  path: string;
  contentType: string;
  body: string;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>, the exporter's endpoint base (`/v1/traces` is under it). */
  url: string;
  /** Every request received, in order. */
  requests: OtlpRequest[];
  close(): Promise<void>;
}

/** A local stand-in for an OpenTelemetry collector: it keeps what it is sent and answers 200. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
