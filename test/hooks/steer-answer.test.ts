import { describe, expect, it } from 'vitest';
import { parseSteerAnswer } from '../../src/hooks/steer-answer.js';

/** A steering directive's answer, as a model writes it: a `decision:` line and maybe a `reason:` line. */

describe('a steering answer', () => {
  it('reads each decision, its reason, in any case and with text around it', () => {
    for (const decision of ['retry', 'skip', 'fail', 'abort', 'continue'] as const) expect(parseSteerAnswer(`decision: ${decision}`)).toEqual({ ok: true, decision });
    expect(parseSteerAnswer('The call timed out, a transient failure.\n\nDecision: RETRY\nreason:  timeouts pass  \n')).toEqual({ ok: true, decision: 'retry', reason: 'timeouts pass' });
  });

  it('the last decision line counts', () => {
    expect(parseSteerAnswer('decision: retry\nOn second thought:\ndecision: fail')).toEqual({ ok: true, decision: 'fail' });
  });

  it('fails on no decision, an unknown one, an empty or long reason, or a huge answer', () => {
    expect(parseSteerAnswer('I think it should go again.')).toEqual({ ok: false, reason: 'no line `decision: …`' });
    expect(parseSteerAnswer('decision: maybe')).toEqual({ ok: false, reason: 'decision "maybe" is not one of retry, skip, fail, abort, continue' });
    expect(parseSteerAnswer('decision: retry\nreason:')).toEqual({ ok: false, reason: 'the reason is empty' });
    expect(parseSteerAnswer(`decision: fail\nreason: ${'x'.repeat(501)}`)).toEqual({ ok: false, reason: 'the reason is longer than 500 characters' });
    expect(parseSteerAnswer(`decision: skip\n${'x'.repeat(70_000)}`)).toMatchObject({ ok: false, reason: expect.stringMatching(/longer than 65536 characters/) });
  });
});
