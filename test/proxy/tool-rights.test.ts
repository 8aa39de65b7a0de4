import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyCaller } from '../../src/clients/client-auth.js';
import type { KeyRecord } from '../../src/clients/key-store.js';
import type { Caller } from '../../src/policy/caller.js';
import type { PermissionContext } from '../../src/policy/permission-context.js';
import { loadPolicyFile } from '../../src/policy/policy-file.js';
import { toolRights } from '../../src/proxy/tool-rights.js';
import { makeTool } from '../helpers/make-tool.js';

let root: string;
let policy: PermissionContext;

const READ = makeTool({ id: 'read_file', mutatesState: false });
const SHIP = makeTool({ id: 'ship_release', requiresApproval: true });
const NOTE = makeTool({ id: 'save_note' });
const DEPLOY = makeTool({ id: 'deploy' });
const RUNTIME = makeTool({ id: 'node_runtime', type: 'runtime' });

const record = (fields: Partial<KeyRecord>): KeyRecord => ({ id: 'key_0000000a', client: 'ci', hash: `sha256:${'0'.repeat(64)}`, created: '2026-01-01T00:00:00.000Z', roles: ['client'], ...fields });

async function callerOf(fields: Partial<KeyRecord>): Promise<Caller> {
  const served = await keyCaller(record(fields), { root, policy });
  if (!('caller' in served)) throw new Error(served.error);
  return served.caller;
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'kiwi-rights-')));
  mkdirSync(path.join(root, '.ai', 'config', 'clients'), { recursive: true });
  writeFileSync(path.join(root, '.ai', 'config', 'policy.yaml'), 'version: 1\ntools: [read_file, ship_release, save_note, node_runtime]\napprovals:\n  tools: [save_note]\n');
  writeFileSync(path.join(root, '.ai', 'config', 'clients', 'ci.yaml'), 'version: 1\ntools: [read_file, deploy]\n');
  policy = await loadPolicyFile(path.join(root, '.ai', 'config', 'policy.yaml'), root);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('toolRights', () => {
  it('decides from the project policy for a key without a policy file, saying which call waits for a person', async () => {
    const right = toolRights(policy, await callerOf({}));
    expect(right({ id: 'read_file', tool: READ })).toEqual({ allowed: true, reason: expect.stringMatching(/^allowed by policy /) });
    expect(right({ id: 'ship_release', tool: SHIP })).toMatchObject({ allowed: true, approval: expect.stringMatching(/requires_approval/) });
    expect(right({ id: 'save_note', tool: NOTE })).toMatchObject({ allowed: true, approval: "the policy's approvals.tools names save_note" });
    expect(right({ id: 'deploy', tool: DEPLOY })).toEqual({ allowed: false, reason: expect.stringMatching(/^denied by policy .*: tool `deploy` is not in `tools`/) });
    expect(right({ id: 'node_runtime', tool: RUNTIME })).toEqual({ allowed: false, reason: '`node_runtime` is a runtime: it executes other tools and cannot be called directly' });
  });

  it('narrows by the key\'s policy file, which can never widen the project\'s', async () => {
    const right = toolRights(policy, await callerOf({ policy: '.ai/config/clients/ci.yaml' }));
    expect(right({ id: 'read_file', tool: READ })).toMatchObject({ allowed: true, reason: expect.stringMatching(/^allowed by client ci \(policy /) });
    expect(right({ id: 'ship_release', tool: SHIP })).toEqual({ allowed: false, reason: expect.stringMatching(/^denied by client ci \(policy .*ci\.yaml\): tool `ship_release` is not in `tools`/) });
    // The key's file names deploy; the project's does not.
    expect(right({ id: 'deploy', tool: DEPLOY })).toMatchObject({ allowed: false, reason: expect.stringMatching(/^denied by policy .*policy\.yaml/) });
  });

  it('grants a directive by its name and lets every caller read knowledge', async () => {
    const right = toolRights(policy, await callerOf({ policy: '.ai/config/clients/ci.yaml' }));
    expect(right({ id: 'deploy', item: 'directive' }).allowed).toBe(false);
    expect(right({ id: 'read_file', item: 'directive' }).allowed).toBe(true);
    expect(right({ id: 'rate-limits', item: 'knowledge' })).toMatchObject({ allowed: true, reason: expect.stringMatching(/knowledge entry/) });
  });

  it('denies everything to a key without the client role, saying which role it takes', async () => {
    const right = toolRights(policy, await callerOf({ roles: ['approver'] }));
    expect(right({ id: 'read_file', tool: READ })).toEqual({ allowed: false, reason: expect.stringMatching(/need the client role/) });
    expect(toolRights(policy, await callerOf({ roles: ['admin'] }))({ id: 'read_file', tool: READ }).allowed).toBe(true);
  });

  it('keyCaller: a key whose policy file does not parse is not served, and the reason says what to fix', async () => {
    writeFileSync(path.join(root, '.ai', 'config', 'clients', 'broken.yaml'), 'version: 1\ntools: read_file\n');
    expect(await keyCaller(record({ policy: '.ai/config/clients/broken.yaml' }), { root, policy })).toEqual({ error: expect.stringMatching(/^the policy of client ci cannot be used .*; fix \.ai\/config\/clients\/broken\.yaml/) });
  });
});
