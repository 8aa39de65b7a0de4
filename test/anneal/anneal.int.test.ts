import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { besideFile } from '../../src/anneal/anneal-directive.js';
import { extractDirectiveFile, nextVersion } from '../../src/anneal/anneal-prompt.js';
import { runCli } from '../../src/app/run-cli.js';
import { createMetaServer } from '../../src/mcp-server/meta-server.js';
import { openProject } from '../../src/project/open-project.js';
import { loadRegistry } from '../../src/registry/load-registry.js';
import { verifySignature } from '../../src/registry/signature.js';
import { type ThreadRecord } from '../../src/threads/thread-store.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import { openHashResolver } from '../fixtures/mcp-meta/meta-project.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { createTempProject, type TempProject } from '../helpers/temp-project.js';

/**
 * `kiwi directives anneal` end to end: a temp project whose gateway.yaml points at a local server
 * replaying a recorded upstream answer (the improved directive), thread transcripts on disk as
 * runs leave them, and the CLI as people run it. What is written is read back with the real
 * registry, signature check and MCP `load`.
 */

let llm: ReplayLlmServer;
let temp: TempProject;
let userDir: string;

/** A directive file of `fixer` in the form the registry loads. */
const fixer = (version: string, permissions: string[], options: { limits?: string; step?: string; name?: string } = {}): string => `# fixer

\`\`\`xml
<directive name="${options.name ?? 'fixer'}" version="${version}">
  <metadata>
    <description>Fix the typo in the README</description>
    <model tier="balanced"/>
    <limits ${options.limits ?? 'turns="5"'}/>
    <permissions>
${permissions.map((p) => `      ${p}`).join('\n')}
    </permissions>
  </metadata>
  <process><step name="fix"><description>${options.step ?? 'Read the README and fix the typo'}</description></step></process>
</directive>
\`\`\`
`;

const READ = '<read resource="filesystem" path="**"/>';
const TOOL = '<execute resource="tool" id="read_file"/>';
const OLD = fixer('1.0.0', [READ, TOOL]);

/** A recorded answer: some words, the file between the markers, a closing remark. */
const answer = (file: string): ReturnType<typeof openAiStream> => openAiStream(['Here is the improved directive.\n<<<DIRECTIVE FILE\n', file, 'DIRECTIVE FILE>>>\nI made the step explicit about where the README is.']);

let counter = 0;
/** A finished thread's transcript, as run-thread writes it. */
async function thread(directive: string, version: string | undefined, records: ThreadRecord[]): Promise<string> {
  const id = `0195aaaa-bbbb-4ccc-8ddd-${String(++counter).padStart(12, '0')}`;
  const writer = await fileThreadStore(temp.root).create({ type: 'thread', id, directive, ...(version ? { version } : {}), inputs: {}, model: 'gpt-4o-mini', client: 'local', depth: 1, started_at: new Date().toISOString() });
  for (const r of records) await writer.append(r);
  await writer.close();
  return id;
}
const ended = (fields: Partial<Extract<ThreadRecord, { type: 'end' }>> = {}): ThreadRecord => ({ type: 'end', status: 'completed', result: 'done', steps_taken: 1, ended_at: new Date().toISOString(), ...fields });

async function kiwi(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli([...argv, '--project', temp.root], { env: { PATH: process.env['PATH'], KIWI_USER_DIR: userDir }, cwd: temp.root, io: { out: (l) => out.push(l), err: (l) => err.push(l) } });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const directiveFiles = (): string[] => readdirSync(path.join(temp.root, '.ai', 'directives')).sort();

beforeAll(async () => {
  llm = await startReplayLlmServer();
});

afterAll(async () => {
  await llm?.close();
});

beforeEach(() => {
  temp = createTempProject();
  userDir = mkdtempSync(path.join(tmpdir(), 'kiwi-anneal-user-'));
  temp.write('.ai/config/gateway.yaml', `upstreams:\n  - { name: recorded, kind: openai, base_url: "${llm.url}/v1", models: ["gpt-*"] }\nmodel_tiers: { balanced: gpt-4o-mini }\n`);
  temp.write('.ai/directives/fixer.md', OLD);
});

afterEach(() => {
  temp.remove();
  rmSync(userDir, { recursive: true, force: true });
});

describe('kiwi directives anneal', () => {
  it('writes the improved directive, signed, beside the old one, which is unchanged; the registry runs the new version and keeps the old loadable', async () => {
    const failed = await thread('fixer', '1.0.0', [
      { type: 'turn', turn: 1, text: 'Reading it. [TOOL: read_file {"path": "README"}]' },
      { type: 'call', call_id: 'c1', tool: 'read_file', arguments: { path: 'README' } },
      { type: 'result', call_id: 'c1', tool: 'read_file', status: 'error', text: 'TOOL_FAILED: no such file README' },
      { type: 'turn', turn: 2, text: 'I could not find it.' },
      ended({ failure: 'tool_error' }),
    ]);
    const fine = await thread('fixer', '1.0.0', [{ type: 'result', call_id: 'c2', tool: 'read_file', status: 'ok', text: 'SUCCESSFUL RUN' }, ended()]);
    await thread('other', '1.0.0', [{ type: 'result', call_id: 'c3', tool: 'x', status: 'denied', text: 'OTHER DIRECTIVE' }, ended()]);
    const improved = fixer('1.0.1', [TOOL, READ], { step: 'Read README.md (with its extension) and fix the typo' });
    llm.replyOnce(answer(improved));
    const before = llm.requests.length;

    const run = await kiwi('directives', 'anneal', 'fixer');
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(run.out).toContain(`annealed fixer on gpt-4o-mini from 1 failed thread(s): ${failed} (tool_error)`);
    expect(run.out).toContain('version 1.0.0 → 1.0.1');
    expect(run.out).toContain('permissions: unchanged');
    expect(run.out).toContain('wrote .ai/directives/fixer.v1.0.1.md (signed), beside .ai/directives/fixer.md, which is unchanged; version 1.0.1 now runs');

    // What the model was sent: the directive's file and the failed run, not the good one nor another directive's.
    expect(llm.requests.length - before).toBe(1);
    const sent = llm.requests.at(-1)?.body as { model: string; messages: { role: string; content: string }[] };
    expect(sent.model).toBe('gpt-4o-mini');
    expect(sent.messages[0]?.content).toMatch(/Keep name="fixer"\. Set version higher than 1\.0\.0: 1\.0\.1\.[\s\S]*Never add a permission/);
    const prompt = sent.messages[1]?.content ?? '';
    expect(prompt).toContain('<directive name="fixer" version="1.0.0">');
    expect(prompt).toContain(`thread ${failed}, failure: tool_error`);
    expect(prompt).toContain('✗ error: read_file: TOOL_FAILED: no such file README');
    expect(prompt).not.toContain('SUCCESSFUL RUN');
    expect(prompt).not.toContain('OTHER DIRECTIVE');
    expect(fine).toBeDefined();

    expect(directiveFiles()).toEqual(['fixer.md', 'fixer.v1.0.1.md']);
    expect(readFileSync(path.join(temp.root, '.ai', 'directives', 'fixer.md'), 'utf8')).toBe(OLD);
    const written = readFileSync(path.join(temp.root, '.ai', 'directives', 'fixer.v1.0.1.md'), 'utf8');
    expect(written).toMatch(/^<!-- kiwi-mcp:validated:\S+:[0-9a-f]{64} -->\n# fixer/);
    expect(written.slice(written.indexOf('\n') + 1)).toBe(improved);
    expect(verifySignature('directive', written).status).toBe('valid');

    const registry = await loadRegistry({ projectDir: temp.root, userDir });
    expect(registry.errors).toEqual([]);
    expect(registry.directives.get('fixer')?.version).toBe('1.0.1');
    expect(registry.olderDirectives?.get('fixer')?.map((d) => d.version)).toEqual(['1.0.0']);

    const listed = await kiwi('directives', 'list');
    expect(listed.out.split('\n')).toEqual([
      'fixer  1.0.1  runs   signed    .ai/directives/fixer.v1.0.1.md  — Fix the typo in the README',
      '       1.0.0  older  unsigned  .ai/directives/fixer.md',
    ]);

    // The failure was 1.0.0's: the version that runs now has none to learn from yet.
    const again = await kiwi('directives', 'anneal', 'fixer');
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/no failed thread of directive fixer \(version 1\.0\.1\)/);
    expect(llm.requests.length - before).toBe(1);
  });

  it('MCP load reads the version that runs, and an older one by its version', async () => {
    temp.write('.ai/directives/fixer.v1.0.1.md', fixer('1.0.1', [TOOL], { step: 'Read README.md' }));
    const project = await openProject({ projectDir: temp.root, userDir, env: { PATH: process.env['PATH'] }, session: 'anneal-load', source: 'mcp' });
    const resolver = await openHashResolver(project);
    const server = createMetaServer({ project, resolver: resolver.resolver });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'anneal-test', version: '1.0.0' });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const load = async (args: Record<string, unknown>) => (await client.callTool({ name: 'load', arguments: { item_type: 'directive', item_id: 'fixer', ...args } })) as CallToolResult;
      const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');
      expect(text(await load({}))).toMatch(/^directive fixer 1\.0\.1 \(project tier; older versions beside it: 1\.0\.0 \(load one with version\)\)/);
      const old = await load({ version: '1.0.0' });
      expect(text(old)).toMatch(/^directive fixer 1\.0\.0 \(project tier; an older version: 1\.0\.1 is the one that runs\)/);
      expect(text(old)).toContain('Read the README and fix the typo');
      const missing = await load({ version: '0.5.0' });
      expect(missing.isError).toBe(true);
      expect(text(missing)).toMatch(/has no version 0\.5\.0; its versions are 1\.0\.1 \(the one that runs\), 1\.0\.0/);
    } finally {
      await client.close();
      await server.close();
      await resolver.close();
      await project.close();
    }
  });

  describe('refuses, writing nothing,', () => {
    beforeEach(async () => {
      await thread('fixer', '1.0.0', [{ type: 'result', call_id: 'c', tool: 'read_file', status: 'denied', text: 'denied' }, ended({ failure: 'denied' })]);
    });

    const refused = async (file: string, pattern: RegExp): Promise<void> => {
      llm.replyOnce(answer(file));
      const run = await kiwi('directives', 'anneal', 'fixer');
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^kiwi directives: INVALID_DIRECTIVE: the model's answer was not written: /);
      expect(run.err).toMatch(pattern);
      expect(run.err).toMatch(/fixer\.md is unchanged$/);
      expect(directiveFiles()).toEqual(['fixer.md']);
      expect(readFileSync(path.join(temp.root, '.ai', 'directives', 'fixer.md'), 'utf8')).toBe(OLD);
    };

    it('an answer that widens the permissions', async () => {
      await refused(fixer('1.0.1', [READ, TOOL, '<write resource="filesystem" path="**"/>']), /it adds permissions <write resource="filesystem" path="\*\*"\/>; annealing may keep or drop permissions, never add one/);
    });

    it('an answer that raises or drops a limit', async () => {
      await refused(fixer('1.0.1', [READ, TOOL], { limits: 'turns="50"' }), /it raises the limit turns from 5 to 50/);
      await refused(fixer('1.0.1', [READ, TOOL], { limits: 'spawns="1"' }), /it drops the limit turns="5"/);
    });

    it('an answer with the same or a lower version, or another name', async () => {
      await refused(fixer('1.0.0', [READ, TOOL]), /its version 1\.0\.0 is not higher than 1\.0\.0/);
      await refused(fixer('0.9', [READ, TOOL]), /its version 0\.9 is not higher than 1\.0\.0/);
      await refused(fixer('1.0.1', [READ, TOOL], { name: 'fixer2' }), /its name is "fixer2", not "fixer"/);
    });

    it('an answer the parser cannot read, or without the file markers', async () => {
      await refused(fixer('1.0.1', [READ, TOOL]).replace('</metadata>', ''), /the registry's parser refuses it: the model's file:.*not well-formed XML/);
      llm.replyOnce(openAiStream([fixer('1.0.1', [READ, TOOL])]));
      const bare = await kiwi('directives', 'anneal', 'fixer');
      expect(bare.code).toBe(1);
      expect(bare.err).toMatch(/it has no file between a line "<<<DIRECTIVE FILE" and a line "DIRECTIVE FILE>>>"/);
      expect(directiveFiles()).toEqual(['fixer.md']);
    });
  });

  it('refuses a directive with no failed thread, or a named thread that did not fail, before asking the model', async () => {
    const fine = await thread('fixer', '1.0.0', [{ type: 'result', call_id: 'c', tool: 'read_file', status: 'ok', text: 'ok' }, ended()]);
    const before = llm.requests.length;
    const none = await kiwi('directives', 'anneal', 'fixer');
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/no failed thread of directive fixer \(version 1\.0\.0\) in \.ai\/threads\/, so there is nothing to learn from/);
    const named = await kiwi('directives', 'anneal', 'fixer', '--thread', fine);
    expect(named.err).toMatch(new RegExp(`thread ${fine} did not fail`));
    const other = await thread('other', '1.0.0', [ended({ status: 'failed', error: 'x' })]);
    expect((await kiwi('directives', 'anneal', 'fixer', '--thread', other)).err).toMatch(/ran directive other, not fixer/);
    expect(llm.requests.length).toBe(before);
    expect(directiveFiles()).toEqual(['fixer.md']);
  });
});

describe('versions of a directive in one tier', () => {
  it('two files with the same version are a conflict, and neither loads', async () => {
    temp.write('.ai/directives/fixer-copy.md', OLD);
    const registry = await loadRegistry({ projectDir: temp.root, userDir });
    expect(registry.directives.has('fixer')).toBe(false);
    expect(registry.errors.map((e) => e.message)).toEqual([expect.stringMatching(/with the same version, or a version that is not numbers; versions of one directive in the project tier must be distinct numbers/), expect.any(String)]);
  });

  it('names the new file after the version, replacing a version already in the name', () => {
    expect(besideFile('/p/.ai/directives/fixer.md', '1.0.1')).toBe('/p/.ai/directives/fixer.v1.0.1.md');
    expect(besideFile('/p/.ai/directives/fixer.v1.0.1.md', '1.0.2')).toBe('/p/.ai/directives/fixer.v1.0.2.md');
    expect(nextVersion('1.0.0')).toBe('1.0.1');
    expect(nextVersion('2')).toBe('3');
    expect(extractDirectiveFile('no markers')).toBeUndefined();
    expect(extractDirectiveFile('<<<DIRECTIVE FILE\nx\nDIRECTIVE FILE>>>')).toBe('x\n');
    expect(existsSync(temp.root)).toBe(true);
  });
});
