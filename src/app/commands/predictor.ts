import path from 'node:path';
import { loadTransitionModel, saveTransitionModel, type LearnedTransitionModel } from '../../prefetch/transition-model.js';
import { predictorFile } from '../../prefetch/predictor-file.js';
import { trainTransitions, type TrainProgress } from '../../prefetch/train-transitions.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { PREDICTOR_HELP } from './predictor-help.js';
import { projectOptions } from '../../cli/project-options.js';

const USAGE = PREDICTOR_HELP.usage;

/** `kiwi predictor`: learns which tool follows which from the audit log, and shows what it learned. */
export async function predictorCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, PREDICTOR_HELP);
  const [sub, ...extra] = positionals;
  if ((sub !== 'train' && sub !== 'show') || extra.length > 0) throw new UsageError(`usage: ${USAGE}`);
  if (sub === 'train' && values.model !== undefined) throw new UsageError('train writes the model to --out FILE (--model is for show)');
  if (sub === 'show' && values.out !== undefined) throw new UsageError('show reads the model from --model FILE (--out is for train)');
  const limit = Number(values.n);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError(`-n must be a whole number from 1 to 1000, got ${values.n}`);
  const projectDir = projectOptions(ctx, values).projectDir;
  return sub === 'train' ? train(ctx, projectDir, values.out, limit) : show(ctx, projectDir, values.model, limit, values.json === true);
}

async function train(ctx: CliContext, projectDir: string, out: string | undefined, limit: number): Promise<number> {
  const auditDir = path.join(projectDir, '.ai', 'logs', 'audit');
  const file = out === undefined ? predictorFile(projectDir) : path.resolve(ctx.cwd, out);
  const report = await trainTransitions({ auditDir, onProgress: progressLine(ctx), ...(ctx.signal ? { signal: ctx.signal } : {}) });
  if (report.files === 0) {
    ctx.io.err(
      `kiwi predictor: no audit log under ${auditDir}; it is written as tools run: run tools through \`kiwi serve\` (the gateway) or \`kiwi run TOOL --args JSON\` in this project, then train again`,
    );
    return 1;
  }
  const { denied, failed, speculative, other } = report.ignored;
  const unused = `${report.skipped} unreadable lines${report.torn > 0 ? ` (${report.torn} torn)` : ''}, ${denied} denied, ${failed} failed, ${speculative} speculative, ${other} other`;
  if (report.calls === 0) {
    ctx.io.err(
      `kiwi predictor: ${report.files} audit files under ${auditDir} hold no allowed, successful call from the gateway, MCP or CLI to learn from (${unused}); run tools through \`kiwi serve\` or \`kiwi run\`, then train again`,
    );
    return 1;
  }
  await saveTransitionModel(file, report.model, ctx.signal ? { signal: ctx.signal } : {});
  const stats = report.model.stats();
  ctx.io.out(`trained on ${report.sessions} sessions, ${report.calls} calls, ${stats.tools} distinct tools (${report.files} files; not used: ${unused})`);
  ctx.io.out(`wrote ${file}`);
  printTop(ctx, report.model, limit);
  return 0;
}

async function show(ctx: CliContext, projectDir: string, modelFlag: string | undefined, limit: number, json: boolean): Promise<number> {
  const file = modelFlag === undefined ? predictorFile(projectDir) : path.resolve(ctx.cwd, modelFlag);
  const model = await loadTransitionModel(file, ctx.signal ? { signal: ctx.signal } : {});
  if (!model) {
    ctx.io.err(`kiwi predictor: no model at ${file}; create it with \`kiwi predictor train\`${modelFlag === undefined ? '' : ' --out FILE'}`);
    return 1;
  }
  if (json) {
    ctx.io.out(JSON.stringify({ file, ...model.stats(), top: model.topTransitions(limit) }));
    return 0;
  }
  const stats = model.stats();
  ctx.io.out(`${file}: ${stats.observations} calls, ${stats.tools} distinct tools, ${stats.pairs} transitions`);
  printTop(ctx, model, limit);
  return 0;
}

function printTop(ctx: CliContext, model: LearnedTransitionModel, limit: number): void {
  const top = model.topTransitions(limit);
  if (top.length === 0) return;
  ctx.io.out('top transitions (count, p(next | previous)):');
  const from = top.map((t) => (t.from === null ? '(start)' : clean(t.from)));
  const width = Math.min(40, Math.max(...from.map((f) => f.length)));
  top.forEach((t, i) => {
    ctx.io.out(`  ${(from[i] ?? '').padEnd(width)} → ${clean(t.to).padEnd(24)} ${String(t.count).padStart(6)}  ${t.p.toFixed(2)}`);
  });
}

function progressLine(ctx: CliContext): (progress: TrainProgress) => void {
  let last = Date.now();
  return ({ filesDone, filesTotal, lines }) => {
    const now = Date.now();
    // Only logs that take a while get progress lines; a short one stays quiet.
    if (now - last < 1000) return;
    last = now;
    ctx.io.err(`reading the audit log: ${filesDone}/${filesTotal} files, ${lines} lines`);
  };
}

/** Tool ids come from audit files: escape control and bidi characters before they reach a terminal. */
function clean(text: string): string {
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return safe.length <= 80 ? safe : `${safe.slice(0, 79)}…`;
}
