import { describe, expect, it } from 'vitest';
import { askBackFor, BEST_FIT_DENIED, NONE_FITS } from '../../src/resolver/ask-back.js';

const candidates = [
  { tool: 'release_note', score: 0.9 },
  { tool: 'word_count', score: 0.7 },
];
const allowed = (c: { tool: string }) => c.tool !== 'release_note';

describe('askBackFor', () => {
  it('drops a denied best fit with what was said of it', () => {
    const ask = askBackFor({ candidates, reason: '`release_note` may fit, but …', missing: ['title'], found: { version: '1.2' }, stop: 'gate' }, allowed);
    expect(ask).toEqual({ candidates: [candidates[1]], reason: BEST_FIT_DENIED, missing: [] });
  });

  it('says nothing fits, not that the best fit is denied, when the match was weak and its first candidate denied', () => {
    const ask = askBackFor({ candidates, reason: 'no tool fits well enough (best: `release_note`, confidence 0.40 < 0.55); rephrase the intent or name the tool', missing: [], stop: 'threshold' }, allowed);
    expect(ask).toEqual({ candidates: [candidates[1]], reason: NONE_FITS, missing: [] });
    expect(ask.reason).not.toContain('release_note');
  });

  it("keeps an exact call's reason, which speaks of the id the agent wrote, while offering only allowed tools", () => {
    const ask = askBackFor({ candidates, reason: 'there is no tool `no_such_tool`; call one of the closest tools below the same way', missing: [], stop: 'exact_call' }, allowed);
    expect(ask).toEqual({ candidates: [candidates[1]], reason: 'there is no tool `no_such_tool`; call one of the closest tools below the same way', missing: [] });
  });
});
