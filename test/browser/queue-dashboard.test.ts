import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserSuite, launchBrowser, watchedPage, type Browser, type WatchedPage } from './chromium';

/**
 * The operator's queue dashboard (bull-board) in a real browser: it renders every queue under its
 * CSP, with no violation and no console error, and asks no other origin for anything (bull-board
 * links Google's fonts; the dashboard takes that link out).
 */

jest.setTimeout(90_000);

const suite = browserSuite('test/browser/queue-dashboard.test.ts');
const TOKEN = randomBytes(24).toString('hex');

suite('the queue dashboard in a browser', () => {
  let app: TestApp;
  let browser: Browser | undefined;
  let watched: WatchedPage;

  beforeAll(async () => {
    app = await startTestApp({ env: { CP_QUEUE_DASHBOARD_TOKEN: TOKEN } });
    browser = await launchBrowser('cp-queues-chromium-');
    await browser.context.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
    watched = await watchedPage(browser.context, app.http.baseUrl);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders every queue', async () => {
    const { page } = watched;
    await page.goto(`${app.http.baseUrl}/admin/queues/`);
    for (const queue of ['guardian', 'invoke', 'approvals', 'webhooks', 'maintenance'])
      await page.getByText(queue, { exact: true }).first().waitFor({ state: 'visible', timeout: 30_000 });
    expect(await page.title()).toBe('control plane queues');
  });

  it('reported no CSP violation, no console error and asked no other origin for anything', async () => {
    expect(await watched.violations()).toEqual([]);
    expect(watched.problems).toEqual([]);
    expect(watched.elsewhere).toEqual([]);
  });
});
