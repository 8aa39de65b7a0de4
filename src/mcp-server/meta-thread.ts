import { z } from 'zod';
import { abortableDelay } from '../base/abort.js';
import { ownedBy } from '../clients/access.js';
import { KiwiError } from '../base/errors.js';
import type { Directive } from '../registry/types.js';
import { threadOutcomeBody, type ThreadOutcome, type ThreadResume, type ThreadStart } from '../threads/run-thread.js';
import { isThreadOver, type ThreadLine, type ThreadRecord, type ThreadStore } from '../threads/thread-store.js';
import { threadLineText } from '../threads/thread-text.js';
import { threadUsage } from '../threads/thread-usage.js';
import { refusals, type MetaContext, type MetaResult, type MetaThreads } from './meta-common.js';

/**
 * Directives as threads over MCP, where the gateway runs them. `execute(action="run")` runs one
 * and answers its outcome, each line it writes sent as a progress notification meanwhile; with
 * `async: true` it answers the thread's id at once. `status`, `stream` (its lines from a cursor,
 * waiting up to `wait_s` for the next), `cancel` and `resume` then take the thread's id as `item_id`.
 * A client sees only its own threads.
 */

export const THREAD_ACTIONS = ['status', 'stream', 'cancel', 'resume'] as const;
export type ThreadAction = (typeof THREAD_ACTIONS)[number];

/** Notifications carry a line each, cut to this; `stream` answers at most this many lines, and this much JSON, at once. */
const NOTIFY = { turn: 2000, item: 500 };
const MAX_STREAM_LINES = 500;
const MAX_STREAM_CHARS = 1_000_000;
const POLL_MS = 250;

const streamParameters = z.strictObject({
  after: z.number().int().min(0).optional(),
  wait_s: z.number().min(0).max(300).optional(),
});
const resumeParameters = z.strictObject({ message: z.string().max(4000).optional() });

export async function runDirectiveThread(ctx: MetaContext, threads: MetaThreads, directive: Directive, inputs: Record<string, unknown>, options: { async?: boolean; signal?: AbortSignal; environment?: string }): Promise<MetaResult> {
  const start: ThreadStart = { directive: directive.name, inputs, client: ctx.caller.client, ...(ctx.caller.context ? { context: ctx.caller.context } : {}), ...(options.environment === undefined ? {} : { environment: options.environment }) };
  return refusals(async () => {
    if (options.async) return started(await threads.background({ start }));
    return outcomeResult(await threads.run({ ...start, ...(options.signal ? { signal: options.signal } : {}), ...notifying(ctx) }));
  });
}

export async function threadAction(ctx: MetaContext, threads: MetaThreads, action: ThreadAction, id: string, parameters: Record<string, unknown>, options: { async?: boolean; signal?: AbortSignal }): Promise<MetaResult> {
  return refusals(async () => {
    const { store } = threads;
    await checkOwner(ctx, store, id);
    const lines = (): Promise<ThreadLine[]> => store.read(id);
    switch (action) {
      case 'status':
        return statusResult(store, id, await lines());
      case 'stream':
        return stream(store, id, await lines(), parse(streamParameters, parameters, 'stream takes parameters {"after": LINE, "wait_s": SECONDS}'), options.signal);
      case 'cancel':
        if (threads.cancel(id)) return statusResult(store, id, await lines(), 'cancelling');
        if (!(await store.isRunning(id))) throw new KiwiError('CONFLICT', `thread ${id} is not running`);
        // Run by another replica: cancelled through its execution, which that replica hears of.
        if (await threads.cancelElsewhere?.(id)) return statusResult(store, id, await lines(), 'cancelling');
        throw new KiwiError('CONFLICT', `thread ${id} runs in another process that records no execution for it (\`kiwi directives run\`), which alone can cancel it`);
      case 'resume': {
        const { message } = parse(resumeParameters, parameters, 'resume takes parameters {"message": TEXT} (optional)');
        const resume: ThreadResume = { id, client: ctx.caller.client, ...(ctx.caller.context ? { context: ctx.caller.context } : {}), ...(message !== undefined ? { message } : {}) };
        if (options.async) return started(await threads.background({ resume }));
        return outcomeResult(await threads.resume({ ...resume, ...(options.signal ? { signal: options.signal } : {}), ...notifying(ctx) }));
      }
    }
  });
}

/** Another client's thread is answered as no thread at all: its id tells nothing. Only the first line is read. */
async function checkOwner(ctx: MetaContext, store: ThreadStore, id: string): Promise<void> {
  const header = await store.readHeader(id);
  if (!ownedBy(ctx.caller, header.client)) throw new KiwiError('NOT_FOUND', `no thread ${id} of client ${ctx.caller.client}`);
}

function parse<T>(schema: z.ZodType<T>, parameters: Record<string, unknown>, usage: string): T {
  const parsed = schema.safeParse(parameters);
  if (!parsed.success) throw new KiwiError('INVALID_INPUT', `${parsed.error.issues.map((i) => `${i.path.join('.') || 'parameters'}: ${i.message}`).join('; ')}; ${usage}`);
  return parsed.data;
}

/** Each line the thread writes goes to the client as it is written (as progress when it asked for progress). */
function notifying(ctx: MetaContext): Pick<ThreadStart, 'onRecord'> {
  const notify = ctx.notify;
  return notify === undefined ? {} : { onRecord: (r: ThreadRecord) => notify(threadLineText(r, NOTIFY)) };
}

function started(id: string): MetaResult {
  const body = { thread: id, status: 'running' };
  const next = `execute(item_type="directive", action="stream", item_id="${id}") follows it; action "status" says where it stands, "cancel" stops it.`;
  return { content: [{ type: 'text', text: `${JSON.stringify(body, null, 2)}\n${next}` }], structuredContent: body };
}

function outcomeResult(outcome: ThreadOutcome): MetaResult {
  const body = { ...threadOutcomeBody(outcome), audit: outcome.audit, usage: outcome.usage };
  return { content: [{ type: 'text', text: JSON.stringify(body, null, 2) }], structuredContent: body, ...(outcome.status === 'completed' ? {} : { isError: true }) };
}

/** Where a thread stands: its end when its last line is one, else running (a live process writes it) or cut short. */
async function statusResult(store: ThreadStore, id: string, lines: readonly ThreadLine[], status?: string): Promise<MetaResult> {
  const last = lines.at(-1);
  const header = lines[0] as Extract<ThreadLine, { type: 'thread' }>;
  const usage = threadUsage(lines);
  const turns = lines.filter((l): l is Extract<ThreadLine, { type: 'turn' }> => l.type === 'turn');
  const body = {
    thread: id,
    directive: header.directive,
    status: status ?? (last?.type === 'end' ? last.status : (await store.isRunning(id)) ? 'running' : 'cut_short'),
    steps_taken: lines.filter((l) => l.type === 'result').length,
    result: last?.type === 'end' ? last.result : (turns.at(-1)?.text ?? ''),
    ...(last?.type === 'end' && last.limit ? { limit: last.limit } : {}),
    ...(last?.type === 'end' && last.error ? { error: last.error } : {}),
    ...(usage === undefined ? {} : { usage }),
    lines: lines.length,
  };
  return { content: [{ type: 'text', text: JSON.stringify(body, null, 2) }], structuredContent: body };
}

/**
 * The thread's lines from `after` on (at most 500, and 1 MB of JSON, but always one); when there are none yet and it still runs,
 * it waits up to `wait_s` (default 30) for the next. `next` is the cursor for the next call.
 */
async function stream(store: ThreadStore, id: string, first: ThreadLine[], p: { after?: number; wait_s?: number }, signal: AbortSignal | undefined): Promise<MetaResult> {
  const after = p.after ?? 0;
  const deadline = Date.now() + (p.wait_s ?? 30) * 1000;
  let lines = first;
  const ended = (): Promise<boolean> => isThreadOver(store, id, lines);
  if (lines.length <= after) {
    // The stamp, then the transcript: a line written after the stamp moves it, so none is missed.
    let seen = await store.stamp(id);
    lines = await store.read(id);
    // Each beat looks at the stamp; the transcript is read again only when it moved.
    const fresh = async (): Promise<void> => {
      const now = await store.stamp(id);
      if (now === seen) return;
      seen = now;
      lines = await store.read(id);
    };
    while (lines.length <= after && Date.now() < deadline) {
      if (await ended()) {
        await fresh(); // what its writer wrote before it let go
        break;
      }
      if (!(await abortableDelay(POLL_MS, signal))) break;
      await fresh();
    }
  }
  const shown = capped(lines.slice(after, after + MAX_STREAM_LINES));
  const next = after + shown.length;
  const body = { thread: id, lines: shown, next, ended: next >= lines.length && (await ended()) };
  const text = [...shown.map((l) => threadLineText(l, NOTIFY)), body.ended ? '(the thread has ended)' : `(more may come: stream again with parameters {"after": ${next}})`].join('\n');
  return { content: [{ type: 'text', text }], structuredContent: body };
}

function capped(lines: ThreadLine[]): ThreadLine[] {
  let chars = 0;
  const kept: ThreadLine[] = [];
  for (const line of lines) {
    chars += JSON.stringify(line).length;
    if (kept.length > 0 && chars > MAX_STREAM_CHARS) break;
    kept.push(line);
  }
  return kept;
}
