import { NO_TRACING, type Tracing } from '../contracts/tracing.js';
import { KiwiError } from '../base/errors.js';
import { createOtelTracing } from '../telemetry/otel-tracing.js';
import { KIWI_VERSION } from '../base/version.js';

/**
 * OpenTelemetry traces as the standard `OTEL_*` variables configure them: off unless an OTLP
 * endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` with
 * `/v1/traces` added), and off when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER` names
 * anything but `otlp`. Sent over OTLP/HTTP as JSON, in batches (`OTEL_BSP_SCHEDULE_DELAY` ms,
 * default 5000), with `OTEL_EXPORTER_OTLP_HEADERS` / `…_TRACES_HEADERS` (`k=v,k2=v2`) and
 * `OTEL_SERVICE_NAME` (default kiwi-gateway). Off, tracing costs nothing but a call.
 */
export interface GatewayTracing {
  tracing: Tracing;
  /** Where spans go, for the banner; undefined when off. */
  endpoint: string | undefined;
  /** Sends what is batched, then stops. */
  close(): Promise<void>;
}

export function tracingFromEnv(env: Readonly<Record<string, string | undefined>>): GatewayTracing {
  const off: GatewayTracing = { tracing: NO_TRACING, endpoint: undefined, close: async () => undefined };
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return off;
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase();
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp') return off;
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim() || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (endpoint === undefined || endpoint === '') return off;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new KiwiError('INVALID_INPUT', `OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL (${JSON.stringify(endpoint.slice(0, 200))}); e.g. http://127.0.0.1:4318`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KiwiError('INVALID_INPUT', `the OTLP endpoint must be http:// or https:// (got ${url.protocol}); traces are sent over OTLP/HTTP`);
  const delay = Number(env['OTEL_BSP_SCHEDULE_DELAY'] ?? 5000);
  const otel = createOtelTracing({
    endpoint: url.href,
    headers: { ...parseHeaders(env['OTEL_EXPORTER_OTLP_HEADERS']), ...parseHeaders(env['OTEL_EXPORTER_OTLP_TRACES_HEADERS']) },
    serviceName: env['OTEL_SERVICE_NAME']?.trim() || 'kiwi-gateway',
    serviceVersion: KIWI_VERSION,
    batchDelayMs: Number.isInteger(delay) && delay >= 0 ? delay : 5000,
  });
  return { tracing: otel, endpoint: `${url.origin}${url.pathname}`, close: () => otel.close() };
}

/** `k=v,k2=v2` with percent-encoded values, as the OpenTelemetry spec writes headers. */
function parseHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // a malformed escape: that header is left out
    }
  }
  return out;
}
