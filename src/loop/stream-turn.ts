import { createIntentScanner, type IntentScannerOptions, type ScanEvent } from '../intent/intent-scanner.js';
import type { ChatEvent, FinishReason, NativeToolCall } from '../llm/types.js';
import { textTail } from '../base/text-cut.js';
import type { IntentWorker } from './intent-worker.js';
import type { LoopObserver } from './loop-types.js';
import { GATEWAY_CALL_PREFIX, type LoopEvent } from './loop-types.js';
import type { Outbox } from './outbox.js';
import type { TurnCharges } from './turn-charges.js';

/** How much recent conversation the resolver gets as context: the user's request and this turn's text before the intent. */
const MAX_CONTEXT_CHARS = 4000;

/** What one turn wrote, once its stream ended. */
export interface TurnRead {
  /** The whole turn, fed back into the conversation (bounded by the provider's response cap). */
  text: string;
  /** Intents it wrote, each handed to the worker as it closed. */
  intents: number;
  /** Native calls of the client's own tools. */
  native: NativeToolCall[];
  reason: FinishReason;
}

export interface TurnDeps {
  /** The upstream's events of this turn. */
  events: AsyncIterator<ChatEvent>;
  charges: TurnCharges;
  counted: { output(text: string): void };
  outbox: Outbox;
  worker: IntentWorker;
  scanner: IntentScannerOptions;
  /** The user's latest message: with the turn's recent text, the context each intent is resolved in. */
  lastUser: string;
  /** Numbers intents across the whole request. */
  nextIndex(): number;
  newId: () => string;
  observer?: LoopObserver;
  /** Sees each pending read of the upstream, so the loop can wait for it when it stops early. */
  reading(next: Promise<unknown>): void;
  /** The events the request opens with, once the upstream first answered (empty after). */
  started(): LoopEvent[];
}

/**
 * Reads one upstream turn to its end: text goes out as it streams, each intent goes to the worker
 * as soon as it closes (its events join the stream through the outbox), native calls are kept
 * for the client, and the turn is charged when the upstream finishes it.
 */
export async function* streamTurn(deps: TurnDeps): AsyncGenerator<LoopEvent, TurnRead> {
  const { outbox, worker, observer } = deps;
  const scanner = createIntentScanner(deps.scanner);
  const read: TurnRead = { text: '', intents: 0, native: [], reason: 'other' };
  let recent = '';
  const scanned = (events: ScanEvent[]): void => {
    for (const e of events) {
      if (e.type === 'intent') {
        const index = deps.nextIndex();
        read.intents++;
        outbox.push({ type: 'intent', index, text: e.text, raw: e.raw });
        observer?.onIntent(e.text);
        worker.enqueue(index, e.text, resolveContext(deps.lastUser, recent));
      } else {
        const text = e.type === 'text' ? e.text : e.raw;
        outbox.push({ type: 'text', text });
        observer?.onText(text);
      }
      recent = textTail(recent + (e.type === 'text' ? e.text : e.raw), MAX_CONTEXT_CHARS);
    }
  };
  for (;;) {
    const next = deps.events.next();
    deps.reading(next);
    // While no intent is in flight there is nothing to wake for: the cheaper wait.
    const r = worker.busy ? yield* outbox.until(next) : yield* outbox.quietly(next);
    deps.charges.heard();
    yield* deps.started();
    if (r.done) break;
    const event = r.value;
    if (event.type === 'text') {
      deps.counted.output(event.text);
      read.text += event.text;
      scanned(scanner.push(event.text));
      const partial = scanner.openIntent;
      if (partial !== undefined) observer?.onIntentProgress?.(partial);
    } else if (event.type === 'tool_call') {
      deps.counted.output(event.call.name + event.call.arguments);
      // An upstream id that looks like the gateway's would be sent back up as text.
      read.native.push(event.call.id.startsWith(GATEWAY_CALL_PREFIX) ? { ...event.call, id: `call_${deps.newId()}` } : event.call);
    } else if (event.type === 'finish') {
      read.reason = event.reason;
      deps.charges.settle(event.usage);
    }
  }
  scanned(scanner.end());
  return read;
}

function resolveContext(lastUser: string, recent: string): string {
  const user = textTail(lastUser, MAX_CONTEXT_CHARS / 2);
  const turn = textTail(recent, MAX_CONTEXT_CHARS - user.length);
  return user.length > 0 && turn.length > 0 ? `${user}\n\n${turn}` : user + turn;
}
