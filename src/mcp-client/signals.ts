/** Waits for a shared promise, but lets one caller stop waiting without cancelling it for the others. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined, onAbort: () => Error): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** A per-call signal that follows the caller's; dispose() unhooks it so long-lived caller signals do not collect listeners. */
export function linkSignal(signal: AbortSignal | undefined): { signal: AbortSignal; dispose(): void } | undefined {
  if (signal === undefined) return undefined;
  const controller = new AbortController();
  const abort = () => controller.abort(signal.reason);
  if (signal.aborted) abort();
  else signal.addEventListener('abort', abort, { once: true });
  return { signal: controller.signal, dispose: () => signal.removeEventListener('abort', abort) };
}
