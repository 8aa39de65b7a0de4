import { cpSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAuditRecord, readAuditTail } from '../../src/audit/audit-reader.js';
import { runCli } from '../../src/app/run-cli.js';
import { parseHelpIntent } from '../../src/intent/help-intent.js';
import { createMetaServer } from '../../src/mcp-server/meta-server.js';
import { openProject, type Project } from '../../src/project/open-project.js';
import { MAX_HELP_MESSAGE_CHARS } from '../../src/proxy/help-signal.js';
import { openHashResolver } from '../fixtures/mcp-meta/meta-project.js';
import { createGitRepo, type GitRepo } from '../helpers/git-repo.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/**
 * `help` as a signal, on the tool proxy of a real project in a git repository: audited as tool
 * `help`, seen by the policy's hooks (a real webhook receiver on 127.0.0.1), a checkpoint signal
 * taking a git checkpoint; and the MCP `help` meta-tool sending one.
 */

let repo: GitRepo;
let project: Project;
let receiver: Server;
const received: Record<string, any>[] = [];
let client: Client;
let closeMcp: () => Promise<void>;

const policy = (port: number): string => `version: 1
tools: []
hooks:
  - when: event.name == "help" and event.action == "escalate"
    webhook: "http://127.0.0.1:${port}/help"
    fallthrough: true
  - when: event.name == "help" and event.action == "stuck"
    directive: { name: unstick, inputs: { why: "\${event.message}" } }
  - when: event.name == "help"
    annotate: an agent signalled
rate_limits:
  per_client: { max: 20, per_ms: 60000 }
`;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body) as Record<string, any>);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as { port: number }).port;
  repo = createGitRepo({ 'README.md': 'hello\n', '.gitignore': '.ai/logs/\n', '.ai/config/policy.yaml': policy(port) });
  cpSync(path.join(REPO_ROOT, '.ai', 'tools', 'primitives'), path.join(repo.root, '.ai', 'tools', 'primitives'), { recursive: true });
  project = await openProject({ projectDir: repo.root, env: repo.env, session: 'help-test' });
  const resolver = await openHashResolver(project);
  const server = createMetaServer({ project, resolver: resolver.resolver, session: 'help-mcp' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  client = new Client({ name: 'help-test', version: '1.0.0' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  closeMcp = async () => {
    await client.close();
    await server.close();
    await resolver.close();
  };
});

afterAll(async () => {
  await closeMcp?.();
  await project?.close();
  receiver?.close();
  repo?.remove();
});

async function records(session: string) {
  await project.audit.flush();
  // One file per project session; the records name the session each belongs to.
  return (await readAuditTail({ dir: project.auditDir, limit: 100 })).filter((r) => r.session === session);
}

const caller = { caller: { session: 'help-test', client: 'tester', source: 'thread' as const } };


describe('a help signal on the tool proxy', () => {
  it('is audited as tool help with its action and message, and fires the hooks: an escalation sends the webhook the event', async () => {
    const outcome = await project.proxy.help(caller, { action: 'escalate', message: 'a person must choose the database' });
    expect(outcome.notes).toEqual(['an agent signalled', expect.stringMatching(/^webhook sent to 127\.0\.0\.1:\d+ \(hook at .ai\/config\/policy.yaml:\d+\)$/)]);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ event: { name: 'help', code: 'escalate', action: 'escalate', message: 'a person must choose the database' }, tool: { id: 'help' }, client: { name: 'tester', source: 'thread', session: 'help-test' } });

    const record = (await records('help-test')).find((r) => r.call_id === outcome.callId);
    expect(record).toMatchObject({ tool: 'help', help: 'escalate', decision: 'allow', source: 'thread', client: 'tester', args: { action: 'escalate', message: 'a person must choose the database' } });
    expect(record?.notes).toEqual(outcome.notes);
    const line = formatAuditRecord(record!);
    expect(line).toMatch(/ {2}help-test {2}tester {2}HELP  {2}escalate: {2}a person must choose the database {2}\[thread\] {2}· an agent signalled {2}· webhook sent to/);
  });

  it("a stuck signal comes back with the directive a hook asks for, its inputs filled from the event's message", async () => {
    const outcome = await project.proxy.help(caller, { action: 'stuck', message: 'no config file' });
    expect(outcome.directives).toEqual([{ name: 'unstick', inputs: { why: 'no config file' } }]);
    expect(outcome.notes).toContain('a hook asks to run directive unstick with {"why":"no config file"}');
  });

  it('a checkpoint signal takes a git checkpoint and files it in the audit record', async () => {
    repo.write('work.txt', 'half done\n');
    const outcome = await project.proxy.help(caller, { action: 'checkpoint', message: 'the first half is written' });
    expect(outcome.checkpoint).toMatch(/^[0-9a-f]{40}$/);
    expect(repo.git('log', '--format=%H', 'refs/kiwi/checkpoints/main').trim().split('\n')[0]).toBe(outcome.checkpoint);
    expect(repo.git('show', `${outcome.checkpoint}:work.txt`)).toBe('half done\n');
    const record = (await records('help-test')).find((r) => r.call_id === outcome.callId);
    expect(record).toMatchObject({ help: 'checkpoint', checkpoint: outcome.checkpoint });
  });

  it('`kiwi audit tail` prints signals as HELP lines', async () => {
    const out: string[] = [];
    expect(await runCli(['audit', 'tail', '--session', 'help-test', '--project', repo.root], { env: repo.env, cwd: repo.root, io: { out: (l) => out.push(l), err: () => undefined } })).toBe(0);
    expect(out.filter((l) => l.includes('  HELP  '))).toHaveLength(3);
  });
});

describe('the help meta-tool', () => {
  const call = async (args: Record<string, unknown>) => (await client.callTool({ name: 'help', arguments: args })) as CallToolResult;
  const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

  it('with an action, signals: audited under the MCP session, hooks fired, the agent told what to do', async () => {
    const before = received.length;
    const r = await call({ action: 'escalate', message: 'the migration drops a table' });
    expect(r.isError).not.toBe(true);
    expect(text(r)).toMatch(/recorded in the audit log for a person to decide\. Stop here/);
    expect(r.structuredContent).toMatchObject({ action: 'escalate', message: 'the migration drops a table', call_id: expect.any(String) });
    expect(received.slice(before)).toEqual([expect.objectContaining({ event: expect.objectContaining({ name: 'help', action: 'escalate' }), client: expect.objectContaining({ source: 'mcp', session: 'help-mcp' }) })]);
    expect((await records('help-mcp')).map((x) => [x.tool, x.help, x.source])).toEqual([['help', 'escalate', 'mcp']]);

    const stuck = await call({ action: 'stuck', message: 'x'.repeat(MAX_HELP_MESSAGE_CHARS + 50) });
    expect(text(stuck)).toMatch(/Try another way, or finish now/);
    expect(text(stuck)).toMatch(/A hook of the policy asks you to run the directive unstick/);
    expect((stuck.structuredContent as { message: string }).message).toBe(`${'x'.repeat(MAX_HELP_MESSAGE_CHARS)}… (cut)`);
  });

  it('without an action, is the guidance as before; a message without an action, or an action without a message, is refused', async () => {
    expect(text(await call({}))).toMatch(/^Kiwi Gateway: a few meta-tools/);
    const lonely = await call({ message: 'hello' });
    expect(lonely.isError).toBe(true);
    expect(text(lonely)).toMatch(/message is only read with an action/);
    const silent = await call({ action: 'stuck', message: '  ' });
    expect(text(silent)).toMatch(/action "stuck" needs a message/);
    const both = await call({ topic: 'search', action: 'stuck', message: 'x' });
    expect(text(both)).toMatch(/topic and action do not go together/);
    const unknown = await call({ action: 'panic', message: 'x' });
    expect(text(unknown)).toMatch(/action must be one of stuck, escalate, checkpoint/);
  });
});

describe('a help intent', () => {
  it('is `help ACTION: message` (the colon may be left out); anything else that starts with help is not one', () => {
    expect(parseHelpIntent('help stuck: cannot find the config file')).toEqual({ action: 'stuck', message: 'cannot find the config file' });
    expect(parseHelpIntent('  Help ESCALATE:  a person must decide\nwhich one ')).toEqual({ action: 'escalate', message: 'a person must decide\nwhich one' });
    expect(parseHelpIntent('help checkpoint the README is read')).toEqual({ action: 'checkpoint', message: 'the README is read' });
    expect(parseHelpIntent('help stuck')).toEqual({ action: 'stuck', message: '' });
    expect(parseHelpIntent('help me find the config file')).toBeUndefined();
    expect(parseHelpIntent('help stuckness: x')).toBeUndefined();
    expect(parseHelpIntent('read_file {"path": "help stuck: x"}')).toBeUndefined();
  });
});

describe('help signals and the rate limit', () => {
  it('are counted as calls: past the client\'s limit a signal is refused, its denial audited, and the agent told', async () => {
    const spammer = { caller: { session: 'help-spam', client: 'spammer', source: 'thread' as const } };
    for (let i = 0; i < 20; i++) expect((await project.proxy.help(spammer, { action: 'stuck', message: `try ${i}` })).refused).toBeUndefined();
    const refused = await project.proxy.help(spammer, { action: 'checkpoint', message: 'one too many' });
    expect(refused.refused).toMatch(/spammer/);
    expect(refused.checkpoint).toBeUndefined();
    await project.audit.flush();
    const last = (await readAuditTail({ dir: project.auditDir, limit: 200 })).filter((r) => r.session === 'help-spam').at(-1);
    expect(last).toMatchObject({ tool: 'help', help: 'checkpoint', decision: 'deny', reason: refused.refused });
  });
});
