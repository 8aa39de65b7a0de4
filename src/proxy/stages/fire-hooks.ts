import { fireCallHooks, type CallEventFields, type CallEventName, type CallHookDeps, type Fired } from '../call-hooks.js';
import { checkedArgs, type CallState } from '../call-state.js';
import type { Steering } from '../hook-steering.js';

/** Fires the call's hooks on one event; what they note and the directives they ask for go into the call's record and outcome. */
export async function fireOnCall(deps: CallHookDeps, call: CallState, name: CallEventName, fields: Omit<CallEventFields, 'tool' | 'args'>): Promise<Fired> {
  const fired = await fireCallHooks(deps, call.request, name, { ...fields, args: checkedArgs(call), tool: call.tool });
  call.notes.push(...fired.notes);
  call.directives.push(...fired.directives);
  return fired;
}

/** A steering decision, for the call's record: on which event and run of the call. */
export function noteSteering(call: CallState, event: CallEventName, steer: Steering): void {
  const { hook, decision, reason, thread } = steer;
  call.steering.push({ event, hook, decision, ...(reason === undefined ? {} : { reason }), ...(thread === undefined ? {} : { thread }), attempt: call.attempts });
}
