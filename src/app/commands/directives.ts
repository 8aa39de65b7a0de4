import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { usageText } from '../../budgets/usage-summary.js';
import { openGateway } from '../open-gateway.js';
import type { ThreadOutcome, ThreadStart } from '../../threads/run-thread.js';
import type { ThreadRecord } from '../../threads/thread-store.js';
import { threadLineText } from '../../threads/thread-text.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { DIRECTIVES_HELP } from './directives-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { annealCommand } from './directives-anneal.js';
import { listDirectives } from './directives-list.js';
import { annealCounts } from '../../anneal/anneal-on-failure.js';
import { openThreadStore } from '../state-backends.js';
import { createIndexProgress } from '../../cli/index-progress.js';

/** A turn's text is printed whole; arguments, results and reasons as one line of at most 200 characters. */
export const SHOWN = { turn: Number.POSITIVE_INFINITY, item: 200 };

const USAGE = DIRECTIVES_HELP.usage;

/**
 * `kiwi directives run`: a directive as a thread on this project, here (no server needed): the
 * gateway's agent loop with the directive's tools and limits, on the model its tier maps to (the
 * offline demo model when no upstream is configured). Prints each step as it happens, then the
 * outcome. Exit codes: 0 completed, 1 failed or cancelled.
 */
export async function directivesCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, DIRECTIVES_HELP);
  const [action, name, ...rest] = positionals;
  if (action === 'list' && name === undefined) {
    return listDirectives(ctx, values, async (root) => {
      const threads = await openThreadStore(root, ctx.env);
      try {
        return await annealCounts(threads.store);
      } finally {
        await threads.close();
      }
    });
  }
  if ((action !== 'run' && action !== 'anneal') || name === undefined || rest.length > 0) throw new UsageError(`usage: ${USAGE}`);
  if (action === 'anneal') {
    if (values.input !== undefined) throw new UsageError('--input is for run: annealing learns from the failed threads, which have their inputs');
    return annealCommand(ctx, name, values);
  }
  if (values.thread !== undefined) throw new UsageError('--thread is for anneal');
  return runThreadHere(ctx, projectOptions(ctx, values), { directive: name, inputs: parseInputs(values.input ?? []) }, values);
}

/**
 * A thread run here as the local operator (`kiwi directives run`, `kiwi env run`): each step
 * printed as it happens (or the outcome as JSON), then the outcome; 0 completed, 1 otherwise.
 */
export async function runThreadHere(
  ctx: CliContext,
  options: ReturnType<typeof projectOptions>,
  start: Pick<ThreadStart, 'directive' | 'environment' | 'inputs'>,
  values: { model?: string | undefined; json?: boolean | undefined },
): Promise<number> {
  const log = (line: string): void => ctx.io.err(`kiwi: ${line}`);
  const gateway = await openGateway({ ...options, log, indexProgress: createIndexProgress(ctx.io), unattended: true, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  try {
    const outcome = await gateway.threads.run({
      ...start,
      client: LOCAL_CLIENT,
      ...(values.model ? { model: values.model } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(values.json ? {} : { onRecord: (r: ThreadRecord) => printRecord(ctx, r) }),
    });
    return printOutcome(ctx, outcome, values.json === true);
  } finally {
    await gateway.close();
  }
}

export function parseInputs(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input ${JSON.stringify(pair)} is not KEY=VALUE; write e.g. --input focus=src/auth`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** Prints how a thread ended; the exit code: 0 completed, 1 otherwise. */
export function printOutcome(ctx: CliContext, outcome: ThreadOutcome, json: boolean): number {
  if (json) ctx.io.out(JSON.stringify(outcome, null, 2));
  else {
    const a = outcome.anneal;
    if (a !== undefined) ctx.io.out('refused' in a ? `thread ${a.failed_thread} failed and was not annealed: ${a.refused}` : `thread ${a.failed_thread} failed; annealed version ${a.from_version} → ${a.version} from it, and ran again:`);
    ctx.io.out(`thread ${outcome.id}: ${outcome.status}${outcome.limit ? ` (stopped by the ${outcome.limit} limit)` : ''}, ${outcome.steps_taken} step(s)${outcome.failure ? `, failure: ${outcome.failure}` : ''}; \`kiwi threads show ${outcome.id}\` has its transcript`);
  }
  if (!json) ctx.io.out(`used: ${usageText(outcome.usage)}`);
  return outcome.status === 'completed' ? 0 : 1;
}

export function printRecord(ctx: CliContext, r: ThreadRecord): void {
  if (r.type !== 'end') ctx.io.out(threadLineText(r, SHOWN));
}
