import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import type { ToolCall } from '../../src/proxy/tool-call.js';
import { CREATE_TOOL } from '../../src/registry/item-proposal.js';
import { verifySignature } from '../../src/registry/signature.js';
import { registryTierBackends } from '../helpers/registry-tier-backends.js';
import { serveGateway, type ServedGateway } from '../helpers/serve-gateway.js';
import { createTempProject, type TempProject } from '../helpers/temp-project.js';

/**
 * `execute action=create` end to end, with real files, a real node script run by the proxy's
 * chain, real registry tiers, and a real gateway and MCP SDK client: a client the policy grants
 * registry.create creates at once; any other waits for a person, and a refusal or no answer lands
 * nothing and is audited; a new version keeps the old one; the running registry runs what landed.
 */

const policy = (tools: string[], extra = ''): string => `version: 1\ntools: [${tools.map((t) => JSON.stringify(t)).join(', ')}]\ncommands: [{ executable: node }]\n${extra}`;
const manifest = (version: string, word = 'LOUD'): string =>
  `tool_id: shout\ntool_type: script\nexecutor: node_runtime\nversion: "${version}"\ndescription: Say the text loudly\nconfig: { script: shout.mjs }\nparameters:\n  - { name: text, type: string, required: true }\n# ${word}\n`;
const script = (suffix: string): string => `let s = ''; process.stdin.on('data', (c) => (s += c)).on('end', () => process.stdout.write(JSON.parse(s).text.toUpperCase() + '${suffix}'));\n`;
const proposal = (version: string, suffix = '!', extra: Record<string, unknown> = {}) => ({ item_type: 'tool', item_id: 'shout', content: manifest(version), files: { 'shout.mjs': script(suffix) }, ...extra });

async function open(project: TempProject, extra: { env?: Record<string, string | undefined>; userDir?: string } = {}): Promise<Project> {
  return openProject({ projectDir: project.root, env: extra.env ?? { PATH: process.env['PATH'], HOME: project.root }, userDir: extra.userDir ?? path.join(project.root, 'no-user-tier') });
}

function create(project: Project, args: Record<string, unknown>, more: Pick<ToolCall, 'run'> = {}) {
  return project.proxy.call({ target: { tool: CREATE_TOOL, item: 'creation', args }, caller: { session: project.session, client: 'alpha', source: 'mcp' }, ...more });
}

describe('a creation on the tool proxy', () => {
  it('lands at once when the policy grants registry.create, runs, and a new version keeps the old one', async () => {
    const temp = createTempProject();
    temp.write('.ai/config/policy.yaml', policy([CREATE_TOOL, 'shout']));
    const project = await open(temp);
    try {
      const created = await create(project, proposal('1.0.0'));
      expect(created, JSON.stringify(created)).toMatchObject({ status: 'ok', result: { data: { item_type: 'tool', item_id: 'shout', version: '1.0.0', tier: 'project', file: '.ai/tools/created/shout/shout.yaml' } } });
      const file = path.join(temp.root, '.ai/tools/created/shout/shout.yaml');
      expect(verifySignature('tool', readFileSync(file, 'utf8')).status).toBe('valid');
      const ran = await project.proxy.call({ target: { tool: 'shout', args: { text: 'hi' } }, caller: { session: project.session, client: 'beta', source: 'cli' } });
      expect(ran, JSON.stringify(ran)).toMatchObject({ status: 'ok', result: { text: 'HI!' } });

      expect(await create(project, proposal('1.0.0'))).toMatchObject({ status: 'error', error: { code: 'CONFLICT', message: expect.stringContaining('a new version must be higher (e.g. 1.0.1)') } });
      expect(await create(project, proposal('1.1.0', '!!'))).toMatchObject({ status: 'ok', result: { data: { version: '1.1.0' } } });
      expect(await project.proxy.call({ target: { tool: 'shout', args: { text: 'hi' } }, caller: { session: project.session, client: 'beta', source: 'cli' } })).toMatchObject({ status: 'ok', result: { text: 'HI!!' } });
      expect(readdirSync(path.join(temp.root, '.ai/tools/created/shout/.versions/1.0.0')).sort()).toEqual(['shout.mjs', 'shout.yaml']);

      // A fresh load of the project sees what landed, as another process would; the kept version is not loaded.
      const again = await open(temp);
      expect(again.registry.tools.get('shout')).toMatchObject({ version: '1.1.0' });
      expect(again.registry.errors).toEqual([]);
      await again.close();
    } finally {
      await project.close();
      temp.remove();
    }
  }, 60_000);

  it('waits for a person otherwise: a refusal lands nothing and is audited; an approval lands it', async () => {
    const temp = createTempProject();
    temp.write('.ai/config/policy.yaml', policy(['shout']));
    temp.write('.ai/tools/project/word_count.yaml', 'tool_id: word_count\ntool_type: script\nexecutor: node_runtime\nversion: "1.0.0"\ndescription: Count words\nconfig: { script: wc.mjs }\n');
    const project = await open(temp);
    try {
      const asked: Array<{ reason: string; arguments: Record<string, unknown> }> = [];
      const refused = await create(project, proposal('1.0.0'), { run: { approve: async (q) => (asked.push(q), { approved: false, decidedBy: 'reviewer', reason: 'not this one' }) } });
      expect(refused).toMatchObject({ status: 'denied', reason: 'not this one' });
      expect(asked).toHaveLength(1);
      expect(asked[0]?.reason).toContain('the policy does not grant this client registry.create, so a person decides');
      expect(asked[0]?.arguments).toMatchObject({ item_type: 'tool', item_id: 'shout', version: '1.0.0', files: { 'shout.mjs': script('!'), 'shout.yaml': expect.stringContaining('tool_id: shout') } });
      expect(existsSync(path.join(temp.root, '.ai/tools/created'))).toBe(false);

      expect(await create(project, proposal('1.0.0'))).toMatchObject({ status: 'denied', reason: expect.stringContaining('this caller cannot ask a person') });

      // A person's own tool is changed by a person, whoever allows the call.
      const human = await create(project, { item_type: 'tool', item_id: 'word_count', content: manifest('2.0.0').replace('shout', 'word_count'), files: { 'shout.mjs': 'x' } }, { run: { approve: async () => ({ approved: true, decidedBy: 'reviewer' }) } });
      expect(human).toMatchObject({ status: 'error', error: { code: 'CONFLICT', message: expect.stringContaining('word_count was written by a person (.ai/tools/project/word_count.yaml)') } });

      const approved = await create(project, proposal('1.0.0'), { run: { approve: async () => ({ approved: true, decidedBy: 'reviewer' }) } });
      expect(approved, JSON.stringify(approved)).toMatchObject({ status: 'ok', result: { data: { item_id: 'shout' } } });
      expect(await project.proxy.call({ target: { tool: 'shout', args: { text: 'ok' } }, caller: { session: project.session, client: 'beta', source: 'cli' } })).toMatchObject({ status: 'ok', result: { text: 'OK!' } });

      const records = (await readAuditTail({ dir: project.auditDir, limit: 50 })).filter((r) => r.tool === CREATE_TOOL);
      expect(records.map((r) => [r.client, r.item, r.decision, r.error?.code ?? r.reason?.slice(0, 12) ?? '']), JSON.stringify(records.map((r) => [r.decision, r.reason, r.error]))).toEqual([
        ['alpha', 'creation', 'deny', 'not this one'],
        ['alpha', 'creation', 'deny', 'an agent pro'],
        ['alpha', 'creation', 'deny', 'CONFLICT'],
        ['alpha', 'creation', 'allow', 'allowed once'],
      ]);
    } finally {
      await project.close();
      temp.remove();
    }
  }, 60_000);

  it('lands a directive\'s new version beside the old one, and a knowledge entry\'s old version in .versions', async () => {
    const temp = createTempProject();
    temp.write('.ai/config/policy.yaml', policy([CREATE_TOOL]));
    const project = await open(temp);
    const directive = (version: string): string => `# summarise\n\n<directive name="summarise" version="${version}">\n  <metadata><description>Summarise the notes</description></metadata>\n  <process><step name="read">Read the notes</step></process>\n</directive>\n`;
    const entry = (version: string): string => `---\nid: release-days\ntitle: When we release\nentry_type: reference\nversion: "${version}"\n---\n\nWe release on Tuesdays.\n`;
    try {
      for (const version of ['1.0.0', '1.1.0']) {
        expect(await create(project, { item_type: 'directive', item_id: 'summarise', content: directive(version) })).toMatchObject({ status: 'ok' });
        expect(await create(project, { item_type: 'knowledge', item_id: 'release-days', content: entry(version) })).toMatchObject({ status: 'ok' });
      }
      expect(readdirSync(path.join(temp.root, '.ai/directives/created')).sort()).toEqual(['.owners', 'summarise.md', 'summarise.v1.1.0.md']);
      expect(project.registry.directives.get('summarise')?.version).toBe('1.1.0');
      expect(project.registry.olderDirectives?.get('summarise')?.map((d) => d.version)).toEqual(['1.0.0']);
      expect(readdirSync(path.join(temp.root, '.ai/knowledge/created/.versions/1.0.0'))).toEqual(['release-days.md']);
      expect(project.registry.knowledge.get('release-days')?.version).toBe('1.1.0');
      const again = await open(temp);
      expect([again.registry.directives.get('summarise')?.version, again.registry.knowledge.get('release-days')?.version, again.registry.errors]).toEqual(['1.1.0', '1.1.0', []]);
      await again.close();
    } finally {
      await project.close();
      temp.remove();
    }
  }, 60_000);

  it('is granted only by its own name: a glob of tools does not grant it', async () => {
    const temp = createTempProject();
    temp.write('.ai/config/policy.yaml', policy(['*']));
    const project = await open(temp);
    try {
      const asked: string[] = [];
      const outcome = await create(project, proposal('1.0.0'), { run: { approve: async (q) => (asked.push(q.reason), { approved: false, decidedBy: 'reviewer', reason: 'no' }) } });
      expect(outcome).toMatchObject({ status: 'denied', reason: 'no' });
      expect(asked).toHaveLength(1);
      const [record] = (await readAuditTail({ dir: project.auditDir, limit: 5 })).filter((r) => r.tool === CREATE_TOOL);
      expect(record?.approval).toMatchObject({ approved: false, decided_by: 'reviewer' });
    } finally {
      await project.close();
      temp.remove();
    }
  }, 60_000);

  for (const [name, openTier] of registryTierBackends()) {
    it(`lands a version in the registry tier (${name}), where every version is kept, and runs it`, async () => {
      const place = await openTier();
      const temp = createTempProject();
      temp.write('.ai/config/policy.yaml', policy([CREATE_TOOL, 'shout']));
      const project = await open(temp, { env: place.env, userDir: place.userDir });
      try {
        // A project runs the tier items it pins: here at once, elsewhere (and after a restart) once a person pins it.
        expect(await create(project, proposal('1.0.0', '?', { tier: 'registry' }))).toMatchObject({
          status: 'ok',
          result: { text: expect.stringMatching(/it runs in this gateway from now on; .*`kiwi registry pin shout@1\.0\.0`/), data: { tier: 'registry', version: '1.0.0' } },
        });
        expect(await create(project, proposal('1.0.1', '?!', { tier: 'registry' }))).toMatchObject({ status: 'ok', result: { data: { version: '1.0.1' } } });
        expect(await project.proxy.call({ target: { tool: 'shout', args: { text: 'tier' } }, caller: { session: project.session, client: 'beta', source: 'cli' } })).toMatchObject({ status: 'ok', result: { text: 'TIER?!' } });
        expect(project.registry.tools.get('shout')?.source.tier).toBe('registry');
        expect(existsSync(path.join(temp.root, '.ai/tools/created'))).toBe(false);

        const { openRegistryTierDatabase } = await import('../../src/kernel/registry-tier-database.js');
        const opened = await openRegistryTierDatabase({ env: place.env, userDir: place.userDir, create: false });
        try {
          const versions = await opened!.tier.versions('shout');
          expect(versions.map((v) => [v.version, v.pushedBy, v.folder])).toEqual([
            ['1.0.1', 'alpha', 'tools/created/shout'],
            ['1.0.0', 'alpha', 'tools/created/shout'],
          ]);
        } finally {
          await opened!.close();
        }
      } finally {
        await project.close();
        temp.remove();
        await place.stop();
      }
    }, 120_000);
  }
});

describe('execute action=create over /mcp', () => {
  let temp: TempProject;
  let served: ServedGateway;
  const keys = { alpha: '', beta: '' };

  beforeAll(async () => {
    temp = createTempProject();
    // beta's own policy narrows the project's: it may run shout, not create.
    temp.write('.ai/config/policy.yaml', policy([CREATE_TOOL, 'shout'], 'approvals: { timeout_s: 1 }\n'));
    temp.write('.ai/config/clients/beta.yaml', policy(['shout']));
    served = await serveGateway(temp.root);
    keys.alpha = (await createKey(path.join(temp.root, KEY_FILE), 'alpha')).key;
    keys.beta = (await createKey(path.join(temp.root, KEY_FILE), 'beta', { policy: '.ai/config/clients/beta.yaml' })).key;
    for (let i = 0; i < 100 && (await fetch(`${served.server.url}/mcp`, { method: 'POST' })).status !== 401; i++) await new Promise((r) => setTimeout(r, 100));
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    temp?.remove();
  });

  async function execute(key: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const client = new Client({ name: 'create-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      const result = await client.callTool({ name: 'execute', arguments: args });
      const text = (result.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('\n');
      return { ...(result.structuredContent as Record<string, unknown>), text };
    } finally {
      await client.close();
    }
  }

  it('creates a tool and a knowledge entry for a granted client, which then run; another client waits for a person, and no answer lands nothing', async () => {
    const { item_type, item_id, ...parameters } = proposal('1.0.0');
    const created = await execute(keys.alpha, { item_type, item_id, action: 'create', parameters });
    expect(created, JSON.stringify(created)).toMatchObject({ status: 'ok', tool: CREATE_TOOL, data: { item_id: 'shout', version: '1.0.0' } });
    const shared = await execute(keys.beta, { item_type: 'tool', action: 'run', item_id: 'shout', parameters: { text: 'shared' } });
    expect(shared, JSON.stringify(shared)).toMatchObject({ status: 'ok', text: expect.stringContaining('SHARED!') });

    const entry = '---\nid: release-days\ntitle: When we release\nentry_type: reference\nversion: "1.0.0"\n---\n\nWe release on Tuesdays.\n';
    expect(await execute(keys.alpha, { item_type: 'knowledge', action: 'create', item_id: 'release-days', parameters: { content: entry } })).toMatchObject({ status: 'ok' });
    expect(await execute(keys.beta, { item_type: 'knowledge', action: 'run', item_id: 'release-days' })).toMatchObject({ status: 'ready', text: expect.stringContaining('We release on Tuesdays.') });

    const waited = await execute(keys.beta, { item_type: 'knowledge', action: 'create', item_id: 'release-days-2', parameters: { content: entry.replace('id: release-days', 'id: release-days-2') } });
    expect(waited).toMatchObject({ status: 'denied', reason: expect.stringContaining('no one answered within 1 s') });
    expect(existsSync(path.join(temp.root, '.ai/knowledge/created/release-days-2.md'))).toBe(false);

    expect(await execute(keys.alpha, { item_type: 'tool', action: 'create', item_id: 'x', parameters: { content: 'tool_id: x\ntool_type: runtime\nexecutor: subprocess\nconfig: { command: sh }\n' } })).toMatchObject({ status: 'error', error: { code: 'INVALID_INPUT', message: expect.stringContaining('tool_type runtime cannot be created by an agent') } });
    expect(await execute(keys.alpha, { item_type: 'tool', action: 'create', item_id: 'x', async: true, parameters: {} })).toMatchObject({ error: { message: expect.stringContaining('a creation takes item_type, item_id and parameters') } });
  }, 60_000);
});
