import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { LOCAL_CLIENT } from '../../src/clients/client-auth.js';
import { openProject } from '../../src/project/open-project.js';
import { ROLLBACK_TOOL } from '../../src/registry/item-tools.js';
import { createGitRepo, type GitRepo } from '../helpers/git-repo.js';
import { WRITE_NOTE_TOOL } from '../helpers/write-note-tool.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/**
 * MCP `execute action=rollback` on a real git work tree behind a real gateway: a client restores
 * the checkpoint taken before its own call; another client's checkpoint is not found for it; the
 * restore is audited and can itself be undone. Then, on the tool proxy alone: the policy's grant
 * and approvals hold for a rollback as for any tool.
 */

const policy = (tools: string[], extra = ''): string => `version: 1\ntools: [${tools.join(', ')}]\ncommands: [{ executable: node }]\nfilesystem: { write: ["**"] }\n${extra}`;

function repoWith(policyText: string): GitRepo {
  const repo = createGitRepo({ 'README.md': 'hello\n', '.ai/tools/write_note.yaml': WRITE_NOTE_TOOL, '.ai/config/policy.yaml': policyText, '.gitignore': '.ai/logs/\nno-user-tier/\n' });
  cpSync(path.join(REPO_ROOT, '.ai', 'tools', 'primitives'), path.join(repo.root, '.ai', 'tools', 'primitives'), { recursive: true });
  return repo;
}

type Structured = Record<string, unknown> & { status: string; checkpoint?: string; error?: { code: string; message: string }; data?: Record<string, unknown> };

describe('execute action=rollback over /mcp', () => {
  let repo: GitRepo;
  let served: ServedGateway;
  const keys = { alpha: '', beta: '' };

  beforeAll(async () => {
    repo = repoWith(policy(['write_note', ROLLBACK_TOOL]));
    // Made before the gateway opens: from its first request on, every request needs a key.
    keys.alpha = (await createKey(path.join(repo.root, KEY_FILE), 'alpha')).key;
    keys.beta = (await createKey(path.join(repo.root, KEY_FILE), 'beta')).key;
    served = await serveGateway(repo.root);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    repo?.remove();
  });

  async function execute(key: string, args: Record<string, unknown>): Promise<Structured> {
    const client = new Client({ name: 'rollback-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      const result = await client.callTool({ name: 'execute', arguments: args });
      return result.structuredContent as Structured;
    } finally {
      await client.close();
    }
  }

  it('restores the checkpoint taken before the client\'s own call, refuses another client\'s as not found, and can be undone', async () => {
    const wrote = await execute(keys.alpha, { item_type: 'tool', action: 'run', item_id: 'write_note', parameters: { text: 'by alpha' } });
    expect(wrote).toMatchObject({ status: 'ok', checkpoint: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const checkpoint = wrote.checkpoint as string;
    expect(readFileSync(path.join(repo.root, 'note.txt'), 'utf8')).toBe('by alpha\n');

    const stolen = await execute(keys.beta, { item_type: 'tool', action: 'rollback', item_id: checkpoint });
    expect(stolen).toMatchObject({ status: 'error', error: { code: 'NOT_FOUND', message: expect.stringContaining(`no checkpoint ${checkpoint} of client beta`) } });
    expect(existsSync(path.join(repo.root, 'note.txt'))).toBe(true);
    const missing = await execute(keys.beta, { item_type: 'tool', action: 'rollback', item_id: 'f'.repeat(40) });
    expect(missing.error?.code).toBe('NOT_FOUND');

    const restored = await execute(keys.alpha, { item_type: 'tool', action: 'rollback', item_id: checkpoint.slice(0, 12) });
    expect(restored).toMatchObject({ status: 'ok', tool: ROLLBACK_TOOL, data: { checkpoint, write: [], remove: ['note.txt'], undo: expect.stringMatching(/^[0-9a-f]{40}$/) } });
    expect(existsSync(path.join(repo.root, 'note.txt'))).toBe(false);
    expect(repo.git('status', '--porcelain')).not.toContain('note.txt');

    // The restore checkpointed the work tree first, for alpha: rolling back to that undoes it.
    const undone = await execute(keys.alpha, { item_type: 'tool', action: 'rollback', item_id: restored.data?.['undo'] as string });
    expect(undone, JSON.stringify(undone)).toMatchObject({ status: 'ok', data: { write: ['note.txt'] } });
    expect(readFileSync(path.join(repo.root, 'note.txt'), 'utf8')).toBe('by alpha\n');

    const records = (await readAuditTail({ dir: path.join(repo.root, '.ai', 'logs', 'audit'), limit: 100 })).filter((r) => r.tool === ROLLBACK_TOOL);
    expect(records.map((r) => [r.client, r.item, r.decision, r.error?.code ?? 'ok'])).toEqual([
      ['beta', 'checkpoint', 'allow', 'NOT_FOUND'],
      ['beta', 'checkpoint', 'allow', 'NOT_FOUND'],
      ['alpha', 'checkpoint', 'allow', 'ok'],
      ['alpha', 'checkpoint', 'allow', 'ok'],
    ]);
  }, 120_000);

  it('refuses what is not a rollback: a bad id, parameters, async', async () => {
    expect(await execute(keys.alpha, { item_type: 'tool', action: 'rollback', item_id: 'main' })).toMatchObject({ status: 'error', error: { code: 'INVALID_INPUT', message: expect.stringContaining('`main` is not a checkpoint id') } });
    expect(await execute(keys.alpha, { item_type: 'tool', action: 'rollback', item_id: 'abcd', parameters: { x: 1 } })).toMatchObject({ error: { message: expect.stringContaining('a rollback takes no parameters') } });
    expect(await execute(keys.alpha, { item_type: 'tool', action: 'rollback', item_id: 'abcd', async: true })).toMatchObject({ error: { message: expect.stringContaining('a rollback answers when it is done') } });
  }, 60_000);
});

describe('a rollback under the policy', () => {
  it('is denied without the grant, and waits for a person when approvals name it', async () => {
    const repo = repoWith(policy(['write_note']));
    try {
      let project = await openProject({ projectDir: repo.root, env: { PATH: process.env['PATH'], HOME: repo.root }, userDir: path.join(repo.root, 'no-user-tier') });
      const write = await project.proxy.call({ target: { tool: 'write_note', args: { text: 'x' } }, caller: { session: project.session, client: LOCAL_CLIENT, source: 'cli' } });
      const rollback = { target: { tool: ROLLBACK_TOOL, item: 'checkpoint' as const, args: { checkpoint: write.checkpoint } }, caller: { session: project.session, client: LOCAL_CLIENT, source: 'mcp' as const } };
      expect(await project.proxy.call(rollback)).toMatchObject({ status: 'denied', reason: expect.stringContaining(`add ${ROLLBACK_TOOL} to the policy's tools to let clients restore their own checkpoints`) });
      await project.close();

      repo.write('.ai/config/policy.yaml', policy(['write_note', ROLLBACK_TOOL], `approvals: { tools: ["${ROLLBACK_TOOL}"] }\n`));
      project = await openProject({ projectDir: repo.root, env: { PATH: process.env['PATH'], HOME: repo.root }, userDir: path.join(repo.root, 'no-user-tier') });
      const asked: string[] = [];
      const refused = await project.proxy.call({ ...rollback, run: { approve: async (q) => (asked.push(q.reason), { approved: false, decidedBy: 'reviewer', reason: 'not now' }) } });
      expect(refused).toMatchObject({ status: 'denied', reason: 'not now' });
      expect(asked).toEqual([`the policy's approvals.tools names ${ROLLBACK_TOOL}`]);
      expect(existsSync(path.join(repo.root, 'note.txt'))).toBe(true);
      const granted = await project.proxy.call({ ...rollback, run: { approve: async () => ({ approved: true, decidedBy: 'reviewer' }) } });
      expect(granted).toMatchObject({ status: 'ok' });
      expect(existsSync(path.join(repo.root, 'note.txt'))).toBe(false);
      await project.close();
    } finally {
      repo.remove();
    }
  }, 120_000);
});
