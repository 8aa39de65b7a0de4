import { describe, expect, it } from 'vitest';
import { hookDirectiveProblems, templateProblems } from '../../src/project/reference-checks.js';
import type { Directive } from '../../src/registry/types.js';
import { makeTool } from '../helpers/make-tool.js';

describe('templateProblems', () => {
  it("names a script's or an API tool's placeholder that is no parameter, and passes built-ins, literal braces and environment variables", () => {
    const script = makeTool({ id: 's', type: 'script', config: { script: 'x.py', args: ['{script}', '{pth}', '{args_json}', '{{pth}}', '${HOME}'] }, parameters: [{ name: 'path', type: 'string', required: true }] });
    const api = makeTool({ id: 'a', type: 'api', config: { url_template: 'https://example.com/{city}?units={unit}', headers: { accept: '{format}' } }, parameters: [{ name: 'city', type: 'string', required: true }, { name: 'units', type: 'string', required: false }] });
    // A runtime's placeholders are filled by the tool it runs: not checked against its own parameters.
    const runtime = makeTool({ id: 'r', type: 'runtime', config: { command: 'python3', args: ['{script}', '{anything}'] } });
    const problems = templateProblems([script, api, runtime]);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/config\.args\[1\] uses \{pth\}, which is not a parameter of s \(did you mean "path"\?\)/);
    expect(problems[1]).toMatch(/config\.url_template uses \{unit\}, which is not a parameter of a \(did you mean "units"\?\)/);
    expect(problems[2]).toMatch(/config\.headers\.accept uses \{format\}/);
  });
});

describe('hookDirectiveProblems', () => {
  it("names a policy's or a directive's hook whose directive does not exist", () => {
    const directive = (name: string, hooks: Directive['hooks'] = []) => ({ name, hooks, source: { path: `.ai/directives/${name}.md` } }) as unknown as Directive;
    const directives = new Map([
      ['retry_on_timeout', directive('retry_on_timeout')],
      ['review', directive('review', [{ when: 'true', line: 7, action: { kind: 'directive', name: 'gone', inputs: {} } }])],
    ]);
    const problems = hookDirectiveProblems(
      [
        { file: '.ai/config/policy.yaml', line: 3, action: { kind: 'directive', name: 'retry_on_timout', inputs: {} } },
        { file: '.ai/config/policy.yaml', line: 5, action: { kind: 'directive', name: 'retry_on_timeout', inputs: {} } },
        { file: '.ai/config/policy.yaml', line: 6, action: { kind: 'deny', reason: 'no' } },
      ],
      directives,
    );
    expect(problems).toEqual([
      `.ai/config/policy.yaml:3: the hook's directive "retry_on_timout" is not in .ai/directives/ (did you mean "retry_on_timeout"?); add it, or fix the name`,
      `.ai/directives/review.md:7: the hook's directive "gone" is not in .ai/directives/; add it, or fix the name`,
    ]);
  });
});
