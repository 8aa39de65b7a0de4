import { isKiwiError, KiwiError } from '../base/errors.js';
import { redactSecrets } from '../audit/redact-secrets.js';
import { textHead } from '../base/text-cut.js';
import { cancelledBecause } from '../base/abort.js';
import type { UsageSummary, UsageTally } from '../budgets/usage-summary.js';
import type { ChatExecution } from '../kernel/chat-journal.js';
import type { EventDraft } from '../kernel/types.js';
import type { ChatRequest } from '../llm/types.js';
import type { ChatApprovals } from './chat-approvals.js';
import type { ExecutionSteps } from './execution-steps.js';
import type { LoopEvent, LoopMode } from '../loop/loop-types.js';

/**
 * A chat request told as a kernel execution (GET /v0/executions/{id}/events): created and
 * started when it arrives; per intent `intent.accepted` with the call it resolved to and a step
 * that completes or fails with the tool's result (a denial is a failed step saying so), or
 * `intent.unresolved`; calls handed to the client; `turn.started` for each upstream turn after
 * the first; then `execution.completed` with the answer's start, or `execution.failed`. The events go to the journal, which writes them behind.
 * However it ends, the execution keeps what the chat used (`usage`): the upstream model's turns,
 * which the loop counts into the tally, and the resolver's fallback model's calls.
 */

/** The agent id of every chat the gateway runs itself. */
export const CHAT_AGENT_ID = 'gateway';

/** Text kept of the last user message and of the answer. */
const KEPT_CHARS = 2000;
/** The first words of the last user message a list shows (the `message` label). */
const MESSAGE_LABEL_CHARS = 80;
/** A model's name as a label (the kernel's labels are at most 256 characters). */
const MODEL_LABEL_CHARS = 128;

export interface ChatSummary {
  request: ChatRequest;
  mode: LoopMode;
  /** The route it came in on: `/v1/chat/completions`, `/v1/messages`, `/v1/responses`. */
  endpoint?: string;
  /** The client key's name. */
  client: string;
}

/** The text of the chat's last user message, if it has one. */
function lastUserText(chat: ChatSummary): string | undefined {
  return chat.request.messages.findLast((m) => m.role === 'user')?.content;
}

export function chatInput(chat: ChatSummary): Record<string, unknown> {
  const lastUser = lastUserText(chat);
  return {
    model: chat.request.model,
    mode: chat.mode,
    messages: chat.request.messages.length,
    ...(lastUser === undefined ? {} : { last_user_message: keep(lastUser) }),
  };
}

/**
 * What a list of executions shows of a chat (it reads labels, never inputs): which model was asked,
 * and the first words of the last user message, so that two chats can be told apart. Those words
 * are cut to MESSAGE_LABEL_CHARS, after the audit log's redaction (a key pasted into a chat is
 * not kept here): labels are listed and filtered on, where the input (chatInput, up to KEPT_CHARS
 * of the message as it was) is read one execution at a time.
 */
export function chatLabels(chat: ChatSummary): Record<string, string> {
  const lastUser = lastUserText(chat);
  const words = lastUser === undefined ? '' : redactSecrets(textHead(lastUser, KEPT_CHARS)).replace(/\s+/g, ' ').trim();
  return {
    kind: 'chat',
    client: chat.client,
    ...(chat.endpoint === undefined ? {} : { endpoint: chat.endpoint }),
    model: textHead(chat.request.model, MODEL_LABEL_CHARS),
    ...(words === '' ? {} : { message: words.length <= MESSAGE_LABEL_CHARS ? words : `${textHead(words, MESSAGE_LABEL_CHARS - 1)}…` }),
  };
}

/**
 * The loop's events passed on unchanged (the first with the execution's id), each also told to
 * the execution. `cancelled()` says whether the execution was cancelled: the loop's stop is then
 * reported to the client as that.
 */
export async function* recordChat(
  events: AsyncIterable<LoopEvent>,
  execution: ChatExecution,
  options: { mode: LoopMode; cancelled(): boolean; steps: ExecutionSteps; usage: UsageTally; approvals?: Pick<ChatApprovals, 'stepOpened'> },
): AsyncGenerator<LoopEvent> {
  const intents = new Map<number, string>();
  const { steps, usage } = options;
  const kept = (): { usage: UsageSummary } => ({ usage: usage.summary() });
  /** The step of each call the loop runs, by its call id. */
  const stepOf = new Map<string, string>();
  /** Events that end the chat, after a step.cancelled for each step still running. */
  const ending = (drafts: EventDraft[]): EventDraft[] => [...steps.cancelOpen(), ...drafts];
  let answer = '';
  let ended = false;
  try {
    for await (const event of events) {
      switch (event.type) {
        case 'start':
          yield execution.recorded ? { ...event, executionId: execution.id } : event;
          continue;
        case 'text':
          if (answer.length < KEPT_CHARS) answer += event.text;
          break;
        case 'intent':
          intents.set(event.index, event.text);
          break;
        case 'call': {
          if (event.fallback !== undefined) usage.add(event.fallback.model, event.fallback);
          const details = {
            intent: intents.get(event.index) ?? '',
            confidence: event.confidence,
            ...(event.candidates === undefined ? {} : { candidates: event.candidates }),
            ...(event.fallback === undefined ? {} : { resolved_by: event.fallback }),
          };
          if (options.mode === 'resolve-only') {
            const handed = { tool_id: event.call.tool, arguments: event.call.arguments, ...details, handed_to_client: true };
            execution.record([{ type: 'intent.accepted', payload: { intent_type: 'invoke_tool', details: handed } }]);
          } else {
            const stepId = steps.open(event.call, details);
            stepOf.set(event.callId, stepId);
            options.approvals?.stepOpened(event.callId, stepId);
          }
          break;
        }
        case 'result': {
          const step = stepOf.get(event.callId);
          stepOf.delete(event.callId);
          if (step !== undefined) steps.settle(step, event.status, event.text, event.proxyCallId);
          break;
        }
        case 'unresolved':
          if (event.fallback !== undefined) usage.add(event.fallback.model, event.fallback);
          execution.record([{ type: 'intent.unresolved', payload: { intent: event.intent, reason: event.reason, missing: event.missing, candidates: event.candidates, ...(event.fallback === undefined ? {} : { fallback: event.fallback }) } }]);
          break;
        case 'native_call':
          execution.record([{ type: 'intent.accepted', payload: { intent_type: 'client_tool_call', details: { tool_id: event.call.name, arguments: event.call.arguments } } }]);
          break;
        case 'finish':
          ended = true;
          execution.end('completed', [
            {
              type: 'execution.completed',
              payload: {
                output: { finish_reason: event.reason, turns: event.turns, tool_calls: event.toolCalls, usage: event.usage, ...(event.limit === undefined ? {} : { limit: event.limit }), text: keep(answer) },
              },
            },
          ], kept());
          break;
        case 'turn':
          // Only turns after the first come as events: a chat without intents writes nothing more.
          execution.record([{ type: 'turn.started', payload: { turn: event.turn } }]);
          break;
        case 'approval':
          break;
      }
      yield event;
    }
  } catch (error) {
    if (options.cancelled()) throw new KiwiError('TOOL_CANCELLED', `The execution ${execution.id} was cancelled; the upstream model call and any running tool were stopped.`, { cause: error });
    // Cancelled on purpose by the gateway (it is stopping): the execution says so, not "client disconnected".
    const because = cancelledBecause(error);
    if (because !== undefined) {
      ended = true;
      execution.end('cancelled', ending([{ type: 'execution.cancelled', payload: { reason: because } }]), kept());
    } else if (!(isKiwiError(error) && error.code === 'TOOL_CANCELLED')) {
      ended = true;
      execution.end('failed', ending([{ type: 'execution.failed', payload: { error: error instanceof Error ? error.message : String(error) } }]), kept());
    }
    throw error;
  } finally {
    // Left early, or stopped: the client went away.
    if (!ended) execution.end('cancelled', ending([{ type: 'execution.cancelled', payload: { reason: 'client disconnected' } }]), kept());
  }
}

export function keep(text: string): string {
  return text.length <= KEPT_CHARS ? text : `${text.slice(0, KEPT_CHARS)}…`;
}

/**
 * The events passed on, each `start` (which shows the execution's id) and `finish` (which ends
 * the answer) only once `written()` resolves: with a database replicas share, a gateway killed
 * after either has lost neither the execution nor the charges it showed (docs/replicas.md).
 */
export async function* afterWrites(events: AsyncIterable<LoopEvent>, written: () => Promise<unknown>): AsyncGenerator<LoopEvent> {
  for await (const event of events) {
    if (event.type === 'start' || event.type === 'finish') await written();
    yield event;
  }
}
