/// <reference lib="dom" />
// page.evaluate callbacks run in the browser: their `document` and `window` are the page's.
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserSuite, launchBrowser, type Browser } from './chromium';

/**
 * The operator's queue dashboard (bull-board) in a real browser: it renders every queue under its
 * CSP, with no violation and no console error, and asks no other origin for anything (bull-board
 * links Google's fonts; the dashboard takes that link out).
 */

jest.setTimeout(90_000);

const suite = browserSuite('test/browser/queue-dashboard.test.ts');
const TOKEN = randomBytes(24).toString('hex');

interface Window {
  violations: string[];
}

suite('the queue dashboard in a browser', () => {
  let app: TestApp;
  let browser: Browser | undefined;
  let page: Page;
  const problems: string[] = [];
  const elsewhere: string[] = [];

  beforeAll(async () => {
    app = await startTestApp({ env: { CP_QUEUE_DASHBOARD_TOKEN: TOKEN } });
    browser = await launchBrowser('cp-queues-chromium-');
    const { context } = browser;
    await context.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
    // Runs before the page's own scripts (and outside its CSP): records every violation it reports.
    await context.addInitScript(() => {
      const w = window as unknown as Window;
      w.violations = [];
      document.addEventListener('securitypolicyviolation', (e) =>
        w.violations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' || /Refused to/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(`${app.http.baseUrl}/`) && !r.url().startsWith('data:'))
        elsewhere.push(r.url());
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders every queue', async () => {
    await page.goto(`${app.http.baseUrl}/admin/queues/`);
    for (const queue of ['guardian', 'invoke', 'approvals', 'webhooks', 'maintenance'])
      await page.getByText(queue, { exact: true }).first().waitFor({ state: 'visible', timeout: 30_000 });
    expect(await page.title()).toBe('control plane queues');
  });

  it('reported no CSP violation, no console error and asked no other origin for anything', async () => {
    const violations = await page.evaluate(() => (window as unknown as Window).violations);
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
