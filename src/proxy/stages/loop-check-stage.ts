import type { LoopDetector } from '../../audit/loop-detector.js';
import { checkedArgs, type CallStage } from '../call-state.js';

/**
 * Marks a call its client made again and again in one session (loop-detector.ts): it still runs;
 * the caller is told it looks stuck "in this session". Counted per client and session: per client
 * alone, a new MCP session's first call was flagged for what an earlier one had done. A client
 * gains nothing by opening sessions to dodge it: it is a warning, not a limit (rate limits count
 * per client).
 */
export function loopCheckStage(loops: LoopDetector): CallStage {
  return (next) => async (call) => {
    const { caller, target } = call.request;
    const scope = JSON.stringify([caller.client, caller.session]);
    call.stuck = (await loops.observe(scope, target.tool, checkedArgs(call))).stuck;
    return next(call);
  };
}
