import type { LoopDetector } from '../../audit/loop-detector.js';
import type { CallStage } from '../call-state.js';

/** Marks a call its client made again and again (loop-detector.ts): it still runs; the caller is told it looks stuck. */
export function loopCheckStage(loops: LoopDetector): CallStage {
  return (next) => async (call) => {
    call.stuck = (await loops.observe(call.request.client, call.request.tool, call.allowed?.args ?? {})).stuck;
    return next(call);
  };
}
