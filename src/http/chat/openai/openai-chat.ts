import type { ChatProtocol } from '../chat-protocol.js';
import { openAiErrorBody } from '../errors-out.js';
import { parseOpenAiChat } from './openai-body.js';
import { createOpenAiCollector, createOpenAiStreamEncoder } from './openai-encode.js';

/** `POST /v1/chat/completions`: the OpenAI Chat Completions edge (body, stream, errors). */
export const openAiChatProtocol: ChatProtocol = {
  name: 'openai',
  parse: parseOpenAiChat,
  errorBody: openAiErrorBody,
  streamEncoder: createOpenAiStreamEncoder,
  collector: createOpenAiCollector,
};
