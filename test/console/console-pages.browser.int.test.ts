import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { fileThreadStore } from '../../src/threads/file-thread-store.js';
import type { ThreadHeader, ThreadStore, ThreadWriter } from '../../src/threads/thread-store.js';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';

/**
 * The console's audit, threads and usage pages in a real headless chromium, on the whole gateway
 * as `kiwi serve` wires it (a copy of the demo `.ai/` with keys, prices and budgets). Two clients
 * call tools through /mcp (one call denied) and one chats, so the audit log and the ledger hold
 * both; a third client's older records are written to yesterday's audit files, more than a page
 * of them; threads are written into the gateway's thread store, one of them held open (running)
 * by this process, which writes lines to it while its page is open. A screenshot of each page
 * goes to artifacts/console-screenshots/ of the run.
 */

const SHOTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'artifacts', 'console-screenshots');

let served: DemoGateway;
let url: string;
let browser: Browser;
let threads: ThreadStore;
let running: ThreadWriter | undefined;
const keys = { admin: '', approver: '', alpha: '', beta: '' };
const ended = randomUUID();
const held = randomUUID();
/** More than the audit page's 50 records, so that it pages. */
const GAMMA_RECORDS = 55;

const BUDGETS = [
  'prices:',
  '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }',
  'budgets:',
  '  default: { spend_usd: 1, window: 1d }',
  '  clients:',
  '    beta: { tool_calls: 2, window: 1d }',
].join('\n');

const header = (id: string, client: string): ThreadHeader => ({ type: 'thread', id, directive: 'review_changes', inputs: { focus: 'docs' }, model: 'gpt-4o-mini', client, depth: 0, started_at: new Date().toISOString() });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // The keys are made before the gateway opens: from its first request on, every request needs one.
  served = await serveDemoGateway({
    prefix: 'kiwi-console-pages-',
    config: BUDGETS,
    async prepare(root) {
      const file = path.join(root, KEY_FILE);
      keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
      keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
      keys.alpha = (await createKey(file, 'alpha')).key;
      keys.beta = (await createKey(file, 'beta')).key;
    },
  });
  url = served.server.url;

  await callTools(keys.alpha, [['word_count', { path: 'README.md' }]]);
  // http_client is not in the demo policy's tools: a denial.
  await callTools(keys.beta, [['word_count', { path: 'README.md' }], ['http_client', { url: 'http://127.0.0.1:9/', method: 'GET' }]]);
  served.llm.replyOnce(openAiStream(['Hello from the replayed model.']));
  await new OpenAI({ baseURL: `${url}/v1`, apiKey: keys.alpha, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  await seedYesterday('gamma', GAMMA_RECORDS);

  threads = fileThreadStore(served.root);
  const done = await threads.create(header(ended, 'alpha'));
  await done.append({ type: 'turn', turn: 1, text: 'Reading the diff. <script>alert(1)</script>' });
  await done.append({ type: 'call', call_id: 'c1', tool: 'git_diff', arguments: { ref: 'HEAD' } });
  await done.append({ type: 'result', call_id: 'c1', tool: 'git_diff', status: 'ok', text: 'src/app.ts | 3 ++-' });
  await done.append({ type: 'result', call_id: 'c2', tool: 'word_count', status: 'denied', text: 'denied by directive review_changes' });
  await done.append({ type: 'end', status: 'completed', result: 'Nothing to review.', steps_taken: 2, ended_at: new Date().toISOString() });
  await done.close();
  // Held by this process, alive: the gateway sees it running until the test closes it.
  running = await threads.create(header(held, 'beta'));
  await running.append({ type: 'turn', turn: 1, text: 'Looking at the docs.' });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await running?.close();
  await browser?.close();
  await served?.close();
});

/** Calls each tool in one MCP session of the key's client; the audit record is written before the result comes back. */
async function callTools(key: string, calls: [tool: string, parameters: Record<string, unknown>][]): Promise<void> {
  const client = new Client({ name: 'console-pages', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  try {
    for (const [tool, parameters] of calls) await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: tool, parameters } });
  } finally {
    await client.close();
  }
}

/** `count` records of `client` in yesterday's audit files, older than anything of today's. */
async function seedYesterday(client: string, count: number): Promise<void> {
  const yesterday = new Date(Date.now() - 86_400_000);
  const log = createAuditLog({ dir: path.join(served.root, '.ai', 'logs', 'audit'), sessionId: 'seeded-gamma', now: () => yesterday });
  for (let i = 0; i < count; i++) {
    void log.append({ ts: new Date(yesterday.getTime() + i * 1000).toISOString(), session: 'seeded-gamma', client, call_id: `seeded-${i}`, tool: 'word_count', args: { path: `notes/${i}.md` }, decision: 'allow', result: `${i} words`, duration_ms: 3 });
  }
  await log.close();
}

/** A logged-in page, and what the Content-Security-Policy refused on it (inline script or style would be). */
async function loggedIn(key: string): Promise<{ context: BrowserContext; page: Page; refusedByCsp: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const refusedByCsp: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) refusedByCsp.push(message.text());
  });
  await page.goto(`${url}/ui/login`);
  await page.fill('input[name=key]', key);
  await Promise.all([page.waitForNavigation(), page.click('form.login button')]);
  return { context, page, refusedByCsp };
}

/** `fullPage` false: the window alone, for a page whose whole length says nothing more. */
const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
const column = (page: Page, name: string) => page.locator(`table.audit tbody td.${name}`).allTextContents();

// Each test drives a browser through many pages: on a loaded machine one took past vitest's 20 s.
describe.skipIf(!chromiumAvailable())('the audit, threads and usage pages in a browser', { timeout: 60_000 }, () => {
  it('the audit log lists both clients newest first, filters by client and decision, pages, and shows what the API says of a bad filter', async () => {
    const { context, page, refusedByCsp } = await loggedIn(keys.admin);
    await page.goto(`${url}/ui/audit`);
    expect(await page.locator('nav a[aria-current=page]').textContent()).toBe('Audit');
    const clients = await column(page, 'client');
    // Today's calls first, then yesterday's seeded ones: 50 of them in all on the first page.
    expect(clients).toHaveLength(50);
    expect(clients.slice(0, 3).sort()).toEqual(['alpha', 'beta', 'beta']);
    const times = await page.locator('table.audit tbody time').evaluateAll((els) => els.map((e) => Date.parse(e.getAttribute('datetime') ?? '')));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const denied = page.locator('table.audit tbody tr', { has: page.locator('.status.deny') });
    expect(await denied.textContent()).toMatch(/beta.*http_client.*deny.*denied: /);
    await shot(page, 'audit', false);

    await page.fill('input[name=client]', 'alpha');
    await Promise.all([page.waitForNavigation(), page.click('form.filters button')]);
    expect(new URL(page.url()).searchParams.get('client')).toBe('alpha');
    expect(await column(page, 'client')).toEqual(['alpha']);
    expect(await column(page, 'tool')).toEqual(['word_count']);

    await page.goto(`${url}/ui/audit?decision=deny`);
    expect(await column(page, 'tool')).toEqual(['http_client']);

    // More than a page of one client: "Older →" goes on from the cursor, with the filter kept.
    await page.goto(`${url}/ui/audit?client=gamma`);
    expect(await column(page, 'client')).toHaveLength(50);
    await Promise.all([page.waitForNavigation(), page.click('.pager a:text("Older →")')]);
    expect(new URL(page.url()).searchParams.get('client')).toBe('gamma');
    expect(await page.locator('table.audit tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-call')))).toEqual(['seeded-4', 'seeded-3', 'seeded-2', 'seeded-1', 'seeded-0']);
    expect(await page.locator('.pager a:text("Older →")').count()).toBe(0);

    // The date-time inputs have no zone: the console reads them as UTC, and the API judges the range.
    await page.goto(`${url}/ui/audit`);
    await page.fill('input[name=since]', '2026-01-02T00:00');
    await page.fill('input[name=until]', '2026-01-01T00:00');
    const [refused] = await Promise.all([page.waitForNavigation(), page.click('form.filters button')]);
    expect(refused?.status()).toBe(400);
    expect(await page.locator('.notice.error').textContent()).toMatch(/^since \(2026-01-02T00:00:00\.000Z\) must be before until \(2026-01-01T00:00:00\.000Z\)/);
    expect(await page.locator('form.filters').count()).toBe(1);
    const typed = await page.goto(`${url}/ui/audit?since=yesterday`);
    expect(typed?.status()).toBe(400);
    expect(await page.locator('.notice.error').textContent()).toMatch(/^since "yesterday" is not a time: use ISO 8601 with a zone/);
    expect(refusedByCsp).toEqual([]);
    await context.close();
  });

  it("the threads list shows the threads and follows a new one; a thread's page shows its transcript, escaped, and each new line of a running thread without a reload", async () => {
    const { context, page, refusedByCsp } = await loggedIn(keys.admin);
    await page.goto(`${url}/ui/threads`);
    expect(await page.locator('tr', { has: page.locator(`a[href="/ui/threads/${ended}"]`) }).textContent()).toMatch(/completed.*review_changes.*alpha/);
    expect(await page.locator('tr', { has: page.locator(`a[href="/ui/threads/${held}"]`) }).textContent()).toMatch(/running.*review_changes.*beta/);
    const another = randomUUID();
    const writer = await threads.create(header(another, 'alpha'));
    await writer.append({ type: 'end', status: 'failed', result: '', steps_taken: 0, error: 'the model was unreachable', ended_at: new Date().toISOString() });
    await writer.close();
    // No reload: the stream watches the threads, and the page fetched its list again.
    await page.locator(`a[href="/ui/threads/${another}"]`).waitFor({ timeout: 10_000 });
    await shot(page, 'threads');

    let alerted = false;
    page.on('dialog', (dialog) => {
      alerted = true;
      void dialog.dismiss();
    });
    await page.goto(`${url}/ui/threads/${ended}`);
    const lines = page.locator('ol.transcript > li');
    expect(await lines.evaluateAll((els) => els.map((e) => e.className))).toEqual(['line start', 'line turn', 'line call', 'line result ok', 'line result failed', 'line end completed']);
    expect(await lines.nth(1).textContent()).toContain('Reading the diff. <script>alert(1)</script>');
    expect(await page.locator('ol.transcript script').count()).toBe(0);
    expect(await lines.nth(2).textContent()).toMatch(/→ call git_diff[\s\S]*"ref": "HEAD"/);
    expect(await lines.nth(3).textContent()).toMatch(/✓ result of git_diff src\/app\.ts \| 3 \+\+-/);
    expect(await lines.nth(4).textContent()).toMatch(/✗ denied: word_count denied by directive/);
    expect(await lines.nth(5).textContent()).toMatch(/Ended.*completed after 2 step\(s\)[\s\S]*Nothing to review\./);
    expect(alerted).toBe(false);

    await page.goto(`${url}/ui/threads/${held}`);
    expect(await page.locator('main .status').first().textContent()).toBe('running');
    // Marks this document: a reload would lose the mark.
    await page.locator('html').evaluate((html) => html.setAttribute('data-mark', 'kept'));
    await running?.append({ type: 'call', call_id: 'c1', tool: 'word_count', arguments: { path: 'docs/README.md' } });
    await running?.append({ type: 'result', call_id: 'c1', tool: 'word_count', status: 'ok', text: '812 words' });
    await page.locator('ol.transcript li.result', { hasText: '812 words' }).waitFor({ timeout: 10_000 });
    await running?.append({ type: 'end', status: 'completed', result: 'The docs read well.', steps_taken: 1, ended_at: new Date().toISOString() });
    await running?.close();
    running = undefined;
    await expect.poll(() => page.locator('main .status').first().textContent(), { timeout: 10_000 }).toBe('completed');
    expect(await page.locator('ol.transcript li.end').textContent()).toContain('The docs read well.');
    expect(await page.locator('html').getAttribute('data-mark')).toBe('kept');
    await shot(page, 'thread');

    const notThread = await page.goto(`${url}/ui/threads/not-a-thread`);
    expect(notThread?.status()).toBe(400);
    expect(await page.locator('.notice.error').textContent()).toMatch(/is not a thread id \(a UUID\)/);
    expect(refusedByCsp).toEqual([]);
    await context.close();
  });

  it("the usage page shows each client's use and its budget as bars, with what is left and whether it was reached, over the window chosen", async () => {
    const { context, page, refusedByCsp } = await loggedIn(keys.admin);
    await page.goto(`${url}/ui/usage`);
    expect(await page.locator('nav a[aria-current=page]').textContent()).toBe('Usage');
    const alpha = page.locator('li.client-usage[data-client=alpha]');
    expect(await alpha.locator('h2').textContent()).toMatch(/alpha\s+within budget/);
    // One turn of 10 input and 5 output tokens at $1000 per million: $0.015 of the default $1 a day.
    expect(await alpha.locator('dl.totals').textContent()).toMatch(/Spend\$0\.015.*Tokens15.*Turns1.*Tool calls1/);
    expect(await alpha.locator('.limit.spend_usd').textContent()).toMatch(/Spend \$0\.015 of \$1\.00 · \$0\.985 left/);
    expect(await alpha.locator('svg.share title').textContent()).toMatch(/^Spend: \$0\.015 used of \$1\.00$/);
    const beta = page.locator('li.client-usage[data-client=beta]');
    expect(await beta.locator('h3').textContent()).toMatch(/^Budget, 1d window budgets\.clients\.beta$/);
    // Its two MCP calls, the denied one too, are its whole budget of tool calls.
    expect(await beta.locator('.limit.tool_calls').textContent()).toMatch(/Tool calls 2 of 2 · 0 left/);
    expect(await beta.locator('h2').textContent()).toMatch(/beta\s+budget reached/);
    expect(await beta.locator('.notice.error').textContent()).toMatch(/^Reached its tool_calls limit: new requests are refused \(429\) until \d{4}-/);
    expect(await beta.locator('svg.share').getAttribute('class')).toBe('chart share reached');
    expect(await page.locator('li.client-usage').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-client')))).toEqual(['alpha', 'beta', 'ops', 'reviewer']);
    await shot(page, 'usage');

    await page.selectOption('select[name=window]', '1h');
    await Promise.all([page.waitForNavigation(), page.click('form.filters button')]);
    expect(await alpha.locator('p.meta').first().textContent()).toMatch(/^Used in the 1h window since/);
    // The ledger keeps a day (the longest budget window): a longer window is the API's 400, said on the page.
    const tooLong = await page.goto(`${url}/ui/usage?window=7d`);
    expect(tooLong?.status()).toBe(400);
    expect(await page.locator('.notice.error').textContent()).toMatch(/^window 7d is longer than the ledger keeps/);
    expect(refusedByCsp).toEqual([]);
    await context.close();
  });

  it('an approver key gets the 403 page on each of them, and no link to them', async () => {
    const { context, page } = await loggedIn(keys.approver);
    const nav = (await page.locator('nav').textContent()) ?? '';
    for (const label of ['Audit', 'Threads', 'Usage']) expect(nav).not.toContain(label);
    for (const [route, area] of [['/ui/audit', 'audit'], ['/ui/threads', 'threads'], [`/ui/threads/${ended}`, 'threads'], ['/ui/usage', 'usage']] as const) {
      const refused = await page.goto(`${url}${route}`);
      expect(refused?.status(), route).toBe(403);
      expect(await page.locator('.notice.error').textContent(), route).toBe(`This key may not open ${area}.`);
    }
    // Nor may its live stream watch a thread.
    expect(await page.evaluate(async (id) => (await fetch(`/ui/events?live=thread:${id}`)).status, ended)).toBe(403);
    await context.close();
  });
});
