import { listThreads, readThread } from '../../threads/thread-store.js';
import { UsageError, type CliContext } from '../io.js';
import { parseFlags } from '../parse-flags.js';
import { projectOptions } from '../project-options.js';
import { printRecord } from './directives.js';

const USAGE = 'kiwi threads list | show ID   [--json] [--project DIR]';

/** `kiwi threads …`: the directive threads of this project (`.ai/threads/`), newest first, and one's transcript. */
export async function threadsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, { json: { type: 'boolean' }, project: { type: 'string' } }, USAGE);
  const [action, id, ...rest] = positionals;
  const root = projectOptions(ctx, values).projectDir;
  if (action === 'list' && id === undefined) {
    const threads = await listThreads(root);
    if (values.json) ctx.io.out(JSON.stringify(threads));
    else if (threads.length === 0) ctx.io.out('no threads yet; `kiwi directives run NAME` starts one');
    else for (const t of threads) ctx.io.out(`${t.header.id}  ${t.header.started_at}  ${t.header.directive}  ${t.end ? `${t.end.status}, ${t.end.steps_taken} step(s)` : 'not ended (running, or cut short)'}  (${t.header.model}, client ${t.header.client})`);
    return 0;
  }
  if (action !== 'show' || id === undefined || rest.length > 0) throw new UsageError(`usage: ${USAGE}`);
  const lines = await readThread(root, id);
  if (values.json) {
    for (const line of lines) ctx.io.out(JSON.stringify(line));
    return 0;
  }
  for (const line of lines) {
    if (line.type === 'thread') ctx.io.out(`thread ${line.id}: directive ${line.directive} ${JSON.stringify(line.inputs)} on ${line.model}, started ${line.started_at} by ${line.client}`);
    else if (line.type === 'end') ctx.io.out(`ended ${line.ended_at}: ${line.status}${line.limit ? ` (the ${line.limit} limit)` : ''}, ${line.steps_taken} step(s)${line.error ? `: ${line.error}` : ''}`);
    else printRecord(ctx, line);
  }
  return 0;
}
