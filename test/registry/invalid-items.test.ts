import { describe, expect, it } from 'vitest';
import { invalidItemLines, issuesOfItem } from '../../src/registry/invalid-items.js';
import type { RegistryIssue } from '../../src/registry/types.js';

const issue = (file: string, message: string): RegistryIssue => ({ file, message, kind: 'tool' });

describe('invalid items', () => {
  it("finds the problems of the file named for an id, whatever its folder and extension, and no other's", () => {
    const issues = [issue('/p/.ai/tools/project/broken.yaml', 'a'), issue('/p/.ai/directives/broken.md', 'b'), issue('/p/.ai/tools/brokenness.yaml', 'c'), issue('/p/.ai/tools/x.yml', 'd')];
    expect(issuesOfItem(issues, 'broken').map((i) => i.message)).toEqual(['a', 'b']);
    expect(issuesOfItem(issues, 'x').map((i) => i.message)).toEqual(['d']);
    expect(issuesOfItem(issues, 'nothing')).toEqual([]);
  });

  it('names each invalid item up to a bound, then says how many more and where to see them', () => {
    const issues = Array.from({ length: 7 }, (_, n) => issue(`/p/.ai/tools/t${n}.yaml`, `.ai/tools/t${n}.yaml: tool_type: wrong`));
    expect(invalidItemLines(issues.slice(0, 1))).toEqual(['not loaded, invalid: .ai/tools/t0.yaml: tool_type: wrong']);
    const lines = invalidItemLines(issues);
    expect(lines).toHaveLength(6);
    expect(lines.at(-1)).toBe('… and 2 more: run `kiwi tools validate`');
    expect(invalidItemLines([])).toEqual([]);
  });
});
