import { describe, expect, it } from 'vitest';
import { parseDirective } from '../../src/registry/directive-parser.js';
import type { DirectiveInput } from '../../src/registry/types.js';

const LABEL = { file: '/p/.ai/directives/research.md', display: '.ai/directives/research.md' };

function parse(inputs: string): ReturnType<typeof parseDirective> {
  const text = `# Research\n\n<directive name="research" version="1.0.0">\n<metadata><description>Research</description></metadata>\n<inputs>\n${inputs}\n</inputs>\n</directive>\n`;
  return parseDirective(text, LABEL, 'project');
}

function inputs(text: string): DirectiveInput[] {
  const result = parse(text);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value.inputs ?? [];
}

function refused(text: string): string[] {
  const result = parse(text);
  if (result.ok) throw new Error('expected the directive to be refused');
  return result.issues.map((i) => i.message);
}

describe('directive <inputs>', () => {
  it("reads Kiwi's child elements named after each input", () => {
    expect(inputs('<topic type="string" required="true">What to research</topic>\n<depth type="integer" required="false">How deep</depth>\n<notes/>')).toEqual([
      { name: 'topic', type: 'string', required: true, description: 'What to research' },
      { name: 'depth', type: 'integer', required: false, description: 'How deep' },
      { name: 'notes', type: 'string', required: false, description: '' },
    ]);
  });

  it('reads both forms in one block into the same shape', () => {
    expect(inputs('<input name="topic" type="string" required="true">What to research</input>\n<sources type="array">Where to look</sources>')).toEqual([
      { name: 'topic', type: 'string', required: true, description: 'What to research' },
      { name: 'sources', type: 'array', required: false, description: 'Where to look' },
    ]);
  });

  it('refuses bad types and required values in either form, with file and line', () => {
    expect(refused('<topic type="text" required="yes">What</topic>')).toEqual([
      '.ai/directives/research.md:6:1: inputs[0].type: input "topic": "text" is not a type; use string, number, integer, boolean, object, array',
      '.ai/directives/research.md:6:1: inputs[0].required: input "topic": "yes" is not a boolean; write required="true" or required="false"',
    ]);
    expect(refused('<input name="topic" type="string"/>\n<depth type="nubmer"/>')).toEqual([
      '.ai/directives/research.md:7:1: inputs[1].type: input "depth": "nubmer" is not a type; use string, number, integer, boolean, object, array (did you mean "number"?)',
    ]);
  });

  it('refuses a nameless, repeated or nested input', () => {
    expect(refused('<input type="string">What</input>')).toEqual([
      '.ai/directives/research.md:6:1: inputs[0].name: the input has no name; write <input name="topic" type="string" required="true">What to research</input> (or <topic type="string" required="true">What to research</topic>)',
    ]);
    expect(refused('<topic>One</topic>\n<input name="topic">Two</input>')).toEqual([
      '.ai/directives/research.md:7:1: inputs[1].name: input "topic" is declared twice; keep one',
    ]);
    expect(refused('<topic type="object"><field>x</field></topic>')).toEqual([
      '.ai/directives/research.md:6:1: inputs[0]: input "topic" holds <field>; its description is plain text: write <topic type="string" required="true">What it is</topic>',
    ]);
    expect(refused('<input name="my topic"/>')[0]).toContain('inputs[0].name: "my topic" is not an input name');
  });
});
