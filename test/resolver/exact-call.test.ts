import { describe, expect, it } from 'vitest';
import { readExactCall } from '../../src/resolver/exact-call.js';
import type { Tool } from '../../src/registry/types.js';
import { makeTool } from '../helpers/make-tool.js';

const TOOLS = new Map<string, Tool>(
  [
    makeTool({
      id: 'send_slack_message',
      type: 'api',
      description: 'Send a message to a Slack channel',
      parameters: [
        { name: 'channel', type: 'string', required: true },
        { name: 'text', type: 'string', required: true },
        { name: 'urgent', type: 'boolean', required: false },
        { name: 'tags', type: 'array', required: false },
      ],
    }),
    makeTool({ id: 'git_status', type: 'script', description: 'Show the working tree status' }),
    makeTool({ id: 'search', type: 'api', description: 'Search the web', parameters: [{ name: 'q', type: 'string', required: true }, { name: 'limit', type: 'integer', required: false, default: 10 }] }),
  ].map((t) => [t.id, t]),
);

describe('readExactCall', () => {
  it('reads `tool_id {json}` and `tool_id(name=value, …)`, checked against the schema, as written', () => {
    expect(readExactCall('send_slack_message {"channel": "#ops", "text": "deploy done"}', TOOLS)).toMatchObject({ kind: 'call', tool: { id: 'send_slack_message' }, args: { channel: '#ops', text: 'deploy done' } });
    expect(readExactCall('`search` {"q": "kiwi gateway"}', TOOLS)).toMatchObject({ kind: 'call', args: { q: 'kiwi gateway' } });
    // Defaults stay out: the call is the one the agent wrote.
    expect(readExactCall('search {"q": "x"}', TOOLS)).toEqual({ kind: 'call', tool: TOOLS.get('search'), args: { q: 'x' } });
    expect(readExactCall(`send_slack_message(channel="#ops", text='a, b and "c"', urgent=true, tags=["x", "y"])`, TOOLS)).toMatchObject({
      kind: 'call',
      args: { channel: '#ops', text: 'a, b and "c"', urgent: true, tags: ['x', 'y'] },
    });
    expect(readExactCall('search(q: kiwi, limit: 3)', TOOLS)).toMatchObject({ kind: 'call', args: { q: 'kiwi', limit: 3 } });
  });

  it('refuses what does not fit, saying what to fix, instead of reading it as words', () => {
    const cases: [string, RegExp, string[]?][] = [
      ['send_slack_message {"channel": "#ops"}', /lacks the required `text`/, ['text']],
      ['send_slack_message {"channel": "#ops", "text": 5}', /argument `text` must be a string, got number 5/],
      ['send_slack_message {"channel": "#ops", "text": "x", "colour": "red"}', /unknown argument `colour`; its parameters are channel, text, urgent, tags/],
      ['send_slack_message {"channel": "#ops", text: "x"}', /are not valid JSON/],
      ['send_slack_message("#ops", "x")', /which is not `name=value`; name every argument/],
      ['send_slack_message(channel="#ops", channel="#dev", text="x")', /give `channel` twice/],
      ['send_slack_message(channel=, text="x")', /have no value for `channel`/],
      [`send_slack_message {"channel": ${'['.repeat(200)}${']'.repeat(200)}, "text": "x"}`, /nest too deeply/],
      ['send_slak_message {"channel": "#ops", "text": "x"}', /there is no tool `send_slak_message`/],
    ];
    for (const [intent, reason, missing] of cases) {
      const read = readExactCall(intent, TOOLS);
      expect(read.kind, intent).toBe('invalid');
      if (read.kind !== 'invalid') continue;
      expect(read.reason, intent).toMatch(reason);
      expect(read.missing, intent).toEqual(missing ?? []);
    }
  });

  it('leaves plain words alone, even with braces or parentheses in them', () => {
    for (const intent of ['send the deploy summary to "#ops"', 'search for {braces} in the docs', 'count (roughly) the words', 'weather (in Paris)', 'explain {"a": 1}']) {
      expect(readExactCall(intent, TOOLS), intent).toEqual({ kind: 'none' });
    }
  });

  it('shows, for malformed arguments, an example with the tool\'s own parameters and placeholders: `git_status {}` for a tool with none', () => {
    const none = readExactCall('git_status {"name": }', TOOLS);
    expect(none).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('e.g. [TOOL: git_status {}]') });
    const some = readExactCall('send_slack_message(#ops)', TOOLS);
    expect(some).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('e.g. [TOOL: send_slack_message {"channel": "<channel>", "text": "<text>"}]') });
    expect(JSON.stringify([none, some])).not.toContain('"name": "value"');
  });
});
