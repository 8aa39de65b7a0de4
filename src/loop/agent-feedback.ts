import { createDataFence, type DataFenceOptions } from '../base/data-fence.js';
import { DEFAULT_MARKER } from '../intent/intent-marker.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { ToolCallSpec } from '../resolver/types.js';
import type { LimitName } from './loop-types.js';
import type { LoopLimits } from './loop-limits.js';
import { textHead } from '../base/text-cut.js';

/**
 * Everything the agent loop says in words: the one user message that carries a turn's results
 * back to the agent, the text shown for each result, and the notice when a limit stops a request.
 * The agent only learns what this message tells it, so every failure says what to do instead.
 */

/** Where a step of an intent written as ordered steps stands (split-steps.ts). */
export interface StepPlace {
  /** 1-based. */
  n: number;
  of: number;
  /** The later steps, not run when this one did not succeed. */
  notRun: string[];
}

/** What happened to one intent (or one step of one) of a turn, for the message fed back to the agent. */
export type FeedbackItem =
  | { kind: 'outcome'; intent: string; call: ToolCallSpec; outcome: CallOutcome; step?: StepPlace }
  /** Nothing was resolved or run, for a reason that is not about tools (too many steps). */
  | { kind: 'refused'; intent: string; reason: string }
  /** The gateway answered the intent itself (a help signal): `text` is its answer. */
  | { kind: 'note'; intent: string; text: string }
  | {
      kind: 'unresolved';
      step?: StepPlace;
      intent: string;
      reason: string;
      missing: string[];
      candidates: string[];
      /** Values found for the first candidate: the exact call the agent is asked for repeats them. */
      found?: Record<string, unknown>;
      /** One-line schemas of the candidates (compact-schema.ts), so the agent can call one exactly. */
      schemas?: string[];
      /** The exact call of the first candidate to copy, with its own parameters only (example-call.ts). */
      example?: string;
    };

export interface ShownResult {
  status: CallOutcome['status'];
  isError: boolean;
  /** A failed call's error code (`HOOK_FAILED`: a hook's answer, not the tool's failure). */
  code?: string;
  /** At most `maxChars` of the result, plus a one-line note when some was cut. */
  text: string;
}

/** The first `max` UTF-16 units (never half a surrogate pair) and a note saying how much was cut. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = textHead(text, max);
  return `${head}\n… [cut: ${text.length - head.length} of ${text.length} characters not shown]`;
}

/** The text a result shows the client and the agent: output, the denial, or the error. */
export function shownResult(outcome: CallOutcome, maxChars: number): ShownResult {
  switch (outcome.status) {
    case 'ok': {
      const text = outcome.result.text.length > 0 ? outcome.result.text : '(the tool printed nothing)';
      return { status: 'ok', isError: outcome.result.isError, text: capText(text, maxChars) };
    }
    case 'denied':
      return { status: 'denied', isError: true, text: capText(outcome.reason, maxChars) };
    case 'error':
      return { status: 'error', isError: true, code: outcome.error.code, text: capText(`${outcome.error.code}: ${outcome.error.message}`, maxChars) };
  }
}

export interface FeedbackOptions {
  maxResultChars: number;
  /**
   * What the results of one message may add up to (default 4 × maxResultChars): a result past it
   * is cut, or left out with a note. The rest is bounded by the items (at most maxToolCalls a
   * turn) and the size of an intent.
   */
  maxChars?: number;
  marker?: string;
  fence?: DataFenceOptions;
}

/** A result cut to less than this would say nothing: it is left out with a note instead. */
const MIN_SHOWN_CHARS = 64;

/**
 * ONE user message with the results of every intent of the agent's last turn, in order. Tool
 * output and tool errors go between fences with a token drawn for this message (see
 * data-fence.ts): a result cannot end its fence early or forge the block of another intent.
 */
export function feedbackMessage(items: readonly FeedbackItem[], options: FeedbackOptions): string {
  const marker = options.marker ?? DEFAULT_MARKER;
  const maxChars = options.maxChars ?? 4 * options.maxResultChars;
  const shown = items.map((item) => (item.kind === 'outcome' ? shownResult(item.outcome, options.maxResultChars) : undefined));
  // Drawn against everything in the message, the agent's own intents included, not only what goes inside.
  const own = items.flatMap((item) => [item.intent, ...(item.kind === 'refused' || item.kind === 'note' ? [] : (item.step?.notRun ?? []))]);
  const fence = createDataFence([...own, ...shown.map((r) => r?.text ?? '')], options.fence);
  let room = maxChars;
  const parts = items.map((item, i) => {
    if (item.kind === 'refused') return [`[${i + 1}] Intent: ${item.intent}`, `Not run: ${item.reason}`].join('\n');
    if (item.kind === 'note') return [`[${i + 1}] Intent: ${item.intent}`, item.text].join('\n');
    const head = item.step ? `[${i + 1}] Intent, step ${item.step.n} of ${item.step.of} of one intent: ${item.intent}` : `[${i + 1}] Intent: ${item.intent}`;
    const later = item.step?.notRun ?? [];
    const skipped = later.length > 0 ? [`Not run, because they come after this step and it did not succeed: ${later.map((t) => JSON.stringify(t)).join(', ')}. Write them again as intents once this step is sorted out.`] : [];
    if (item.kind === 'unresolved') return [head, ...unresolvedLines(item, marker), ...skipped].join('\n');
    const { status, text } = shown[i] as ShownResult;
    if (status === 'denied') return [head, ...outcomeLines(item, text), ...skipped].join('\n');
    const kept = text.length <= room ? text : room >= MIN_SHOWN_CHARS ? capText(text, room) : undefined;
    room -= kept?.length ?? 0;
    const body = kept === undefined ? `(left out: the results in this message reached their limit of ${maxChars} characters)` : fence.wrap(kept);
    return [head, ...outcomeLines(item, body), ...skipped].join('\n');
  });
  const count = items.length === 1 ? 'the tool intent' : `the ${items.length} tool intents`;
  const fenced = shown.some((r) => r !== undefined && r.status !== 'denied');
  return [
    `Results of ${count} in your last reply, from the Kiwi gateway.${fenced ? ` ${fence.notice}` : ''}`,
    ...parts,
    'Continue from here: use these results, write further intents if you need more, or give your final answer.',
  ].join('\n\n');
}

/** `body`: the result or error text, fenced (or the note that it was left out); a denial's reason is the gateway's own words, unfenced. */
function outcomeLines(item: Extract<FeedbackItem, { kind: 'outcome' }>, body: string): string[] {
  const { call, outcome } = item;
  const lines = [`Call: ${call.tool} ${JSON.stringify(call.arguments)}`];
  if (outcome.status === 'ok') {
    lines.push(outcome.result.isError ? 'Result (the tool reported an error):' : 'Result:', body);
  } else if (outcome.status === 'denied') {
    lines.push(`Denied: ${body}`, 'Do not retry the same call: it will be denied again. Find another way, or tell the user what you could not do and why.');
  } else {
    lines.push('Failed:', body);
  }
  if (outcome.stuck) {
    lines.push('Note: this exact call repeats one you have already made several times. Do not make it again: use the result you have, change your approach, or answer.');
  }
  // A hook's directive action: the agent is the one who runs a directive today (it follows its steps).
  for (const d of outcome.directives ?? []) {
    const inputs = Object.keys(d.inputs).length === 0 ? '' : ` with inputs ${JSON.stringify(d.inputs)}`;
    lines.push(`A hook of the policy asks you to run the directive ${d.name}${inputs} next: load it (its steps tell you what to do) before you go on.`);
  }
  return lines;
}

function unresolvedLines(item: Extract<FeedbackItem, { kind: 'unresolved' }>, marker: string): string[] {
  const lines = [`Not run: ${item.reason}`];
  const facts: string[] = [];
  if (item.schemas?.length) facts.push(`Closest tools, as they are called:\n${item.schemas.map((s) => `- ${s}`).join('\n')}`);
  else if (item.candidates.length > 0) facts.push(`Closest tools: ${item.candidates.join(', ')}.`);
  if (item.missing.length > 0) facts.push(`Missing arguments: ${item.missing.join(', ')}.`);
  if (facts.length > 0) lines.push(facts.join('\n'));
  const top = item.candidates[0];
  const found = Object.entries(item.found ?? {}).map(([name, value]) => `${JSON.stringify(name)}: ${JSON.stringify(value)}`);
  if (top !== undefined && (item.missing.length > 0 || found.length > 0)) {
    // Shown as read, to be checked: the filler may have read them wrong, and the agent knows what it meant.
    if (found.length > 0) lines.push(`Values read from your intent (check them): ${found.join(', ')}.`);
    const call = `[${marker}: ${item.example ?? `${top} {${[...found, ...item.missing.map((name) => `${JSON.stringify(name)}: ${JSON.stringify(`<${name}>`)}`)].join(', ')}}`}]`;
    lines.push(item.missing.length > 0 ? `Call it exactly, with every value written out: ${call}.` : `If \`${top}\` is what you mean, call it exactly: ${call}; otherwise call another of the tools above the same way, or do without the tool.`);
  } else if (top !== undefined) {
    lines.push(`If one of them is what you mean, call it exactly with its arguments as JSON (e.g. [${marker}: ${item.example ?? `${top} {…}`}]); otherwise name the action and every value explicitly, or do without the tool.`);
  } else {
    lines.push('No tool fits this intent: describe the action differently (what to do, on what, with which values), or answer without a tool.');
  }
  return lines;
}

/** Why the later steps of an intent did not run. */
export function notRunReason(step: StepPlace): string {
  return `not run: the steps after step ${step.n} of ${step.of} of this intent wait for it, and it did not succeed`;
}

/** Why an intent over `maxToolCalls` was neither resolved nor run. */
export function toolCallLimitReason(maxToolCalls: number): string {
  return `this request already had its limit of ${maxToolCalls} tool intents (run, denied, unresolved or refused alike), so the gateway did not resolve or run this one`;
}

/** Why a call that repeats was not run (it was asked for `times` times in this request). */
export function repeatReason(call: ToolCallSpec, times: number): string {
  return `the same call (${call.tool} with the same arguments) was asked for ${times} times in this request; the agent seems to be looping, so the gateway did not run it again`;
}

/** The `limits` key in .ai/config/gateway.yaml for each limit, and what reaching it means. */
const LIMIT_WORDS: Record<Exclude<LimitName, 'budget'>, { key: string; what: (l: LoopLimits) => string }> = {
  turns: { key: 'max_turns', what: (l) => `the agent used all ${l.maxTurns} model turns one request may take` },
  tool_calls: { key: 'max_tool_calls', what: (l) => `the agent wrote more than the ${l.maxToolCalls} tool intents one request may have (each counts, run or not)` },
  duration: { key: 'max_duration_ms', what: (l) => `the request ran longer than its time limit of ${formatMs(l.maxDurationMs)}` },
  repeats: { key: 'max_repeats', what: (l) => `the agent asked for the same tool call ${l.maxRepeats} times, which looks like a loop` },
  tokens: { key: 'max_tokens', what: (l) => `the request used its budget of ${l.maxTokens} tokens (input and output of every model turn, as the upstream reported them)` },
};

/** The readable text sent before `finish` when a limit stopped the request. */
export function limitNotice(limit: Exclude<LimitName, 'budget'>, limits: LoopLimits): string {
  const words = LIMIT_WORDS[limit];
  return `\n\n[Kiwi gateway: stopped because ${words.what(limits)}. To allow more, raise \`limits.${words.key}\` in .ai/config/gateway.yaml.]`;
}

function formatMs(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
