import type { Checkpointer } from '../../checkpoints/checkpointer.js';
import type { CallStage } from '../call-state.js';

/** A git checkpoint before a call that may change state; unknown counts as changing, as for prefetch. */
export function checkpointStage(checkpoints: Pick<Checkpointer, 'before'>): CallStage {
  return (next) => async (call) => {
    if (call.tool?.mutatesState !== false) {
      const { request } = call;
      call.checkpoint = await checkpoints.before({ tool: request.tool, callId: call.callId, session: request.session, client: request.client }, request.signal);
    }
    return next(call);
  };
}
