import { mintKey, PASSWORD, signupOrg, uniqueEmail, type SignedUpOrg } from '../support/factories';
import { legacyPasswordHash } from '../support/legacy-password';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Identity Inc');
});
afterAll(() => app.close());

async function invite(role: string, email = uniqueEmail(role)) {
  const res = await app.http.post<{ invite_token: string; expires_at: string }>(
    '/v1/orgs/invites',
    { email, role },
    org.adminKey,
  );
  expect(res.status).toBe(201);
  return { email, token: res.body.invite_token };
}

describe('org signup', () => {
  it('creates the org, its owner, a session token and a bootstrap org:admin key', async () => {
    const email = uniqueEmail();
    const res = await app.http.post<Record<string, Record<string, unknown>>>('/v1/orgs/signup', {
      org_name: 'New Org',
      email,
      password: PASSWORD,
      name: 'Ada',
    });
    expect(res.status).toBe(201);
    expect(res.body.org).toMatchObject({ id: expect.stringMatching(/^org_/), name: 'New Org' });
    expect(res.body.user).toMatchObject({
      id: expect.stringMatching(/^usr_/),
      email,
      name: 'Ada',
      role: 'owner',
    });
    expect(res.body.session_token).toMatch(/^css_/);
    expect(res.body.api_key).toMatchObject({
      name: 'bootstrap',
      scopes: ['org:admin'],
      key: expect.stringMatching(/^csk_/),
    });
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
  });

  it('refuses an email already taken with 409 conflict, whatever its case', async () => {
    const res = await app.http.post('/v1/orgs/signup', {
      org_name: 'Again',
      email: org.email.toUpperCase(),
      password: PASSWORD,
    });
    expect(res.status).toBe(409);
    expect(res.body.error_code).toBe('conflict');
  });

  it.each([
    ['shorter than 12 characters', 'eleven char'],
    ['only spaces', ' '.repeat(12)],
  ])('refuses a password %s with 400 validation_error naming it', async (_why, password) => {
    const res = await app.http.post<{ error_code: string; details: { path: string }[] }>('/v1/orgs/signup', {
      org_name: 'Weak',
      email: `weak-${password.length}-${Date.now()}@acme.test`,
      password,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'validation_error', details: [{ path: 'password' }] });
  });

  it('stores the password only as a scrypt hash', async () => {
    const row = await app.infra.knex('users').where({ id: org.userId }).first();
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(row.password_hash).not.toContain(PASSWORD);
  });
});

describe('invites and user signup', () => {
  it('joins the org of the invite with its role; the invite works once', async () => {
    const { email, token } = await invite('viewer');
    expect(token).toMatch(/^cit_/);
    const res = await app.http.post<{ user: Record<string, unknown> }>('/v1/auth/signup', {
      email,
      password: PASSWORD,
      invite_token: token,
    });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email, role: 'viewer' });
    const row = await app.infra.knex('users').where({ email }).first();
    expect(row.org_id).toBe(org.orgId);
    const again = await app.http.post('/v1/auth/signup', {
      email: uniqueEmail(),
      password: PASSWORD,
      invite_token: token,
    });
    expect(again.status).toBe(400);
    expect(again.body.error_code).toBe('validation_error');
  });

  it('refuses an unknown invite token and an email other than the invited one', async () => {
    const unknown = await app.http.post('/v1/auth/signup', {
      email: uniqueEmail(),
      password: PASSWORD,
      invite_token: 'cit_nope',
    });
    expect(unknown.status).toBe(400);
    const { token } = await invite('approver');
    const wrong = await app.http.post<{ details: { path: string }[] }>('/v1/auth/signup', {
      email: uniqueEmail(),
      password: PASSWORD,
      invite_token: token,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0]?.path).toBe('email');
  });

  it("gives a human session the scopes of the user's role", async () => {
    const { email, token } = await invite('viewer');
    await app.http.post('/v1/auth/signup', { email, password: PASSWORD, invite_token: token });
    const login = await app.http.post<{ session_token: string }>('/v1/auth/login', {
      email,
      password: PASSWORD,
    });
    const session = login.body.session_token;
    expect((await app.http.get('/v1/audit', session)).status).toBe(200);
    const mint = await app.http.post('/v1/keys', { name: 'x', scopes: ['read'] }, session);
    expect(mint.status).toBe(403);
    expect(mint.body.required_scope).toBe('org:admin');
  });
});

describe('login and logout', () => {
  it('logs in with email and password and returns a session token, expiry and the user', async () => {
    const res = await app.http.post<Record<string, unknown>>('/v1/auth/login', {
      email: org.email,
      password: PASSWORD,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      session_token: expect.stringMatching(/^css_/),
      user: { id: org.userId, role: 'owner' },
    });
    expect(Date.parse(res.body.expires_at as string)).toBeGreaterThan(Date.now());
  });

  it('answers a wrong email and a wrong password the same way, in similar time', async () => {
    const attempt = async (body: object) => {
      const start = performance.now();
      const res = await app.http.post('/v1/auth/login', body);
      return { res, ms: performance.now() - start };
    };
    // Medians of a few tries, so one slow request on a busy machine does not decide.
    const median = async (body: object) => {
      const runs = [];
      for (let i = 0; i < 5; i++) runs.push(await attempt(body));
      runs.sort((a, b) => a.ms - b.ms);
      return runs[2] as (typeof runs)[number];
    };
    await attempt({ email: 'warm@example.test', password: 'x' }); // the decoy hash is made once
    const wrongEmail = await median({ email: uniqueEmail('nobody'), password: PASSWORD });
    const wrongPassword = await median({ email: org.email, password: 'not the password at all' });
    for (const { res } of [wrongEmail, wrongPassword]) {
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('invalid_credentials');
    }
    expect(wrongEmail.res.body.message).toBe(wrongPassword.res.body.message);
    // Both pay for one scrypt; an unknown email that skipped it would be about 10x faster.
    expect(wrongEmail.ms / wrongPassword.ms).toBeGreaterThan(0.4);
    expect(wrongEmail.ms / wrongPassword.ms).toBeLessThan(2.5);
  });

  it('rehashes a password stored at a lower scrypt cost on the next successful login', async () => {
    const user = await signupOrg(app.http, 'Legacy Ltd');
    const users = () => app.infra.knex('users').where({ id: user.userId });
    const legacy = legacyPasswordHash(PASSWORD);
    await users().update({ password_hash: legacy });
    const login = (password: string) => app.http.post('/v1/auth/login', { email: user.email, password });

    expect((await login('not the password')).status).toBe(401);
    expect((await users().first()).password_hash).toBe(legacy);
    expect((await login(PASSWORD)).status).toBe(200);
    const upgraded = (await users().first()).password_hash as string;
    expect(upgraded).toMatch(/^scrypt\$131072\$8\$1\$/);
    expect((await login(PASSWORD)).status).toBe(200);
    expect((await users().first()).password_hash).toBe(upgraded);
  });

  it('ends the session on logout; the token is refused afterwards', async () => {
    const login = await app.http.post<{ session_token: string }>('/v1/auth/login', {
      email: org.email,
      password: PASSWORD,
    });
    const token = login.body.session_token;
    expect((await app.http.get('/v1/keys', token)).status).toBe(200);
    expect((await app.http.post('/v1/auth/logout', undefined, token)).status).toBe(204);
    const after = await app.http.get('/v1/keys', token);
    expect(after.status).toBe(401);
    expect(after.body.error_code).toBe('invalid_api_key');
  });

  it('refuses logout with an API key (keys are revoked, not logged out)', async () => {
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    const res = await app.http.post('/v1/auth/logout', undefined, key.key);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
  });
});
