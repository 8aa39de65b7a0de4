import { UsageError, type CliContext } from '../../cli/io.js';
import { clientKey, defaultGatewayBase } from '../../cli/gateway-address.js';
import { createKernelClient, type KernelClient } from '../../cli/kernel-client.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { EXECUTIONS_HELP } from './executions-help.js';
import { parseUsage, usageText } from '../../budgets/usage-summary.js';

const USAGE = EXECUTIONS_HELP.usage;

interface ExecutionSummary {
  id: string;
  status: string;
  agent_id: string;
  labels: Record<string, string>;
  created_at: string;
}

interface WireEvent {
  sequence: number;
  type: string;
  timestamp: string;
  step_id?: string;
  payload: Record<string, unknown>;
}

/** Pages of events asked for at once; `events` follows them to the end. */
const EVENT_PAGE = 1000;

/** `kiwi executions …`: the kernel's executions on a running gateway, through its v0 API. */
export async function executionsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, EXECUTIONS_HELP);
  const [action, id, ...rest] = positionals;
  if (rest.length > 0 || action === undefined) throw new UsageError(`usage: ${USAGE}`);
  const needsId = (): string => {
    if (id === undefined || id === '') throw new UsageError(`kiwi executions ${action} needs an execution id; usage: ${USAGE}`);
    return encodeURIComponent(id);
  };
  const kernel = createKernelClient(values.url ?? defaultGatewayBase(ctx.env), clientKey(values.key ?? ctx.env['KIWI_API_KEY']), ctx.signal);
  try {
    switch (action) {
      case 'list': {
        if (id !== undefined) throw new UsageError(`kiwi executions list takes no id; usage: ${USAGE}`);
        const query = new URLSearchParams();
        if (values.status) query.set('status', values.status);
        if (values.agent) query.set('agent_id', values.agent);
        for (const label of values.label ?? []) query.append('label', label);
        query.set('limit', values.limit ?? '50');
        const page = (await kernel.get(`/v0/executions?${query.toString()}`)) as { executions: ExecutionSummary[]; next_cursor: string };
        if (values.json) ctx.io.out(JSON.stringify(page));
        else if (page.executions.length === 0) ctx.io.out('no executions');
        else for (const e of page.executions) ctx.io.out(`${e.id}  ${e.status.padEnd(9)}  ${e.agent_id}  ${e.created_at}${labels(e.labels)}`);
        if (!values.json && page.next_cursor !== '') ctx.io.out(`(more: raise --limit, at most 200, or narrow with --status, --agent or --label)`);
        return 0;
      }
      case 'show': {
        const execution = (await kernel.get(`/v0/executions/${needsId()}`)) as { usage?: unknown };
        ctx.io.out(JSON.stringify(execution, null, values.json ? undefined : 2));
        const usage = parseUsage(execution.usage);
        if (!values.json && usage !== undefined) ctx.io.out(`used: ${usageText(usage)}`);
        return 0;
      }
      case 'events': {
        for (const event of await allEvents(kernel, needsId(), after(values.after))) {
          ctx.io.out(values.json ? JSON.stringify(event) : `${String(event.sequence).padStart(4)}  ${event.timestamp}  ${event.type}${event.step_id ? ` step ${event.step_id}` : ''}  ${JSON.stringify(event.payload)}`);
        }
        return 0;
      }
      case 'cancel': {
        const execution = (await kernel.post(`/v0/executions/${needsId()}/cancel`)) as { id: string; status: string };
        ctx.io.out(values.json ? JSON.stringify(execution) : `${execution.id} ${execution.status}`);
        return 0;
      }
      default:
        throw new UsageError(`unknown action ${JSON.stringify(action)}; usage: ${USAGE}`);
    }
  } finally {
    await kernel.close();
  }
}

export async function allEvents(kernel: KernelClient, id: string, afterSequence = 0): Promise<WireEvent[]> {
  const out: WireEvent[] = [];
  for (let from = afterSequence; ; ) {
    const page = (await kernel.get(`/v0/executions/${id}/events?after_sequence=${from}&limit=${EVENT_PAGE}`)) as { events: WireEvent[]; latest_sequence: number };
    out.push(...page.events);
    if (page.events.length < EVENT_PAGE) return out;
    from = page.latest_sequence;
  }
}

function after(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value)) throw new UsageError(`--after must be a sequence number (0 or more), got ${JSON.stringify(value.slice(0, 40))}`);
  return Number(value);
}

function labels(l: Record<string, string>): string {
  const pairs = Object.entries(l);
  return pairs.length === 0 ? '' : `  ${pairs.map(([k, v]) => `${k}:${v}`).join(' ')}`;
}
