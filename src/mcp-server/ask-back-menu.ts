/**
 * The ask-back menu in the new protocol (MCP 2026-07-28). When `resolve` cannot tell which tool
 * an intent means, a client that can be asked (it declares `elicitation` on the request) gets an
 * `input_required` result holding one question: which of the candidate tools it meant. Its SDK
 * sends the call again with the answer, and the pick is the tool the resolver completes (its
 * `tool` option: a choice made outside the words, unlike an id written in them): the arguments
 * are still read from the intent, the call runs at once only where it states every value, and
 * it still goes through the policy. The menu lists only tools the caller may run. The pick is
 * no more than the agent could write as an exact call itself, so it needs no state from the
 * earlier round beyond the answer.
 * A client that cannot be asked, or that declines, gets the menu as text, as a 2025 client does;
 * a client that answered once is not asked again.
 */
import { CLIENT_CAPABILITIES_META_KEY, inputRequired, inputResponse, type ServerContext } from '@modelcontextprotocol/server';
import type { MetaAnswer } from './approval-waits.js';

export interface MenuRound {
  /** The tool picked from the menu the last round offered. */
  picked?: string;
  /** The client answered a menu (picked, declined or cancelled): it is not asked again. */
  answered: boolean;
  /** It declared elicitation on this request. */
  canAsk: boolean;
}

const MENU_KEY = 'tool';
const TOOL_ID = /^[A-Za-z0-9_.-]{1,128}$/;
/** Candidates offered at most: a menu a person reads. */
const MAX_CHOICES = 5;

export function menuRound(ctx: ServerContext): MenuRound {
  const capabilities = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | undefined;
  const canAsk = typeof capabilities?.elicitation === 'object' && capabilities.elicitation !== null;
  const answer = inputResponse(ctx.mcpReq.inputResponses, MENU_KEY);
  if (answer.kind !== 'elicit') return { answered: answer.kind !== 'missing', canAsk };
  const tool = answer.action === 'accept' ? answer.content?.[MENU_KEY] : undefined;
  // The answer comes from the client: only something shaped like a tool id reaches the intent.
  return typeof tool === 'string' && TOOL_ID.test(tool) ? { picked: tool, answered: true, canAsk } : { answered: true, canAsk };
}

/** The resolve tool's answer for this round: an unresolved one with candidates becomes the menu, where the client can be asked. */
export function menuChoice(answer: MetaAnswer, round: MenuRound): MetaAnswer {
  if (!round.canAsk || round.answered || 'resultType' in answer) return answer;
  const view = answer.structuredContent as { status?: unknown; reason?: unknown; candidates?: Array<{ tool?: unknown }> } | undefined;
  if (view?.status !== 'unresolved') return answer;
  const tools = (view.candidates ?? []).map((c) => c.tool).filter((t): t is string => typeof t === 'string' && TOOL_ID.test(t)).slice(0, MAX_CHOICES);
  if (tools.length === 0) return answer;
  return inputRequired({
    inputRequests: {
      [MENU_KEY]: inputRequired.elicit({
        message: `The gateway could not tell which tool this intent means (${String(view.reason)}). Which one did you mean?`,
        requestedSchema: {
          type: 'object',
          properties: { [MENU_KEY]: { type: 'string', title: 'Tool', description: 'The tool the intent means; its arguments are read from the intent', enum: tools } },
          required: [MENU_KEY],
        },
      }),
    },
  });
}
