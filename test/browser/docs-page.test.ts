import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserSuite, launchBrowser, watchedPage, type Browser, type WatchedPage } from './chromium';

/**
 * The API reference in a real browser (Debian's chromium driven by playwright-core): Swagger UI
 * renders every operation of the served OpenAPI document under the page's strict CSP, with no
 * violation, no console error and no request to another origin.
 */

jest.setTimeout(90_000);

const suite = browserSuite('test/browser/docs-page.test.ts');

suite('the API reference in a browser', () => {
  let app: TestApp;
  let browser: Browser | undefined;
  let watched: WatchedPage;
  let page: Page;

  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchBrowser('cp-docs-chromium-');
    watched = await watchedPage(browser.context, app.http.baseUrl);
    page = watched.page;
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders the operations of /v1/openapi.json, POST /v1/llm/invoke among them', async () => {
    await page.goto(`${app.http.baseUrl}/docs`);
    const invoke = page.locator('.opblock-post .opblock-summary-path[data-path="/v1/llm/invoke"]');
    await invoke.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await page.title()).toBe('API reference · control plane');
    expect(await page.locator('.opblock').count()).toBeGreaterThan(50);
  });

  it('opens an operation to its parameters, request body and responses', async () => {
    await page.locator('.opblock-post .opblock-summary-path[data-path="/v1/llm/invoke"]').click();
    const body = page.locator(
      '#operations-invocations-post_v1_llm_invoke .opblock-body, .opblock.is-open .opblock-body',
    );
    await body.first().waitFor({ state: 'visible', timeout: 15_000 });
    await page.locator('.opblock.is-open .responses-table').first().waitFor({ state: 'visible' });
  });

  it('reported no CSP violation, no console error and asked no other origin for anything', async () => {
    expect(await watched.violations()).toEqual([]);
    expect(watched.problems).toEqual([]);
    expect(watched.elsewhere).toEqual([]);
  });
});
