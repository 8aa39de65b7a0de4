import type { LoopDetector } from '../../audit/loop-detector.js';
import type { CallStage } from '../call-state.js';

/**
 * Marks a call its client made again and again in one session (loop-detector.ts): it still runs;
 * the caller is told it looks stuck "in this session". Counted per client and session: per client
 * alone, a new MCP session's first call was flagged for what an earlier one had done. A client
 * gains nothing by opening sessions to dodge it: it is a warning, not a limit (rate limits count
 * per client).
 */
export function loopCheckStage(loops: LoopDetector): CallStage {
  return (next) => async (call) => {
    const scope = JSON.stringify([call.request.client, call.request.session]);
    call.stuck = (await loops.observe(scope, call.request.tool, call.allowed?.args ?? {})).stuck;
    return next(call);
  };
}
