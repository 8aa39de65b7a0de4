import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError } from '../../base/errors.js';
import { DEFAULT_MODEL_FILE, loadResolverModel, offeredGates, type ResolverModel } from '../../resolver/learned-model.js';
import { foldTableLines } from '../../resolver/train/fold-table.js';
import { trainFromDatasets } from '../../resolver/train/train-from-datasets.js';
import { replaceFile } from '../../base/replace-file.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { MODEL_HELP } from './model-help.js';

const USAGE = MODEL_HELP.usage;
const DEFAULT_DATASETS = fileURLToPath(new URL('../../../../shared/datasets', import.meta.url));

/** `kiwi model`: rebuilds the resolver's learned confidence from the shipped datasets, or shows it. */
export async function modelCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, MODEL_HELP);
  const [sub, ...extra] = positionals;
  if ((sub !== 'train' && sub !== 'show') || extra.length > 0) throw new UsageError(`usage: ${USAGE}`);
  if (sub === 'show') {
    for (const flag of ['datasets', 'out', 'embedder', 'limit'] as const) if (values[flag] !== undefined) throw new UsageError(`--${flag} is for train; usage: ${USAGE}`);
    const file = values.model === undefined ? DEFAULT_MODEL_FILE : path.resolve(ctx.cwd, values.model);
    const model = await loadResolverModel(file);
    if (values.json) ctx.io.out(JSON.stringify({ file, ...model }));
    else for (const line of describeModel(file, model)) ctx.io.out(line);
    return 0;
  }
  if (values.model !== undefined || values.json !== undefined) throw new UsageError(`--model and --json are for show; usage: ${USAGE}`);
  const embedder = values.embedder;
  if (embedder !== undefined && embedder !== 'use-lite' && embedder !== 'static') throw new UsageError(`--embedder ${embedder}: write use-lite (the default) or static`);
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1)) throw new UsageError(`--limit ${values.limit}: write a whole number of 1 or more (cases per dataset)`);
  const datasetsDir = values.datasets === undefined ? DEFAULT_DATASETS : path.resolve(ctx.cwd, values.datasets);
  const out = values.out === undefined ? DEFAULT_MODEL_FILE : path.resolve(ctx.cwd, values.out);

  let last = 0;
  const report = await trainFromDatasets({
    datasetsDir,
    ...(embedder ? { embedder: { kind: embedder } } : {}),
    ...(limit ? { limit } : {}),
    log: (line) => ctx.io.err(line),
    onProgress: (label, done, total) => {
      // A line every few seconds: training takes minutes, and silence looks like a hang.
      if (done !== total && performance.now() - last < 5000) return;
      last = performance.now();
      ctx.io.err(`${label}: ${done}/${total}`);
    },
  });
  for (const why of report.skipped) ctx.io.err(`skipped ${why}`);
  const card = describeModel(out, report.model);
  try {
    await replaceFile(out, `${JSON.stringify(report.model, null, 2)}\n`);
    await replaceFile(cardFile(out), `${card.join('\n')}\n`);
  } catch (error) {
    ctx.io.err(`kiwi model: could not write ${out}: ${describeError(error)}; check that the folder is writable`);
    return 1;
  }
  for (const line of card) ctx.io.out(line);
  ctx.io.out(`wrote ${out} and ${cardFile(out)}`);
  return 0;
}

/** The data card beside the model: `model.json` → `model.md`. */
function cardFile(out: string): string {
  return path.join(path.dirname(out), `${path.basename(out, path.extname(out))}.md`);
}

/** The model as a short data card: what it is, what it saw, which targets it offers and how each fold held them. */
function describeModel(file: string, model: ResolverModel): string[] {
  const card = model.card as { trained_on?: Record<string, { split: string; cut?: string; intents: number; tool_removed: number; calls_right: number }>; passed_over?: string[]; method?: string };
  const lines = [`# Resolver confidence (${path.basename(file)})`, '', `Embedder: ${model.embedder}. Method: ${card.method ?? 'unknown'}.`, '', 'Trained on (rebuild: `kiwi model train`):', ''];
  for (const [d, t] of Object.entries(card.trained_on ?? {})) lines.push(`- ${d}/${t.split}${t.cut ? ` (cut by ${t.cut})` : ''}: ${t.intents} one-call intents (${t.calls_right} resolved to an entirely right call), ${t.tool_removed} again with their tool taken out`);
  for (const why of card.passed_over ?? []) lines.push(`- passed over: ${why}`);
  const offered = offeredGates(model);
  lines.push('', `Offered targets (target_precision → calibrated confidence a call needs): ${offered.length === 0 ? 'none' : offered.map((g) => `${g.precision} → ${g.threshold.toFixed(3)}`).join(', ')}.`);
  const loo = model.leave_one_out;
  if (!loo) {
    lines.push('', 'No fold figures: this model was built before each gate was checked on every dataset left out; rebuild it with `kiwi model train`.');
    return lines;
  }
  lines.push(
    '',
    `Each dataset left out of the whole fit (calibration and gates fitted on the others), per target: what ran on it. A target is offered only where every fold ran at least ${loo.min_executed} calls and executed precision reached the target.`,
    '',
    '```',
    ...foldTableLines(
      loo.folds.map((f) => f.dataset),
      loo.fitted.map((g, i) => ({ precision: g.precision, gate: g.threshold, cells: loo.folds.map((f) => f.gates[i] ?? { threshold: null, executed: 0, right: 0, fitting: 0, covered: 0 }) })),
      loo.min_executed,
    ),
    '```',
  );
  return lines;
}
