import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import type { HttpClient, HttpResult } from '../support/http-client';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

const PER_KEY = 5;
const PER_IP = 3;
const LIMITED_ENV = {
  CP_RATE_LIMIT_PER_MINUTE: String(PER_KEY),
  CP_PUBLIC_RATE_LIMIT_PER_MINUTE: String(PER_IP),
};

/**
 * Orgs and keys live in the database and rate-limit counters under the Redis prefix, so the org
 * is set up through an app with the default (high) limits on the same database and its own
 * prefix: the signup, a public route, must not spend the per-IP budget of the apps under test.
 */
let setup: TestApp;
let limited: TestApp;
let org: SignedUpOrg;
const started: TestApp[] = [];

async function start(options: Parameters<typeof startTestApp>[0]): Promise<TestApp> {
  const app = await startTestApp(options);
  started.push(app);
  return app;
}

beforeAll(async () => {
  setup = await start({});
  limited = await start({ database: setup.db, env: LIMITED_ENV });
  org = await signupOrg(setup.http, 'Rate Limited Inc');
});

afterAll(async () => {
  // The app that created the database drops it, so it closes last.
  for (const app of started.reverse()) await app.close().catch(() => undefined);
});

const freshKey = async (name: string) => (await mintKey(setup.http, org.adminKey, ['audit:read'], name)).key;

const intHeader = (res: HttpResult, name: string): number => {
  const value = res.headers.get(name);
  expect(value).toMatch(/^\d+$/);
  return Number(value);
};

function expectRateLimited(res: HttpResult, limit: number): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error_code: 'rate_limited',
    message: expect.any(String),
    request_id: res.headers.get('x-request-id'),
    retry_after_seconds: expect.any(Number),
  });
  const retryAfter = intHeader(res, 'retry-after');
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body.retry_after_seconds).toBe(retryAfter);
  expect(intHeader(res, 'ratelimit-limit')).toBe(limit);
  expect(intHeader(res, 'ratelimit-remaining')).toBe(0);
}

/** `count` successive requests; returns their results in order. */
async function burst(count: number, send: () => Promise<HttpResult>): Promise<HttpResult[]> {
  const results: HttpResult[] = [];
  for (let i = 0; i < count; i++) results.push(await send());
  return results;
}

function expectCountdown(results: HttpResult[], limit: number): void {
  results.forEach((res, i) => {
    expect(res.status).toBe(200);
    expect(intHeader(res, 'ratelimit-limit')).toBe(limit);
    expect(intHeader(res, 'ratelimit-remaining')).toBe(limit - 1 - i);
    const reset = intHeader(res, 'ratelimit-reset');
    expect(reset).toBeGreaterThanOrEqual(0);
    expect(reset).toBeLessThanOrEqual(60);
  });
}

describe('per-key rate limit', () => {
  it('answers the request past the limit with 429 rate_limited, Retry-After and RateLimit-* headers', async () => {
    const key = await freshKey('limited');
    const ok = await burst(PER_KEY, () => limited.http.get('/v1/audit', key));
    expectCountdown(ok, PER_KEY);
    const over = await limited.http.get('/v1/audit', key);
    expectRateLimited(over, PER_KEY);
    // Still limited: the refused request did not open a new window.
    expectRateLimited(await limited.http.get('/v1/audit', key), PER_KEY);
  });

  it('keeps each key to its own budget: another key of the same org is not affected', async () => {
    const spent = await freshKey('spent');
    const other = await freshKey('other');
    await burst(PER_KEY, () => limited.http.get('/v1/audit', spent));
    expectRateLimited(await limited.http.get('/v1/audit', spent), PER_KEY);
    const res = await limited.http.get('/v1/audit', other);
    expect(res.status).toBe(200);
    expect(intHeader(res, 'ratelimit-remaining')).toBe(PER_KEY - 1);
  });
});

describe('per-org rate limit', () => {
  const PER_ORG = 8;
  let orgLimited: TestApp;
  let tenant: SignedUpOrg;
  const keyOf = async (name: string) =>
    (await mintKey(setup.http, tenant.adminKey, ['audit:read'], name)).key;

  beforeAll(async () => {
    const env = { ...LIMITED_ENV, CP_RATE_LIMIT_PER_ORG_PER_MINUTE: String(PER_ORG) };
    orgLimited = await start({ database: setup.db, env });
    tenant = await signupOrg(setup.http, 'Many Keys Inc');
  });

  it("counts every key of an org against the org's limit: minting keys does not multiply it", async () => {
    const first = await keyOf('first');
    expectCountdown(await burst(PER_KEY, () => orgLimited.http.get('/v1/audit', first)), PER_KEY);
    // Refused by its key's limit: not counted for the org.
    expectRateLimited(await orgLimited.http.get('/v1/audit', first), PER_KEY);

    const second = await keyOf('second');
    const left = PER_ORG - PER_KEY;
    const ok = await burst(left, () => orgLimited.http.get('/v1/audit', second));
    // The org's limit is now the nearer one, so the headers show it.
    ok.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect(intHeader(res, 'ratelimit-limit')).toBe(PER_ORG);
      expect(intHeader(res, 'ratelimit-remaining')).toBe(left - 1 - i);
    });
    const over = await orgLimited.http.get('/v1/audit', second);
    expectRateLimited(over, PER_ORG);
    expect(over.body.message).toContain("the org's rate limit of 8 requests a minute");
    expectRateLimited(await orgLimited.http.get('/v1/audit', await keyOf('third')), PER_ORG);
    // Revoking a key is limited per key only: an admin can still stop a key that spent the org's limit.
    const admin = (await mintKey(setup.http, tenant.adminKey, ['org:admin'], 'admin')).key;
    const secondId = (
      await setup.http.get<{ data: { id: string; name: string }[] }>('/v1/keys', tenant.adminKey)
    ).body.data.find((k) => k.name === 'second')?.id;
    const revoked = await orgLimited.http.delete(`/v1/keys/${secondId}`, admin);
    expect(revoked.status).toBe(200);
    expect(intHeader(revoked, 'ratelimit-limit')).toBe(PER_KEY);

    // Another org is not affected.
    const res = await orgLimited.http.get('/v1/audit', await freshKey('other org'));
    expect(res.status).toBe(200);
    expect(intHeader(res, 'ratelimit-limit')).toBe(PER_KEY);
  });

  it('publishes the limit in the public configuration', async () => {
    const res = await orgLimited.http.get('/v1/config/public');
    expect(res.body.limits).toMatchObject({
      rate_limit_per_minute: PER_KEY,
      org_rate_limit_per_minute: PER_ORG,
    });
  });
});

describe('per-key rate limit on refused requests', () => {
  it('counts a 403, a 404 and a 405 of an authenticated key, with RateLimit-* headers, up to 429', async () => {
    const key = await freshKey('prober'); // audit:read only
    const refused = [
      await limited.http.get('/v1/keys', key), // 403 insufficient_scope
      await limited.http.get('/v1/nothing-here', key), // 404, no such route
      await limited.http.call('PUT', '/v1/audit', { token: key, body: {} }), // 405
      await limited.http.get('/v1/policies/preview', key), // 405 (a literal path, not a policy id)
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 404, 405, 405]);
    expect(refused.map((r) => r.body.error_code)).toEqual([
      'insufficient_scope',
      'not_found',
      'method_not_allowed',
      'method_not_allowed',
    ]);
    refused.forEach((res, i) => {
      expect(intHeader(res, 'ratelimit-limit')).toBe(PER_KEY);
      expect(intHeader(res, 'ratelimit-remaining')).toBe(PER_KEY - 1 - i);
      expect(intHeader(res, 'ratelimit-reset')).toBeLessThanOrEqual(60);
    });
    const last = await limited.http.get('/v1/audit', key);
    expect(last.status).toBe(200);
    expect(intHeader(last, 'ratelimit-remaining')).toBe(0);
    // The budget is spent: probing goes on with 429 only.
    expectRateLimited(await limited.http.get('/v1/keys', key), PER_KEY);
    expectRateLimited(await limited.http.get('/v1/nothing-here', key), PER_KEY);
    expectRateLimited(await limited.http.call('DELETE', '/v1/audit', { token: key }), PER_KEY);
  });

  it('leaves a request without a valid token to its answer of before: a 404 or 405, not counted', async () => {
    for (let i = 0; i < PER_KEY + 1; i++) {
      const anonymous = await limited.http.get('/v1/nothing-here');
      expect(anonymous.status).toBe(404);
      expect(anonymous.headers.get('ratelimit-limit')).toBeNull();
      const guessed = await limited.http.get('/v1/nothing-here', `csk_${'x'.repeat(43)}`);
      expect(guessed.status).toBe(404);
      expect(guessed.headers.get('ratelimit-limit')).toBeNull();
      const wrongMethod = await limited.http.call('PUT', '/v1/audit', { body: {} });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});

describe('per-IP rate limit on public routes', () => {
  it('answers the 4th public request with 429, and leaves authenticated routes to their keys', async () => {
    const ok = await burst(PER_IP, () => limited.http.get('/v1/config/public'));
    expectCountdown(ok, PER_IP);
    expect(ok[0]?.body.limits).toMatchObject({ rate_limit_per_minute: PER_KEY });
    expectRateLimited(await limited.http.get('/v1/config/public'), PER_IP);
    // Public routes share the per-IP budget.
    expectRateLimited(
      await limited.http.post('/v1/auth/login', { email: org.email, password: 'wrong password!' }),
      PER_IP,
    );
    // An authenticated request from the same IP is limited per key, not per IP.
    const res = await limited.http.get('/v1/audit', await freshKey('after-ip-limit'));
    expect(res.status).toBe(200);
    expect(intHeader(res, 'ratelimit-limit')).toBe(PER_KEY);
  });
});

describe('rate limits across API replicas', () => {
  let replicaA: TestApp;
  let replicaB: TestApp;

  beforeAll(async () => {
    replicaA = await start({ database: setup.db, env: LIMITED_ENV });
    replicaB = await start({ database: setup.db, redisPrefix: replicaA.prefix, env: LIMITED_ENV });
  });

  const alternate = async (count: number, send: (http: HttpClient) => Promise<HttpResult>) =>
    burst(
      count,
      (() => {
        let i = 0;
        return () => send(i++ % 2 === 0 ? replicaA.http : replicaB.http);
      })(),
    );

  it('shares one per-key budget: 3 requests on A and 3 on B with a limit of 5 give one 429', async () => {
    const key = await freshKey('two replicas');
    const results = await alternate(2 * 3, (http) => http.get('/v1/audit', key));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expectCountdown(results.slice(0, PER_KEY), PER_KEY);
    expectRateLimited(results[PER_KEY] as HttpResult, PER_KEY);
    // Both replicas now refuse the key.
    expect((await replicaA.http.get('/v1/audit', key)).status).toBe(429);
    expect((await replicaB.http.get('/v1/audit', key)).status).toBe(429);
  });

  it('shares one per-IP budget on public routes', async () => {
    const results = await alternate(PER_IP + 1, (http) => http.get('/v1/config/public'));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expectRateLimited(results[PER_IP] as HttpResult, PER_IP);
  });
});

describe('behind a trusted proxy (CP_TRUST_PROXY=true)', () => {
  it('counts the per-IP budget per client address from X-Forwarded-For', async () => {
    const proxied = await start({ database: setup.db, env: { ...LIMITED_ENV, CP_TRUST_PROXY: 'true' } });
    const from = (ip: string) => () =>
      proxied.http.call('GET', '/v1/config/public', { headers: { 'x-forwarded-for': ip } });
    const first = await burst(PER_IP + 1, from('203.0.113.7'));
    expect(first.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect((await from('203.0.113.8')()).status).toBe(200);
  });
});
