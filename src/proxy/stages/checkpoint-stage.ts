import type { Checkpointer } from '../../checkpoints/checkpointer.js';
import type { CallStage } from '../call-state.js';

/** A git checkpoint before a call that may change state; unknown counts as changing, as for prefetch. */
export function checkpointStage(checkpoints: Pick<Checkpointer, 'before'>): CallStage {
  return (next) => async (call) => {
    if (call.tool?.mutatesState !== false) {
      const { target, caller, run } = call.request;
      call.checkpoint = await checkpoints.before({ tool: target.tool, callId: call.callId, session: caller.session, client: caller.client }, run?.signal);
    }
    return next(call);
  };
}
