import { describe, expect, it } from 'vitest';
import { tracingFromEnv } from '../../src/app/tracing-env.js';
import { NO_TRACING } from '../../src/contracts/tracing.js';

describe('traces from the OTEL_* variables', () => {
  it('are off unless an OTLP endpoint is set, and when the SDK or the traces exporter is turned off', () => {
    for (const env of [{}, { OTEL_SERVICE_NAME: 'x' }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, { OTEL_EXPORTER_OTLP_ENDPOINT: '' }]) {
      const traced = tracingFromEnv(env);
      expect(traced.endpoint, JSON.stringify(env)).toBeUndefined();
      expect(traced.tracing).toBe(NO_TRACING);
    }
  });

  it('send to …/v1/traces of the base endpoint, or to the traces endpoint as given', async () => {
    const base = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/', OTEL_TRACES_EXPORTER: 'otlp' });
    expect(base.endpoint).toBe('http://collector:4318/v1/traces');
    const own = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/v1/traces?token=x' });
    expect(own.endpoint).toBe('https://traces.example/otlp/v1/traces');
    await Promise.all([base.close(), own.close()]);
  });

  it('refuse an endpoint that is not an http(s) URL, saying which variable', () => {
    expect(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318 ' })).toThrow(/the OTLP endpoint must be http:\/\/ or https:\/\//);
    expect(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT \/ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL/);
  });
});
