import type { ChatMessage } from '../llm/types.js';

/**
 * Tokens guessed from text, for when the upstream never says how many it counted: a stream the
 * client cut before the upstream's usage came, or a server that sends no usage at all. A guess
 * that is charged beats a turn that is free; every charge made from it is labelled `estimated`.
 *
 * Why not a real tokenizer: each model family has its own, none ships for the local servers
 * people run, and a budget needs a fair number, not the exact one. About four bytes of UTF-8 a
 * token is what OpenAI and Anthropic both quote for English; counting bytes rather than
 * characters keeps text in other scripts (more tokens a character) from being undercounted.
 */

const BYTES_PER_TOKEN = 4;
/** What chat formats add around each message (role, separators), as OpenAI documents it. */
const MESSAGE_OVERHEAD = 4;
/** The reply's priming at the end of a prompt. */
const PROMPT_OVERHEAD = 3;

export function estimateTokens(text: string): number {
  return tokensOfBytes(Buffer.byteLength(text, 'utf8'));
}

/** The estimate for text of this many UTF-8 bytes (text that came in pieces, counted as it came). */
export function tokensOfBytes(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

/** A prompt's tokens: every message's text and native calls, with the format's overhead. */
export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  let tokens = PROMPT_OVERHEAD;
  for (const m of messages) {
    tokens += MESSAGE_OVERHEAD + estimateTokens(m.content);
    for (const call of m.toolCalls ?? []) tokens += estimateTokens(call.name) + estimateTokens(call.arguments);
  }
  return tokens;
}
