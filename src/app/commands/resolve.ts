import { catalogActionWords } from '../../resolver/split-steps.js';
import { planSteps } from '../../resolver/step-plan.js';
import type { Resolution } from '../../resolver/types.js';
import { createIndexProgress } from '../../cli/index-progress.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { RESOLVE_HELP } from './resolve-help.js';
import { openProjectResolver } from './index-tools.js';

const USAGE = RESOLVE_HELP.usage;

/**
 * `kiwi resolve`: the call an intent resolves to, the candidates with scores, and where the time
 * went; for an intent written as ordered steps, the same for each step. Runs nothing.
 */
export async function resolveCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, RESOLVE_HELP);
  const intent = positionals.join(' ').trim();
  if (!intent) throw new UsageError(`give the intent text; usage: ${USAGE}`);
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError(`--limit must be a whole number from 1 to 100, got ${values.limit}`);
  const runtime = await openProjectResolver(ctx, values.project);
  try {
    if (runtime.fallbackNotUsed !== undefined) ctx.io.err(`kiwi: ${runtime.fallbackNotUsed}`);
    const sync = await runtime.sync({ progress: createIndexProgress(ctx.io, { summary: false }) });
    if (sync.added + sync.updated + sync.removed > 0) ctx.io.err(`kiwi: index updated (${sync.added} added, ${sync.updated} updated, ${sync.removed} removed)`);
    const resolveText = (text: string): Promise<Resolution> =>
      runtime.resolver.resolve(text, { limit, ...(values.context ? { context: values.context } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    const plan = await planSteps(intent, resolveText, { actionWords: catalogActionWords(runtime.tools.values()) });
    if (plan.kind === 'refused') {
      if (values.json) ctx.io.out(JSON.stringify({ status: 'refused', reason: plan.reason }, null, 2));
      else ctx.io.out(`not run: ${plan.reason}`);
      return 4;
    }
    if (plan.kind === 'single') {
      const resolution = await resolveText(intent);
      if (values.json) ctx.io.out(JSON.stringify(resolution, null, 2));
      else print(ctx, resolution);
      return resolution.status === 'resolved' ? 0 : 4;
    }
    // Every step is shown, even past one that would stop the sequence: this command runs nothing.
    const steps: Array<{ intent: string; resolution: Resolution }> = [];
    for (const step of plan.steps) steps.push({ intent: step.text, resolution: step.resolution ?? (await resolveText(step.text)) });
    if (values.json) ctx.io.out(JSON.stringify({ status: 'steps', steps }, null, 2));
    else {
      ctx.io.out(`${steps.length} steps, run in order; the first that is unresolved stops the rest:`);
      for (const [i, step] of steps.entries()) {
        ctx.io.out(`\nstep ${i + 1}: ${step.intent}`);
        print(ctx, step.resolution);
      }
    }
    return steps.every((s) => s.resolution.status === 'resolved') ? 0 : 4;
  } finally {
    await runtime.close();
  }
}

function print(ctx: CliContext, r: Resolution): void {
  if (r.status === 'resolved') ctx.io.out(`call: ${named(r.call)} ${JSON.stringify(r.call.arguments)}   (confidence ${r.confidence.toFixed(2)})`);
  else {
    ctx.io.out(`unresolved: ${r.reason}`);
    const top = r.candidates[0]?.tool;
    if (r.found && Object.keys(r.found).length > 0 && top !== undefined) ctx.io.out(`values read: ${JSON.stringify(r.found)}; the exact call: ${top} ${JSON.stringify(r.found)}`);
  }
  ctx.io.out('candidates:');
  for (const c of r.candidates) {
    const parts = [c.vectorScore !== undefined ? `cosine ${c.vectorScore.toFixed(3)}` : 'cosine -', c.textScore !== undefined ? `bm25 ${c.textScore.toFixed(3)}` : 'bm25 -'];
    ctx.io.out(`  ${c.score.toFixed(3)}  ${named(c).padEnd(28)}  ${parts.join(', ')}`);
  }
  for (const n of r.notes) ctx.io.out(`note: ${n}`);
  const t = r.timings;
  ctx.io.out(`time: ${t.totalMs.toFixed(1)} ms (embed ${t.embedMs.toFixed(1)}, search ${t.searchMs.toFixed(1)}, arguments ${t.fillMs.toFixed(2)})`);
}

/** A tool by its id; a directive or knowledge entry with its kind in front. */
function named(target: { tool: string; item?: string }): string {
  return target.item ? `${target.item} ${target.tool}` : target.tool;
}
