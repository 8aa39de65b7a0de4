/**
 * The normalized chat types every provider adapter speaks. The gateway's protocol edges map
 * their clients' bodies to these and back; the adapters map them to each upstream's wire format.
 */

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /**
   * A `tool` message with this id answers the native call of that id in an earlier assistant
   * message's `toolCalls`; without it, it is a result the upstream never asked for natively (an
   * intent's) and goes up as user text.
   */
  toolCallId?: string;
  /** A native result the client marked as failed (Anthropic `is_error`). */
  isError?: boolean;
  /** Assistant only: the client's native tool calls this message made (OpenAI `tool_calls`, Anthropic `tool_use`). */
  toolCalls?: NativeToolCall[];
  name?: string;
}

/** A native function call, made by the upstream model for the client to run. */
export interface NativeToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text, as OpenAI sends them (Anthropic's `input` object is serialized). */
  arguments: string;
}

/** One of the client's own tools (OpenAI `tools[].function`, Anthropic `tools[]`), as the upstream is told about it. */
export interface ClientTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments (an object schema); `{"type": "object"}` when the client gave none. */
  parameters: Record<string, unknown>;
  /** OpenAI's strict schema adherence; Anthropic upstreams are not told. */
  strict?: boolean;
}

/** Which tool the model must use: OpenAI's `tool_choice` / Anthropic's `tool_choice.type` (`required` is Anthropic's `any`). */
export type ClientToolChoice = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

/**
 * The client's own tools, sent upstream beside the intent instructions. The model's native
 * calls of them come back to the client to run; the gateway never runs them.
 */
export interface ClientTools {
  tools: ClientTool[];
  choice?: ClientToolChoice;
  /** False: at most one call a turn (OpenAI `parallel_tool_calls: false`, Anthropic `disable_parallel_tool_use: true`). */
  parallel?: boolean;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  stop?: string[];
  /** The client's own tools (absent: none). Every edge maps its protocol's fields here; the adapters map them back. */
  clientTools?: ClientTools;
  /**
   * Set on a side request the gateway makes itself (the resolver's fallback model, with the
   * candidates as `clientTools`), not a client's turn. Sent upstream like any request; the
   * offline demo model answers it from its recorded calls.
   */
  sideRequest?: boolean;
  /**
   * The client's original body, passed through for fields we do not model. Fields the adapter
   * sets itself (model, messages, stream, max tokens, temperature, stop, system, tools and tool
   * choice of either protocol) are ignored here.
   */
  extra?: Record<string, unknown>;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export interface ChatUsage {
  inputTokens?: number;
  outputTokens?: number;
  /**
   * Some of the numbers are the gateway's estimate from the text (budgets/token-estimate.ts), not
   * the upstream's count: it sent none, or the stream was cut before it did.
   */
  estimated?: boolean;
}

export type ChatEvent =
  | { type: 'start'; id: string; model: string }
  | { type: 'text'; text: string }
  /** A complete native tool call (sent once its arguments are whole, before `finish`). */
  | { type: 'tool_call'; call: NativeToolCall }
  | { type: 'finish'; reason: FinishReason; usage?: ChatUsage };

export type StartEvent = ChatEvent & { type: 'start' };
export type FinishEvent = ChatEvent & { type: 'finish' };

export interface ChatCompletion {
  id: string;
  model: string;
  text: string;
  /** The native tool calls of the answer, in order (absent: none). */
  toolCalls?: NativeToolCall[];
  finish: FinishEvent;
}

export interface ChatProvider {
  readonly kind: 'openai' | 'anthropic' | 'demo';
  /** Exactly one `start` first, then `text` deltas and `tool_call`s, then exactly one `finish`; errors are thrown by the iterator. */
  stream(request: ChatRequest, signal?: AbortSignal): AsyncIterable<ChatEvent>;
  complete(request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion>;
  /** Closes the provider's own HTTP client (not an injected one); later calls fail. */
  close(): Promise<void>;
}

/** Where one request's model is served: the provider of the upstream that routes it. */
export interface Route {
  provider: ChatProvider;
  /** The upstream's name, for logs and errors. */
  upstream: string;
  /** The model id to send upstream. */
  model: string;
}
