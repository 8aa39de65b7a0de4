import { fireCallHooks, type CallEventFields, type CallEventName, type CallHookDeps, type Fired } from '../call-hooks.js';
import type { CallState } from '../call-state.js';

/** Fires the call's hooks on one event; what they note and the directives they ask for go into the call's record and outcome. */
export async function fireOnCall(deps: CallHookDeps, call: CallState, name: CallEventName, fields: Omit<CallEventFields, 'tool' | 'args'>): Promise<Fired> {
  const fired = await fireCallHooks(deps, call.request, name, { ...fields, args: call.args, tool: call.tool });
  call.notes.push(...fired.notes);
  call.directives.push(...fired.directives);
  return fired;
}
