import { parseAnthropicMessages } from './anthropic-body.js';
import { createAnthropicCollector, createAnthropicStreamEncoder } from './anthropic-encode.js';
import type { ChatProtocol } from '../chat-protocol.js';
import { anthropicErrorBody } from '../errors-out.js';

/** `POST /v1/messages`: the Anthropic Messages edge (body, stream, errors). */
export const anthropicMessagesProtocol: ChatProtocol = {
  name: 'anthropic',
  parse: parseAnthropicMessages,
  errorBody: anthropicErrorBody,
  streamEncoder: createAnthropicStreamEncoder,
  collector: createAnthropicCollector,
};
