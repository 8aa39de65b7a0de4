import { redactedJson } from '../audit/cap-audit-value.js';
import { describeError } from '../base/errors.js';
import type { HookEvent } from '../hooks/hook-event.js';
import { runHooks, type LoadedHook } from '../hooks/hook-runner.js';
import { isPlainObject } from '../base/plain-object.js';
import type { HttpClient } from '../primitives/http-client.js';
import type { Tool } from '../registry/types.js';
import { textHead } from '../base/text-cut.js';
import { decideSteer, type Steering, type SteerThread } from './hook-steering.js';
import type { ToolCall } from './tool-call.js';

/**
 * The hooks of one call (the policy's, then its directive's) on the call's events, and what their
 * actions do beyond the verdict: webhooks are sent (the event as JSON, its secrets redacted as in
 * the audit log), and every annotation,
 * webhook and directive asked for becomes a note in the call's audit record. On `before_call` a
 * webhook that fails denies the call (hooks fail closed); on the other events it is only noted.
 * Where threads can run (the gateway), a directive asked for starts as a thread in the
 * background, as the call's caller and a child of its thread; elsewhere it is handed to the agent.
 * A steering hook's decision comes back for the stage that fired it to apply (hook-steering.ts).
 */

/** `help`: an agent's help signal (help-signal.ts), with `event.action` and `event.message`. */
export type CallEventName = 'before_call' | 'after_call' | 'denied' | 'error' | 'limit' | 'approval' | 'help';

export interface Fired {
  /** Why the call must not run (`before_call` only). */
  deny?: string;
  /** Why a person must approve it (`before_call` only). */
  approval?: string;
  notes: string[];
  directives: { name: string; inputs: Record<string, string> }[];
  /** What the steering hook that acted decided. */
  steer?: Steering;
}

export interface CallHookDeps {
  /** The policy's hooks. */
  hooks: readonly LoadedHook[];
  http: HttpClient;
  /** Starts a directive as a background thread for the call (answers its id); absent, directives go to the agent. */
  startThread?: (directive: HookDirective, request: ToolCall) => Promise<string>;
  /** Runs a steering directive's thread and answers its outcome; absent, a steering directive fails closed. */
  steerThread?: SteerThread;
}

export type HookDirective = Fired['directives'][number];

const NOTHING: Fired = Object.freeze({ notes: [], directives: [] }) as Fired;
const WEBHOOK_TIMEOUT_MS = 5000;
const WEBHOOK_MAX_RESPONSE_BYTES = 64 * 1024;

export interface CallEventFields {
  code?: string;
  detail?: Record<string, unknown>;
  /** The arguments as checked; `{}` when the call never got that far (unchecked arguments reach no hook). */
  args: unknown;
  tool: Tool | undefined;
  /** More fields of `event` for this event's conditions (`event.action` of a help signal). */
  event?: Record<string, string>;
  /** The one who fires it applies a steering decision (a call's gate and end); otherwise a steering hook is only noted, its directive not run. */
  steers?: boolean;
}

export async function fireCallHooks(deps: CallHookDeps, request: ToolCall, name: CallEventName, fields: CallEventFields): Promise<Fired> {
  const directiveHooks = request.run?.directive?.hooks ?? [];
  if (deps.hooks.length === 0 && directiveHooks.length === 0) return NOTHING;
  const hooks = directiveHooks.length === 0 ? deps.hooks : [...deps.hooks, ...directiveHooks];
  const event = callEvent(request, name, fields);
  const verdict = runHooks(hooks, event);
  const gate = name === 'before_call';
  const fired: Fired = { notes: [...verdict.annotations], directives: deps.startThread ? [] : verdict.directives };
  if (gate && verdict.deny !== undefined) fired.deny = verdict.deny;
  // After the fact nothing can be refused any more: a deny or an approval asked for is moot, a hook that failed is noted.
  if (!gate) fired.notes.push(...verdict.failures);
  if (gate && verdict.approval !== undefined) fired.approval = verdict.approval;
  for (const d of verdict.directives) fired.notes.push(await directiveNote(deps, d, request));
  if (verdict.steer !== undefined && fields.steers !== true) fired.notes.push(`the hook at ${verdict.steer.hook} steers, which nothing can on a ${name} event: nothing changes`);
  else if (verdict.steer !== undefined) {
    const steered = await decideSteer(verdict.steer, request, deps.steerThread);
    if (steered.ok) fired.steer = steered.steering;
    else if (gate) fired.deny ??= `hook at ${verdict.steer.hook} failed, so the call is refused: ${steered.reason}`;
    else fired.notes.push(`hook at ${verdict.steer.hook} failed: ${steered.reason}`);
  }
  // Sent together; read back in the hooks' order, so the notes and the first failure that denies are as if sent one by one.
  const failures = await Promise.all(verdict.webhooks.map((w) => sendWebhook(deps.http, w.url, event, request.run?.signal)));
  for (const [i, w] of verdict.webhooks.entries()) {
    const failure = failures[i];
    fired.notes.push(failure === undefined ? `webhook sent to ${new URL(w.url).host} (hook at ${w.hook})` : `webhook to ${new URL(w.url).host} failed (hook at ${w.hook}): ${failure}`);
    if (failure !== undefined && gate) fired.deny ??= `the webhook of the hook at ${w.hook} failed, so the call is refused: ${failure}`;
  }
  return fired;
}

function callEvent(request: ToolCall, name: CallEventName, fields: CallEventFields): HookEvent {
  const tool = fields.tool;
  const { caller, run } = request;
  return {
    event: { ...fields.event, name, code: fields.code ?? '', detail: fields.detail ?? {} },
    // The same keys for every tool, so a condition that reads one never fails on an MCP server's
    // own tool (not in the registry: counted as changing state, as prefetch counts it).
    tool: {
      id: request.target.tool,
      type: tool?.type ?? 'mcp',
      mutates_state: tool?.mutatesState ?? true,
      requires_approval: tool?.requiresApproval ?? false,
      tags: tool?.tags ?? [],
    },
    arguments: isPlainObject(fields.args) ? fields.args : {},
    client: { name: caller.client, source: caller.source, session: caller.session },
    directive: run?.directive === undefined ? {} : { name: run.directive.name },
    cost: run?.cost ?? {},
    limits: { ...run?.limits, ...run?.directive?.limits },
    permissions: caller.context === undefined ? {} : { label: caller.context.label },
  };
}

async function directiveNote(deps: CallHookDeps, d: HookDirective, request: ToolCall): Promise<string> {
  const asked = `directive ${d.name}${Object.keys(d.inputs).length === 0 ? '' : ` with ${JSON.stringify(d.inputs)}`}`;
  if (deps.startThread === undefined) return `a hook asks to run ${asked}`;
  try {
    return `a hook started thread ${await deps.startThread(d, request)} running ${asked}`;
  } catch (error) {
    return `a hook's ${asked} could not start: ${describeError(error)}`;
  }
}

/** The error codes as hooks read them (`event.code == "timeout"`). */
export function eventCode(code: string): string {
  if (code === 'TOOL_TIMEOUT' || code === 'HTTP_TIMEOUT' || code === 'MCP_TIMEOUT' || code === 'REQUEST_TIMEOUT') return 'timeout';
  if (code === 'POLICY_DENIED') return 'permission_denied';
  if (code === 'TOOL_CANCELLED') return 'cancelled';
  return code.toLowerCase();
}

/** Undefined when the webhook answered 2xx; otherwise what went wrong. */
async function sendWebhook(http: HttpClient, url: string, event: HookEvent, signal: AbortSignal | undefined): Promise<string | undefined> {
  try {
    const response = await http.request({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', 'user-agent': 'kiwi-gateway-hooks' },
      // Redacted as the audit log is: a webhook's receiver is another machine, and sees no secret the log hides.
      body: redactedJson(event),
      connectTimeoutMs: WEBHOOK_TIMEOUT_MS,
      headersTimeoutMs: WEBHOOK_TIMEOUT_MS,
      bodyTimeoutMs: WEBHOOK_TIMEOUT_MS,
      maxResponseBytes: WEBHOOK_MAX_RESPONSE_BYTES,
      // The URL is the policy author's (policy.yaml only; directives cannot name webhooks), so its host
      // is reached as written, private or not. Redirects are not followed; were they, any other host
      // would be checked by the address guard like an agent's.
      maxRedirects: 0,
      guard: { authorHost: new URL(url).host },
      ...(signal ? { signal } : {}),
    });
    if (response.status >= 200 && response.status < 300) return undefined;
    return `it answered ${response.status}${response.body === '' ? '' : `: ${textHead(response.body, 200)}`}`;
  } catch (error) {
    return describeError(error);
  }
}
