import { userInfo } from 'node:os';
import { argumentsDigest } from '../../base/arguments-digest.js';
import { KiwiError } from '../../base/errors.js';
import { UsageError, type CliContext } from '../../cli/io.js';
import { clientKey, defaultGatewayBase } from '../../cli/gateway-address.js';
import { createKernelClient, type KernelClient } from '../../cli/kernel-client.js';
import { parseFlags } from '../../cli/parse-flags.js';
import { APPROVALS_HELP } from './approvals-help.js';
import { allEvents } from './executions.js';

const USAGE = APPROVALS_HELP.usage;

/** Blocked executions looked at for approvals; a kernel with more waiting than this says so. */
const MAX_BLOCKED = 200;

interface Waiting {
  executionId: string;
  agentId: string;
  stepId: string;
  toolId: string;
  arguments: unknown;
  since: string;
}

/**
 * `kiwi approvals …`: the tool calls that wait for a person (§12.2): agents' calls and the
 * gateway's own chats' (agent `gateway`), and the answer to one. An answer is the signal
 * `step.approve` to the call's execution, as any client of the v0 API sends it, with who
 * answers (`--as`, by default the user's login name).
 */
export async function approvalsCommand(ctx: CliContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, APPROVALS_HELP);
  const [action, stepId, ...rest] = positionals;
  if (action === undefined || rest.length > 0) throw new UsageError(`usage: ${USAGE}`);
  const kernel = createKernelClient(values.url ?? defaultGatewayBase(ctx.env), clientKey(values.key ?? ctx.env['KIWI_API_KEY']), ctx.signal);
  try {
    if (action === 'list') {
      if (stepId !== undefined) throw new UsageError(`kiwi approvals list takes no step id; usage: ${USAGE}`);
      const waiting = await waitingApprovals(kernel);
      if (values.json) ctx.io.out(JSON.stringify(waiting));
      else if (waiting.length === 0) ctx.io.out('nothing waits for approval');
      else for (const w of waiting) ctx.io.out(`${w.stepId}  ${w.toolId} ${JSON.stringify(w.arguments)}  (agent ${w.agentId}, execution ${w.executionId}, since ${w.since})`);
      return 0;
    }
    if (action !== 'grant' && action !== 'deny') throw new UsageError(`unknown action ${JSON.stringify(action)}; usage: ${USAGE}`);
    if (stepId === undefined || stepId === '') throw new UsageError(`kiwi approvals ${action} needs the step id that \`kiwi approvals list\` prints; usage: ${USAGE}`);
    if (values.reason !== undefined && action === 'grant') throw new UsageError('--reason goes with deny');
    const target = (await waitingApprovals(kernel)).find((w) => w.stepId === stepId);
    if (target === undefined) throw new KiwiError('NOT_FOUND', `no call waits for approval as step ${stepId}; \`kiwi approvals list\` shows the ones that do`);
    // Who answers, as the audit shows it beside the client key that sent it (the gateway adds the key).
    const decidedBy = values.as ?? ctx.env['USER'] ?? loginName();
    // A grant names the call it was given for: if the step's call is not that one, nothing runs.
    const binding = action === 'grant' ? { tool_id: target.toolId, arguments_digest: argumentsDigest(target.arguments) } : {};
    const payload = { step_id: stepId, approved: action === 'grant', decided_by: decidedBy, ...binding, ...(values.reason === undefined ? {} : { reason: values.reason }) };
    await kernel.post(`/v0/executions/${encodeURIComponent(target.executionId)}/signal`, { signal_type: 'step.approve', payload });
    ctx.io.out(`${action === 'grant' ? 'granted' : 'denied'}: ${target.toolId} ${JSON.stringify(target.arguments)} (step ${stepId}, execution ${target.executionId})`);
    return 0;
  } finally {
    await kernel.close();
  }
}

/** The login name; 'unknown' for a uid with no passwd entry (a container's), where userInfo throws. */
function loginName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** Each blocked execution whose last block is an approval: the step, its tool and arguments, from its event log. */
async function waitingApprovals(kernel: KernelClient): Promise<Waiting[]> {
  const page = (await kernel.get(`/v0/executions?status=blocked&limit=${MAX_BLOCKED}`)) as { executions: { id: string; agent_id: string }[]; next_cursor: string };
  if (page.next_cursor !== '') throw new KiwiError('INVALID_INPUT', `more than ${MAX_BLOCKED} executions are blocked; answer some through the v0 API (POST /v0/executions/{id}/signal) first`);
  const out: Waiting[] = [];
  for (const e of page.executions) {
    const block = (await allEvents(kernel, encodeURIComponent(e.id))).filter((ev) => ev.type === 'execution.blocked').at(-1);
    if (block?.payload['reason'] !== 'approval') continue;
    out.push({ executionId: e.id, agentId: e.agent_id, stepId: String(block.payload['ref']), toolId: String(block.payload['tool_id'] ?? ''), arguments: block.payload['arguments'] ?? null, since: block.timestamp });
  }
  return out;
}
