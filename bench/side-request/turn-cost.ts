import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openGateway, type Gateway } from '../../src/app/open-gateway.js';
import { listen, type Listener } from '../../src/http/server/listen.js';
import type { FallbackUse } from '../../src/resolver/types.js';
import { createBenchProject, type BenchProject } from '../gateway/bench-project.js';
import { startBenchChild, type BenchChild } from '../gateway/child-process.js';
import { estimatePromptTokens } from '../../src/budgets/token-estimate.js';
import { earlierTurns, type ChatTurn, type ConversationShape } from './conversation.js';
import { EXACT_MODEL, PLAIN_INTENT, PLAIN_WORDS_MODEL, TOOL, type RequestKind, type UpstreamRecord } from './replay-upstream.js';

/**
 * Part 1 of the side-request bench: one agent request, three ways, through the real gateway
 * against the replayed upstream. `exact`: the agent writes the exact call (the floor: no side
 * request, no ask-back). `side`: it writes plain words and the gateway, with the default
 * settings, asks the request's own model in one side request. `asked_back`: the same plain words
 * with `fallback: off`; the gateway asks the agent back, and the agent needs one more model turn
 * (the whole conversation again, plus the ask-back) to write the exact call. Every variant ends
 * with the tool run and the agent's final turn.
 */

export type Variant = 'exact' | 'side' | 'asked_back';
export const VARIANTS: readonly Variant[] = ['exact', 'side', 'asked_back'];

/** The upstream requests each variant must make, in order; anything else means the script broke. */
const EXPECTED: Record<Variant, RequestKind[]> = {
  exact: ['exact', 'final'],
  side: ['intent', 'side', 'final'],
  asked_back: ['intent', 'asked_back', 'final'],
};

export interface ChatSample {
  round: number;
  variant: Variant;
  /** The whole request through the gateway, as the client waited for it. */
  ms: number;
  /** What the upstream was sent, in order, with the tokens it counted. */
  requests: UpstreamRecord[];
  /** The tool's own run, as the gateway timed it (the `result` event). */
  toolMs?: number;
  /** The side request as the gateway timed and charged it (the `side` variant). */
  fallback?: FallbackUse;
}

interface KiwiEvent {
  type: string;
  reason?: string;
  durationMs?: number;
  fallback?: FallbackUse;
}

interface Served {
  project: BenchProject;
  gateway: Gateway;
  listener: Listener;
}

async function serve(upstreamUrl: string, resolverYaml: string | undefined): Promise<Served> {
  const project = await createBenchProject(upstreamUrl, { prefetch: true });
  let gateway: Gateway | undefined;
  try {
    if (resolverYaml !== undefined) await writeFile(path.join(project.root, '.ai', 'config', 'resolver.yaml'), resolverYaml);
    gateway = await openGateway({ projectDir: project.root, userDir: project.userDir, env: { PATH: process.env.PATH, HOME: project.root }, log: (line) => console.error(`gateway: ${line}`) });
    const listener = await listen(gateway.app.fetch, { host: '127.0.0.1', port: 0 });
    return { project, gateway, listener };
  } catch (error) {
    await gateway?.close();
    await project.remove();
    throw error;
  }
}

async function shut(s: Served | undefined): Promise<void> {
  if (!s) return;
  await s.listener.close(1000);
  await s.gateway.close();
  await s.project.remove();
}

/** The bench needs the rules to stop short on its plain words: check it, and say what they did. */
async function checkRulesUnsure(gateway: Gateway): Promise<string> {
  const r = await gateway.runtime.resolver.resolve(PLAIN_INTENT, { limit: 20 });
  const top = r.candidates.slice(0, 5).map((c) => c.tool);
  if (r.status !== 'unresolved' || (r.stop !== 'gate' && r.stop !== 'arguments') || !top.includes(TOOL)) {
    throw new Error(`the bench's plain words "${PLAIN_INTENT}" should stop the rules short of a call (below the gate, or a value missing) with ${TOOL} among the first 5 candidates; got ${r.status}${r.status === 'unresolved' ? ` (${r.stop ?? '?'}: ${r.reason})` : ` ${r.call.tool}`}, candidates ${top.join(', ')}`);
  }
  return `${r.stop}: ${r.reason}`;
}

export interface TurnCostRun {
  samples: ChatSample[];
  rulesSaid: string;
  /** The earlier turns' tokens (the project's estimate) of each measured round's conversation. */
  conversationTokens: number[];
}

/** One user message closing `turns`, new each round, so that the tool menu sees a new message. */
export function chatMessages(turns: readonly ChatTurn[], round: number): ChatTurn[] {
  return [...turns, { role: 'user', content: `Round ${round}: before we change the manifest, what does package.json hold now? Read it first.` }];
}

export async function runTurnCost(options: { rounds: number; warmup: number; shape: ConversationShape; log: (line: string) => void }): Promise<TurnCostRun> {
  let upstream: BenchChild<{ url: string }> | undefined;
  let on: Served | undefined;
  let off: Served | undefined;
  try {
    upstream = await startBenchChild<{ url: string }>([], undefined, new URL('./replay-child.ts', import.meta.url));
    const replay = upstream;
    on = await serve(replay.ready.url, undefined);
    off = await serve(replay.ready.url, 'fallback: off\n');
    const rulesSaid = await checkRulesUnsure(on.gateway);
    const targets: Record<Variant, { url: string; model: string }> = {
      exact: { url: on.listener.url, model: EXACT_MODEL },
      side: { url: on.listener.url, model: PLAIN_WORDS_MODEL },
      asked_back: { url: off.listener.url, model: PLAIN_WORDS_MODEL },
    };
    const samples: ChatSample[] = [];
    const conversationTokens: number[] = [];
    const total = options.warmup + options.rounds;
    for (let i = 0; i < total; i++) {
      const round = i - options.warmup;
      const earlier = earlierTurns(i + 1, options.shape);
      if (round >= 0) conversationTokens.push(estimatePromptTokens(earlier));
      const messages = chatMessages(earlier, i);
      // The order rotates, so that no variant always runs first after the upstream's idle time.
      const order = VARIANTS.map((_, k) => VARIANTS[(k + i) % VARIANTS.length] as Variant);
      for (const variant of order) {
        await replay.call('takeLog', null);
        const { url, model } = targets[variant];
        const t0 = performance.now();
        const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages, stream: false }) });
        const body = (await response.json()) as { kiwi?: { events?: KiwiEvent[] } };
        const ms = performance.now() - t0;
        const requests = await replay.call<UpstreamRecord[]>('takeLog', null);
        if (!response.ok) throw new Error(`${variant}: the gateway answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
        const events = body.kiwi?.events ?? [];
        checkShape(variant, requests, events);
        const fallback = events.find((e) => e.fallback !== undefined)?.fallback;
        const toolMs = events.find((e) => e.type === 'result')?.durationMs;
        if (round >= 0) samples.push({ round, variant, ms, requests, ...(toolMs === undefined ? {} : { toolMs }), ...(fallback ? { fallback } : {}) });
      }
      if (round >= 0 && (round + 1) % 10 === 0) options.log(`side-request: ${round + 1}/${options.rounds} rounds`);
    }
    return { samples, rulesSaid, conversationTokens };
  } finally {
    await shut(off);
    await shut(on);
    await upstream?.close();
  }
}

function checkShape(variant: Variant, requests: readonly UpstreamRecord[], events: readonly KiwiEvent[]): void {
  const kinds = requests.map((r) => r.kind);
  const ran = events.some((e) => e.type === 'result');
  const called = events.find((e) => e.type === 'call')?.fallback?.outcome;
  const ok = JSON.stringify(kinds) === JSON.stringify(EXPECTED[variant]) && ran && (variant !== 'side' || called === 'called');
  if (!ok) {
    const unresolved = events.find((e) => e.type === 'unresolved');
    throw new Error(`${variant}: expected upstream requests ${EXPECTED[variant].join(', ')} and the tool run${variant === 'side' ? ' by the side request' : ''}; got ${kinds.join(', ') || 'none'}${ran ? '' : ', no result'}${unresolved ? ` (unresolved: ${unresolved.reason ?? ''})` : ''}`);
  }
}
