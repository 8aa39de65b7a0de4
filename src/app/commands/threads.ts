import { abortableDelay } from '../../base/abort.js';
import { LOCAL_CLIENT } from '../../clients/client-auth.js';
import { openGateway } from '../open-gateway.js';
import { KiwiError } from '../../base/errors.js';
import { TERMINAL_STATUSES, type ExecutionStatus } from '../../kernel/types.js';
import { checkThreadId, isThreadOver, type ThreadLine, type ThreadRecord, type ThreadStore } from '../../threads/thread-store.js';
import { openThreadStore } from '../state-backends.js';
import { clientKey, defaultGatewayBase } from '../../cli/gateway-address.js';
import { createKernelClient } from '../../cli/kernel-client.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { THREADS_HELP } from './threads-help.js';
import { projectOptions } from '../../cli/project-options.js';
import { threadLineText } from '../../threads/thread-text.js';
import { threadUsage } from '../../threads/thread-usage.js';
import { usageText } from '../../budgets/usage-summary.js';
import { printOutcome, printRecord, SHOWN } from './directives.js';
import { createIndexProgress } from '../../cli/index-progress.js';

const USAGE = THREADS_HELP.usage;

/** How often `follow` looks at the transcript again. */
const FOLLOW_MS = 250;

/**
 * `kiwi threads …`: the directive threads of this project (`.ai/threads/`, or with DATABASE_URL
 * those of every gateway on that Postgres), newest first, one's transcript, or one followed live:
 * what it writes is printed as it is written, until its end (or Ctrl-C, or until it shows as cut
 * short: no live process holds it). `resume` goes on with one that stopped, here, as
 * `kiwi directives run` runs one. `cancel` stops one a running gateway runs, through the
 * kernel: each run of a thread there is an execution labelled with the thread's id.
 */
export async function threadsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, THREADS_HELP);
  const [action, id, ...rest] = positionals;
  const root = projectOptions(ctx, values).projectDir;
  if ((values.message !== undefined || values.model !== undefined) && action !== 'resume') throw new UsageError(`--message and --model are for resume; usage: ${USAGE}`);
  if ((values.url !== undefined || values.key !== undefined) && action !== 'cancel') throw new UsageError(`--url and --key are for cancel; usage: ${USAGE}`);
  if (action === 'cancel' && id !== undefined && rest.length === 0) return cancel(ctx, id, values);
  if (action === 'resume' && id !== undefined && rest.length === 0) return resume(ctx, id, values);
  const reading = action === 'list' && id === undefined ? { list: true as const } : (action === 'show' || action === 'follow') && id !== undefined && rest.length === 0 ? { id, follow: action === 'follow' } : undefined;
  if (reading === undefined) throw new UsageError(`usage: ${USAGE}`);
  const { store, close } = await openThreadStore(root, ctx.env);
  try {
    return await ('list' in reading ? list(ctx, store, values.json === true) : show(ctx, store, reading.id, reading.follow, values.json === true));
  } finally {
    await close();
  }
}

async function list(ctx: CliContext, store: ThreadStore, json: boolean): Promise<number> {
  const threads = await store.list();
  if (json) ctx.io.out(JSON.stringify(threads));
  else if (threads.length === 0) ctx.io.out('no threads yet; `kiwi directives run NAME` starts one');
  else for (const t of threads) ctx.io.out(`${t.header.id}  ${t.header.started_at}  ${t.header.directive}  ${t.end ? `${t.end.status}, ${t.end.steps_taken} step(s)${t.end.failure ? `, failure: ${t.end.failure}` : ''}` : t.running ? 'running' : 'cut short (`kiwi threads resume ID` goes on)'}  (${t.header.model}, client ${t.header.client})`);
  return 0;
}

/** A thread's transcript; followed, each line as it is written until its end, or until no live process holds it. */
async function show(ctx: CliContext, store: ThreadStore, id: string, follow: boolean, json: boolean): Promise<number> {
  const print = (line: ThreadLine): void => ctx.io.out(json ? JSON.stringify(line) : threadLineText(line, SHOWN));
  // The stamp before the read: a line written after it moves it, so none is missed.
  let seen = follow ? await store.stamp(id) : '';
  let lines = await store.read(id);
  lines.forEach(print);
  if (!follow) {
    printTotal(ctx, lines, json);
    return 0;
  }
  let shown = lines.length;
  // Each beat looks at the stamp; the transcript is read again only when it moved.
  const fresh = async (): Promise<void> => {
    const now = await store.stamp(id);
    if (now === seen) return;
    seen = now;
    lines = await store.read(id);
    lines.slice(shown).forEach(print);
    shown = lines.length;
  };
  while (!(await isThreadOver(store, id, lines))) {
    if (!(await abortableDelay(FOLLOW_MS, ctx.signal))) return 130;
    await fresh();
  }
  // What its writer wrote before it let go.
  await fresh();
  if (lines.at(-1)?.type === 'end') {
    printTotal(ctx, lines, json);
    return 0;
  }
  // Its process is gone without writing an end: waiting would never stop.
  ctx.io.err(`thread ${id} was cut short: no process writes it any more; \`kiwi threads resume ${id}\` goes on with it`);
  return 1;
}

/** After an ended thread's transcript, what it used (over all its runs, when it was resumed). */
function printTotal(ctx: CliContext, lines: readonly ThreadLine[], json: boolean): void {
  const usage = threadUsage(lines);
  if (json || usage === undefined) return;
  const runs = lines.filter((l) => l.type === 'end').length;
  ctx.io.out(`used${runs > 1 ? ` over its ${runs} runs` : ''}: ${usageText(usage)}`);
}

async function resume(ctx: CliContext, id: string, values: { message?: string; model?: string; json?: boolean; project?: string }): Promise<number> {
  const log = (line: string): void => ctx.io.err(`kiwi: ${line}`);
  const gateway = await openGateway({ ...projectOptions(ctx, values), log, indexProgress: createIndexProgress(ctx.io), unattended: true, ...(ctx.signal ? { signal: ctx.signal } : {}) });
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
