import { abortableDelay } from '../../abort.js';
import { listThreads, readThread, type ThreadLine } from '../../threads/thread-store.js';
import { UsageError, type CliContext } from '../io.js';
import { parseFlags } from '../parse-flags.js';
import { projectOptions } from '../project-options.js';
import { printRecord } from './directives.js';

const USAGE = 'kiwi threads list | show ID | follow ID   [--json] [--project DIR]';

/** How often `follow` looks at the transcript again. */
const FOLLOW_MS = 250;

/**
 * `kiwi threads …`: the directive threads of this project (`.ai/threads/`), newest first, one's
 * transcript, or one followed live: what it writes is printed as it is written, until its end
 * (or Ctrl-C; a thread cut short by a crash never ends).
 */
export async function threadsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, { json: { type: 'boolean' }, project: { type: 'string' } }, USAGE);
  const [action, id, ...rest] = positionals;
  const root = projectOptions(ctx, values).projectDir;
  if (action === 'list' && id === undefined) {
    const threads = await listThreads(root);
    if (values.json) ctx.io.out(JSON.stringify(threads));
    else if (threads.length === 0) ctx.io.out('no threads yet; `kiwi directives run NAME` starts one');
    else for (const t of threads) ctx.io.out(`${t.header.id}  ${t.header.started_at}  ${t.header.directive}  ${t.end ? `${t.end.status}, ${t.end.steps_taken} step(s)${t.end.failure ? `, failure: ${t.end.failure}` : ''}` : 'not ended (running, or cut short)'}  (${t.header.model}, client ${t.header.client})`);
    return 0;
  }
  if ((action !== 'show' && action !== 'follow') || id === undefined || rest.length > 0) throw new UsageError(`usage: ${USAGE}`);
  const print = (line: ThreadLine): void => (values.json ? ctx.io.out(JSON.stringify(line)) : printLine(ctx, line));
  let lines = await readThread(root, id);
  lines.forEach(print);
  if (action === 'show') return 0;
  let shown = lines.length;
  while (lines.at(-1)?.type !== 'end') {
    if (!(await abortableDelay(FOLLOW_MS, ctx.signal))) return 130;
    lines = await readThread(root, id);
    lines.slice(shown).forEach(print);
    shown = lines.length;
  }
  return 0;
}

function printLine(ctx: CliContext, line: ThreadLine): void {
  if (line.type === 'thread') ctx.io.out(`thread ${line.id}: directive ${line.directive} ${JSON.stringify(line.inputs)} on ${line.model}, started ${line.started_at} by ${line.client}`);
  else if (line.type === 'end') ctx.io.out(`ended ${line.ended_at}: ${line.status}${line.limit ? ` (the ${line.limit} limit)` : ''}, ${line.steps_taken} step(s)${line.failure ? `, failure: ${line.failure}` : ''}${line.error ? `: ${line.error}` : ''}`);
  else printRecord(ctx, line);
}

