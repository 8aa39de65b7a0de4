/**
 * Spans of what the gateway does (a request, an upstream turn, an intent's resolution, each
 * stage of the tool proxy, a tool run, a kernel write), for OpenTelemetry when it is configured
 * (telemetry/otel-tracing.ts) and for nothing otherwise: NO_TRACING costs a function call. Every
 * layer names this interface; only the telemetry backend knows OpenTelemetry.
 */

export type SpanAttributes = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface Span {
  setAttributes(attributes: SpanAttributes): void;
}

/** A span started by hand, for work that ends later than the call that began it (a streamed response). */
export interface StartedSpan extends Span {
  /** Runs `fn` with this span as the running one: spans started inside are its children. */
  run<T>(fn: () => T): T;
  /** Ends it (with an error, when given); again does nothing. */
  end(error?: unknown): void;
  /** Its trace (32 hex digits), or undefined when nothing is traced. */
  readonly traceId: string | undefined;
}

export interface Tracing {
  start(name: string, attributes: SpanAttributes): StartedSpan;
  /**
   * Runs `fn` in a new span, a child of the one running (or the root of a new trace), ended when
   * `fn` settles; a throw is recorded on the span as its error and thrown on.
   */
  span<T>(name: string, attributes: SpanAttributes, fn: (span: Span) => T | Promise<T>): Promise<T>;
  /** A span around an iteration (a streamed answer): started at the first pull, ended when it ends; each pull runs within it. */
  spanIterable<T>(name: string, attributes: SpanAttributes, iterable: AsyncIterable<T>): AsyncIterable<T>;
  /** The trace the running code is part of (32 hex digits), or undefined. */
  traceId(): string | undefined;
}

const NO_SPAN: StartedSpan = { setAttributes: () => undefined, run: (fn) => fn(), end: () => undefined, traceId: undefined };

export const NO_TRACING: Tracing = {
  start: () => NO_SPAN,
  span: async (_name, _attributes, fn) => fn(NO_SPAN),
  spanIterable: (_name, _attributes, iterable) => iterable,
  traceId: () => undefined,
};
