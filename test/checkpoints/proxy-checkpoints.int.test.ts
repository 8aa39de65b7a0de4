import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { LOCAL_CLIENT } from '../../src/clients/client-auth.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { CallRun } from '../../src/proxy/tool-call.js';
import { createGitRepo, type GitRepo } from '../helpers/git-repo.js';
import { WRITE_NOTE_TOOL } from '../helpers/write-note-tool.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

const TOOLS: Record<string, string> = {
  // No mutates_state: unknown counts as "may change state".
  '.ai/tools/write_note.yaml': WRITE_NOTE_TOOL,
  '.ai/tools/peek.yaml': `tool_id: peek
tool_type: script
executor: subprocess
version: "1.0.0"
description: reads nothing, changes nothing
mutates_state: false
config: { command: node, args: ["-e", "console.log('looked')"] }
`,
  '.ai/tools/forbidden.yaml': `tool_id: forbidden
tool_type: script
executor: subprocess
version: "1.0.0"
description: not in the policy
config: { command: node, args: ["-e", "require('fs').writeFileSync('forbidden.txt', 'x')"] }
`,
  // Its host comes from the call: the address guard refuses a loopback one only once the call runs.
  '.ai/tools/fetch_status.yaml': `tool_id: fetch_status
tool_type: api
executor: http_client
requires_approval: true
config: { method: GET, url: "http://{host}:1/status" }
parameters:
  - { name: host, type: string, required: true }
`,
  // The project writable (inside the sandbox too): write_note writes note.txt at its root.
  '.ai/config/policy.yaml': `version: 1
tools: [write_note, peek, fetch_status]
commands: [{ executable: node }]
filesystem: { write: ["**"] }
`,
  '.gitignore': '.ai/logs/\n',
};

let repo: GitRepo;
let project: Project | undefined;

beforeEach(() => {
  repo = createGitRepo({ 'README.md': 'hello\n', ...TOOLS });
  cpSync(path.join(REPO_ROOT, '.ai', 'tools', 'primitives'), path.join(repo.root, '.ai', 'tools', 'primitives'), { recursive: true });
});

afterEach(async () => {
  await project?.close();
  project = undefined;
  repo.remove();
});

async function call(p: Project, tool: string, args: Record<string, unknown> = {}, approve?: CallRun['approve']) {
  return p.proxy.call({ target: { tool, args }, caller: { session: p.session, client: LOCAL_CLIENT, source: 'cli' }, ...(approve ? { run: { approve } } : {}) });
}

async function auditRecords(p: Project) {
  await p.audit.flush();
  return readAuditTail({ dir: p.auditDir, limit: 100 });
}

function checkpoints(): string[] {
  return repo.git('log', '--format=%H', 'refs/kiwi/checkpoints/main').trim().split('\n');
}

describe('the tool proxy takes a checkpoint before a state-changing call', () => {
  it('checkpoints before write_note (twice, chained), never before a read-only or denied call, and files the id in the audit record', async () => {
    project = await openProject({ projectDir: repo.root, env: repo.env, session: 'ckpt-proxy' });
    expect(await project.checkpoints.status()).toEqual({ on: true, top: repo.root, ref: 'refs/kiwi/checkpoints/main' });

    expect((await call(project, 'peek')).status).toBe('ok');
    expect(repo.git('for-each-ref', 'refs/kiwi').trim()).toBe('');

    expect((await call(project, 'write_note', { text: 'first' })).status).toBe('ok');
    const [first] = checkpoints();
    // The checkpoint is the state before the call: note.txt did not exist yet.
    expect(repo.git('ls-tree', '--name-only', first as string)).not.toContain('note.txt');

    expect((await call(project, 'forbidden')).status).toBe('denied');
    expect(existsSync(path.join(repo.root, 'forbidden.txt'))).toBe(false);

    expect((await call(project, 'write_note', { text: 'second' })).status).toBe('ok');
    const [second, parent] = checkpoints();
    expect(parent).toBe(first);
    expect(repo.git('show', `${second}:note.txt`)).toBe('first\n');
    expect(repo.git('status', '--porcelain')).toContain('?? note.txt');
    expect(repo.git('rev-parse', 'HEAD').trim()).toBe(repo.git('rev-parse', 'main').trim());

    const records = await auditRecords(project);
    expect(records.map((r) => [r.tool, r.decision, r.checkpoint])).toEqual([
      ['peek', 'allow', undefined],
      ['write_note', 'allow', first],
      ['forbidden', 'deny', undefined],
      ['write_note', 'allow', second],
    ]);
  });

  it('files the checkpoint, approval and loop flag of a call the address guard refuses while it runs', async () => {
    project = await openProject({ projectDir: repo.root, env: repo.env, session: 'ckpt-guard' });
    const grant = async () => ({ approved: true, decidedBy: 'alice' });
    const outcomes = [];
    // The third identical call in the window is the one flagged as stuck.
    for (let i = 0; i < 3; i++) outcomes.push(await call(project, 'fetch_status', { host: '127.0.0.1' }, grant));
    for (const o of outcomes) expect(o.status, JSON.stringify(o)).toBe('denied');
    // Nothing changed between the calls, so each files the one checkpoint taken before the first.
    const [taken] = checkpoints();
    expect(taken).toMatch(/^[0-9a-f]{40}$/);
    const records = await auditRecords(project);
    expect(records.map((r) => [r.call_id, r.decision, r.checkpoint, r.stuck])).toEqual([
      [outcomes[0]?.callId, 'deny', taken, undefined],
      [outcomes[1]?.callId, 'deny', taken, undefined],
      [outcomes[2]?.callId, 'deny', taken, true],
    ]);
    for (const r of records) {
      expect(r.reason).toMatch(/127\.0\.0\.1.*loopback/);
      expect(r.approval).toMatchObject({ approved: true, decided_by: 'alice' });
    }
  });

  it('takes none when checkpoints.enabled is false in gateway.yaml', async () => {
    repo.write('.ai/config/gateway.yaml', 'checkpoints:\n  enabled: false\n');
    project = await openProject({ projectDir: repo.root, env: repo.env, session: 'ckpt-off' });
    expect(await project.checkpoints.status()).toEqual({ on: false, reason: 'checkpoints.enabled is false in .ai/config/gateway.yaml' });
    expect((await call(project, 'write_note', { text: 'x' })).status).toBe('ok');
    expect(repo.git('for-each-ref', 'refs/kiwi').trim()).toBe('');
    expect((await auditRecords(project))[0]?.checkpoint).toBeUndefined();
  });
});
