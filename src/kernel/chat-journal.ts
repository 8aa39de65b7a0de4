import type { UsageSummary } from '../budgets/usage-summary.js';
import type { ChatStepWrite, ChatWrite } from './chat-rows.js';
import type { EventDraft } from './types.js';
import { uuidv7 } from './uuidv7.js';
import { redactedJson } from '../audit/cap-audit-value.js';
import { lookEveryMs, type KernelEventsBus } from '../contracts/kernel-events-bus.js';

/**
 * The gateway's chat requests as kernel executions, written behind: a chat never waits for the
 * database. What chats do is queued in memory and written every `intervalMs`, all chats in one
 * transaction, so the cost per chat stays a few rows in a batch. With `holdMs`, a chat is kept in
 * memory until it ends, opens a step, waits for a person, or has run that long: most chats are
 * then written once, whole, as one row (chat-rows.ts). A crash loses at most the chats that
 * ended in the last interval (and, with `holdMs`, the running ones begun within it); a cancel
 * first writes everything queued for its chat (so its open steps are cancelled with it), then
 * stops the chat. `flush()` writes everything, held chats too: whatever reads the kernel in this
 * process flushes first, so that it sees every chat begun before it.
 *
 * Everything written is redacted with the audit log's rules (its input, every event's payload,
 * its output): the gateway runs these chats from memory, so the kernel never needs the client
 * key or `.env` value a message, a call or a result carried, and must not show it to approvers.
 */

export interface ChatStart {
  /** Whose chat it is: the client of the key that sent it. */
  client: string;
  agentId: string;
  input: unknown;
  labels: Record<string, string>;
  /** Called once when the execution is cancelled (here or, seen at the next write, elsewhere). */
  onCancel(): void;
}

export interface ChatExecution {
  readonly id: string;
  /** False when the journal was too full to take it: nothing of it is written, so its id is not shown. */
  readonly recorded: boolean;
  /** Events written together, in order after those before; nothing once it has ended. */
  record(drafts: EventDraft[], step?: Omit<ChatStepWrite, 'createdAt'>): void;
  /**
   * The chat waits on `stepId` for a person (§12.2): `step.approval_required` and
   * `execution.blocked` are written, and the row blocked, before this settles, so that the
   * approvals API can answer it. Resolves to false when nothing is written for it (not recorded, ended).
   */
  block(stepId: string, payload: { tool_id: string; arguments: unknown; reason: string }): Promise<boolean>;
  /** Its last events and its end, with its output and what it used (when it called a model); later calls do nothing. */
  end(status: 'completed' | 'failed' | 'cancelled', drafts: EventDraft[], kept?: { output?: unknown; usage?: UsageSummary }): void;
  /**
   * Resolves once everything recorded for it so far is written (or its write failed: it is kept
   * and tried again). The write starts as soon as the one under way ends, shared by every chat
   * that waits meanwhile, instead of after the journal's interval.
   */
  written(): Promise<void>;
}

export interface ChatJournal {
  begin(start: ChatStart): ChatExecution;
  /** Writes what is queued for this chat (before a cancel), then writes nothing more for it. */
  detach(id: string): Promise<boolean>;
  /** Everything queued so far written. */
  flush(): Promise<void>;
  /** Writes what is left and stops. */
  close(): Promise<void>;
}

export interface ChatJournalDeps {
  /** Writes a batch in one transaction (the kernel's writeChats); resolves to the chats found cancelled. */
  write: (writes: ChatWrite[]) => Promise<string[]>;
  now?: () => Date;
  /** How long a change may wait before it is written (default 25 ms). */
  intervalMs?: number;
  /**
   * How long a running chat without a step may stay unwritten (default 0: written at the next
   * batch). Only where nothing outside this process reads the database (embedded PGlite).
   */
  holdMs?: number;
  /** Told when a write fails; what it held is kept and tried again with the next one. */
  onError?: (error: unknown) => void;
  /**
   * Which of these chats were cancelled (by another gateway on a shared database), asked every
   * `watchMs` while chats run; absent: only writes find out.
   */
  cancelledAmong?: (ids: string[]) => Promise<string[]>;
  /** Default 1 s; 5 s when `events` carries every replica's. */
  watchMs?: number;
  /** Word of committed events: a chat cancelled anywhere is looked at once. */
  events?: KernelEventsBus;
}

/** Chats waiting to be written past this are not recorded (a database that stopped answering must not take the gateway's memory). */
const MAX_QUEUED = 10_000;
/** After a failed write, the next try. */
const RETRY_MS = 1000;

interface Entry {
  write: ChatWrite;
  start: ChatStart;
  ended: boolean;
  /** When it began (ms), while it is held unwritten. */
  heldSince?: number;
}

export function createChatJournal(deps: ChatJournalDeps): ChatJournal {
  const now = deps.now ?? ((): Date => new Date());
  const intervalMs = deps.intervalMs ?? 25;
  const holdMs = deps.holdMs ?? 0;
  /** Chats not yet ended, by id. */
  const live = new Map<string, Entry>();
  /** Chats with changes not yet written. */
  let dirty = new Map<string, Entry>();
  /** Chats running unwritten (`holdMs`), oldest first. */
  const held = new Map<string, Entry>();
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  let closed = false;
  let watcher: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const cancelledAmong = deps.cancelledAmong;
  if (cancelledAmong !== undefined) {
    let looking = false;
    /** Chats told of while a look was running: looked at right after it. */
    const told = new Set<string>();
    const look = (candidates: Iterable<string>): void => {
      // Only chats already written can have been cancelled elsewhere.
      const ids = [...candidates].filter((id) => live.get(id)?.write.create === undefined);
      if (ids.length === 0) return;
      if (looking) {
        for (const id of ids) told.add(id);
        return;
      }
      looking = true;
      void cancelledAmong(ids)
        .then((gone) => gone.forEach(cancelled), deps.onError)
        .finally(() => {
          looking = false;
          const next = [...told];
          told.clear();
          look(next);
        });
    };
    watcher = setInterval(() => look(live.keys()), deps.watchMs ?? lookEveryMs(deps.events, 1000));
    watcher.unref();
    // A cancel through another replica, told at once: the chat stops now, not at the next look.
    unsubscribe = deps.events?.subscribe((notes) => look(notes.filter((n) => n.types.includes('execution.cancelled') && live.has(n.execution)).map((n) => n.execution)));
  }

  /** When the timer fires (performance.now()), and until when a failed write keeps it from firing. */
  let timerAt = Number.POSITIVE_INFINITY;
  let backoffUntil = 0;
  /** The next beat in `delayMs`, unless one comes sooner: a change waits at most the interval, whatever a hold has set. */
  const wakeIn = (delayMs: number): void => {
    if (closed) return;
    const at = Math.max(performance.now() + delayMs, backoffUntil);
    if (timer !== undefined && timerAt <= at) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => {
      timer = undefined;
      timerAt = Number.POSITIVE_INFINITY;
      void tick().catch(() => undefined);
    }, at - performance.now());
  };

  const touch = (entry: Entry): void => {
    release(entry);
    dirty.set(entry.write.id, entry);
    wakeIn(intervalMs);
  };

  const release = (entry: Entry): void => {
    if (entry.heldSince === undefined) return;
    delete entry.heldSince;
    held.delete(entry.write.id);
  };

  /** The beat: what changed, and the chats held for `holdMs` by now; the next beat when the oldest held one is due. */
  function tick(): Promise<void> {
    const due = now().getTime() - holdMs;
    for (const entry of held.values()) {
      if ((entry.heldSince as number) > due) break;
      touch(entry);
    }
    const written = writeDirty();
    const oldest = held.values().next().value;
    if (oldest !== undefined) wakeIn(Math.max(intervalMs, (oldest.heldSince as number) - due));
    return written;
  }

  let queued: Promise<void> | undefined;
  /** A write right after the one under way, taking everything queued by then: every waiter meanwhile shares it. */
  const flushSoon = (): Promise<void> =>
    (queued ??= writing.then(() => {
      queued = undefined;
      return writeDirty();
    }));

  /** Everything, held chats too. */
  function flush(): Promise<void> {
    for (const entry of held.values()) touch(entry);
    return writeDirty();
  }

  /** One batch at a time, in order; a failed batch is merged back in front of what came since. */
  function writeDirty(): Promise<void> {
    writing = writing.then(async () => {
      if (dirty.size === 0) return;
      const batch = dirty;
      dirty = new Map();
      const writes = [...batch.values()].map((e) => e.write);
      for (const entry of batch.values()) entry.write = { id: entry.write.id, events: [], steps: [] };
      try {
        const gone = await deps.write(writes);
        for (const id of gone) cancelled(id);
      } catch (error) {
        deps.onError?.(error);
        for (const [i, entry] of [...batch.values()].entries()) entry.write = merge(writes[i] as ChatWrite, entry.write);
        dirty = new Map([...batch, ...dirty]);
        // No beat before the retry, whatever comes meanwhile (a database that is down is not asked every interval).
        backoffUntil = performance.now() + RETRY_MS;
        clearTimeout(timer);
        timer = undefined;
        wakeIn(RETRY_MS);
      }
    });
    return writing;
  }

  function cancelled(id: string): void {
    const entry = live.get(id);
    if (entry === undefined) return;
    live.delete(id);
    dirty.delete(id);
    release(entry);
    entry.ended = true;
    entry.start.onCancel();
  }

  return {
    begin(start) {
      const at = now();
      const id = uuidv7(at.getTime());
      const stamp = at.toISOString();
      const input = redactedJson(start.input ?? null);
      const entry: Entry = { write: { id, create: { client: start.client, agentId: start.agentId, input, labels: start.labels, createdAt: stamp }, events: [], steps: [] }, start, ended: false };
      if (dirty.size + held.size >= MAX_QUEUED) entry.ended = true;
      else live.set(id, entry);
      const execution: ChatExecution = {
        id,
        recorded: !entry.ended,
        record(drafts, step) {
          if (entry.ended) return;
          const when = now().toISOString();
          append(entry.write, drafts, when);
          if (step !== undefined) upsertStep(entry.write, { ...step, createdAt: when });
          // A held chat's events wait with it; a step is written at once, for whoever acts on it.
          if (entry.heldSince === undefined || step !== undefined) touch(entry);
        },
        async block(stepId, payload) {
          if (entry.ended) return false;
          const when = now().toISOString();
          append(
            entry.write,
            [
              { type: 'step.approval_required', stepId, payload: { ...payload, remote: false } },
              { type: 'execution.blocked', payload: { reason: 'approval', ref: stepId, tool_id: payload.tool_id, arguments: payload.arguments } },
            ],
            when,
          );
          entry.write.block = stepId;
          touch(entry);
          await writeDirty();
          return !entry.ended;
        },
        end(status, drafts, kept = {}) {
          if (entry.ended) return;
          entry.ended = true;
          live.delete(id);
          const when = now().toISOString();
          append(entry.write, drafts, when);
          entry.write.end = { status, at: when, ...(kept.output === undefined ? {} : { output: redactedJson(kept.output) }), ...(kept.usage === undefined ? {} : { usage: JSON.stringify(kept.usage) }) };
          touch(entry);
        },
        written() {
          if (entry.heldSince !== undefined) touch(entry);
          return dirty.has(id) ? flushSoon() : writing;
        },
      };
      if (entry.ended) return execution;
      // The input redacted once, for its column and its event.
      const agent = JSON.stringify(start.agentId);
      const labels = Object.keys(start.labels).length === 0 ? 'null' : redactedJson(start.labels);
      appendJson(
        entry.write,
        [
          { type: 'execution.created', json: `{"agent_id":${agent},"input":${input},"labels":${labels}}` },
          { type: 'execution.started', json: `{"session_id":"","consumer_id":${agent}}` },
        ],
        stamp,
      );
      if (holdMs === 0) touch(entry);
      else {
        entry.heldSince = at.getTime();
        held.set(id, entry);
        wakeIn(holdMs);
      }
      return execution;
    },

    async detach(id) {
      const entry = live.get(id);
      if (entry === undefined) return false;
      await flush();
      cancelled(id);
      return true;
    },

    flush,

    async close() {
      clearInterval(watcher);
      unsubscribe?.();
      await flush();
      closed = true;
      clearTimeout(timer);
    },
  };
}

/** Drafts appended as one batch (§14.1): one time, causation chained, one correlation. */
function append(write: ChatWrite, drafts: readonly EventDraft[], timestamp: string): void {
  appendJson(write, drafts.map((d) => ({ type: d.type, ...(d.stepId === undefined ? {} : { stepId: d.stepId }), json: redactedJson(d.payload) })), timestamp);
}

/** As `append`, each payload already redacted JSON text. */
function appendJson(write: ChatWrite, drafts: readonly { type: string; stepId?: string; json: string }[], timestamp: string): void {
  const ms = Date.parse(timestamp);
  let previous: string | undefined;
  let correlation: string | undefined;
  for (const draft of drafts) {
    const id = uuidv7(ms);
    correlation ??= id;
    write.events.push({ id, ...(draft.stepId === undefined ? {} : { stepId: draft.stepId }), type: draft.type, timestamp, payload: draft.json, causationId: previous ?? id, correlationId: correlation });
    previous = id;
  }
}

/** A step's latest state replaces the one not yet written, keeping when it was created. */
function upsertStep(write: ChatWrite, step: ChatStepWrite): void {
  const i = write.steps.findIndex((s) => s.id === step.id);
  if (i === -1) write.steps.push(step);
  else write.steps[i] = { ...step, createdAt: (write.steps[i] as ChatStepWrite).createdAt };
}

/** A batch that failed, with what was queued for the same chat since. */
function merge(failed: ChatWrite, since: ChatWrite): ChatWrite {
  const merged: ChatWrite = { ...failed, events: [...failed.events, ...since.events], steps: [...failed.steps] };
  for (const step of since.steps) upsertStep(merged, step);
  const end = since.end ?? failed.end;
  if (end !== undefined) merged.end = end;
  const block = since.block ?? failed.block;
  if (block !== undefined) merged.block = block;
  return merged;
}
