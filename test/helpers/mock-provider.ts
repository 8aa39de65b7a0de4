import type { ChatCompletion, ChatEvent, ChatProvider, ChatRequest, ChatUsage, FinishReason, NativeToolCall } from '../../src/llm/types.js';

/**
 * A TEST DOUBLE of a paid upstream model API, never a product provider (the offline demo model is
 * src/llm/demo-provider.ts). It implements ChatProvider in-process, after vercel/ai's
 * MockLanguageModelV3: each request gets the next turn the test scripted, and is recorded with
 * its signal, so a test of the agent loop asserts what went upstream without an HTTP server.
 */
export interface MockTurn {
  /** Text deltas, one `text` event each: split an intent across them to test the scanner. */
  text?: string[];
  /** Native calls of the client's tools, sent after the text. */
  toolCalls?: NativeToolCall[];
  /** Sent with the finish; absent, the finish has none (the loop then estimates). */
  usage?: ChatUsage;
  /** Default `stop`, or `tool_calls` when the turn has native calls. */
  finish?: FinishReason;
  /** Thrown by the iterator after the text, as an upstream that fails mid-stream (no finish). */
  error?: unknown;
  /** Thrown before any event, as an upstream that refuses the request (a 429, an unknown model). */
  refuse?: unknown;
  /** After the text the stream waits until the request's signal aborts, then throws its reason: an upstream that stalls. */
  stall?: boolean;
}

/** One request the mock got, as the caller sent it. */
export interface MockRequest {
  request: ChatRequest;
  signal: AbortSignal | undefined;
  /**
   * How its stream ended: `finished` (read to its end), `failed` (a scripted error or refusal),
   * `aborted` (its signal fired), `returned` (the reader stopped early); undefined while open.
   */
  ended?: 'finished' | 'failed' | 'aborted' | 'returned';
}

export interface MockProvider extends ChatProvider {
  /** Every request, in order. */
  readonly requests: MockRequest[];
  /** Answers every request with this turn once the queue is empty. */
  replyAlways(turn: MockTurn): void;
}

/** The next queued turn for each request; a request with none left fails the test with what it was asked. */
export function createMockProvider(...turns: MockTurn[]): MockProvider {
  const queue = [...turns];
  let always: MockTurn | undefined;
  let closed = false;
  const requests: MockRequest[] = [];

  const next = (request: ChatRequest, signal: AbortSignal | undefined): { turn: MockTurn; record: MockRequest } => {
    if (closed) throw new Error('mock provider: used after close()');
    const record: MockRequest = { request: structuredClone(request), signal };
    requests.push(record);
    const turn = queue.shift() ?? always;
    if (turn === undefined) throw new Error(`mock provider: request ${requests.length} has no scripted turn; its last message was ${JSON.stringify(request.messages.at(-1)?.content)}`);
    return { turn, record };
  };

  async function* events(turn: MockTurn, record: MockRequest, signal: AbortSignal | undefined): AsyncGenerator<ChatEvent> {
    let done = false;
    try {
      if (turn.refuse !== undefined) throw turn.refuse;
      yield { type: 'start', id: `mock-${requests.length}`, model: record.request.model };
      for (const text of turn.text ?? []) {
        // A real stream's chunks arrive in later macrotasks: the loop's tool work runs between them.
        await new Promise((resolve) => setImmediate(resolve));
        signal?.throwIfAborted();
        yield { type: 'text', text };
      }
      if (turn.error !== undefined) throw turn.error;
      if (turn.stall) await aborted(signal);
      for (const call of turn.toolCalls ?? []) yield { type: 'tool_call', call };
      const reason = turn.finish ?? ((turn.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');
      yield { type: 'finish', reason, ...(turn.usage ? { usage: turn.usage } : {}) };
      done = true;
    } catch (error) {
      record.ended = signal?.aborted ? 'aborted' : 'failed';
      throw error;
    } finally {
      record.ended ??= done ? 'finished' : 'returned';
    }
  }

  return {
    kind: 'openai',
    requests,
    replyAlways: (turn) => void (always = turn),
    stream(request, signal) {
      const { turn, record } = next(request, signal);
      return events(turn, record, signal);
    },
    async complete(request, signal): Promise<ChatCompletion> {
      const { turn, record } = next(request, signal);
      let text = '';
      const toolCalls: NativeToolCall[] = [];
      let finish: ChatCompletion['finish'] | undefined;
      for await (const event of events(turn, record, signal)) {
        if (event.type === 'text') text += event.text;
        else if (event.type === 'tool_call') toolCalls.push(event.call);
        else if (event.type === 'finish') finish = event;
      }
      return { id: `mock-${requests.length}`, model: request.model, text, ...(toolCalls.length > 0 ? { toolCalls } : {}), finish: finish ?? { type: 'finish', reason: 'other' } };
    },
    async close() {
      closed = true;
    },
  };
}

/** Settles (by throwing the signal's reason) once the signal aborts; never without one. */
function aborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal === undefined) return;
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
