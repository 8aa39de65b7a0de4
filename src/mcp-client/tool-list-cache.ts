import { untilAborted } from './signals.js';
import type { McpToolInfo } from './tool-catalog.js';

/** A server's tool list as the pool keeps it: the list while fresh, and the one fetch under way. */
export interface ToolListCache {
  tools: { list: McpToolInfo[]; fetchedAt: number } | undefined;
  toolsFetch: { version: number; promise: Promise<McpToolInfo[]> } | undefined;
  /** Bumped by `tools/list_changed`, so a listing that started before the notice is not cached as current. */
  toolsVersion: number;
}

/** The cached list while fresh (`force`: never); otherwise one fetch shared by every caller of that list version. */
export async function cachedToolList(
  cache: ToolListCache,
  fetchList: () => Promise<McpToolInfo[]>,
  options: { ttlMs: number; now: () => number; force: boolean; signal: AbortSignal | undefined },
): Promise<{ list: McpToolInfo[]; fetched: boolean }> {
  const { now } = options;
  if (!options.force && cache.tools !== undefined && now() - cache.tools.fetchedAt < options.ttlMs) {
    return { list: cache.tools.list, fetched: false };
  }
  const version = cache.toolsVersion;
  if (options.force || cache.toolsFetch?.version !== version) {
    const promise = fetchList().then((list) => {
      if (cache.toolsVersion === version) cache.tools = { list, fetchedAt: now() };
      return list;
    });
    promise.catch(() => undefined);
    const fetch = { version, promise };
    cache.toolsFetch = fetch;
    void promise
      .finally(() => {
        if (cache.toolsFetch === fetch) cache.toolsFetch = undefined;
      })
      .catch(() => undefined);
  }
  const shared = cache.toolsFetch?.promise;
  if (shared === undefined) throw new Error('unreachable: no tools fetch in flight');
  // The fetch is shared, so one caller's abort must not cancel it for the others.
  const list = await untilAborted(shared, options.signal, () => signalAbortError());
  return { list, fetched: true };
}

// classifyCallError reads `signal.aborted`; this only has to be some non-Kiwi error.
function signalAbortError(): Error {
  return new Error('aborted by the caller');
}
