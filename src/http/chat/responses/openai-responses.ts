import type { ChatProtocol } from '../chat-protocol.js';
import { openAiErrorBody } from '../errors-out.js';
import { parseOpenAiResponses } from './responses-body.js';
import { createResponsesCollector, createResponsesStreamEncoder } from './responses-encode.js';

/** `POST /v1/responses`: the OpenAI Responses edge (body, stream, errors); errors in the OpenAI shape. */
export const openAiResponsesProtocol: ChatProtocol = {
  name: 'openai',
  parse: parseOpenAiResponses,
  errorBody: openAiErrorBody,
  streamEncoder: createResponsesStreamEncoder,
  collector: createResponsesCollector,
};
