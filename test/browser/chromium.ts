/// <reference lib="dom" />
// watchedPage's init script and evaluate run in the browser: their `document` and `window` are the page's.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's chromium driven by playwright-core (no browser download). A test file without a
 * browser is skipped with a loud message on a developer's machine, and fails in CI.
 */
const CANDIDATES = [process.env.CP_CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
export const browserPath = CANDIDATES.find((p): p is string => Boolean(p && existsSync(p)));

/** `describe`, or `describe.skip` (with the message) when no browser can be found outside CI. */
export function browserSuite(testFile: string): jest.Describe {
  if (browserPath || process.env.CI) return describe;
  console.warn(
    [
      '',
      '#'.repeat(78),
      `#  SKIPPED: ${testFile} found no Chromium.`,
      '#  Install it (apt-get install -y chromium) or set CP_CHROMIUM_PATH.',
      '#  In CI (CI set) a missing browser fails this test instead.',
      '#'.repeat(78),
      '',
    ].join('\n'),
  );
  return describe.skip;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A headless browser with its own throw-away profile. */
export async function launchBrowser(profilePrefix: string): Promise<Browser> {
  if (!browserPath) throw new Error('no Chromium at /usr/bin/chromium (CI=true: the browser test must run)');
  const profile = mkdtempSync(join(tmpdir(), profilePrefix));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: browserPath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A page of `context` and what it did wrong: errors, CSP violations and requests to other origins. */
export interface WatchedPage {
  page: Page;
  /** Page errors, console errors and failed requests. */
  problems: string[];
  /** Requests to anywhere but `origin` (data: URLs aside). */
  elsewhere: string[];
  /** The CSP violations the page reported, as `<directive> <blocked URI>`. */
  violations(): Promise<string[]>;
}

/**
 * Opens the context's page with watchers attached before anything loads. The violation recorder
 * is an init script: it runs before the page's own scripts and outside its CSP.
 */
export async function watchedPage(context: BrowserContext, origin: string): Promise<WatchedPage> {
  await context.addInitScript(() => {
    const w = window as unknown as { violations: string[] };
    w.violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      w.violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || /Refused to/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(`${origin}/`) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  const violations = () => page.evaluate(() => (window as unknown as { violations: string[] }).violations);
  return { page, problems, elsewhere, violations };
}
