import { describe, expect, it } from 'vitest';
import type { LoopEvent, LoopEventOf } from '../../../src/loop/loop-types.js';
import { renderEventText } from '../../../src/http/chat/render-text.js';

/** How loop events read in the content a client shows. */

const intent: LoopEvent = { type: 'intent', index: 0, text: 'read the readme', raw: '[TOOL: read the readme]' };
const call: LoopEvent = { type: 'call', index: 0, callId: 'c1', intent: 'read the readme', call: { tool: 'read_file', arguments: { path: 'README.md' } }, confidence: 0.9 };
const result = (over: Partial<LoopEventOf<'result'>>): LoopEvent => ({ type: 'result', index: 0, callId: 'c1', tool: 'read_file', status: 'ok', isError: false, text: 'hello', durationMs: 1, ...over });

describe('renderEventText', () => {
  it('execute mode shows the intent raw, the call, and the result in a fence', () => {
    expect(renderEventText(intent, 'execute')).toBe('[TOOL: read the readme]');
    expect(renderEventText(call, 'execute')).toBe('\n→ read_file {"path":"README.md"}\n');
    expect(renderEventText(result({ text: 'line 1\nline 2\n' }), 'execute')).toBe('```\nline 1\nline 2\n```\n');
  });

  it('a call that waits for a person says why, how to answer and for how long, on one line', () => {
    const waiting: LoopEvent = { type: 'approval', index: 0, callId: 'c1', tool: 'deploy', reason: 'the policy\'s approvals.tools\nnames deploy', timeoutMs: 120_000, stepId: 's-1', executionId: 'e-1' };
    expect(renderEventText(waiting, 'execute')).toBe("waiting for approval (the policy's approvals.tools names deploy): a person answers with `kiwi approvals grant s-1` or `kiwi approvals deny s-1` within 120 s\n");
  });

  it('a result holding backticks gets a longer fence, so it cannot close the block early', () => {
    expect(renderEventText(result({ text: 'see ```js\nx\n```' }), 'execute')).toBe('````\nsee ```js\nx\n```\n````\n');
  });

  it('a long result is cut in the content, with the count of what was left out', () => {
    const shown = renderEventText(result({ text: 'x'.repeat(50) }), 'execute', { maxShownChars: 10 });
    expect(shown).toBe(`\`\`\`\n${'x'.repeat(10)}\n… (40 more characters)\n\`\`\`\n`);
  });

  it('denials, failures and unresolved intents say so', () => {
    expect(renderEventText(result({ status: 'denied', text: 'read_file may not read /etc/shadow\n(policy)' }), 'execute')).toBe('denied: read_file may not read /etc/shadow (policy)\n');
    expect(renderEventText(result({ status: 'error', isError: true, text: 'ENOENT: README.md' }), 'execute')).toBe('error:\n```\nENOENT: README.md\n```\n');
    const unresolved: LoopEvent = { type: 'unresolved', index: 0, intent: 'do it', reason: 'no tool matches "do it"; say what to do', missing: [], candidates: [] };
    expect(renderEventText(unresolved, 'execute')).toBe('\nunresolved: no tool matches "do it"; say what to do\n');
    expect(renderEventText(unresolved, 'resolve-only')).toBe('\nunresolved: no tool matches "do it"; say what to do\n');
  });

  it('resolve-only mode shows neither the intent nor the call as text (the call is a native tool call)', () => {
    expect(renderEventText(intent, 'resolve-only')).toBe('');
    expect(renderEventText(call, 'resolve-only')).toBe('');
    expect(renderEventText({ type: 'text', text: 'hi' }, 'resolve-only')).toBe('hi');
  });

  it('start, turn and finish are not text', () => {
    expect(renderEventText({ type: 'start', id: 'x', model: 'm' }, 'execute')).toBe('');
    expect(renderEventText({ type: 'turn', turn: 2 }, 'execute')).toBe('');
    expect(renderEventText({ type: 'finish', reason: 'stop', usage: {}, turns: 1, toolCalls: 0 }, 'execute')).toBe('');
  });
});
