import { describe, expect, it } from 'vitest';
import { feedbackMessage } from '../../src/loop/agent-feedback.js';

describe('agent feedback', () => {
  const call = { tool: 'echo_text', arguments: { text: 'x' } };
  const base = { callId: 'c', tool: 'echo_text', durationMs: 1 };

  it('says a stuck call repeats, and reports errors with their code', () => {
    const text = feedbackMessage(
      [
        { kind: 'outcome', intent: 'echo x', call, outcome: { ...base, stuck: true, status: 'ok', result: { text: 'echo: x', isError: false } } },
        { kind: 'outcome', intent: 'echo y', call, outcome: { ...base, stuck: false, status: 'error', error: { code: 'TOOL_TIMEOUT', message: 'echo_text ran longer than 5 s' } } },
        { kind: 'outcome', intent: 'echo z', call, outcome: { ...base, stuck: false, status: 'ok', result: { text: 'boom', isError: true } } },
        { kind: 'unresolved', intent: 'zebra', reason: 'no tool fits', missing: [], candidates: [] },
      ],
      { maxResultChars: 1000, marker: 'DO' },
    );
    expect(text).toMatch(/\[1\] Intent: echo x[\s\S]*repeats one you have already made/);
    expect(text).toMatch(/Failed:\n<<<DATA (\w+)\nTOOL_TIMEOUT: echo_text ran longer than 5 s\nDATA \1>>>/);
    expect(text).toMatch(/Result \(the tool reported an error\):\n<<<DATA (\w+)\nboom\nDATA \1>>>/);
    expect(text).toMatch(/\[4\] Intent: zebra\nNot run: no tool fits\nNo tool fits this intent/);
  });

  it("passes on the directives a hook asked for, with their inputs, after the call's result", () => {
    const directives = [{ name: 'handle_timeout', inputs: { tool: 'echo_text' } }];
    const text = feedbackMessage([{ kind: 'outcome', intent: 'echo x', call, outcome: { ...base, stuck: false, status: 'error', error: { code: 'TOOL_TIMEOUT', message: 'too slow' }, directives } }], { maxResultChars: 1000, marker: 'DO' });
    expect(text).toMatch(/TOOL_TIMEOUT: too slow\nDATA \w+>>>\nA hook of the policy asks you to run the directive handle_timeout with inputs \{"tool":"echo_text"\} next/);
  });

  it('keeps the results of one message within maxChars: a result past it is cut, then left out with a note', () => {
    const ok = (text: string) => ({ kind: 'outcome' as const, intent: 'print', call, outcome: { ...base, stuck: false, status: 'ok' as const, result: { text, isError: false } } });
    const text = feedbackMessage([ok('a'.repeat(300)), ok('b'.repeat(300)), ok('c'.repeat(300))], { maxResultChars: 1000, maxChars: 400 });
    expect(text).toContain(`${'a'.repeat(300)}\nDATA`);
    expect(text).toContain(`${'b'.repeat(100)}\n… [cut: 200 of 300 characters not shown]`);
    expect(text).not.toContain('bbb'.repeat(40));
    expect(text).toMatch(/\[3\] Intent: print\nCall: echo_text \{"text":"x"\}\nResult:\n\(left out: the results in this message reached their limit of 400 characters\)/);
    // Not 'ccc': the fence's random hex token may hold that.
    expect(text).not.toContain('c'.repeat(30));
  });

  it('leaves a denial unfenced (the gateway\'s own words) and says nothing about fences when nothing is fenced', () => {
    const text = feedbackMessage([{ kind: 'outcome', intent: 'wipe', call, outcome: { ...base, stuck: false, status: 'denied', reason: 'echo_text is not allowed' } }], { maxResultChars: 1000 });
    expect(text).toContain('Denied: echo_text is not allowed\nDo not retry');
    expect(text).not.toContain('DATA');
  });
});
