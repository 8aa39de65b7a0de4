import { percentile, round } from '../stats.js';
import type { ChatSample, Variant } from './turn-cost.js';
import type { UpstreamRecord } from './replay-upstream.js';

/**
 * The figures of part 1 from its samples: the side request beside the ask-back turn it replaces,
 * and each whole request. Added latency is paired within a round (the same conversation, the
 * variants back to back): the variant's time less the exact call's, with and without the tool's
 * own run (the `result` event's duration), which varies most and is the same work in every variant.
 */

/** A model's output rate for the modelled figures: the middle of the 40–60 tokens/s the prefetch traces stream at (bench/prefetch/token-timing.ts). */
export const MODELLED_OUTPUT_TOKENS_PER_S = 50;

export interface Spread {
  p50: number;
  p95: number;
}

export interface TurnSummary {
  rounds: number;
  side_request: { prompt_tokens: Spread; completion_tokens: Spread; tools_shown: Spread; gateway_ms: Spread; added_ms: Spread; added_ms_without_tool: Spread };
  ask_back_turn: { prompt_tokens: Spread; completion_tokens: Spread; added_ms: Spread; added_ms_without_tool: Spread };
  chat: Record<Variant, { ms: Spread; upstream_requests: number; prompt_tokens: Spread; completion_tokens: Spread }>;
  /** The ask-back turn's prompt over the side request's, at the medians. */
  prompt_ratio: number | null;
  /** Added latency if the upstream wrote its answer at a model's pace: the measured median plus the answer's tokens at this rate; prompt processing not modelled. */
  modelled: { output_tokens_per_s: number; side_request_added_ms: number; ask_back_turn_added_ms: number };
}

export function spread(xs: readonly number[], digits = 2): Spread {
  return { p50: round(percentile([...xs], 50), digits), p95: round(percentile([...xs], 95), digits) };
}

function only(requests: readonly UpstreamRecord[], kind: UpstreamRecord['kind']): UpstreamRecord {
  const r = requests.find((q) => q.kind === kind);
  if (!r) throw new Error(`no ${kind} request in a sample that should have one`);
  return r;
}

export function summarizeTurns(samples: readonly ChatSample[]): TurnSummary {
  const by = (v: Variant) => samples.filter((s) => s.variant === v);
  const rounds = [...new Set(samples.map((s) => s.round))];
  const at = (v: Variant, r: number) => samples.find((s) => s.variant === v && s.round === r);
  const paired = (v: Variant, withoutTool: boolean): number[] =>
    rounds.flatMap((r) => {
      const a = at(v, r);
      const base = at('exact', r);
      if (!a || !base) return [];
      return [withoutTool ? a.ms - (a.toolMs ?? 0) - (base.ms - (base.toolMs ?? 0)) : a.ms - base.ms];
    });
  const side = by('side').map((s) => ({ request: only(s.requests, 'side'), gatewayMs: s.fallback?.ms ?? Number.NaN }));
  const askBack = by('asked_back').map((s) => only(s.requests, 'asked_back'));
  const chat = (v: Variant) => {
    const ss = by(v);
    return {
      ms: spread(ss.map((s) => s.ms)),
      upstream_requests: ss[0]?.requests.length ?? 0,
      prompt_tokens: spread(ss.map((s) => s.requests.reduce((n, q) => n + q.prompt_tokens, 0)), 0),
      completion_tokens: spread(ss.map((s) => s.requests.reduce((n, q) => n + q.completion_tokens, 0)), 0),
    };
  };
  const sidePrompt = spread(side.map((s) => s.request.prompt_tokens), 0);
  const askPrompt = spread(askBack.map((r) => r.prompt_tokens), 0);
  const sideCompletion = spread(side.map((s) => s.request.completion_tokens), 0);
  const askCompletion = spread(askBack.map((r) => r.completion_tokens), 0);
  const sideAdded = spread(paired('side', true));
  const askAdded = spread(paired('asked_back', true));
  const pace = (tokens: number) => (tokens * 1000) / MODELLED_OUTPUT_TOKENS_PER_S;
  return {
    rounds: rounds.length,
    side_request: {
      prompt_tokens: sidePrompt,
      completion_tokens: sideCompletion,
      tools_shown: spread(side.map((s) => s.request.tools?.length ?? 0), 0),
      gateway_ms: spread(side.map((s) => s.gatewayMs)),
      added_ms: spread(paired('side', false)),
      added_ms_without_tool: sideAdded,
    },
    ask_back_turn: { prompt_tokens: askPrompt, completion_tokens: askCompletion, added_ms: spread(paired('asked_back', false)), added_ms_without_tool: askAdded },
    chat: { exact: chat('exact'), side: chat('side'), asked_back: chat('asked_back') },
    prompt_ratio: sidePrompt.p50 > 0 ? round(askPrompt.p50 / sidePrompt.p50, 1) : null,
    modelled: {
      output_tokens_per_s: MODELLED_OUTPUT_TOKENS_PER_S,
      side_request_added_ms: round(sideAdded.p50 + pace(sideCompletion.p50), 1),
      ask_back_turn_added_ms: round(askAdded.p50 + pace(askCompletion.p50), 1),
    },
  };
}
