import type { PrefetchDispatcher } from './dispatcher.js';
import { createSnapshotter, type SnapshotterOptions } from './snapshotter.js';

export interface PrefetchSessionDeps {
  dispatcher: PrefetchDispatcher;
  snapshotter?: SnapshotterOptions;
  /** The tool called last before this request, if the caller knows it (default none). */
  previousTool?: string | null;
}

export interface PrefetchSession {
  /** Agent text outside intents, as it streams. */
  onText(text: string): void;
  /**
   * An intent closed: what follows predicts the next one. Predictions still running are
   * cancelled (their text is behind us); speculative calls keep running, since the intent that
   * just closed is the one they may answer. `resolvedTool`, when known, becomes the previous
   * tool for the transition prior; `onResolved` can give it later.
   */
  onIntent(intent: string, resolvedTool?: string): void;
  /**
   * The intent being written, so far. Its text is the best prediction of itself: snapshots of it
   * (every ~24 new characters, and when a quoted value closes) are prefetched like the others.
   */
  onIntentProgress(partial: string): void;
  onResolved(tool: string): void;
  /** The request is over: everything in flight is cancelled, finished entries stay for their TTL. */
  end(): void;
}

const MIN_PARTIAL_CHARS = 16;
const PARTIAL_EVERY_CHARS = 24;

/** Whether the text after `from` holds a quote that closes a value (an even count of that quote so far). */
function closesQuote(text: string, from: number): boolean {
  const at = Math.max(text.lastIndexOf('"'), text.lastIndexOf("'"), text.lastIndexOf('`'));
  if (at < from) return false;
  const quote = text[at] as string;
  return text.split(quote).length % 2 === 1;
}

/** The per-request glue between the agent loop's stream and the dispatcher. */
export function createPrefetchSession(deps: PrefetchSessionDeps): PrefetchSession {
  const snapshotter = createSnapshotter(deps.snapshotter);
  let previousTool = deps.previousTool ?? null;
  let ended = false;
  let partialSeen = 0;
  let partialCount = 0;

  return {
    onText(text) {
      if (ended) return;
      const snapshot = snapshotter.push(text);
      if (snapshot) deps.dispatcher.onSnapshot(snapshot, previousTool);
    },
    onIntentProgress(partial) {
      if (ended) return;
      const query = partial.trim();
      const grown = query.length - partialSeen;
      // A value that just closed ("…'2009-09-23'") is worth a snapshot: the arguments may be complete now.
      const closedValue = grown >= 4 && closesQuote(query, partialSeen);
      if (query.length < MIN_PARTIAL_CHARS || (grown < PARTIAL_EVERY_CHARS && !closedValue)) return;
      partialSeen = query.length;
      deps.dispatcher.onSnapshot({ text: query, query, at: ++partialCount }, previousTool);
    },
    onIntent(_intent, resolvedTool) {
      if (ended) return;
      partialSeen = 0;
      snapshotter.reset();
      deps.dispatcher.cancel({ speculations: false });
      if (resolvedTool !== undefined) previousTool = resolvedTool;
    },
    onResolved(tool) {
      previousTool = tool;
    },
    end() {
      if (ended) return;
      ended = true;
      deps.dispatcher.cancel();
    },
  };
}
