import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { addShipRelease, chatThatWaits } from '../helpers/waiting-chat.js';

/**
 * The console in a real headless chromium, on the whole gateway as `kiwi serve` wires it (a copy
 * of the demo `.ai/` with keys; the upstream is a local server replaying recorded streams). A
 * screenshot of each page goes to artifacts/console-screenshots/ of the run.
 */

const SHOTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'artifacts', 'console-screenshots');

let served: DemoGateway;
let url: string;
let browser: Browser;
const keys = { admin: '', approver: '', alice: '', bob: '' };

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  served = await serveDemoGateway({
    prefix: 'kiwi-console-',
    async prepare(root) {
      addShipRelease(root);
      const file = path.join(root, KEY_FILE);
      keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
      keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
      keys.alice = (await createKey(file, 'alice')).key;
      keys.bob = (await createKey(file, 'bob')).key;
    },
  });
  url = served.server.url;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
});

async function loggedIn(key: string, viewport = { width: 1280, height: 860 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await page.goto(`${url}/ui/login`);
  await page.fill('input[name=key]', key);
  await Promise.all([page.waitForNavigation(), page.click('form.login button')]);
  return { context, page };
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

// Each test drives a browser through many pages: on a loaded machine one took past vitest's 20 s.
describe.skipIf(!chromiumAvailable())('the console in a browser', { timeout: 60_000 }, () => {
  it('an admin logs in, sees a waiting call appear live, grants it, reads its timeline, and revokes the client', async () => {
    const { context, page } = await loggedIn(keys.admin);
    expect(page.url()).toBe(`${url}/ui`);
    expect(await page.locator('h1').textContent()).toBe('Overview');
    await shot(page, 'overview');

    await page.goto(`${url}/ui/executions`);
    const chat = await chatThatWaits(url, served.llm, 'v9.9', keys.alice);
    // No reload: the live stream says it changed, and the page fetched its list again.
    const row = page.locator('tr', { has: page.locator(`a[href="/ui/executions/${chat.executionId}"]`) });
    // It may show running first: the block is written a moment after the chat shows its id.
    await expect.poll(async () => (await row.count()) === 0 ? '' : row.textContent(), { timeout: 10_000 }).toMatch(/blocked.*alice/);
    await shot(page, 'executions');

    await page.goto(`${url}/ui/approvals`);
    const card = page.locator(`li.approval[data-step="${chat.stepId}"]`);
    expect(await card.textContent()).toMatch(/ship_release for alice[\s\S]*"version": "v9\.9"/);
    await shot(page, 'approvals');
    await card.locator('button.grant').click();
    await expect.poll(() => page.locator('.notice.ok').textContent()).toMatch(/Granted ship_release/);
    expect(await chat.rest).toMatch(/shipped v9\.9[\s\S]*Done\./);

    await page.goto(`${url}/ui/executions/${chat.executionId}`);
    await expect.poll(async () => page.locator('.status').first().textContent(), { timeout: 10_000 }).toBe('completed');
    const timeline = (await page.locator('ol.timeline').textContent()) ?? '';
    for (const step of ['execution.created', 'intent.accepted', 'step.approval_required', 'signal.received', 'step.completed', 'turn.started', 'execution.completed']) expect(timeline).toContain(step);
    expect(timeline).toMatch(/upstream turn 2, with the results so far/);
    expect(timeline).toMatch(/granted by ops/);
    // The resolution's candidates, and the proxy's stages from the call's audit record.
    expect(timeline).toMatch(/candidates ship_release \d\.\d{3}/);
    await expect.poll(async () => page.locator('ul.stages').first().textContent(), { timeout: 10_000 }).toMatch(/policy: allow[\s\S]*approval: granted by ops/);
    expect(timeline).toMatch(/shipped v9\.9/);
    await shot(page, 'execution-timeline');

    await page.goto(`${url}/ui/keys`);
    await shot(page, 'keys');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('tr', { hasText: 'alice' }).locator('button.deny').click();
    await expect.poll(() => page.locator('.notice.ok').textContent()).toMatch(/Revoked key_\w+ of alice/);
    const refused = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${keys.alice}` } });
    expect(refused.status).toBe(401);

    // The playground: candidates with scores for an intent, and nothing runs.
    await page.goto(`${url}/ui/tools`);
    await page.fill('form.playground input[name=intent]', 'read_file {"path": "package.json"}');
    await Promise.all([page.waitForNavigation(), page.click('form.playground button')]);
    const step = page.locator('article.step').first();
    expect(await step.locator('h2').textContent()).toMatch(/would run|asked back/);
    const candidates = await step.locator('table.candidates tbody tr').allTextContents();
    expect(candidates[0]).toMatch(/^read_file\s*\d\.\d{3}\s*allowed$/);
    expect(await page.locator('.preview .meta').first().textContent()).toMatch(/Nothing was run/);
    await shot(page, 'playground');
    await context.close();
  });

  it('an approver sees the approval queue but not the keys; a client key cannot log in', async () => {
    const { context, page } = await loggedIn(keys.approver);
    expect(await page.locator('h1').textContent()).toBe('Overview');
    const nav = (await page.locator('nav').textContent()) ?? '';
    expect(nav).toContain('Approvals');
    expect(nav).not.toContain('Keys');
    const keysPage = await page.goto(`${url}/ui/keys`);
    expect(keysPage?.status()).toBe(403);
    expect(await page.locator('.notice.error').textContent()).toMatch(/may not open keys/);
    await context.close();

    // On a phone: nothing wider than the screen, the queue readable.
    const phone = await loggedIn(keys.approver, { width: 390, height: 844 });
    const chat = await chatThatWaits(url, served.llm, 'v9.10', keys.bob);
    for (const route of ['/ui', '/ui/executions', '/ui/approvals']) {
      await phone.page.goto(`${url}${route}`);
      expect(await phone.page.evaluate('document.documentElement.scrollWidth'), route).toBeLessThanOrEqual(390);
    }
    expect(await phone.page.locator(`li.approval[data-step="${chat.stepId}"] button.grant`).isVisible()).toBe(true);
    await shot(phone.page, 'approvals-phone');
    await phone.page.locator(`li.approval[data-step="${chat.stepId}"] button.deny`).click();
    await chat.rest;
    await phone.context.close();

    const client = await loggedIn(keys.bob);
    expect(await client.page.locator('.notice.error').textContent()).toMatch(/no console access/);
    expect(client.page.url()).toBe(`${url}/ui/login`);
    expect((await client.context.cookies()).some((c) => c.name === 'kiwi_console')).toBe(false);
    await client.context.close();
  });

  it('holds its doors: no cookie or a forged one goes to the login, a change needs the CSRF token, another site cannot post, output is escaped', async () => {
    const anonymous = await browser.newContext();
    const page = await anonymous.newPage();
    await page.goto(`${url}/ui/approvals`);
    expect(page.url()).toBe(`${url}/ui/login?next=%2Fui%2Fapprovals`);
    await anonymous.addCookies([{ name: 'kiwi_console', value: 'v1.key_00000000.99999999999999.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', url }]);
    await page.goto(`${url}/ui/keys`);
    expect(page.url()).toBe(`${url}/ui/login?next=%2Fui%2Fkeys`);
    // The deep link survives the login (the link `kiwi chat` prints goes to /ui/approvals): the page asked for opens after it.
    await page.goto(`${url}/ui/approvals`);
    await page.fill('input[name=key]', keys.approver);
    await Promise.all([page.waitForNavigation(), page.click('form.login button')]);
    expect(page.url()).toBe(`${url}/ui/approvals`);
    const headers = (await page.goto(`${url}/ui/login`))?.headers() ?? {};
    expect(headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(headers['x-frame-options']).toBe('DENY');
    await anonymous.close();

    const { context, page: admin } = await loggedIn(keys.admin);
    const cookie = (await context.cookies()).find((c) => c.name === 'kiwi_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/ui' });
    // A change without the session's token, from the logged-in browser itself.
    const noToken = await admin.evaluate(async () => (await fetch('/ui/keys', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'client=mallory&role=admin' })).status);
    expect(noToken).toBe(403);

    // A page on another origin posts a form to the console: the browser sends it with that Origin.
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<form id="f" method="post" action="${url}/ui/keys"><input name="client" value="mallory"><input name="role" value="admin"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const evilPage = await context.newPage();
      const posted = evilPage.waitForResponse((r) => r.url() === `${url}/ui/keys` && r.request().method() === 'POST');
      await evilPage.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/`);
      expect((await posted).status()).toBe(403);
    } finally {
      evil.close();
    }
    const listed = (await (await fetch(`${url}/admin/v1/keys`, { headers: { authorization: `Bearer ${keys.admin}` } })).json()) as { keys: { client: string }[] };
    expect(listed.keys.some((k) => k.client === 'mallory')).toBe(false);

    // Arguments that are markup are shown as text, and run nothing.
    let alerted = false;
    admin.on('dialog', (dialog) => {
      alerted = true;
      void dialog.dismiss();
    });
    const chat = await chatThatWaits(url, served.llm, '<img src=x onerror=alert(1)><script>alert(2)</script>', keys.bob);
    await admin.goto(`${url}/ui/approvals`);
    const card = admin.locator(`li.approval[data-step="${chat.stepId}"]`);
    expect(await card.textContent()).toContain('<img src=x onerror=alert(1)><script>alert(2)</script>');
    expect(await card.locator('img, script').count()).toBe(0);
    expect(alerted).toBe(false);
    await card.locator('input[name=reason]').fill('no markup releases');
    await card.locator('button.deny').click();
    await chat.rest;
    await context.close();
  });
});
