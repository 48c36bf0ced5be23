import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

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
