import { describe, expect, it } from 'vitest';
import { compactSchema, menuLine } from '../../src/resolver/compact-schema.js';
import { makeTool } from '../helpers/make-tool.js';

const tool = makeTool({
  id: 'send_slack_message',
  type: 'api',
  description: 'Send a message\nto a Slack channel, with optional urgency. '.repeat(4),
  parameters: [
    { name: 'channel', type: 'string', required: true, description: 'Channel such as #ops' },
    { name: 'priority', type: 'string', required: false, enum: ['low', 'normal', 'high'], default: 'normal' },
    { name: 'tags', type: 'array', required: false, items: { type: 'string' } },
  ],
});

describe('compactSchema', () => {
  it('writes a tool as the exact call an agent makes, on one short line', () => {
    const line = compactSchema(tool);
    expect(line).toMatch(/^send_slack_message \{"channel": string \(Channel such as #ops\), "priority"\?: "low" \| "normal" \| "high" = "normal", "tags"\?: string\[\]\} — Send a message to a Slack channel/);
    expect(line).not.toContain('\n');
    expect(line.length).toBeLessThan(300);
    expect(compactSchema(tool, { paramDescriptions: false })).toContain('"channel": string, ');
    expect(menuLine(makeTool({ id: 'noop', type: 'api', description: '' }))).toBe('noop — (no description)');
  });

  it('shows what a value must look like: format, bounds and a short pattern', () => {
    const constrained = makeTool({
      id: 'book',
      parameters: [
        { name: 'day', type: 'string', required: true, format: 'date' },
        { name: 'seats', type: 'integer', required: false, minimum: 1, maximum: 8 },
        { name: 'code', type: 'string', required: true, pattern: '^[A-Z]{3}$' },
        { name: 'blob', type: 'string', required: false, pattern: `^${'x'.repeat(60)}$` },
      ],
    });
    expect(compactSchema(constrained)).toMatch(/^book \{"day": string<date>, "seats"\?: integer 1\.\.8, "code": string \/\^\[A-Z\]\{3\}\$\/, "blob"\?: string\} — /);
  });
});
