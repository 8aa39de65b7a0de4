import { describe, expect, it } from 'vitest';
import { chatLabels } from '../../src/runs/chat-execution.js';

const OPENAI_KEY = 'sk-proj-Xq3fT9vLm2Rk8Wz1Pn6Yb4Hc7Ud0Ja5Se2';

const labels = (messages: { role: 'user' | 'assistant' | 'system'; content: string }[], model = 'gpt-4o-mini') =>
  chatLabels({ request: { model, messages }, mode: 'execute', endpoint: '/v1/chat/completions', client: 'alice' });

describe("a chat's labels (what a list of executions shows of it)", () => {
  it('name the model and the first words of the last user message, on one line', () => {
    expect(labels([
      { role: 'user', content: 'an earlier question' },
      { role: 'assistant', content: 'an answer' },
      { role: 'user', content: '  How many words\n\nare in the README?  ' },
    ])).toEqual({ kind: 'chat', client: 'alice', endpoint: '/v1/chat/completions', model: 'gpt-4o-mini', message: 'How many words are in the README?' });
  });

  it('keep at most 80 characters of the message, and no secret it carried', () => {
    const long = labels([{ role: 'user', content: `deploy with ${OPENAI_KEY} ${'and then some more words '.repeat(20)}` }]);
    expect(long['message']?.length).toBe(80);
    expect(long['message']).toMatch(/^deploy with \[redacted:[a-z-]+\] and then some more words .*…$/);
    expect(JSON.stringify(long)).not.toContain('sk-proj');
    // A secret that starts inside the first 80 characters and ends past them is redacted whole, not cut into a prefix.
    const straddling = labels([{ role: 'user', content: `${'x '.repeat(36)}key ${OPENAI_KEY}` }]);
    expect(straddling['message']).not.toMatch(/sk-/);
  });

  it('have no message when there is no user text, and a model name cut to fit a label', () => {
    expect(labels([{ role: 'system', content: 'be brief' }])).not.toHaveProperty('message');
    expect(labels([{ role: 'user', content: ' \n ' }])).not.toHaveProperty('message');
    expect(labels([{ role: 'user', content: 'hi' }], 'm'.repeat(1000))['model']).toHaveLength(128);
  });
});
