import { describe, expect, it } from 'vitest';
import { followSignal } from '../../src/base/abort.js';

describe('followSignal', () => {
  it("is aborted with the outer signal's reason, at once when that one already is", () => {
    const outer = new AbortController();
    const link = followSignal(outer.signal);
    expect(link.signal.aborted).toBe(false);
    outer.abort('client gone');
    expect(link.signal.reason).toBe('client gone');
    const late = followSignal(AbortSignal.abort('before'));
    expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'before']);
  });

  it('aborts alone without touching the outer signal, and follows it no more once unlinked', () => {
    const outer = new AbortController();
    const alone = followSignal(outer.signal);
    alone.controller.abort('this call only');
    expect([alone.signal.reason, outer.signal.aborted]).toEqual(['this call only', false]);
    const unlinked = followSignal(outer.signal);
    unlinked.unlink();
    outer.abort('later');
    expect(unlinked.signal.aborted).toBe(false);
  });

  it('follows nothing when there is no outer signal', () => {
    const link = followSignal(undefined);
    link.unlink();
    expect(link.signal.aborted).toBe(false);
  });
});
