import type { ChatRequest, ChatUsage } from '../llm/types.js';
import { estimatePromptTokens, estimateTokens } from './token-estimate.js';

/**
 * The most one request is expected to use, held against its client's budget while it runs
 * (budget-holds.ts): its prompt (estimated, with the instructions the gateway adds to it: often
 * more than a short chat's own text) and the output it may ask for — its own `max_tokens`,
 * else `DEFAULT_OUTPUT_TOKENS` — and no more than `limits.max_tokens` when that is set (the
 * configured cap of one request).
 *
 * It is one turn's worth: a request whose agent runs several turns uses more, and is charged for
 * all of it; its later turns are checked against the ledger between turns, as before.
 */

/** The output a request that names no `max_tokens` is held at: the common default output cap of today's upstreams. */
export const DEFAULT_OUTPUT_TOKENS = 4096;

export function requestCap(request: Pick<ChatRequest, 'messages' | 'maxTokens'>, limits: { maxTokens: number }, instructions = ''): ChatUsage {
  const input = estimatePromptTokens(request.messages) + estimateTokens(instructions);
  const output = request.maxTokens ?? DEFAULT_OUTPUT_TOKENS;
  const most = limits.maxTokens > 0 ? limits.maxTokens : Infinity;
  const inputTokens = Math.min(input, most);
  return { inputTokens, outputTokens: Math.min(output, most - inputTokens) };
}
