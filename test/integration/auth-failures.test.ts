import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../infra/config';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import type { HttpResult } from '../support/http-client';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

/**
 * Every unknown token costs a Redis and a PostgreSQL lookup. Past CP_AUTH_FAILURES_PER_MINUTE
 * failures from one address, that address gets 429 for tokens the auth cache cannot vouch for,
 * without a database lookup. Other addresses are never affected, and a key the address already
 * used keeps working from the cache. Addresses come from X-Forwarded-For (CP_TRUST_PROXY=true).
 */
const FAILURES = 3;
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp({
    env: { CP_TRUST_PROXY: 'true', CP_AUTH_FAILURES_PER_MINUTE: String(FAILURES) },
  });
  org = await signupOrg(app.http, 'Guessed At Inc');
});
afterAll(() => app.close());

let addressCounter = 0;
/** A fresh client address per test, so each starts with an untouched failure budget. */
const newAddress = () => `198.51.100.${++addressCounter}`;
const randomToken = () => `csk_${randomBytes(32).toString('base64url')}`;
const from = (address: string, token: string) =>
  app.http.call('GET', '/v1/audit', { token, headers: { 'x-forwarded-for': address } });

/** Counts the API key lookups PostgreSQL answers while `work` runs. */
async function keyLookupsDuring<T>(work: () => Promise<T>): Promise<{ result: T; lookups: number }> {
  let lookups = 0;
  const onQuery = (q: { sql: string }) => {
    if (/from "api_keys"/.test(q.sql)) lookups++;
  };
  app.infra.knex.on('query', onQuery);
  try {
    return { result: await work(), lookups };
  } finally {
    app.infra.knex.off('query', onQuery);
  }
}

function expectRateLimited(res: HttpResult): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error_code: 'rate_limited',
    message: expect.any(String),
    request_id: res.headers.get('x-request-id'),
    retry_after_seconds: expect.any(Number),
  });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body.retry_after_seconds).toBe(retryAfter);
}

async function spendFailures(address: string): Promise<void> {
  for (let i = 0; i < FAILURES; i++) {
    const res = await from(address, randomToken());
    expect(res.status).toBe(401);
    expect(res.body.error_code).toBe('invalid_api_key');
  }
}

describe('failed authentication per address', () => {
  it('answers unknown tokens past the limit with 429 rate_limited and Retry-After, without a database lookup', async () => {
    const attacker = newAddress();
    // Each failure under the limit costs a lookup (which is what the limit rations).
    expect((await keyLookupsDuring(() => spendFailures(attacker))).lookups).toBe(FAILURES);
    const { result, lookups } = await keyLookupsDuring(async () => {
      const refused: HttpResult[] = [];
      for (let i = 0; i < 20; i++) refused.push(await from(attacker, randomToken()));
      return refused;
    });
    result.forEach(expectRateLimited);
    expect(lookups).toBe(0);
  });

  it('never blocks a valid key used from another address', async () => {
    const attacker = newAddress();
    await spendFailures(attacker);
    expectRateLimited(await from(attacker, randomToken()));
    const key = (await mintKey(app.http, org.adminKey, ['audit:read'], 'elsewhere')).key;
    expect((await from(newAddress(), key)).status).toBe(200);
  });

  it('keeps serving a valid key the blocked address was already using', async () => {
    const shared = newAddress();
    const key = (await mintKey(app.http, org.adminKey, ['audit:read'], 'behind the same NAT')).key;
    expect((await from(shared, key)).status).toBe(200);
    await spendFailures(shared);
    expectRateLimited(await from(shared, randomToken()));
    expect((await from(shared, key)).status).toBe(200);
  });

  it('counts session tokens too, and leaves a missing Authorization header a 401', async () => {
    const attacker = newAddress();
    for (let i = 0; i < FAILURES; i++)
      expect((await from(attacker, `css_${randomBytes(32).toString('base64url')}`)).status).toBe(401);
    expectRateLimited(await from(attacker, `css_${randomBytes(32).toString('base64url')}`));
    const bare = await app.http.call('GET', '/v1/audit', { headers: { 'x-forwarded-for': attacker } });
    expect(bare.status).toBe(401);
    expect(bare.body.error_code).toBe('missing_credentials');
  });

  it('is configurable, 30 failures a minute by default', () => {
    expect(loadConfig({}).CP_AUTH_FAILURES_PER_MINUTE).toBe(30);
    expect(loadConfig({ CP_AUTH_FAILURES_PER_MINUTE: '5' }).CP_AUTH_FAILURES_PER_MINUTE).toBe(5);
  });
});
