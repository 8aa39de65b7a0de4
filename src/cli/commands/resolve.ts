import type { Resolution } from '../../resolver/types.js';
import { UsageError, type CliContext } from '../io.js';
import { parseFlags } from '../parse-flags.js';
import { openProjectResolver } from './index-tools.js';

const USAGE = 'kiwi resolve "INTENT" [--context TEXT] [--limit N] [--json] [--project DIR]';

/** `kiwi resolve`: the call an intent resolves to, the candidates with scores, and where the time went. Runs nothing. */
export async function resolveCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(
    ctx.argv,
    { context: { type: 'string' }, limit: { type: 'string', default: '5' }, json: { type: 'boolean' }, project: { type: 'string' } },
    USAGE,
  );
  const intent = positionals.join(' ').trim();
  if (!intent) throw new UsageError(`give the intent text; usage: ${USAGE}`);
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError(`--limit must be a whole number from 1 to 100, got ${values.limit}`);
  const runtime = await openProjectResolver(ctx, values.project);
  try {
    const sync = await runtime.sync();
    if (sync.added + sync.updated + sync.removed > 0) ctx.io.err(`kiwi: index updated (${sync.added} added, ${sync.updated} updated, ${sync.removed} removed)`);
    const resolution = await runtime.resolver.resolve(intent, { limit, ...(values.context ? { context: values.context } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    if (values.json) ctx.io.out(JSON.stringify(resolution, null, 2));
    else print(ctx, resolution);
    return resolution.status === 'resolved' ? 0 : 4;
  } finally {
    await runtime.close();
  }
}

function print(ctx: CliContext, r: Resolution): void {
  if (r.status === 'resolved') ctx.io.out(`call: ${r.call.tool} ${JSON.stringify(r.call.arguments)}   (confidence ${r.confidence.toFixed(2)})`);
  else ctx.io.out(`unresolved: ${r.reason}`);
  ctx.io.out('candidates:');
  for (const c of r.candidates) {
    const parts = [c.vectorScore !== undefined ? `cosine ${c.vectorScore.toFixed(3)}` : 'cosine -', c.textScore !== undefined ? `bm25 ${c.textScore.toFixed(3)}` : 'bm25 -'];
    ctx.io.out(`  ${c.score.toFixed(3)}  ${c.tool.padEnd(28)}  ${parts.join(', ')}`);
  }
  for (const n of r.notes) ctx.io.out(`note: ${n}`);
  const t = r.timings;
  ctx.io.out(`time: ${t.totalMs.toFixed(1)} ms (embed ${t.embedMs.toFixed(1)}, search ${t.searchMs.toFixed(1)}, arguments ${t.fillMs.toFixed(2)})`);
}
