import { describe, expect, it } from 'vitest';
import { parseYamlSource } from '../../src/registry/yaml-source.js';

/** The errors of a parse that must fail, as `line:column: text`. */
function errors(text: string, startLine?: number): string[] {
  const parsed = parseYamlSource(text, startLine);
  if (parsed.ok) throw new Error('expected the YAML to be refused');
  return parsed.errors.map((e) => `${e.line}:${e.column}: ${e.text}`);
}

describe('YAML errors', () => {
  it('points at an unclosed "[" and says where the parser noticed it, lines later', () => {
    const text = 'version: 1\n\ntools: [read_file, git_log\n  # more tools later\n\n\nfilesystem:\n  read: ["**"]\n';
    expect(errors(text)).toEqual([
      '3:8: invalid YAML: the "[" opened at line 3, column 8 is not closed; end that list with "]" (the parser noticed at line 7, column 1: Flow sequence in block collection must be sufficiently indented and end with a ])',
    ]);
  });

  it('points at an unclosed "{" after a closed "["', () => {
    expect(errors('a: [1, 2]\nb: {x: 1\nc: 3\n')).toEqual([
      '2:4: invalid YAML: the "{" opened at line 2, column 4 is not closed; end that mapping with "}" (the parser noticed at line 3, column 1: Flow map in block collection must be sufficiently indented and end with a })',
    ]);
  });

  it('names each bracket left open once, the innermost first, and a "[" closed by "}" as open', () => {
    expect(errors('x: {a: [1, 2}\n')).toEqual([
      '1:8: invalid YAML: the "[" opened at line 1, column 8 is not closed; end that list with "]" (the parser noticed at line 1, column 13: Flow sequence in block collection must be sufficiently indented and end with a ])',
      '1:4: invalid YAML: the "{" opened at line 1, column 4 is not closed; end that mapping with "}" (the parser noticed at line 1, column 14: Flow map in block collection must be sufficiently indented and end with a })',
    ]);
  });

  it('counts lines from where front matter starts', () => {
    expect(errors('id: x\ntools: [a,\n', 2)).toEqual([
      '3:8: invalid YAML: the "[" opened at line 3, column 8 is not closed; end that list with "]" (the parser noticed at line 4, column 1: Flow sequence in block collection must be sufficiently indented and end with a ])',
    ]);
  });

  it('leaves other errors where the parser found them', () => {
    expect(errors('port: 1\nport: 2\n')).toEqual(['2:1: invalid YAML: Map keys must be unique: "port" is already set above in the same mapping']);
    expect(errors('x: "unclosed\ny: 2\n')).toEqual(['3:1: invalid YAML: Missing closing "quote']);
  });
});
