import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/policy/policy-file.js';

describe("the policy's annealing", () => {
  const policy = (annealing: string) => parsePolicy(`version: 1\nannealing: ${annealing}\n`, 'policy.yaml', '/');

  it('is off unless turned on, and anneals tool errors, unresolved intents and stuck agents by default', () => {
    expect(parsePolicy('version: 1\n', 'policy.yaml', '/').annealing).toBeUndefined();
    expect(policy('{ on_failure: false }').annealing).toBeUndefined();
    expect(policy('{ on_failure: true }').annealing).toEqual({ failures: ['tool_error', 'unresolved', 'stuck'] });
    expect(policy('{ on_failure: true, failures: [error] }').annealing).toEqual({ failures: ['error'] });
  });

  it('never anneals a run that was denied or cut by a limit, and says so', () => {
    expect(() => policy('{ on_failure: true, failures: [denied] }')).toThrow(/must be one of tool_error, unresolved, stuck, error: a run denied, cut by a limit, cancelled or escalated is never annealed/);
    expect(() => policy('{ on_failure: true, failures: ["limit:turns"] }')).toThrow(/never annealed/);
    expect(() => policy('{ on_failure: true, failures: [] }')).toThrow(/must name at least one failure/);
    expect(() => policy('{ on_failure: yes }')).toThrow(/annealing\.on_failure: must be a boolean/);
    expect(() => policy('{ on_failur: true }')).toThrow(/on_failur/);
  });
});
