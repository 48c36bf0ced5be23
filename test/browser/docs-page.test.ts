/// <reference lib="dom" />
// page.evaluate callbacks run in the browser: their `document` and `window` are the page's.
import type { BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserSuite, launchBrowser, type Browser } from './chromium';

/**
 * The API reference in a real browser (Debian's chromium driven by playwright-core): Swagger UI
 * renders every operation of the served OpenAPI document under the page's strict CSP, with no
 * violation, no console error and no request to another origin.
 */

jest.setTimeout(90_000);

const suite = browserSuite('test/browser/docs-page.test.ts');

interface Window {
  violations: string[];
}

suite('the API reference in a browser', () => {
  let app: TestApp;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const elsewhere: string[] = [];

  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchBrowser('cp-docs-chromium-');
    context = browser.context;
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
    const violations = await page.evaluate(() => (window as unknown as Window).violations);
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
