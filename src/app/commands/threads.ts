import { abortableDelay } from '../../abort.js';
import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { openGateway } from '../open-gateway.js';
import { KiwiError } from '../../errors.js';
import { TERMINAL_STATUSES, type ExecutionStatus } from '../../kernel/types.js';
import { checkThreadId, isThreadOver, listThreads, readThread, type ThreadLine, type ThreadRecord } from '../../threads/thread-store.js';
import { clientKey, defaultGatewayBase } from '../../cli/gateway-address.js';
import { createKernelClient } from '../../cli/kernel-client.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { projectOptions } from '../../cli/project-options.js';
import { threadLineText } from '../../threads/thread-text.js';
import { printOutcome, printRecord, SHOWN } from './directives.js';
import { progressLine } from '../../cli/commands/index-tools.js';

const USAGE = 'kiwi threads list | show ID | follow ID | resume ID [--message TEXT] [--model M] | cancel ID [--url URL] [--key KEY]   [--json] [--project DIR]';

/** How often `follow` looks at the transcript again. */
const FOLLOW_MS = 250;

/**
 * `kiwi threads …`: the directive threads of this project (`.ai/threads/`), newest first, one's
 * transcript, or one followed live: what it writes is printed as it is written, until its end
 * (or Ctrl-C, or until it shows as cut short: no live process holds it). `resume` goes on with one that stopped,
 * here, as `kiwi directives run` runs one. `cancel` stops one a running gateway runs, through the
 * kernel: each run of a thread there is an execution labelled with the thread's id.
 */
export async function threadsCommand(ctx: CliContext): Promise<number> {
  const flags = { json: { type: 'boolean' }, project: { type: 'string' }, message: { type: 'string' }, model: { type: 'string' }, url: { type: 'string' }, key: { type: 'string' } } as const;
  const { values, positionals } = parseFlags(ctx.argv, flags, USAGE);
  const [action, id, ...rest] = positionals;
  const root = projectOptions(ctx, values).projectDir;
  if ((values.message !== undefined || values.model !== undefined) && action !== 'resume') throw new UsageError(`--message and --model are for resume; usage: ${USAGE}`);
  if ((values.url !== undefined || values.key !== undefined) && action !== 'cancel') throw new UsageError(`--url and --key are for cancel; usage: ${USAGE}`);
  if (action === 'cancel' && id !== undefined && rest.length === 0) return cancel(ctx, id, values);
  if (action === 'list' && id === undefined) {
    const threads = await listThreads(root);
    if (values.json) ctx.io.out(JSON.stringify(threads));
    else if (threads.length === 0) ctx.io.out('no threads yet; `kiwi directives run NAME` starts one');
    else for (const t of threads) ctx.io.out(`${t.header.id}  ${t.header.started_at}  ${t.header.directive}  ${t.end ? `${t.end.status}, ${t.end.steps_taken} step(s)${t.end.failure ? `, failure: ${t.end.failure}` : ''}` : t.running ? 'running' : 'cut short (`kiwi threads resume ID` goes on)'}  (${t.header.model}, client ${t.header.client})`);
    return 0;
  }
  if (action === 'resume' && id !== undefined && rest.length === 0) return resume(ctx, id, values);
  if ((action !== 'show' && action !== 'follow') || id === undefined || rest.length > 0) throw new UsageError(`usage: ${USAGE}`);
  const print = (line: ThreadLine): void => ctx.io.out(values.json ? JSON.stringify(line) : threadLineText(line, SHOWN));
  let lines = await readThread(root, id);
  lines.forEach(print);
  if (action === 'show') return 0;
  let shown = lines.length;
  while (!isThreadOver(root, id, lines)) {
    if (!(await abortableDelay(FOLLOW_MS, ctx.signal))) return 130;
    lines = await readThread(root, id);
    lines.slice(shown).forEach(print);
    shown = lines.length;
  }
  if (lines.at(-1)?.type === 'end') return 0;
  // Its process is gone without writing an end: waiting would never stop.
  ctx.io.err(`thread ${id} was cut short: no process writes it any more; \`kiwi threads resume ${id}\` goes on with it`);
  return 1;
}

async function resume(ctx: CliContext, id: string, values: { message?: string; model?: string; json?: boolean; project?: string }): Promise<number> {
  const log = (line: string): void => ctx.io.err(`kiwi: ${line}`);
  const gateway = await openGateway({ ...projectOptions(ctx, values), log, onIndexProgress: progressLine(ctx), unattended: true, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  try {
    const outcome = await gateway.threads.resume({
      id,
      client: LOCAL_CLIENT,
      ...(values.message !== undefined ? { message: values.message } : {}),
      ...(values.model !== undefined ? { model: values.model } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(values.json ? {} : { onRecord: (r: ThreadRecord) => printRecord(ctx, r) }),
    });
    return printOutcome(ctx, outcome, values.json === true);
  } finally {
    await gateway.close();
  }
}

/** The running execution labelled with the thread's id, cancelled through the gateway's /v0. */
async function cancel(ctx: CliContext, id: string, values: { url?: string; key?: string }): Promise<number> {
  checkThreadId(id); // before anything is sent
  const kernel = createKernelClient(values.url ?? defaultGatewayBase(ctx.env), clientKey(values.key ?? ctx.env['KIWI_API_KEY']), ctx.signal);
  try {
    const page = (await kernel.get(`/v0/executions?label=${encodeURIComponent(`thread:${id}`)}&limit=50`)) as { executions: { id: string; status: string }[] };
    const live = page.executions.find((e) => !TERMINAL_STATUSES.has(e.status as ExecutionStatus));
    if (live === undefined) throw new KiwiError('NOT_FOUND', `the gateway runs no thread ${id} now (\`kiwi threads show ${id}\` says how it ended; a thread run by \`kiwi directives run\` stops with Ctrl-C)`);
    await kernel.post(`/v0/executions/${encodeURIComponent(live.id)}/cancel`, {});
    ctx.io.out(`cancelled: thread ${id} (execution ${live.id}); its transcript ends once it has stopped`);
    return 0;
  } finally {
    await kernel.close();
  }
}
