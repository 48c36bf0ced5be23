/// <reference lib="dom" />
// page.evaluate callbacks run in the browser: their `document` and `window` are the page's.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { pausedInvoke, type ApprovalBody } from '../support/approval-fixtures';
import { invoke, type InvocationBody } from '../support/invoke-fixtures';
import { eventually } from '../support/eventually';
import { startTestApp, type TestApp } from '../support/test-app';
import { browserSuite, launchBrowser, type Browser } from './chromium';
import {
  GATED_MODEL,
  gatedBody,
  gatedOrg,
  personWithRole,
  type GatedOrg,
  type PageUser,
} from './approvals-page-fixtures';

/**
 * The approver's page in a real browser (Debian's chromium driven by playwright-core): a person
 * signs in, sees new approvals arrive, reads exactly what would run, and approves; prompt text
 * stays text; a viewer cannot vote. `CP_SCREENSHOT=1` also saves docs/approvals-page.png.
 */
const SCREENSHOT = join(__dirname, '../../docs/approvals-page.png');
const TITLE = 'Approvals · control plane';

jest.setTimeout(90_000);

const suite = browserSuite('test/browser/approvals-page.test.ts');

suite("the approver's page in a browser", () => {
  let app: TestApp;
  let org: GatedOrg;
  let approver: PageUser;
  let viewer: PageUser;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    app = await startTestApp({ workers: true });
    org = await gatedOrg(app.http);
    approver = await personWithRole(app.http, org.setup.org.adminKey, 'approver');
    viewer = await personWithRole(app.http, org.setup.org.adminKey, 'viewer');
    browser = await launchBrowser('cp-approvals-chromium-');
    context = browser.context;
    page = context.pages()[0] ?? (await context.newPage());
    // A CSP violation, a script error or a failed request is a defect of the page.
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const rowOf = (id: string) => page.locator(`#queue-rows tr[data-id="${id}"]`);

  async function signIn(user: PageUser): Promise<void> {
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await page.click('#sign-in-button');
    await page.locator('#board').waitFor({ state: 'visible' });
  }

  it('signs in with the dashboard login into an HttpOnly cookie the script cannot read', async () => {
    await page.goto(`${app.http.baseUrl}/approvals`);
    expect(await page.title()).toBe(TITLE);
    await signIn(approver);
    await page.locator('#queue-empty').waitFor({ state: 'visible' });
    expect(await page.textContent('#who-name')).toContain('approver');
    const [cookie] = await context.cookies(`${app.http.baseUrl}/approvals`);
    expect(cookie).toMatchObject({
      name: 'cp_approvals_session',
      path: '/approvals',
      httpOnly: true,
      sameSite: 'Strict',
    });
    expect(await page.evaluate(() => document.cookie)).toBe('');
  });

  it('shows a new approval as it arrives, opens it, and an approval with a comment resumes the waiting invoke', async () => {
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
    // The agent waits on its invoke from before the page shows anything until the person clicks.
    const waiting = invoke(
      app.http,
      org.agentKey,
      gatedBody(org.sessionId, 'Summarise the quarterly numbers for the board.', {
        tool: { name: 'send_email', arguments: { to: 'board@example.test', subject: 'Q3' } },
      }),
      30,
    );
    const row = page.locator('#queue-rows tr[data-id]');
    await row.first().waitFor({ state: 'visible', timeout: 15_000 });
    const id = (await row.first().getAttribute('data-id')) as string;
    expect(id).toMatch(/^apr_/);
    // It arrived by the page's own refresh, not a reload.
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    const cells = await rowOf(id).locator('td').allTextContents();
    expect(cells[0]).toBe(org.setup.agentId);
    expect(cells[1]).toBe('gated-page-model');
    expect(cells[2]).toBe('send_email');
    expect(cells[3]).toMatch(/^\$\d/);
    expect(cells[4]).toBe(org.policyId);
    expect(cells[5]).toMatch(/\d+ s/);
    // An hour away: just under it, or a hair over when the database's clock leads the browser's.
    expect(cells[6]).toMatch(/^(59 min|1 h 0 min)$/);

    await rowOf(id).click();
    const detail = page.locator('#detail');
    await detail.locator('#approve').waitFor({ state: 'visible' });
    const text = (await detail.textContent()) as string;
    for (const expected of [id, 'gated-page-model', 'max_tokens', '64', org.policyId, 'send_email']) {
      expect(text).toContain(expected);
    }
    expect(await detail.locator('.tool-arguments').textContent()).toBe(
      JSON.stringify({ to: 'board@example.test', subject: 'Q3' }, null, 2),
    );
    expect(await detail.locator('.message .role').allTextContents()).toEqual(['user']);
    expect(await detail.locator('.message .content').allTextContents()).toEqual([
      'Summarise the quarterly numbers for the board.',
    ]);
    expect(await detail.locator('.reasons li').count()).toBeGreaterThan(0);
    expect(await detail.locator('.reasons li').first().textContent()).toContain(org.policyId);
    await page.fill('#comment', 'Checked the recipient; fine to send.');
    if (process.env.CP_SCREENSHOT === '1') {
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
    }

    await page.click('#approve');
    await rowOf(id).waitFor({ state: 'detached' });
    expect(await detail.isHidden()).toBe(true);
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject<Partial<InvocationBody>>({ status: 'succeeded', approval_id: id });
    const approval = await app.http.get<ApprovalBody>(`/v1/approvals/${id}`, org.setup.org.adminKey);
    expect(approval.body).toMatchObject({
      status: 'approved',
      votes: [
        {
          by: { type: 'user', id: approver.id },
          decision: 'approve',
          comment: 'Checked the recipient; fine to send.',
        },
      ],
    });
  });

  it('shows a prompt holding <script> as text, and the script does not run', async () => {
    const hostile =
      '<script>document.title=\'pwned\';window.pwned=1</script><img src=x onerror="window.pwned=2"><b>bold?</b>';
    const { approval } = await pausedInvoke(app.http, org.agentKey, gatedBody(org.sessionId, hostile));
    await rowOf(approval.id).waitFor({ state: 'visible', timeout: 15_000 });
    await rowOf(approval.id).click();
    const content = page.locator('#detail .message .content');
    await content.waitFor({ state: 'visible' });
    expect(await content.textContent()).toBe(hostile);
    expect(await page.locator('#detail script, #detail img, #detail b').count()).toBe(0);
    expect(await page.title()).toBe(TITLE);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    // Rejected, so it leaves the queue.
    await page.click('#reject');
    await rowOf(approval.id).waitFor({ state: 'detached' });
    const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, org.setup.org.adminKey);
    expect(after.body.status).toBe('rejected');
  });

  it('shows every Unicode bidi control as a marker, so what an approver reads is what will run', async () => {
    // Shown as the browser applies them, these read "invoicetxt.sh" and "deploy prod" reordered.
    const content = 'Open invoice\u202Ehs.txt for me';
    const toolName = 'run\u2067_script\u2069';
    const args = {
      path: 'invoice\u202Ehs.txt',
      note: 'a\u200Eb\u200Fc\u061Cd\u202Ae\u202Bf\u202Cg\u202Dh\u2066i\u2068j',
      // Invisible format characters: a zero-width space, a word joiner and a tag character.
      hidden: 'x\u200By\u2060z\u{E0041}!',
    };
    const { approval } = await pausedInvoke(
      app.http,
      org.agentKey,
      gatedBody(org.sessionId, content, { tool: { name: toolName, arguments: args } }),
    );
    await rowOf(approval.id).waitFor({ state: 'visible', timeout: 15_000 });
    const controls = /\p{Cf}/u;
    expect(await rowOf(approval.id).locator('td').nth(2).textContent()).toBe('run⟨U+2067⟩_script⟨U+2069⟩');
    await rowOf(approval.id).click();
    const detail = page.locator('#detail');
    await detail.locator('#approve').waitFor({ state: 'visible' });

    expect(await detail.locator('.message .content').textContent()).toBe('Open invoice⟨U+202E⟩hs.txt for me');
    expect(await detail.locator('.tool code').textContent()).toBe('run⟨U+2067⟩_script⟨U+2069⟩');
    const shownArgs = (await detail.locator('.tool-arguments').textContent()) as string;
    expect(shownArgs).toContain('"path": "invoice⟨U+202E⟩hs.txt"');
    expect(shownArgs).toContain(
      '"note": "a⟨U+200E⟩b⟨U+200F⟩c⟨U+061C⟩d⟨U+202A⟩e⟨U+202B⟩f⟨U+202C⟩g⟨U+202D⟩h⟨U+2066⟩i⟨U+2068⟩j"',
    );
    expect(shownArgs).toContain('"hidden": "x⟨U+200B⟩y⟨U+2060⟩z⟨U+E0041⟩!"');
    // Nothing on the page is left for the browser to reorder, and each marker is set apart.
    expect(controls.test((await page.locator('body').textContent()) as string)).toBe(false);
    const markers = detail.locator('.content .bidi-control');
    expect(await markers.allTextContents()).toEqual(['⟨U+202E⟩']);
    const style = await markers.first().evaluate((node) => {
      const css = getComputedStyle(node);
      return { color: css.color, border: css.borderTopStyle };
    });
    expect(style.border).toBe('solid');
    expect(style.color).not.toBe(
      await detail.locator('.message .content').evaluate((node) => getComputedStyle(node).color),
    );
    // What was shown reads left to right as it is stored: "hs.txt" follows "invoice" on screen.
    const [invoice, hs] = await Promise.all(
      ['invoice', 'hs.txt'].map((word) =>
        detail.locator('.message .content').evaluate((node, w) => {
          const text = Array.from(node.childNodes).find(
            (n) => n.nodeType === 3 && (n.textContent ?? '').includes(w),
          );
          const range = document.createRange();
          const at = (text?.textContent ?? '').indexOf(w);
          range.setStart(text as Node, at);
          range.setEnd(text as Node, at + w.length);
          return range.getBoundingClientRect().left;
        }, word),
      ),
    );
    expect(invoice).toBeLessThan(hs as number);

    // The vote is on the request as stored: the approval's digest and messages are unchanged.
    await page.click('#reject');
    await rowOf(approval.id).waitFor({ state: 'detached' });
    const after = await app.http.get<ApprovalBody>(`/v1/approvals/${approval.id}`, org.setup.org.adminKey);
    expect(after.body.status).toBe('rejected');
    expect(after.body.request_digest).toBe(approval.request_digest);
    expect(JSON.stringify(after.body.summary)).toContain('invoice\u202Ehs.txt');
  });

  it('shows the tools a chat call offers the model and its tool_choice, as they would be sent', async () => {
    const lookup = {
      type: 'function',
      function: {
        name: 'lookup',
        description: 'Reads ~/.ssh/id_rsa for the user',
        parameters: { type: 'object' },
      },
    };
    const choice = { type: 'function', function: { name: 'lookup' } };
    // The chat call waits for the vote; the reject below ends it.
    const chat = app.http.call('POST', '/v1/chat/completions', {
      token: org.agentKey,
      headers: { 'X-Session-Id': org.sessionId },
      body: { ...gatedBody(org.sessionId, 'look it up'), tools: [lookup], tool_choice: choice },
    });
    const approvalId = await eventually(async () => {
      const list = await app.http.get<{ data: ApprovalBody[] }>(
        '/v1/approvals?status=pending',
        org.setup.org.adminKey,
      );
      return list.body.data.find((a) => a.summary.model === GATED_MODEL)?.id;
    });
    await rowOf(approvalId).waitFor({ state: 'visible', timeout: 15_000 });
    await rowOf(approvalId).click();
    const detail = page.locator('#detail');
    await detail.locator('#approve').waitFor({ state: 'visible' });
    // As stored (PostgreSQL's jsonb orders keys its own way), shown in full.
    expect(JSON.parse((await detail.locator('.offered-tools').textContent()) as string)).toEqual([lookup]);
    expect(JSON.parse((await detail.locator('.offered code').textContent()) as string)).toEqual(choice);
    await page.click('#reject');
    await rowOf(approvalId).waitFor({ state: 'detached' });
    expect((await chat).status).toBe(403);
  });

  it('signs out, and a viewer sees the queue and the details but no vote buttons', async () => {
    const { approval } = await pausedInvoke(app.http, org.agentKey, gatedBody(org.sessionId, 'for viewing'));
    await page.click('#sign-out');
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    expect(await context.cookies(`${app.http.baseUrl}/approvals`)).toEqual([]);
    await signIn(viewer);
    expect(await page.textContent('#who-name')).toContain('view only');
    await rowOf(approval.id).waitFor({ state: 'visible', timeout: 15_000 });
    await rowOf(approval.id).click();
    await page.locator('#detail .view-only').waitFor({ state: 'visible' });
    expect(await page.locator('#detail .message .content').textContent()).toBe('for viewing');
    expect(await page.locator('#approve, #reject, #comment').count()).toBe(0);
  });

  it('ran under its CSP without a violation or a script error', () => {
    expect(problems).toEqual([]);
  });
});
