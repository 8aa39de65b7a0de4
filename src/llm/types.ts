/**
 * The normalized chat types every provider adapter speaks. The gateway's protocol edges map
 * their clients' bodies to these and back; the adapters map them to each upstream's wire format.
 */

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** OpenAI only: a `tool` message with this id answers a native tool call; without it, it goes up as a user message. */
  toolCallId?: string;
  name?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  stop?: string[];
  /**
   * The client's original body, passed through for fields we do not model. Fields the adapter
   * sets itself (model, messages, stream, max tokens, temperature, stop, system) are ignored here.
   */
  extra?: Record<string, unknown>;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export interface ChatUsage {
  inputTokens?: number;
  outputTokens?: number;
}

export type ChatEvent =
  | { type: 'start'; id: string; model: string }
  | { type: 'text'; text: string }
  | { type: 'finish'; reason: FinishReason; usage?: ChatUsage };

export type StartEvent = ChatEvent & { type: 'start' };
export type FinishEvent = ChatEvent & { type: 'finish' };

export interface ChatCompletion {
  id: string;
  model: string;
  text: string;
  finish: FinishEvent;
}

export interface ChatProvider {
  readonly kind: 'openai' | 'anthropic' | 'demo';
  /** Exactly one `start` first, then `text` deltas, then exactly one `finish`; errors are thrown by the iterator. */
  stream(request: ChatRequest, signal?: AbortSignal): AsyncIterable<ChatEvent>;
  complete(request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion>;
  /** Closes the provider's own HTTP client (not an injected one); later calls fail. */
  close(): Promise<void>;
}
