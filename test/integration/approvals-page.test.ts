import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PASSWORD, signupOrg } from '../support/factories';
import { finished } from '../support/invoke-fixtures';
import { pausedInvoke, type ApprovalBody } from '../support/approval-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';
import {
  gatedBody,
  gatedOrg,
  PAGE_COOKIE,
  personWithRole,
  type GatedOrg,
  type PageUser,
} from '../browser/approvals-page-fixtures';

jest.setTimeout(60_000);

/**
 * The approver's page over HTTP: its security headers, the session cookie, the cookie-authenticated
 * API with its CSRF rule and scopes, and a vote through it that resumes the waiting invocation.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const SESSION_TTL = 7200;

let app: TestApp;
let org: GatedOrg;
let approver: PageUser;
let viewer: PageUser;

beforeAll(async () => {
  app = await startTestApp({
    workers: true,
    env: { CP_TRUST_PROXY: 'true', CP_SESSION_TTL_SECONDS: String(SESSION_TTL) },
  });
  org = await gatedOrg(app.http);
  approver = await personWithRole(app.http, org.setup.org.adminKey, 'approver');
  viewer = await personWithRole(app.http, org.setup.org.adminKey, 'viewer');
}, 60_000);
afterAll(() => app.close());

interface PageResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  setCookies: string[];
}

interface PageCall {
  cookie?: string;
  csrf?: string;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** A browser's request as the page makes it: the cookie, and on votes the CSRF header and JSON. */
async function page<T = Record<string, unknown>>(
  method: string,
  path: string,
  options: PageCall = {},
): Promise<PageResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.cookie) headers.cookie = `${PAGE_COOKIE}=${options.cookie}`;
  if (options.csrf) headers['x-csrf-token'] = options.csrf;
  let body = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (options.contentType) headers['content-type'] = options.contentType;
  else if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(app.http.baseUrl + path, { method, headers, body });
  const text = await res.text();
  const parsed = res.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : { text };
  return {
    status: res.status,
    body: parsed as T,
    headers: res.headers,
    setCookies: res.headers.getSetCookie(),
  };
}

interface SignedIn {
  cookie: string;
  csrf: string;
  setCookie: string;
  body: Record<string, unknown>;
}

async function signIn(user: PageUser, headers: Record<string, string> = {}): Promise<SignedIn> {
  const res = await page('POST', '/approvals/session', {
    body: { email: user.email, password: user.password },
    headers,
  });
  expect(res.status).toBe(200);
  const setCookie = res.setCookies.find((c) => c.startsWith(`${PAGE_COOKIE}=`)) as string;
  const cookie = /^[^=]+=([^;]*)/.exec(setCookie)?.[1] as string;
  return { cookie, csrf: res.body.csrf_token as string, setCookie, body: res.body };
}

const pending = (content: string) => pausedInvoke(app.http, org.agentKey, gatedBody(org.sessionId, content));

const approvalNow = async (id: string) =>
  (await app.http.get<ApprovalBody>(`/v1/approvals/${id}`, org.setup.org.adminKey)).body;

function expectPageHeaders(res: PageResult<unknown>): void {
  expect(res.headers.get('content-security-policy')).toBe(CSP);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
}

describe('the page and its files', () => {
  it('serves the HTML shell, script and style with a strict CSP, nosniff and no-referrer', async () => {
    const shell = await page('GET', '/approvals');
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectPageHeaders(shell);
    const html = shell.body.text as string;
    expect(html).toContain('<script src="/approvals/app.js" defer></script>');
    expect(html).toContain('<link rel="stylesheet" href="/approvals/app.css" />');
    const script = await page('GET', '/approvals/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectPageHeaders(script);
    const style = await page('GET', '/approvals/app.css');
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expectPageHeaders(style);
  });

  it('has nothing the CSP would have to allow: no inline script, style or handler, no third-party URL', async () => {
    const html = (await page('GET', '/approvals')).body.text as string;
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script src="/approvals/app.js" defer>']);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('puts server text into the page only as text: the script never parses markup', () => {
    const script = readFileSync(join(__dirname, '../../api/page/assets/app.js'), 'utf8');
    expect(script).not.toMatch(
      /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
    );
    expect(script).toContain('textContent');
  });

  it('answers unknown paths and methods under /approvals in the error shape, with the same headers', async () => {
    const missing = await page('GET', '/approvals/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error_code: 'not_found', request_id: expect.any(String) });
    expectPageHeaders(missing);
    const wrong = await page('PUT', '/approvals');
    expect(wrong.status).toBe(405);
    expect(wrong.body.error_code).toBe('method_not_allowed');
    expect(wrong.headers.get('allow')).toContain('GET');
    expectPageHeaders(wrong);
  });

  it('leaves the rest of the server without the page headers', async () => {
    const health = await app.http.get('/health');
    expect(health.status).toBe(200);
    expect(health.headers.get('content-security-policy')).toBeNull();
  });
});

describe('signing in and out', () => {
  it('sets an HttpOnly, SameSite=Strict cookie on /approvals for the session lifetime, and answers the CSRF token', async () => {
    const before = Date.now();
    const res = await page('POST', '/approvals/session', {
      body: { email: approver.email, password: approver.password },
    });
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      user: { id: approver.id, email: approver.email, role: 'approver' },
      role: 'approver',
      csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    expect(res.setCookies).toHaveLength(1);
    const cookie = res.setCookies[0] as string;
    expect(cookie).toMatch(new RegExp(`^${PAGE_COOKIE}=css_[A-Za-z0-9_-]+;`));
    const attributes = cookie.split(/;\s*/).slice(1);
    expect(attributes).toEqual(expect.arrayContaining(['Path=/approvals', 'HttpOnly', 'SameSite=Strict']));
    expect(attributes).not.toContain('Secure'); // plain http here
    const maxAge = Number(attributes.find((a) => a.startsWith('Max-Age='))?.slice('Max-Age='.length));
    expect(maxAge).toBeGreaterThan(SESSION_TTL - 5);
    expect(maxAge).toBeLessThanOrEqual(SESSION_TTL);
    const expires = Date.parse(attributes.find((a) => a.startsWith('Expires='))?.slice(8) ?? '');
    expect(Math.abs(expires - (before + SESSION_TTL * 1000))).toBeLessThan(5_000);
    // The token lives in the cookie only; the script never sees it.
    expect(JSON.stringify(res.body)).not.toContain('css_');
  });

  it('marks the cookie Secure when the request came over https (through a trusted proxy)', async () => {
    const { setCookie } = await signIn(approver, { 'x-forwarded-proto': 'https' });
    expect(setCookie.split(/;\s*/)).toContain('Secure');
  });

  it('refuses a wrong password or an unknown email with 401 invalid_credentials and sets no cookie', async () => {
    for (const email of [approver.email, 'nobody@example.test']) {
      const res = await page('POST', '/approvals/session', { body: { email, password: 'wrong password!!' } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        error_code: 'invalid_credentials',
        message: expect.any(String),
        request_id: res.headers.get('x-request-id'),
      });
      expect(res.setCookies).toEqual([]);
      expectPageHeaders(res);
    }
  });

  it('takes only JSON: a form post is 415 (a cross-site form cannot sign anyone in), bad fields are 400', async () => {
    const form = await page('POST', '/approvals/session', {
      rawBody: `email=${encodeURIComponent(approver.email)}&password=${encodeURIComponent(PASSWORD)}`,
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    expect(form.body.error_code).toBe('unsupported_media_type');
    expect(form.setCookies).toEqual([]);
    const missing = await page('POST', '/approvals/session', { body: { email: approver.email } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'password' }] });
    const broken = await page('POST', '/approvals/session', { rawBody: '{"email":' });
    expect(broken.status).toBe(400);
    expect(broken.body.error_code).toBe('invalid_json');
  });

  it('signs out with the CSRF token: the cookie is cleared and the session ends for the API too', async () => {
    const s = await signIn(approver);
    const forged = await page('DELETE', '/approvals/session', { cookie: s.cookie, body: {} });
    expect(forged.status).toBe(403);
    expect(forged.body.error_code).toBe('csrf_failed');
    expect((await page('GET', '/approvals/api/me', { cookie: s.cookie })).status).toBe(200);

    const out = await page('DELETE', '/approvals/session', { cookie: s.cookie, csrf: s.csrf, body: {} });
    expect(out.status).toBe(204);
    const cleared = out.setCookies.find((c) => c.startsWith(`${PAGE_COOKIE}=;`)) as string;
    expect(cleared.split(/;\s*/)).toEqual(expect.arrayContaining(['Path=/approvals', 'Max-Age=0']));
    const after = await page('GET', '/approvals/api/me', { cookie: s.cookie });
    expect(after.status).toBe(401);
    expect(after.body.error_code).toBe('invalid_api_key');
    expect((await app.http.get('/v1/approvals', s.cookie)).status).toBe(401);
  });
});

describe('the cookie-authenticated API', () => {
  it('answers 401 without a cookie, and with a cookie that is not a live dashboard session', async () => {
    const { id } = (await pending('no cookie')).approval;
    const paths: [string, string][] = [
      ['GET', '/approvals/api/me'],
      ['GET', '/approvals/api/approvals?status=pending'],
      ['GET', `/approvals/api/approvals/${id}`],
      ['POST', `/approvals/api/approvals/${id}/approve`],
      ['POST', `/approvals/api/approvals/${id}/reject`],
    ];
    for (const [method, path] of paths) {
      const none = await page(method, path, method === 'POST' ? { body: {} } : {});
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ error_code: 'missing_credentials', request_id: expect.any(String) });
      expectPageHeaders(none);
      expect(none.headers.get('cache-control')).toBe('no-store');
      for (const cookie of ['css_notarealsessiontoken0000000000000000000', org.setup.org.adminKey, 'junk']) {
        const bad = await page(method, path, { cookie, ...(method === 'POST' ? { body: {} } : {}) });
        expect(bad.status).toBe(401);
        expect(bad.body.error_code).toBe('invalid_api_key');
      }
    }
    expect((await approvalNow(id)).status).toBe('pending');
  });

  it('tells the page who is signed in, what they may do, and the CSRF token again (after a reload)', async () => {
    const s = await signIn(approver);
    const me = await page('GET', '/approvals/api/me', { cookie: s.cookie });
    expect(me.status).toBe(200);
    expect(me.headers.get('cache-control')).toBe('no-store');
    expect(me.headers.get('ratelimit-limit')).toEqual(expect.any(String));
    expect(me.body).toMatchObject({
      user: { id: approver.id, role: 'approver' },
      role: 'approver',
      can_vote: true,
      scopes: expect.arrayContaining(['policies:read', 'policies:write']),
      csrf_token: s.csrf,
    });
    const v = await signIn(viewer);
    const seen = await page('GET', '/approvals/api/me', { cookie: v.cookie });
    expect(seen.body).toMatchObject({ role: 'viewer', can_vote: false });
    expect(seen.body.scopes).not.toContain('policies:write');
  });

  it('lists pending approvals oldest first and shows one with the messages it would send', async () => {
    const first = (await pending('list first')).approval;
    const second = (await pending('list second <b>bold</b>')).approval;
    const s = await signIn(viewer);
    const listed = await page<{ data: ApprovalBody[]; next_cursor: string | null }>(
      'GET',
      '/approvals/api/approvals?status=pending&limit=100',
      { cookie: s.cookie },
    );
    expect(listed.status).toBe(200);
    const ids = listed.body.data.map((a) => a.id);
    expect(ids.indexOf(first.id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
    expect(listed.body.data.every((a) => a.status === 'pending')).toBe(true);
    const created = listed.body.data.map((a) => Date.parse(a.created_at));
    expect(created).toEqual([...created].sort((a, b) => a - b));
    // The same shape as GET /v1/approvals, which lists newest first as every list does.
    const api = await app.http.get<{ data: ApprovalBody[] }>(
      '/v1/approvals?status=pending&limit=100',
      org.agentKey,
    );
    expect(listed.body.data).toEqual([...api.body.data].reverse());

    const one = await page<ApprovalBody>('GET', `/approvals/api/approvals/${second.id}`, {
      cookie: s.cookie,
    });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: second.id,
      policy_id: org.policyId,
      summary: {
        model: 'gated-page-model',
        messages: [{ role: 'user', content: 'list second <b>bold</b>' }],
      },
    });
  });

  it('pages with the cursor and refuses bad queries and unknown ids in the error shape', async () => {
    await pending('page a');
    await pending('page b');
    const s = await signIn(viewer);
    const firstPage = await page<{ data: ApprovalBody[]; next_cursor: string }>(
      'GET',
      '/approvals/api/approvals?status=pending&limit=1',
      { cookie: s.cookie },
    );
    expect(firstPage.body.data).toHaveLength(1);
    const next = await page<{ data: ApprovalBody[] }>(
      'GET',
      `/approvals/api/approvals?status=pending&limit=1&cursor=${encodeURIComponent(firstPage.body.next_cursor)}`,
      { cookie: s.cookie },
    );
    expect(next.body.data[0]?.id).not.toBe(firstPage.body.data[0]?.id);
    const bad = await page('GET', '/approvals/api/approvals?status=maybe', { cookie: s.cookie });
    expect(bad.status).toBe(400);
    expect(bad.body.error_code).toBe('validation_error');
    const unknown = await page('GET', '/approvals/api/approvals/apr_nope', { cookie: s.cookie });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_code).toBe('not_found');
    const nul = await page('GET', '/approvals/api/approvals/apr_%00', { cookie: s.cookie });
    expect(nul.status).toBe(400);
  });

  it("does not show another org's approval (404)", async () => {
    const { approval } = await pending('other org');
    const stranger = await signupOrg(app.http, 'Stranger Inc');
    const s = await signIn({ id: stranger.userId, email: stranger.email, password: PASSWORD });
    const res = await page('GET', `/approvals/api/approvals/${approval.id}`, { cookie: s.cookie });
    expect(res.status).toBe(404);
    const vote = await page('POST', `/approvals/api/approvals/${approval.id}/approve`, {
      cookie: s.cookie,
      csrf: s.csrf,
      body: {},
    });
    expect(vote.status).toBe(404);
    expect((await approvalNow(approval.id)).status).toBe('pending');
  });
});

describe('votes through the page', () => {
  it('refuses a vote without the CSRF token, with a wrong one, or with one of another session (403 csrf_failed)', async () => {
    const { approval } = await pending('csrf');
    const s = await signIn(approver);
    const other = await signIn(approver);
    const attempts: PageCall[] = [
      { cookie: s.cookie, body: { comment: 'forged' } },
      { cookie: s.cookie, csrf: 'not-the-token', body: {} },
      { cookie: s.cookie, csrf: `${s.csrf.slice(0, -2)}AA`, body: {} },
      { cookie: s.cookie, csrf: other.csrf, body: {} },
      { cookie: s.cookie, csrf: `${s.csrf}!`, body: {} },
    ];
    for (const attempt of attempts) {
      const res = await page('POST', `/approvals/api/approvals/${approval.id}/approve`, attempt);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        error_code: 'csrf_failed',
        message: expect.stringMatching(/X-CSRF-Token/),
      });
      expectPageHeaders(res);
    }
    // Nor as a form (what another site could post), even with the token.
    const form = await page('POST', `/approvals/api/approvals/${approval.id}/reject`, {
      cookie: s.cookie,
      csrf: s.csrf,
      rawBody: 'comment=x',
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    expect(form.body.error_code).toBe('unsupported_media_type');
    const bare = await page('POST', `/approvals/api/approvals/${approval.id}/reject`, {
      cookie: s.cookie,
      csrf: s.csrf,
    });
    expect(bare.status).toBe(415);
    const after = await approvalNow(approval.id);
    expect(after).toMatchObject({ status: 'pending', votes: [] });
  });

  it("refuses a viewer's forged vote (valid cookie and CSRF token) with 403 insufficient_scope", async () => {
    const { approval } = await pending('viewer vote');
    const s = await signIn(viewer);
    for (const decision of ['approve', 'reject']) {
      const res = await page('POST', `/approvals/api/approvals/${approval.id}/${decision}`, {
        cookie: s.cookie,
        csrf: s.csrf,
        body: { comment: 'I am only a viewer' },
      });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'policies:write' });
    }
    expect(await approvalNow(approval.id)).toMatchObject({ status: 'pending', votes: [] });
  });

  it('approves with a comment: the approval resolves as the person and the waiting invoke succeeds', async () => {
    const s = await signIn(approver);
    const { invocation, approval } = await pending('please approve me');
    const res = await page<ApprovalBody>('POST', `/approvals/api/approvals/${approval.id}/approve`, {
      cookie: s.cookie,
      csrf: s.csrf,
      body: { comment: 'ok from the page' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      id: approval.id,
      status: 'approved',
      votes: [{ by: { type: 'user', id: approver.id }, decision: 'approve', comment: 'ok from the page' }],
    });
    const done = await finished(app.http, org.agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'succeeded', approval_id: approval.id });
    // It left the queue.
    const queue = await page<{ data: ApprovalBody[] }>(
      'GET',
      '/approvals/api/approvals?status=pending&limit=100',
      {
        cookie: s.cookie,
      },
    );
    expect(queue.body.data.map((a) => a.id)).not.toContain(approval.id);
    // A second vote is the API's answer: the approval takes no more votes.
    const again = await page('POST', `/approvals/api/approvals/${approval.id}/reject`, {
      cookie: s.cookie,
      csrf: s.csrf,
      body: {},
    });
    expect(again.status).toBe(409);
    expect(again.body.error_code).toBe('invalid_state');
  });

  it('rejects: the invocation is denied with approval_rejected', async () => {
    const s = await signIn(approver);
    const { invocation, approval } = await pending('please reject me');
    const res = await page<ApprovalBody>('POST', `/approvals/api/approvals/${approval.id}/reject`, {
      cookie: s.cookie,
      csrf: s.csrf,
      body: {},
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('rejected');
    expect(res.body.votes[0]?.comment).toBeNull();
    const done = await finished(app.http, org.agentKey, invocation.id);
    expect(done).toMatchObject({ status: 'denied', error: { error_code: 'approval_rejected' } });
  });

  it('refuses a comment over 2000 characters with 400, like the API', async () => {
    const s = await signIn(approver);
    const { approval } = await pending('long comment');
    const res = await page('POST', `/approvals/api/approvals/${approval.id}/approve`, {
      cookie: s.cookie,
      csrf: s.csrf,
      body: { comment: 'x'.repeat(2001) },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'comment' }] });
  });
});

describe('limits shared with the API', () => {
  let limited: TestApp;
  let owner: PageUser;
  let addressCounter = 0;
  const newAddress = () => `203.0.113.${++addressCounter}`;
  const from = (address: string) => ({ 'x-forwarded-for': address });
  const call = (method: string, path: string, options: PageCall = {}) =>
    fetch(limited.http.baseUrl + path, {
      method,
      headers: {
        ...options.headers,
        ...(options.cookie ? { cookie: `${PAGE_COOKIE}=${options.cookie}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });

  beforeAll(async () => {
    limited = await startTestApp({
      env: {
        CP_TRUST_PROXY: 'true',
        CP_AUTH_FAILURES_PER_MINUTE: '3',
        CP_PUBLIC_RATE_LIMIT_PER_MINUTE: '4',
        CP_RATE_LIMIT_PER_MINUTE: '5',
      },
    });
    const o = await signupOrg(limited.http, 'Limited Inc');
    owner = { id: o.userId, email: o.email, password: PASSWORD };
  });
  afterAll(() => limited.close());

  it('counts unknown session cookies toward the address failed-authentication limit (then 429)', async () => {
    const address = newAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call('GET', '/approvals/api/me', {
        cookie: `css_${randomBytes(32).toString('base64url')}`,
        headers: from(address),
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // Another address is unaffected.
    const other = await call('GET', '/approvals/api/me', {
      cookie: 'css_guessed',
      headers: from(newAddress()),
    });
    expect(other.status).toBe(401);
  });

  it('spends the same per-address budget as POST /v1/auth/login on sign-ins', async () => {
    const address = newAddress();
    const login = { email: owner.email, password: 'not the password' };
    const statuses: number[] = [];
    for (const path of ['/v1/auth/login', '/v1/auth/login', '/approvals/session', '/approvals/session']) {
      statuses.push((await call('POST', path, { body: login, headers: from(address) })).status);
    }
    const refused = await call('POST', '/approvals/session', { body: login, headers: from(address) });
    expect(statuses).toEqual([401, 401, 401, 401]);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error_code: string }).error_code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it("spends the person's per-identity budget, shared with their API calls", async () => {
    const signedIn = await call('POST', '/approvals/session', {
      body: { email: owner.email, password: owner.password },
      headers: from(newAddress()),
    });
    expect(signedIn.status).toBe(200);
    const cookie = /^[^=]+=([^;]*)/.exec(signedIn.headers.getSetCookie()[0] ?? '')?.[1] as string;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call('GET', '/approvals/api/me', { cookie })).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    // The fifth request of the minute goes through the API with the same session token.
    expect((await limited.http.get('/v1/approvals', cookie)).status).toBe(200);
    const refused = await call('GET', '/approvals/api/approvals', { cookie });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-security-policy')).toBe(CSP);
  });
});
