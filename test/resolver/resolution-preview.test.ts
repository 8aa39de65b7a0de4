import { describe, expect, it } from 'vitest';
import { decisionOf, previewResolution } from '../../src/resolver/resolution-preview.js';
import type { Resolution, UnresolvedStop } from '../../src/resolver/types.js';

const timings = { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 };

function resolved(tool: string): Resolution {
  return { status: 'resolved', call: { tool, arguments: {} }, confidence: 0.9, candidates: [{ tool, score: 0.8 }], timings, notes: [] };
}

function unresolved(stop: UnresolvedStop | undefined, missing: string[] = []): Resolution {
  return { status: 'unresolved', ...(stop ? { stop } : {}), reason: 'r', missing, confidence: 0.2, candidates: [], timings, notes: [] };
}

describe('previewResolution', () => {
  it('resolves one intent once, as the gateway would', async () => {
    const asked: string[] = [];
    const preview = await previewResolution('read the readme', async (text) => (asked.push(text), resolved('read_file')));
    expect(preview).toEqual({ kind: 'single', steps: [{ intent: 'read the readme', resolution: resolved('read_file'), decision: 'resolved' }] });
    expect(asked).toEqual(['read the readme']);
  });

  it('shows every step of a sequence, also those after one that would stop it', async () => {
    const preview = await previewResolution('check the quota and then send the report', async (text) => (text.startsWith('check') ? unresolved('threshold') : resolved('send_report')));
    expect(preview.kind).toBe('steps');
    if (preview.kind !== 'steps') return;
    expect(preview.steps.map((s) => [s.intent, s.decision])).toEqual([
      ['check the quota', 'unresolved'],
      ['send the report', 'resolved'],
    ]);
  });

  it('passes a refusal on, resolving nothing', async () => {
    const preview = await previewResolution('a then b then c then d then e then f then g', async () => {
      throw new Error('must not resolve');
    }, { maxSteps: 3 });
    expect(preview).toMatchObject({ kind: 'refused', reason: expect.any(String) });
  });
});

describe('decisionOf', () => {
  it.each([
    [unresolved('arguments', ['path']), 'asked_back'],
    [unresolved('gate'), 'asked_back'],
    [unresolved('exact_call', ['text']), 'asked_back'],
    [unresolved('exact_call'), 'unresolved'],
    [unresolved('threshold'), 'unresolved'],
    [unresolved('match'), 'unresolved'],
    [unresolved('intent'), 'unresolved'],
    [unresolved(undefined), 'unresolved'],
  ] as const)('%#: %j is %s', (resolution, decision) => {
    expect(decisionOf(resolution)).toBe(decision);
  });
});
