import { EXECUTION_STATUSES } from '../kernel/types.js';
import { Json, When } from './console-layout.js';
import { formatDuration } from './format-duration.js';
import { dollars, UsageTable } from './usage-table.js';
import { parseUsage } from '../budgets/usage-summary.js';
import { query, render, type ConsoleRequest, type ConsoleRouter } from './console-route.js';

/**
 * Executions: the list (live), and one execution as a timeline of its events: what came in,
 * each intent and what it resolved to (with the closest candidates and their scores), each call
 * (with its approval when it needed one, and for admins the proxy's stages from its audit
 * record) and its result, and how it ended.
 */

/** An execution as the admin API lists it. */
export interface ExecutionRow {
  id: string;
  status: string;
  client: string;
  agent_id: string;
  labels: Record<string, string>;
  /** What it used, once it has ended (chats and thread runs). */
  usage?: unknown;
  created_at: string;
  updated_at: string;
}

interface WireEvent {
  sequence: number;
  type: string;
  timestamp: string;
  step_id?: string;
  payload: Record<string, unknown>;
}

/** The status filter: any, or one of the kernel's. */
const STATUSES = ['', ...EXECUTION_STATUSES];

export function mountExecutionPages(router: ConsoleRouter): void {
  router.page('/ui/executions', 'executions', async (c, r) => {
    const status = c.req.query('status') ?? '';
    const client = c.req.query('client') ?? '';
    const page = (await r.api('GET', `/admin/v1/executions${query({ status, client, limit: '100' })}`)) as { executions: ExecutionRow[] };
    return render(
      c,
      { title: 'Executions', viewer: r.viewer, current: '/ui/executions', live: 'executions' },
      <>
        <h1>Executions</h1>
        <form class="filters" method="get" action="/ui/executions">
          <label>
            Status
            <select name="status">
              {STATUSES.map((s) => (
                <option value={s} selected={s === status}>
                  {s === '' ? 'any' : s}
                </option>
              ))}
            </select>
          </label>
          <label>
            Client
            <input type="text" name="client" value={client} maxlength={64} />
          </label>
          <button type="submit">Filter</button>
        </form>
        {page.executions.length === 0 ? <p class="empty">No executions.</p> : <ExecutionTable rows={page.executions} />}
      </>,
    );
  });

  router.page('/ui/executions/:id', 'executions', async (c, r) => {
    const id = c.req.param('id') ?? '';
    const answer = (await r.api('GET', `/admin/v1/executions/${encodeURIComponent(id)}?limit=1000`)) as { execution: ExecutionRow & { input: unknown; output?: unknown }; events: WireEvent[] };
    const e = answer.execution;
    const stages = r.viewer.may('audit') ? await proxyStages(r, e.client, answer.events) : new Map<string, AuditRecord>();
    return render(
      c,
      { title: `Execution ${e.id}`, viewer: r.viewer, current: '/ui/executions', live: 'execution' },
      <>
        <h1>
          Execution <code>{e.id}</code>
        </h1>
        <p class="meta">
          <span class={`status ${e.status}`}>{e.status}</span> · client <strong>{e.client}</strong> · agent <code>{e.agent_id}</code> · started <When at={e.created_at} /> · last change <When at={e.updated_at} />
        </p>
        <UsageTable usage={e.usage} />
        <ol class="timeline">
          {answer.events.map((event) => (
            <li class={`event ${event.type.replaceAll('.', '-')}`}>
              <When at={event.timestamp} /> <strong>{event.type}</strong> <Summary event={event} />
              <Stages record={stages.get(str(event.payload['call_id']))} />
              <details>
                <summary>details</summary>
                <Json value={event.payload} />
              </details>
            </li>
          ))}
        </ol>
      </>,
    );
  });
}

export function ExecutionTable(props: { rows: ExecutionRow[] }) {
  return (
    <div class="table">
      <table class="executions">
        <thead>
          <tr>
            <th>Started</th>
            <th>Status</th>
            <th>Client</th>
            <th>What</th>
            <th>Tokens</th>
            <th>Cost</th>
            <th>Id</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((e) => (
            <tr>
              <td>
                <When at={e.created_at} />
              </td>
              <td>
                <span class={`status ${e.status}`}>{e.status}</span>
              </td>
              <td>{e.client}</td>
              <td class="what">
                <What row={e} />
              </td>
              <td>{tokens(e.usage)}</td>
              <td>{cost(e.usage)}</td>
              <td>
                <a href={`/ui/executions/${encodeURIComponent(e.id)}`}>
                  <code>{e.id}</code>
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * What an execution is, from its labels (a list never reads inputs): a chat's first words and
 * model, an MCP call's tool, a thread's directive, a pipeline's name; else its agent.
 */
function What(props: { row: ExecutionRow }) {
  const { labels, agent_id: agent } = props.row;
  const kind = labels['kind'];
  if (kind === 'chat') {
    return (
      <>
        {labels['message'] === undefined ? <span class="meta">chat</span> : <span class="message">{`“${labels['message']}”`}</span>}
        {labels['model'] === undefined ? null : (
          <span class="meta">
            {' '}
            <code>{labels['model']}</code>
          </span>
        )}
      </>
    );
  }
  const named = kind !== undefined && Object.hasOwn(NAMED_BY, kind) ? NAMED_BY[kind] : undefined;
  return (
    <>
      <span class="meta">{`${named?.[1] ?? (kind === undefined ? 'agent' : `${kind}, agent`)} `}</span>
      <code>{(named === undefined ? undefined : labels[named[0]]) ?? agent}</code>
    </>
  );
}

/** The label that names what an execution of a kind the gateway runs is, and how to say it. */
const NAMED_BY: Record<string, [label: string, says: string]> = { mcp: ['tool', 'MCP tool'], thread: ['directive', 'thread'], pipeline: ['pipeline', 'pipeline'] };

const tokens = (value: unknown): string => {
  const usage = parseUsage(value);
  if (usage === undefined) return '-';
  const models = Object.values(usage.models);
  const sum = (pick: (m: (typeof models)[number]) => number): number => models.reduce((total, m) => total + pick(m), 0);
  return `${sum((m) => m.input_tokens)} in · ${sum((m) => m.output_tokens)} out${usage.estimated ? ' (estimated)' : ''}`;
};

const cost = (value: unknown): string => {
  const usage = parseUsage(value);
  if (usage === undefined) return '-';
  // A model without a price cost something nobody told the gateway: never shown as $0.
  if (usage.unpriced !== undefined) return usage.spend_usd > 0 ? `${dollars(usage.spend_usd)} + unpriced` : 'unpriced';
  return dollars(usage.spend_usd);
};

interface AuditRecord {
  call_id: string;
  decision: string;
  reason?: string;
  duration_ms?: number;
  checkpoint?: string;
  notes?: string[];
  sandbox?: string;
  sandbox_reason?: string;
  approval?: { approved: boolean; decided_by: string; waited_ms: number };
  reused?: string;
}

/**
 * How the tool proxy ran each call of the execution, from the audit records of its client in the
 * span of its steps, by the call id each step's end names. One page of the audit log: a busy
 * client's records past it are not shown here (the audit page has them all).
 */
async function proxyStages(r: ConsoleRequest, client: string, events: WireEvent[]): Promise<Map<string, AuditRecord>> {
  const ends = events.filter((e) => typeof e.payload['call_id'] === 'string');
  const first = events.find((e) => e.type === 'step.created');
  const last = ends.at(-1);
  if (first === undefined || last === undefined) return new Map();
  const since = new Date(Date.parse(first.timestamp) - 1000).toISOString();
  const until = new Date(Date.parse(last.timestamp) + 1000).toISOString();
  const page = (await r.api('GET', `/admin/v1/audit${query({ client, since, until, limit: '200' })}`)) as { records: AuditRecord[] };
  const wanted = new Set(ends.map((e) => String(e.payload['call_id'])));
  return new Map(page.records.filter((a) => wanted.has(a.call_id)).map((a) => [a.call_id, a]));
}

/** The proxy's stages of one call: the policy's decision, the person's answer, the hooks, the checkpoint, the sandbox. */
function Stages(props: { record: AuditRecord | undefined }) {
  const a = props.record;
  if (a === undefined) return null;
  const stages = [
    `policy: ${a.decision}${a.reason === undefined ? '' : ` (${a.reason})`}`,
    ...(a.approval === undefined ? [] : [`approval: ${a.approval.approved ? 'granted' : 'denied'} by ${a.approval.decided_by} after ${formatDuration(a.approval.waited_ms)}`]),
    ...(a.notes ?? []).map((n) => `hook: ${n}`),
    ...(a.checkpoint === undefined ? [] : [`checkpoint: ${a.checkpoint}`]),
    ...(a.reused === undefined ? [] : [`reused the prefetched call ${a.reused}`]),
    ...(a.sandbox === undefined ? [] : [`sandbox: ${a.sandbox}${a.sandbox_reason === undefined ? '' : ` (${a.sandbox_reason})`}`]),
    ...(a.duration_ms === undefined ? [] : [`ran ${formatDuration(a.duration_ms)}`]),
  ];
  return (
    <ul class="stages">
      {stages.map((stage) => (
        <li>{stage}</li>
      ))}
    </ul>
  );
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
const record = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** What an event says, in a line; the whole payload is under "details". */
function Summary(props: { event: WireEvent }) {
  const p = props.event.payload;
  switch (props.event.type) {
    case 'execution.created': {
      const input = record(p['input']);
      return <span>{`${str(input['model'])} ${input['last_user_message'] === undefined ? '' : `“${str(input['last_user_message']).slice(0, 200)}”`}`}</span>;
    }
    case 'intent.accepted': {
      const d = record(p['details']);
      const confidence = typeof d['confidence'] === 'number' ? ` (confidence ${d['confidence'].toFixed(2)})` : '';
      const candidates = Array.isArray(d['candidates']) ? (d['candidates'] as unknown[]).map(record) : [];
      return (
        <span>
          {`“${str(d['intent']).slice(0, 200)}” → ${str(d['tool_id'])} ${str(d['arguments']).slice(0, 300)}${confidence}`}
          {candidates.length === 0 ? null : (
            <span class="candidates">{` · candidates ${candidates.map((c) => `${str(c['tool'])} ${typeof c['score'] === 'number' ? c['score'].toFixed(3) : '?'}`).join(', ')}`}</span>
          )}
        </span>
      );
    }
    case 'intent.unresolved':
      return <span>{`“${str(p['intent']).slice(0, 200)}”: ${str(p['reason'])}`}</span>;
    case 'step.created':
      return <span>{`${str(p['tool_id'])} ${str(p['arguments']).slice(0, 300)}`}</span>;
    case 'step.approval_required':
      return <span>{`waits for a person: ${str(p['reason'])}`}</span>;
    case 'signal.received': {
      const answer = record(p['payload']);
      if (p['signal_type'] !== 'step.approve') return <span>{str(p['signal_type'])}</span>;
      return <span>{`${answer['approved'] === true ? 'granted' : 'denied'} by ${str(answer['decided_by'])}${answer['reason'] === undefined ? '' : `: ${str(answer['reason'])}`}`}</span>;
    }
    case 'turn.started':
      return <span>{`upstream turn ${str(p['turn'])}, with the results so far`}</span>;
    case 'step.completed':
      return <span>{str(p['result']).slice(0, 300)}</span>;
    case 'step.failed':
      return <span>{str(p['error']).slice(0, 300)}</span>;
    case 'execution.completed': {
      const out = record(p['output']);
      return <span>{`${str(out['finish_reason'])}: ${str(out['turns'])} turns, ${str(out['tool_calls'])} tool calls`}</span>;
    }
    case 'execution.failed':
      return <span>{str(p['error']).slice(0, 300)}</span>;
    default:
      return null;
  }
}
