import { describe, expect, it } from 'vitest';
import { parsePipeline, PIPELINE_CAPS } from '../../src/registry/pipeline-file.js';
import { renderTemplate } from '../../src/registry/pipeline-template.js';
import type { Directive } from '../../src/registry/types.js';

const directive = (name: string, inputs: Directive['inputs'] = []): Directive =>
  ({ name, version: '1.0.0', description: name, limits: {}, permissions: [], inputs, xml: '', body: '', signature: null, source: { path: `/p/.ai/directives/${name}.md`, tier: 'project' } }) as Directive;

const DIRECTIVES = new Map([
  ['review_changes', directive('review_changes', [{ name: 'focus', type: 'string', required: false, description: '' }])],
  ['release_note', directive('release_note', [{ name: 'review', type: 'string', required: true, description: '' }, { name: 'count', type: 'integer', required: false, description: '' }])],
]);

const label = { file: '/p/.ai/pipelines/check.yaml', display: '.ai/pipelines/check.yaml' };
const parse = (text: string) => parsePipeline(text, label, 'project', DIRECTIVES);
const messages = (text: string): string[] => {
  const result = parse(text);
  if (result.ok) throw new Error('it loaded');
  return result.issues.map((i) => i.message);
};

const HEAD = 'name: check\nversion: "1.0.0"\ndescription: Check a release\n';

describe('a pipeline file', () => {
  it('loads stages in groups, inputs with defaults and permissions as tags', () => {
    const result = parse(
      `${HEAD}inputs:\n  - { name: focus, default: src }\npermissions:\n  - execute: { resource: tool, id: "git_*" }\nstages:\n  - parallel:\n      - { name: a, directive: review_changes, inputs: { focus: "\${inputs.focus}" } }\n      - { name: b, directive: review_changes, model_tier: fast }\n  - name: note\n    directive: release_note\n    inputs: { review: "\${stages.a.result} / \${stages.b.status}" }\n`,
    );
    expect(result.ok && result.value).toMatchObject({
      name: 'check',
      version: '1.0.0',
      inputs: [{ name: 'focus', type: 'string', required: false, default: 'src' }],
      permissions: [{ kind: 'execute', resource: 'tool', id: 'git_*' }],
      groups: [[{ name: 'a', directive: 'review_changes', inputs: { focus: '${inputs.focus}' } }, { name: 'b', modelTier: 'fast', inputs: {} }], [{ name: 'note' }]],
      source: { path: label.file, tier: 'project' },
    });
  });

  it.each([
    ['a YAML error', `${HEAD}stages: [`, /^\.ai\/pipelines\/check\.yaml:4:\d+: invalid YAML/],
    ['not a mapping', '- a\n', /check\.yaml:1:1: a pipeline is a mapping/],
    ['an unknown key', `${HEAD}stage: []\n`, /check\.yaml:4:1: stage: unknown key; remove it or use one of .*stages.*\(did you mean "stages"\?\)/],
    ['no stages', `${HEAD}stages: []\n`, /check\.yaml:4:9: stages: lists no stage/],
    ['an unknown key in a stage', `${HEAD}stages:\n  - { name: a, directive: review_changes, input: {} }\n`, /check\.yaml:5:\d+: stages\[0\]\.input: unknown key.*did you mean "inputs"/],
    ['a bad stage name', `${HEAD}stages:\n  - { name: "a b", directive: review_changes }\n`, /check\.yaml:5:\d+: stages\[0\]\.name: is not a stage name/],
    ['an unknown directive', `${HEAD}stages:\n  - { name: a, directive: deploy }\n`, /check\.yaml:5:\d+: stages\[0\]\.directive: no directive "deploy" loaded; the directives are review_changes, release_note/],
    ['a required input missing', `${HEAD}stages:\n  - { name: a, directive: release_note }\n`, /stages\[0\]\.inputs: directive release_note needs the input "review"/],
    ['an input the directive lacks', `${HEAD}stages:\n  - { name: a, directive: review_changes, inputs: { topic: x } }\n`, /stages\[0\]\.inputs\.topic: directive review_changes has no input "topic"; its inputs are focus/],
    ['a stage named twice', `${HEAD}stages:\n  - { name: a, directive: review_changes }\n  - { name: a, directive: review_changes }\n`, /check\.yaml:6:\d+: stages\[1\]\.name: stage "a" is named twice/],
    ['a reference to a later stage', `${HEAD}stages:\n  - { name: a, directive: release_note, inputs: { review: "\${stages.b.result}" } }\n  - { name: b, directive: review_changes }\n`, /stages\[0\]\.inputs\.review: \$\{stages\.b\.result\}: no stage "b" runs before this one/],
    ['a reference within its parallel group', `${HEAD}stages:\n  - parallel:\n      - { name: a, directive: review_changes }\n      - { name: b, directive: release_note, inputs: { review: "\${stages.a.result}" } }\n`, /check\.yaml:7:\d+: stages\[0\]\.parallel\[1\]\.inputs\.review: .*stage "a" runs in the same parallel group/],
    ['an undeclared input', `${HEAD}stages:\n  - { name: a, directive: review_changes, inputs: { focus: "\${inputs.path}" } }\n`, /the pipeline has no input "path"; declare it under inputs:/],
    ['a reference that is not one', `${HEAD}stages:\n  - { name: a, directive: review_changes, inputs: { focus: "\${env.HOME}" } }\n`, /"\$\{env\.HOME\}" is not a reference; write \$\{inputs\.NAME\}/],
    ['an unclosed reference', `${HEAD}stages:\n  - { name: a, directive: review_changes, inputs: { focus: "\${inputs.x" } }\n`, /has a "\$\{" that is never closed/],
    ['a template too long', `${HEAD}stages:\n  - { name: a, directive: review_changes, inputs: { focus: "${'x'.repeat(PIPELINE_CAPS.template + 1)}" } }\n`, /stages\[0\]\.inputs\.focus: a template is at most 4096 characters/],
    ['too big a parallel group', `${HEAD}stages:\n  - parallel:\n${Array.from({ length: 9 }, (_, i) => `      - { name: s${i}, directive: review_changes }\n`).join('')}`, /stages\[0\]\.parallel: at most 8 stages run in one parallel group/],
    ['too many stages', `${HEAD}stages:\n${Array.from({ length: 33 }, (_, i) => `  - { name: s${i}, directive: review_changes }\n`).join('')}`, /stages\[32\]: a pipeline has at most 32 stages/],
    ['a default of the wrong type', `${HEAD}inputs:\n  - { name: n, type: integer, default: many }\nstages:\n  - { name: a, directive: review_changes }\n`, /check\.yaml:5:\d+: inputs\[0\]\.default: input n of pipeline check must be an integer, not "many"/],
    ['an input declared twice', `${HEAD}inputs:\n  - { name: n }\n  - { name: n }\nstages:\n  - { name: a, directive: review_changes }\n`, /inputs\[1\]\.name: input "n" is declared twice/],
    ['a permission that is no tag', `${HEAD}permissions:\n  - execute: { resource: rocket, id: x }\nstages:\n  - { name: a, directive: review_changes }\n`, /check\.yaml:5:\d+: permissions\[0\]: .*rocket/],
    ['two tags in one permission item', `${HEAD}permissions:\n  - { read: { resource: filesystem, path: x }, write: { resource: filesystem, path: x } }\nstages:\n  - { name: a, directive: review_changes }\n`, /permissions\[0\]: write one tag per item/],
    ['a version left out', 'name: check\ndescription: d\nstages:\n  - { name: a, directive: review_changes }\n', /version: is missing; write a quoted string like "1\.0\.0"/],
  ])('refuses %s, naming the file, the line and what to write', (_, text, expected) => {
    expect(messages(text).join('\n')).toMatch(expected);
  });
});

describe('a stage template', () => {
  it('fills in inputs (values as JSON) and what earlier stages answered', () => {
    const stages = new Map([['a', { status: 'completed', result: 'all good' }]]);
    expect(renderTemplate('${inputs.focus} ${ inputs.n } [${inputs.none}] ${stages.a.result} (${stages.a.status})', { inputs: { focus: 'src', n: 3 }, stages })).toBe('src 3 [] all good (completed)');
  });
});
