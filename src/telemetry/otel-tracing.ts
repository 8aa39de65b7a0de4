import { context, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { SpanAttributes, StartedSpan, Tracing } from '../contracts/tracing.js';
import { redactSecrets } from '../audit/redact-secrets.js';

/**
 * contracts/tracing.ts on OpenTelemetry: spans batched and sent over OTLP/HTTP (JSON) to
 * `endpoint`. The running span follows the code through awaits (AsyncLocalStorage); a streamed
 * answer, pulled by whoever reads the response, is put back in its request's context at every
 * pull (`spanIterable`).
 *
 * Spans leave the machine for a collector that more people read than the audit log: every text
 * they carry (an intent, a reason, a path, an error's message and stack) is redacted with the
 * audit log's rules first, here, so no caller of `Tracing` can send a secret the audit log hides.
 */
export interface OtelTracing extends Tracing {
  /** Sends what is batched. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface OtelOptions {
  /** Where traces go: `…/v1/traces`. */
  endpoint: string;
  headers?: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  /** Longest wait before a batch is sent; default 5000 ms (the OpenTelemetry default). */
  batchDelayMs?: number;
}

export function createOtelTracing(options: OtelOptions): OtelTracing {
  // The context manager is OpenTelemetry's one global; set once per process.
  if (!contextManagerSet) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerSet = true;
  }
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, 'service.version': options.serviceVersion }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: options.endpoint, ...(options.headers ? { headers: options.headers } : {}) }), scheduledDelayMillis: options.batchDelayMs ?? 5000 })],
  });
  const tracer = provider.getTracer('kiwi-gateway', options.serviceVersion);

  /** A span, a child of `parent`'s; ending it with an error records the error and marks the span failed. */
  const open = (name: string, attributes: SpanAttributes, parent: Context): StartedSpan => {
    const span = tracer.startSpan(name, { attributes: clean(attributes) }, parent);
    const ctx = trace.setSpan(parent, span);
    let ended = false;
    return {
      traceId: span.spanContext().traceId,
      setAttributes: (a) => span.setAttributes(clean(a)),
      run: (fn) => context.with(ctx, fn),
      end(error) {
        if (ended) return;
        ended = true;
        if (error !== undefined) {
          const message = redactSecrets(error instanceof Error ? error.message : String(error));
          span.recordException(error instanceof Error ? { name: error.name, message, ...(error.stack === undefined ? {} : { stack: redactSecrets(error.stack) }) } : message);
          span.setStatus({ code: SpanStatusCode.ERROR, message });
        }
        span.end();
      },
    };
  };

  return {
    start: (name, attributes) => open(name, attributes, context.active()),
    async span(name, attributes, fn) {
      const span = open(name, attributes, context.active());
      try {
        const result = await span.run(() => fn(span));
        span.end();
        return result;
      } catch (error) {
        span.end(error);
        throw error;
      }
    },
    spanIterable<T>(name: string, attributes: SpanAttributes, iterable: AsyncIterable<T>): AsyncIterable<T> {
      const parent = context.active();
      return {
        [Symbol.asyncIterator]() {
          const span = open(name, attributes, parent);
          const inner = span.run(() => iterable[Symbol.asyncIterator]());
          return {
            async next() {
              try {
                const step = await span.run(() => inner.next());
                if (step.done === true) span.end();
                return step;
              } catch (error) {
                span.end(error);
                throw error;
              }
            },
            async return(value?: unknown) {
              try {
                return (await span.run(() => inner.return?.(value))) ?? { done: true as const, value: undefined as T };
              } finally {
                span.end();
              }
            },
          };
        },
      };
    },
    traceId() {
      const id = trace.getSpan(context.active())?.spanContext().traceId;
      return id === undefined || /^0+$/.test(id) ? undefined : id;
    },
    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
  };
}

let contextManagerSet = false;

/** OpenTelemetry attributes: undefined values left out, texts redacted. */
function clean(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) {
    if (v === undefined) continue;
    out[k] = typeof v === 'string' ? redactSecrets(v) : Array.isArray(v) ? v.map((s: string) => redactSecrets(s)) : (v as number | boolean);
  }
  return out;
}
