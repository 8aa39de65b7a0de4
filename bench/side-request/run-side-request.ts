/**
 * `npm run bench -- side-request`: what the fallback side request costs beside the ask-back turn
 * it replaces (part 1, through the real gateway against a replayed upstream), and the recall of
 * the candidates it shows on every shipped catalog (part 2, the ceiling any fallback model can reach).
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findDatasets } from '../../src/datasets/find-datasets.js';
import { DEFAULT_FALLBACK_CANDIDATES } from '../../src/resolver/model-fallback.js';
import { gateFor, loadResolverModel } from '../../src/resolver/learned-model.js';
import { DEFAULT_RESOLVER_SETTINGS } from '../../src/resolver/resolver.js';
import { parseCount } from '../resolve/resolve-catalog.js';
import { peakRssMb, round } from '../stats.js';
import { datasetRecall, RECALL_KS, type CatalogRecall } from './candidate-recall.js';
import { DEFAULT_SHAPE, type ConversationShape } from './conversation.js';
import { PLAIN_INTENT } from './replay-upstream.js';
import { runTurnCost } from './turn-cost.js';
import { spread, summarizeTurns, type TurnSummary } from './turn-summary.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const USAGE = 'npm run bench -- side-request [--rounds N] [--warmup N] [--turns N] [--sample N | --all] [--seed N] [--datasets DIR] [--only turns|recall] [--embedder use-lite|static] [--out FILE]';
const UPSTREAM_NOTE = "a local server replaying OpenAI's chat-completions wire format from a script: no model runs; its `usage` is its own count of what it received and sent, with the project's estimate (src/budgets/token-estimate.ts)";

export async function runSideRequestBench(argv: string[]): Promise<void> {
  const { values } = parseOptions(argv);
  const only = values.only;
  if (only !== undefined && only !== 'turns' && only !== 'recall') throw new Error(`--only ${only}: write turns or recall; usage: ${USAGE}`);
  const rounds = parseCount('rounds', values.rounds) ?? 40;
  if (rounds > 1000) throw new Error(`--rounds ${rounds}: at most 1000`);
  const warmup = values.warmup === undefined ? 3 : Number(values.warmup);
  if (!Number.isInteger(warmup) || warmup < 0 || warmup > 100) throw new Error(`--warmup ${values.warmup}: a whole number from 0 to 100`);
  const shape: ConversationShape = { ...DEFAULT_SHAPE, turns: parseCount('turns', values.turns) ?? DEFAULT_SHAPE.turns };
  if (values.all && values.sample !== undefined) throw new Error('--sample N and --all do not go together');
  const sample = values.all ? undefined : (parseCount('sample', values.sample) ?? 300);
  const seed = values.seed === undefined ? 40 : Number(values.seed);
  if (!Number.isSafeInteger(seed)) throw new Error(`--seed ${values.seed}: a whole number`);
  const loadStart = os.loadavg()[0] ?? 0;
  const started = performance.now();

  let turns: { summary: TurnSummary; rulesSaid: string; conversationTokens: ReturnType<typeof spread> } | undefined;
  if (only !== 'recall') {
    console.error(`side-request: ${warmup} + ${rounds} rounds of three requests through the gateway…`);
    const run = await runTurnCost({ rounds, warmup, shape, log: (line) => console.error(line) });
    turns = { summary: summarizeTurns(run.samples), rulesSaid: run.rulesSaid, conversationTokens: spread(run.conversationTokens, 0) };
  }

  let recall: { datasetsDir: string; gate: number | null; catalogs: CatalogRecall[] } | undefined;
  if (only !== 'turns') {
    const datasetsDir = path.resolve(values.datasets ?? path.resolve(REPO_ROOT, '..', 'shared', 'datasets'));
    const datasets = await findDatasets(datasetsDir);
    const gate = gateFor(await loadResolverModel(), DEFAULT_RESOLVER_SETTINGS.targetPrecision);
    console.error(`side-request: candidate recall on ${datasets.map((d) => d.name).join(', ')} from ${datasetsDir}${sample === undefined ? '' : `, ${sample} one-call intents a catalog (seed ${seed})`}…`);
    const catalogs: CatalogRecall[] = [];
    for (const dataset of datasets) catalogs.push(await datasetRecall(dataset, { sample, seed, embedder: values.embedder }));
    recall = { datasetsDir, gate, catalogs };
  }

  const runS = (performance.now() - started) / 1000;
  const machine = `${os.availableParallelism()} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${round(os.totalmem() / 2 ** 30, 1)} GiB, Node ${process.version}, load avg ${round(loadStart, 2)} → ${round(os.loadavg()[0] ?? 0, 2)}`;
  if (turns) printTurns(turns.summary, { rulesSaid: turns.rulesSaid, shape, conversationTokens: turns.conversationTokens, warmup });
  if (recall) printRecall(recall.catalogs, { gate: recall.gate, sample, seed });
  console.log(`\nrun time ${round(runS, 0)} s, peak RSS ${peakRssMb()} MB, ${machine}`);
  if (values.out) {
    const result = {
      bench: 'side-request',
      upstream: { kind: 'replay', note: UPSTREAM_NOTE },
      machine,
      run_s: round(runS, 1),
      turns: turns
        ? {
            intent: PLAIN_INTENT,
            rules: turns.rulesSaid,
            conversation: { earlier_pairs: shape.turns, user_words: shape.userWords, assistant_words: shape.assistantWords, tokens: turns.conversationTokens },
            warmup,
            ...turns.summary,
          }
        : null,
      candidate_recall: recall
        ? { datasets_dir: recall.datasetsDir, target_precision: DEFAULT_RESOLVER_SETTINGS.targetPrecision, gate: recall.gate, default_candidates: DEFAULT_FALLBACK_CANDIDATES, sample_per_catalog: sample ?? null, seed, catalogs: recall.catalogs }
        : null,
    };
    await writeFile(values.out, `${JSON.stringify(result, null, 2)}\n`);
    console.error(`wrote ${values.out}`);
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (s: { p50: number; p95: number }) => `${s.p50.toFixed(1)} / ${s.p95.toFixed(1)}`;

function printTurns(s: TurnSummary, o: { rulesSaid: string; shape: ConversationShape; conversationTokens: { p50: number; p95: number }; warmup: number }): void {
  console.log(`side request against the ask-back turn it replaces, through the gateway (${s.rounds} rounds after ${o.warmup} warm-up)`);
  console.log(`upstream: a REPLAY, not a model — ${UPSTREAM_NOTE}`);
  console.log(`conversation: ${o.shape.turns} earlier user/assistant pairs (user ${o.shape.userWords.join('–')} words, assistant ${o.shape.assistantWords.join('–')}), ${n0(o.conversationTokens.p50)} tokens p50, a new one each round`);
  console.log(`plain words: "${PLAIN_INTENT}"; the rules stop at ${o.rulesSaid}`);
  console.log('');
  console.log(`${''.padEnd(26)}${'prompt tokens'.padStart(16)}${'completion'.padStart(13)}${'added ms, p50 / p95'.padStart(24)}${'without the tool run'.padStart(24)}`);
  console.log(`${''.padEnd(26)}${'p50 / p95'.padStart(16)}${'p50'.padStart(13)}`);
  const row = (name: string, r: { prompt_tokens: { p50: number; p95: number }; completion_tokens: { p50: number }; added_ms: { p50: number; p95: number }; added_ms_without_tool: { p50: number; p95: number } }) =>
    console.log(`${name.padEnd(26)}${`${n0(r.prompt_tokens.p50)} / ${n0(r.prompt_tokens.p95)}`.padStart(16)}${n0(r.completion_tokens.p50).padStart(13)}${ms(r.added_ms).padStart(24)}${ms(r.added_ms_without_tool).padStart(24)}`);
  row('side request (default)', s.side_request);
  row('ask-back turn (off)', s.ask_back_turn);
  console.log(`the ask-back turn's prompt is ${s.prompt_ratio ?? '-'}× the side request's; the side request showed ${s.side_request.tools_shown.p50} tools and took ${ms(s.side_request.gateway_ms)} ms (p50 / p95) as the gateway timed it`);
  console.log('');
  console.log(`${'whole request'.padEnd(34)}${'upstream requests'.padStart(18)}${'prompt tokens p50'.padStart(19)}${'completion p50'.padStart(16)}${'ms p50 / p95'.padStart(18)}`);
  const names = { exact: 'exact call (no side request)', side: 'plain words, side request', asked_back: 'plain words, asked back (off)' } as const;
  for (const [v, name] of Object.entries(names) as [keyof typeof names, string][]) {
    const c = s.chat[v];
    console.log(`${name.padEnd(34)}${String(c.upstream_requests).padStart(18)}${n0(c.prompt_tokens.p50).padStart(19)}${n0(c.completion_tokens.p50).padStart(16)}${ms(c.ms).padStart(18)}`);
  }
  console.log('');
  console.log("Added latency is paired within each round (the variant less the exact call's request, same conversation). The replay answers at once, so it measures the gateway's own work (resolution, the side request's round trip, the feedback turn), not a model's time.");
  console.log(`At a model's pace of ${s.modelled.output_tokens_per_s} output tokens/s (the prefetch traces' rate; prompt processing not modelled, and it would weigh most on the ask-back turn's prompt): side request +${s.modelled.side_request_added_ms} ms, ask-back turn +${s.modelled.ask_back_turn_added_ms} ms (p50).`);
}

function printRecall(catalogs: readonly CatalogRecall[], o: { gate: number | null; sample: number | undefined; seed: number }): void {
  const gate = o.gate === null ? `no gate is offered at ${DEFAULT_RESOLVER_SETTINGS.targetPrecision}, so every call from plain words is asked` : `calls run at ${o.gate.toFixed(2)} and above`;
  console.log(`\ncandidate recall: of the one-call intents where the rules are not sure (shipped settings: target_precision ${DEFAULT_RESOLVER_SETTINGS.targetPrecision}, ${gate}; or a required value missing),`);
  console.log(`the share whose gold tool is among the first K tools the side request shows (default K = ${DEFAULT_FALLBACK_CANDIDATES}); @1 is the rules' own first pick. ${o.sample === undefined ? 'Every intent.' : `A seeded sample of ${o.sample} intents a catalog (seed ${o.seed}).`}`);
  const f = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(3));
  console.log(`${'dataset'.padEnd(14)}${'one-call'.padStart(9)}${'sampled'.padStart(9)}${'asked'.padStart(7)}${'ran'.padStart(5)}${'not asked'.padStart(22)}${RECALL_KS.map((k) => `@${k}${k === DEFAULT_FALLBACK_CANDIDATES ? '*' : ''}`.padStart(8)).join('')}`);
  for (const c of catalogs) {
    const notAsked = Object.entries(c.not_asked).map(([k, v]) => `${k} ${v}`).join(', ') || '0';
    console.log(`${c.dataset.padEnd(14)}${String(c.pool).padStart(9)}${String(c.sampled).padStart(9)}${String(c.asked).padStart(7)}${String(c.ran).padStart(5)}${notAsked.padStart(22)}${RECALL_KS.map((k) => f(c.recall[`at_${k}`]).padStart(8)).join('')}`);
  }
  console.log("asked: the side request would be made (no candidate past the threshold, below the gate, or a required value missing); ran: the rules ran a call; not asked: where the resolver stopped before asking, by its stop (match: no tool matched at all) — those are asked back with no side request. A catalog with no one-call intents (NESTFUL's are sequences) has nothing to ask.");
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        rounds: { type: 'string' },
        warmup: { type: 'string' },
        turns: { type: 'string' },
        sample: { type: 'string' },
        all: { type: 'boolean' },
        seed: { type: 'string' },
        datasets: { type: 'string' },
        only: { type: 'string' },
        embedder: { type: 'string' },
        out: { type: 'string' },
      },
      strict: true,
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : error}; usage: ${USAGE}`);
  }
}
