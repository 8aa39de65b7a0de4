import { describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import { resolveChain } from '../../src/executor/chain.js';
import { planCall } from '../../src/executor/plan.js';
import { DEFAULT_CONTAINER_LIMITS } from '../../src/policy/isolation-choice.js';
import { isolationRefusal, minimumFor } from '../../src/policy/isolation-policy.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import { makeTool, toolMap } from '../helpers/make-tool.js';

const ROOT = '/virtual/project';
const policy = (text: string) => parsePolicy(`version: 1\n${text}`, '.ai/config/policy.yaml', ROOT);

function policyError(text: string): string {
  try {
    policy(text);
  } catch (error) {
    expect(isKiwiError(error, 'INVALID_POLICY')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected INVALID_POLICY');
}

describe('the policy isolation field', () => {
  it('defaults to the standard floor (a manifest alone cannot leave the sandbox) and the default container limits', () => {
    expect(policy('').isolation).toEqual({ minimum: 'standard', perTool: {}, container: DEFAULT_CONTAINER_LIMITS });
  });

  it('reads the minimum, per-tool floors and container limits', () => {
    const read = policy('isolation:\n  minimum: standard\n  per_tool: { "deploy_*": restricted }\n  container: { cpus: 0.5, memory_mb: 256, processes: 64, open_files: 512 }\n').isolation;
    expect(read).toEqual({ minimum: 'standard', perTool: { 'deploy_*': 'restricted' }, container: { cpus: 0.5, memoryMb: 256, processes: 64, openFiles: 512 } });
  });

  it('names the field and the levels for a bad level', () => {
    expect(policyError('isolation: { minimum: sandbox }\n')).toBe('.ai/config/policy.yaml:2:23: isolation.minimum: must be one of trusted, standard, sandboxed, restricted');
    expect(policyError('isolation: { per_tool: { "x": high } }\n')).toMatch(/isolation\.per_tool\.x: must be one of trusted, standard, sandboxed, restricted/u);
  });

  it('names the allowed fields for an unknown one', () => {
    expect(policyError('isolation: { minimun: standard }\n')).toMatch(/isolation\.minimun: unknown field \(did you mean "minimum"\?\); the fields here are minimum, per_tool, container/u);
    expect(policyError('isolation: { container: { memory: 5 } }\n')).toMatch(/the fields here are cpus, memory_mb, processes, open_files/u);
  });

  it('refuses limits out of range', () => {
    expect(policyError('isolation: { container: { memory_mb: 8 } }\n')).toMatch(/isolation\.container\.memory_mb: must be at least 16/u);
    expect(policyError('isolation: { container: { cpus: 0 } }\n')).toMatch(/isolation\.container\.cpus: must be more than 0/u);
  });
});

describe('the isolation floor', () => {
  const floor = { minimum: 'standard' as const, perTool: { 'git_*': 'sandboxed' as const, 'lax_*': 'trusted' as const }, container: DEFAULT_CONTAINER_LIMITS };

  it('takes the higher of the minimum and the first matching per-tool floor', () => {
    expect(minimumFor(floor, 'git_log')).toEqual({ level: 'sandboxed', setBy: 'isolation.per_tool["git_*"]' });
    // A per-tool floor never lowers the minimum.
    expect(minimumFor(floor, 'lax_tool')).toEqual({ level: 'standard', setBy: 'isolation.minimum' });
  });

  it('passes a tool at or above its floor and says what to change otherwise', () => {
    expect(isolationRefusal(floor, 'git_log', 'restricted', 'policy p')).toBeUndefined();
    expect(isolationRefusal(floor, 'git_log', 'standard', 'policy p')).toBe(
      'policy p: git_log runs at isolation standard, below the sandboxed that isolation.per_tool["git_*"] requires; set `isolation: sandboxed` (or higher) in the tool\'s manifest, or lower isolation.per_tool["git_*"]',
    );
  });
});

describe('the manifest field', () => {
  const LABEL = { file: '/p/.ai/tools/x.yaml', display: '.ai/tools/x.yaml' };
  const manifest = (extra: string) => parseToolManifest(`tool_id: x\ntool_type: script\nexecutor: python_runtime\n${extra}`, LABEL, 'project');

  it('is read when given and absent otherwise', () => {
    const given = manifest('isolation: restricted\n');
    expect(given.ok && given.value.isolation).toBe('restricted');
    const absent = manifest('');
    expect(absent.ok && 'isolation' in absent.value).toBe(false);
  });

  it('names the levels for a bad value', () => {
    const bad = manifest('isolation: container\n');
    expect(!bad.ok && bad.issues.map((i) => i.message)).toEqual([expect.stringMatching(/isolation.*"container" is not a known isolation level; write one of trusted, standard, sandboxed, restricted/u)]);
  });
});

describe('the level along a chain', () => {
  const python = makeTool({ id: 'python_runtime', type: 'runtime', config: { command: 'python3' } });
  const subprocess = makeTool({ id: 'subprocess', type: 'primitive', executor: null });

  it('is standard when no link states one', () => {
    expect(resolveChain(toolMap(makeTool({ id: 's', executor: 'python_runtime' }), python, subprocess), 's').isolation).toBe('standard');
  });

  it('comes from the runtime when the tool states none, and the tool overrides it', () => {
    const contained = { ...python, isolation: 'restricted' as const };
    expect(resolveChain(toolMap(makeTool({ id: 's', executor: 'python_runtime' }), contained, subprocess), 's').isolation).toBe('restricted');
    expect(resolveChain(toolMap(makeTool({ id: 's', executor: 'python_runtime', isolation: 'trusted' }), contained, subprocess), 's').isolation).toBe('trusted');
  });

  it('puts the level and the container request on the plan', () => {
    const tool = makeTool({ id: 's', executor: 'python_runtime', isolation: 'sandboxed', config: { container: { cpus: 0.5, memory_mb: 64 } } });
    const plan = planCall(resolveChain(toolMap(tool, python, subprocess), 's'), {}, { root: '/', env: {} });
    expect(plan).toMatchObject({ kind: 'subprocess', isolation: 'sandboxed', container: { cpus: 0.5, memoryMb: 64 } });
  });

  it('refuses a container level on a tool that runs no subprocess', () => {
    const api = makeTool({ id: 'api', type: 'api', executor: 'http_client', isolation: 'restricted', config: { url_template: 'https://example.com/' } });
    const chain = resolveChain(toolMap(api, makeTool({ id: 'http_client', type: 'primitive', executor: null })), 'api');
    expect(() => planCall(chain, {}, { root: '/', env: {} })).toThrow(/isolation: restricted \(from api, .*\) runs a subprocess tool in a container, and this tool runs as an HTTP request; remove the isolation field or set it to standard/u);
  });
});
