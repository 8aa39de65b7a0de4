import type { ChatMessage, ChatUsage } from '../llm/types.js';
import { estimatePromptTokens, tokensOfBytes } from './token-estimate.js';

/**
 * What one upstream turn used, counted while it streams: its prompt when it is sent, its output
 * as it arrives. The upstream's own numbers win where it reports them (usually in its last
 * chunk); what it does not report, or what a cut stream never got to, is the estimate, and the
 * usage then says `estimated: true`. So a turn is charged whatever way it ends.
 */
export interface TurnUsage {
  /** Text the upstream streamed, or a native call's name and arguments. */
  output(text: string): void;
  /** The upstream's report (its finish's usage), when it sent one. */
  reported(usage: ChatUsage | undefined): void;
  /** The turn's usage so far. */
  usage(): ChatUsage;
}

export function countTurn(prompt: readonly ChatMessage[]): TurnUsage {
  const input = estimatePromptTokens(prompt);
  // Bytes are summed and rounded once at the end: rounding up each chunk would count too much.
  let bytes = 0;
  let report: ChatUsage | undefined;
  return {
    output(more) {
      bytes += Buffer.byteLength(more, 'utf8');
    },
    reported(usage) {
      report = usage;
    },
    usage() {
      const inputTokens = report?.inputTokens ?? input;
      const outputTokens = report?.outputTokens ?? tokensOfBytes(bytes);
      const estimated = report?.inputTokens === undefined || report.outputTokens === undefined;
      return { inputTokens, outputTokens, ...(estimated ? { estimated: true } : {}) };
    },
  };
}
