import { isKiwiError, KiwiError } from '../base/errors.js';

export type Stop = 'client' | 'duration' | 'consumer' | 'failure';

/** Why a request's work is cancelled, and the signal everything it starts runs under. */
export interface LoopStop {
  readonly signal: AbortSignal;
  /** Why it was stopped; undefined while it runs. */
  readonly why: Stop | undefined;
  /** Cancels everything in flight (the upstream, the tools), once: the first reason stays; `said` is what the tools' signal is aborted with. */
  halt(why: Stop, said?: KiwiError): void;
  /** The request is over: its timer and its listener on the client's signal go. */
  dispose(): void;
}

/** Stops a request when its client aborts or its duration runs out. */
export function createLoopStop(client: AbortSignal | undefined, maxDurationMs: number): LoopStop {
  const controller = new AbortController();
  let why: Stop | undefined;
  const halt = (reason: Stop, said?: KiwiError): void => {
    if (controller.signal.aborted) return;
    why = reason;
    controller.abort(said ?? new KiwiError('TOOL_CANCELLED', `the agent loop was stopped (${reason})`));
  };
  // A client that says why (the gateway stopping) has its reason passed on to the tools, whose records keep it.
  const onClientAbort = (): void => halt('client', isKiwiError(client?.reason) ? client.reason : undefined);
  client?.addEventListener('abort', onClientAbort, { once: true });
  const timer = setTimeout(() => halt('duration'), maxDurationMs);
  return {
    signal: controller.signal,
    get why() {
      return why;
    },
    halt,
    dispose() {
      clearTimeout(timer);
      client?.removeEventListener('abort', onClientAbort);
    },
  };
}
