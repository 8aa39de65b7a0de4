import { auditValueJson, capText, truncationMarker } from './cap-audit-value.js';

/** What a call may name besides a tool (ToolCall's `item`). */
export const CALL_ITEMS = ['directive', 'knowledge', 'checkpoint', 'creation'] as const;
export type CallItem = (typeof CALL_ITEMS)[number];

/**
 * One line of `.ai/logs/audit/<YYYY-MM-DD>/<session>.jsonl`: one tool call, allowed or denied, or
 * one help signal of an agent (`help` set, tool `help`, args its action and message).
 */
export interface AuditRecord {
  /** ISO time the call started. */
  ts: string;
  /** The conversation (chat request or MCP session) the call belongs to. */
  session: string;
  /** The client that asked (its key's name, or `local`). */
  client?: string;
  call_id: string;
  /** The tool's id; a directive's name or a knowledge entry's id when `item` says so. */
  tool: string;
  /** Set when the call ran a directive (as a thread), read a knowledge entry, restored a checkpoint or created an item. */
  item?: CallItem;
  /** As requested; redacted and capped by the writer with truncation markers. */
  args: unknown;
  decision: 'allow' | 'deny';
  /** Why it was denied, or which rule allowed it. */
  reason?: string;
  /** Summary of the result; redacted and capped by the writer. */
  result?: unknown;
  error?: { code: string; message: string };
  /** Set when the call was stopped while it ran: why (`gateway stopping`, or what the canceller said). Its error is TOOL_CANCELLED. */
  cancelled?: string;
  duration_ms: number;
  stuck?: boolean;
  /** cli | gateway | mcp | prefetch | runner | thread */
  source?: string;
  /** The call id of the speculative (prefetch) call whose result this call reused instead of running again. */
  reused?: string;
  /** The git checkpoint that holds the work tree as it was before this call ran (`kiwi checkpoints restore ID`). */
  checkpoint?: string;
  /** What the hooks that fired on this call added: annotations, directives they asked for, webhooks sent or failed. */
  notes?: string[];
  /** A person's answer to a call that waited for one (`decided_by` is `timeout` when none came). */
  approval?: { approved: boolean; decided_by: string; reason?: string; waited_ms: number };
  /** A help signal, not a call (`stuck`, `escalate` or `checkpoint`): nothing ran, and `decision` is allow since nothing was refused. */
  help?: string;
  /** How the call ran (call-isolation.ts): `bwrap`, `podman`, or `none` with `sandbox_reason` (`nothing ran` for a refused call or a help signal). */
  sandbox?: 'bwrap' | 'podman' | 'none';
  sandbox_reason?: string;
  /** The OpenTelemetry trace the call was part of (32 hex digits), when traces are sent. */
  trace_id?: string;
  /** The call was written by the resolver's fallback model (resolver.yaml `fallback:`): which, how long it took, what it cost. */
  resolved_by?: ResolvedBy;
  /** What steering hooks decided for the call, in order: on which event and attempt, which hook, its thread for a steering directive. */
  steering?: SteerRecord[];
  /** How many times the call ran, when a hook had it run again (`retry`). */
  attempts?: number;
}

export interface SteerRecord {
  event: string;
  /** The hook, `file:line`. */
  hook: string;
  decision: string;
  reason?: string;
  thread?: string;
  /** Which run of the call it decided on (0: before it first ran). */
  attempt: number;
}

export interface ResolvedBy {
  model: string;
  /** The gateway.yaml upstream that served it. */
  upstream: string;
  ms: number;
  input_tokens?: number;
  output_tokens?: number;
  /** US dollars, when gateway.yaml prices the model. */
  usd?: number;
}

export interface RecordCaps {
  /** Cap on the line without its newline; the last resort if the field caps below add up to more. */
  maxLineBytes: number;
  /** Longer strings in args and result are cut to a marker with their size and hash. */
  maxStringChars: number;
  /** Cap on the JSON of args, after its strings are capped. */
  maxArgsBytes: number;
  /** Cap on the JSON of the result summary, after its strings are capped. */
  maxResultBytes: number;
}

/** At least this much room per line: the fixed fields below fit in it even if every character needs a six-byte escape. */
export const MIN_LINE_BYTES = 32 * 1024;

// Per-field caps on strings keep the fixed part of a record well under MIN_LINE_BYTES even if
// every character needs a six-byte JSON escape, so only args/result ever need the budget split.
const STRING_CAPS = { ts: 64, session: 128, call_id: 128, tool: 256, reason: 1024, code: 64, message: 1024, source: 32, note: 160, approvalReason: 512 };
const MAX_NOTES = 8;
/** The last decisions of a call that ran many times (`attempts` counts them all): the line keeps its room. */
const MAX_STEERING = 8;

/**
 * One JSON line (without the newline) of at most `caps.maxLineBytes` bytes, with secrets redacted
 * from args, result, reason and error message. Strings are cut short with their size and hash, and
 * args/result past their caps are replaced by `{ $truncated, bytes, sha256, preview }` markers, so
 * the line stays valid JSON with the record's shape.
 */
export function serializeAuditRecord(record: AuditRecord, caps: RecordCaps): string {
  const str = (value: unknown, max: number): string => JSON.stringify(clip(value, max));
  // Only the free-text fields can carry a secret or a payload worth matching: they are redacted and hashed.
  const text = (value: unknown, max: number): string => JSON.stringify(capText(value, max));
  const fields: [string, string | undefined][] = [
    ['ts', str(record.ts, STRING_CAPS.ts)],
    ['session', str(record.session, STRING_CAPS.session)],
    ['client', record.client === undefined ? undefined : str(record.client, STRING_CAPS.session)],
    ['call_id', str(record.call_id, STRING_CAPS.call_id)],
    ['tool', str(record.tool, STRING_CAPS.tool)],
    ['item', record.item !== undefined && CALL_ITEMS.includes(record.item) ? `"${record.item}"` : undefined],
    ['args', undefined],
    ['decision', record.decision === 'allow' ? '"allow"' : '"deny"'],
    ['reason', record.reason === undefined ? undefined : text(record.reason, STRING_CAPS.reason)],
    ['result', undefined],
    ['error', record.error === undefined ? undefined : `{"code":${str(record.error.code, STRING_CAPS.code)},"message":${text(record.error.message, STRING_CAPS.message)}}`],
    ['cancelled', record.cancelled === undefined ? undefined : text(record.cancelled, STRING_CAPS.reason)],
    ['duration_ms', String(Number.isFinite(record.duration_ms) ? Math.max(0, record.duration_ms) : 0)],
    ['stuck', record.stuck === undefined ? undefined : String(record.stuck === true)],
    ['source', record.source === undefined ? undefined : str(record.source, STRING_CAPS.source)],
    ['reused', record.reused === undefined ? undefined : str(record.reused, STRING_CAPS.call_id)],
    ['checkpoint', record.checkpoint === undefined ? undefined : str(record.checkpoint, STRING_CAPS.call_id)],
    ['notes', record.notes === undefined || record.notes.length === 0 ? undefined : `[${notesOf(record.notes).map((n) => text(n, STRING_CAPS.note)).join(',')}]`],
    ['approval', record.approval === undefined ? undefined : approvalJson(record.approval, str, text)],
    ['help', record.help === undefined ? undefined : str(record.help, STRING_CAPS.source)],
    ['sandbox', record.sandbox === 'bwrap' || record.sandbox === 'podman' || record.sandbox === 'none' ? `"${record.sandbox}"` : undefined],
    ['sandbox_reason', record.sandbox_reason === undefined ? undefined : text(record.sandbox_reason, STRING_CAPS.reason)],
    ['trace_id', record.trace_id === undefined || !/^[0-9a-f]{32}$/.test(record.trace_id) ? undefined : `"${record.trace_id}"`],
    ['resolved_by', record.resolved_by === undefined ? undefined : resolvedByJson(record.resolved_by, str)],
    ['steering', record.steering === undefined || record.steering.length === 0 ? undefined : `[${record.steering.slice(-MAX_STEERING).map((e) => steerJson(e, str, text)).join(',')}]`],
    ['attempts', record.attempts === undefined || !Number.isInteger(record.attempts) ? undefined : String(Math.max(0, record.attempts))],
  ];
  const args = auditValueJson(record.args, caps.maxStringChars);
  const result = auditValueJson(record.result, caps.maxStringChars);
  const argsBytes = args === undefined ? 0 : Buffer.byteLength(args);
  const resultBytes = result === undefined ? 0 : Buffer.byteLength(result);
  const fixedBytes = fields.reduce((sum, [key, json]) => sum + (json === undefined ? 0 : key.length + 4 + Buffer.byteLength(json)), 2);
  // The keys and separators of args/result themselves.
  const available = caps.maxLineBytes - fixedBytes - 20;
  // Each field's own cap first; what is left of the line is split between them if they still do not fit.
  const argsWant = Math.min(argsBytes, caps.maxArgsBytes);
  const resultWant = Math.min(resultBytes, caps.maxResultBytes);
  let argsBudget = argsWant;
  let resultBudget = resultWant;
  if (argsWant + resultWant > available) {
    const half = Math.floor(available / 2);
    argsBudget = argsWant <= half ? argsWant : resultWant <= half ? available - resultWant : half;
    resultBudget = available - argsBudget;
  }
  const fit = (json: string | undefined, bytes: number, budget: number): string | undefined =>
    json === undefined || bytes <= budget ? json : truncationMarker(json, budget);
  const byKey = new Map(fields);
  byKey.set('args', fit(args, argsBytes, argsBudget));
  byKey.set('result', fit(result, resultBytes, resultBudget));
  const parts: string[] = [];
  for (const [key, json] of byKey) if (json !== undefined) parts.push(`"${key}":${json}`);
  return `{${parts.join(',')}}`;
}

/** At most MAX_NOTES, the last saying how many more there were. */
function notesOf(notes: readonly string[]): string[] {
  return notes.length <= MAX_NOTES ? [...notes] : [...notes.slice(0, MAX_NOTES - 1), `… and ${notes.length - MAX_NOTES + 1} more notes`];
}

function approvalJson(a: NonNullable<AuditRecord['approval']>, str: (v: unknown, max: number) => string, text: (v: unknown, max: number) => string): string {
  const waited = Number.isFinite(a.waited_ms) ? Math.max(0, Math.round(a.waited_ms)) : 0;
  const reason = a.reason === undefined ? '' : `,"reason":${text(a.reason, STRING_CAPS.approvalReason)}`;
  return `{"approved":${a.approved === true},"decided_by":${str(a.decided_by, STRING_CAPS.session)}${reason},"waited_ms":${waited}}`;
}

function resolvedByJson(r: ResolvedBy, str: (v: unknown, max: number) => string): string {
  const count = (n: number | undefined): number | undefined => (typeof n === 'number' && Number.isFinite(n) ? Math.max(0, Math.round(n)) : undefined);
  const parts = [`"model":${str(r.model, STRING_CAPS.tool)}`, `"upstream":${str(r.upstream, STRING_CAPS.session)}`, `"ms":${count(r.ms) ?? 0}`];
  const inTokens = count(r.input_tokens);
  const outTokens = count(r.output_tokens);
  if (inTokens !== undefined) parts.push(`"input_tokens":${inTokens}`);
  if (outTokens !== undefined) parts.push(`"output_tokens":${outTokens}`);
  if (typeof r.usd === 'number' && Number.isFinite(r.usd) && r.usd >= 0) parts.push(`"usd":${r.usd}`);
  return `{${parts.join(',')}}`;
}

function steerJson(e: SteerRecord, str: (v: unknown, max: number) => string, text: (v: unknown, max: number) => string): string {
  const parts = [`"event":${str(e.event, STRING_CAPS.source)}`, `"hook":${str(e.hook, STRING_CAPS.call_id)}`, `"decision":${str(e.decision, STRING_CAPS.source)}`];
  if (e.reason !== undefined) parts.push(`"reason":${text(e.reason, STRING_CAPS.note)}`);
  if (e.thread !== undefined) parts.push(`"thread":${str(e.thread, STRING_CAPS.call_id)}`);
  parts.push(`"attempt":${Number.isInteger(e.attempt) ? Math.max(0, e.attempt) : 0}`);
  return `{${parts.join(',')}}`;
}

/** An id or name cut to `max` characters; these are ours or checked, so a plain cut is enough. */
function clip(value: unknown, max: number): string {
  const text = typeof value === 'string' ? value : String(value);
  return text.length <= max ? text : `${text.slice(0, max - 16)}…[truncated]`;
}
