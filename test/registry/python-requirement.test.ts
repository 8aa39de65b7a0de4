import { describe, expect, it } from 'vitest';
import { parseRequirement, satisfies } from '../../src/registry/python-requirement.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';

const clauses = (text: string) => {
  const parsed = parseRequirement(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value.clauses;
};

describe('a Python requirement', () => {
  it.each([
    ['httpx>=0.24.0', 'httpx', ['>=0.24.0']],
    ['pydantic[email, dotenv] >= 2.0 , < 3', 'pydantic', ['>=2.0', '<3']],
    ['zope.interface', 'zope.interface', []],
    ['Django (~=4.2)', 'Django', ['~=4.2']],
    ['numpy!=1.25.*', 'numpy', ['!=1.25.*']],
  ])('reads %s', (text, name, texts) => {
    const parsed = parseRequirement(text);
    expect(parsed.ok && { name: parsed.value.name, clauses: parsed.value.clauses.map((c) => c.text) }).toEqual({ name, clauses: texts });
  });

  it.each([
    ['httpx>=0.24; python_version<"3.8"', /environment markers \(;\) and URLs \(@\) are not supported/],
    ['pkg @ https://example.com/pkg.whl', /environment markers \(;\) and URLs \(@\) are not supported/],
    ['httpx===0.24', /=== \(arbitrary equality\) is not supported/],
    ['httpx>=0.24.0rc1', /is not a comparison/],
    ['httpx=>1', /is not a comparison/],
    ['httpx>=1.*', /a \.\* version goes with == or != only/],
    ['httpx~=2', /~= needs at least two numbers/],
    ['-e .', /does not start with a package name/],
    ['pkg[unclosed>=1', /extras are written \[a,b\]/],
    ['', /must be 1 to 200 characters/],
    [42, /42 is not a string/],
  ])('refuses %s, saying what to write', (text, reason) => {
    const parsed = parseRequirement(text);
    expect(parsed.ok ? 'parsed' : parsed.reason).toMatch(reason);
    expect(parsed.ok ? '' : parsed.reason).toMatch(/e\.g\. "httpx>=0\.24\.0"/);
  });

  it.each([
    ['0.24.0', '>=0.24.0', true],
    ['0.23.9', '>=0.24.0', false],
    ['0.24', '==0.24.0', true],
    ['2.0.0rc1', '>=2.0', false],
    ['2.0.0rc1', '<2.0', true],
    ['2.0.0.post1', '>=2.0', true],
    ['1.25.3', '!=1.25.*', false],
    ['1.26.0', '!=1.25.*', true],
    ['1.2.9', '==1.2.*', true],
    ['2.1.9', '~=2.1.3', true],
    ['2.2.0', '~=2.1.3', false],
    ['2.9', '~=2.1', true],
    ['3.0', '~=2.1', false],
    ['3.0', '>2,<3', false],
    ['2.5', '>2,<3', true],
    ['not-a-version', '>=0', false],
  ])('%s against %s: %s', (installed, spec, expected) => {
    expect(satisfies(installed, clauses(`pkg${spec}`))).toBe(expected);
  });
});

describe('config.requires in a manifest', () => {
  const load = (requires: string) => parseToolManifest(`tool_id: enrich\ntool_type: script\nexecutor: python_runtime\nconfig:\n  entrypoint: main.py\n  requires:${requires}\n`, { file: '/p/.ai/tools/enrich.yaml', display: '.ai/tools/enrich.yaml' }, 'project');

  it('loads requirements it can check', () => {
    expect(load('\n    - httpx>=0.24.0\n    - pydantic>=2.0').ok).toBe(true);
  });

  it('is a load error at the line of a requirement it cannot read', () => {
    const result = load('\n    - httpx>=0.24.0\n    - "pydantic>=2.0; python_version>\'3.8\'"');
    expect(result.ok ? [] : result.issues.map((i) => i.message)).toEqual([
      `.ai/tools/enrich.yaml:8:7: config.requires[1]: "pydantic>=2.0; python_version>'3.8'": environment markers (;) and URLs (@) are not supported; write a package name and version comparisons, e.g. "httpx>=0.24.0" or "pydantic>=2.0,<3"`,
    ]);
  });

  it('must be a list', () => {
    const result = load(' httpx>=0.24.0');
    expect(result.ok ? [] : result.issues.map((i) => i.message)).toEqual(['.ai/tools/enrich.yaml:6:13: config.requires: must be a list of Python requirements, e.g. [httpx>=0.24.0, pydantic>=2.0]']);
  });
});
