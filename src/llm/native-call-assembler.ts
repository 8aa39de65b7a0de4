import { randomUUID } from 'node:crypto';
import { MAX_NATIVE_CALLS } from './client-tools.js';
import type { NativeToolCall } from './types.js';

/**
 * Native tool calls as both streaming protocols send them: each call opened at an index (with
 * its id and name), its arguments in pieces after. The calls are handed on whole, once the
 * stream ends, because a half-written call is nothing a client can run. Their text is bounded
 * by the provider's response cap; their number here.
 */

export interface CallPart {
  id?: string | null | undefined;
  name?: string | null | undefined;
  arguments?: string | null | undefined;
}

export interface NativeCallAssembler {
  /** Adds to the call at `index`; a problem (for the decoder's malformed-chunk error) when the turn has too many calls. */
  add(index: number, part: CallPart): string | undefined;
  /** The calls in index order, or the problem with the first that never got a name. */
  done(): { calls: NativeToolCall[] } | { problem: string };
}

export function createNativeCallAssembler(): NativeCallAssembler {
  const calls = new Map<number, { id: string; name: string; args: string[] }>();
  return {
    add(index, part) {
      let call = calls.get(index);
      if (call === undefined) {
        if (calls.size >= MAX_NATIVE_CALLS) return `opens more than ${MAX_NATIVE_CALLS} tool calls in one answer`;
        call = { id: '', name: '', args: [] };
        calls.set(index, call);
      }
      if (typeof part.id === 'string' && part.id !== '') call.id = part.id;
      // Servers differ: most send the name once, some repeat it on every piece.
      if (typeof part.name === 'string' && part.name !== '' && call.name === '') call.name = part.name;
      if (typeof part.arguments === 'string' && part.arguments !== '') call.args.push(part.arguments);
      return undefined;
    },
    done() {
      const out: NativeToolCall[] = [];
      for (const [index, call] of [...calls.entries()].sort(([a], [b]) => a - b)) {
        if (call.name === '') return { problem: `sent tool call ${index} without a function name` };
        // Some local servers leave the id out; the client needs one to answer the call with. No
        // arguments at all (a tool without parameters) read as {} to a client that parses them.
        const args = call.args.join('');
        out.push({ id: call.id === '' ? `call_${randomUUID().replaceAll('-', '')}` : call.id, name: call.name, arguments: args === '' ? '{}' : args });
      }
      return { calls: out };
    },
  };
}
