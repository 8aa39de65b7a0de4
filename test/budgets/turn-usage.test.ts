import { describe, expect, it } from 'vitest';
import { requestCap } from '../../src/budgets/request-cap.js';
import { estimatePromptTokens, estimateTokens } from '../../src/budgets/token-estimate.js';
import { countTurn } from '../../src/budgets/turn-usage.js';

const prompt = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'Count the words in README.md, please.' },
];

describe('counting a turn as it streams', () => {
  it("takes the upstream's usage when it reports it, however much text streamed", () => {
    const turn = countTurn(prompt);
    turn.output('a long answer '.repeat(100));
    turn.reported({ inputTokens: 12, outputTokens: 7 });
    expect(turn.usage()).toEqual({ inputTokens: 12, outputTokens: 7 });
  });

  it('estimates what the upstream never reported (no usage, or a stream cut before it), and says so', () => {
    const turn = countTurn(prompt);
    expect(turn.usage()).toEqual({ inputTokens: estimatePromptTokens(prompt), outputTokens: 0, estimated: true });
    turn.output('Hello, ');
    turn.output('wörld'); // the ö is two bytes
    expect(turn.usage()).toEqual({ inputTokens: estimatePromptTokens(prompt), outputTokens: 4, estimated: true });
    turn.reported({ inputTokens: 30 }); // input only: the output is still an estimate
    expect(turn.usage()).toEqual({ inputTokens: 30, outputTokens: 4, estimated: true });
  });

  it('estimates about four bytes of UTF-8 a token, with each message costing its framing', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('abcde')).toBe(2);
    expect(estimateTokens('日本語')).toBe(3); // 9 bytes
    expect(estimatePromptTokens(prompt)).toBe(3 + (4 + estimateTokens('You are terse.')) + (4 + estimateTokens('Count the words in README.md, please.')));
  });
});

describe("a request's cap", () => {
  it("is its prompt and its max_tokens, else 4096 output tokens, at most limits.max_tokens", () => {
    const input = estimatePromptTokens(prompt);
    expect(requestCap({ messages: prompt, maxTokens: 50 }, { maxTokens: 0 })).toEqual({ inputTokens: input, outputTokens: 50 });
    expect(requestCap({ messages: prompt }, { maxTokens: 0 })).toEqual({ inputTokens: input, outputTokens: 4096 });
    expect(requestCap({ messages: prompt }, { maxTokens: input + 10 })).toEqual({ inputTokens: input, outputTokens: 10 });
    expect(requestCap({ messages: prompt, maxTokens: 50 }, { maxTokens: 5 })).toEqual({ inputTokens: 5, outputTokens: 0 });
  });
});
