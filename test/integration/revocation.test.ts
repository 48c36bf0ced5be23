import { hashToken } from '../../domain/auth/tokens';
import { mintKey, PASSWORD, signupOrg, type SignedUpOrg } from '../support/factories';
import type { HttpResult } from '../support/http-client';
import { startTestApp, type TestApp } from '../support/test-app';

jest.setTimeout(60_000);

/** The contract: a revoked token may not live on for more than a few seconds on any replica. */
const MAX_PROPAGATION_MS = 2_000;
const POLL_EVERY_MS = 100;

// Two API replicas behind an imaginary load balancer: one database, one Redis prefix.
let replicaA: TestApp;
let replicaB: TestApp | undefined;
let org: SignedUpOrg;

beforeAll(async () => {
  replicaA = await startTestApp();
  replicaB = await startTestApp({ database: replicaA.db, redisPrefix: replicaA.prefix });
  org = await signupOrg(replicaA.http, 'Revocation Inc');
});

afterAll(async () => {
  await replicaB?.close().catch(() => undefined);
  await replicaA?.close(); // drops the shared database
});

const b = () => replicaB as TestApp;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether replica B has the token cached in the shared Redis (its own memory holds it too). */
const cachedInRedis = async (token: string) =>
  (await replicaA.infra.redis.exists(`${replicaA.prefix}:auth:${hashToken(token)}`)) === 1;

/** A token in use on `app`: two requests succeed, so the app holds it in memory and in Redis. */
async function useOn(app: TestApp, token: string): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await app.http.get('/v1/audit?limit=1', token)).status).toBe(200);
  expect(await cachedInRedis(token)).toBe(true);
}

/**
 * Polls `app` with `token` every 100 ms from `since` until it is refused; returns the refusal
 * and how long after `since` it came (a deadline of twice the contract bounds the wait).
 */
async function untilRefused(app: TestApp, token: string, since: number) {
  for (;;) {
    const res = await app.http.get('/v1/audit?limit=1', token);
    const elapsedMs = Date.now() - since;
    if (res.status !== 200 || elapsedMs > 2 * MAX_PROPAGATION_MS) {
      return { res, elapsedMs };
    }
    await sleep(POLL_EVERY_MS);
  }
}

function expectInvalidToken(res: HttpResult): void {
  expect(res.status).toBe(401);
  expect(res.body).toMatchObject({ error_code: 'invalid_api_key', request_id: expect.any(String) });
}

describe('revocation across replicas', () => {
  it('a key revoked through replica A stops working on replica B within 2 s', async () => {
    const key = await mintKey(replicaA.http, org.adminKey, ['audit:read'], 'revoked across replicas');
    await useOn(b(), key.key);

    const revoked = await replicaA.http.delete(`/v1/keys/${key.id}`, org.adminKey);
    expect(revoked.status).toBe(200);
    const since = Date.now();
    const { res, elapsedMs } = await untilRefused(b(), key.key, since);
    expectInvalidToken(res);
    expect(elapsedMs).toBeLessThan(MAX_PROPAGATION_MS);
    // The revoking replica refuses it too, and it stays refused on B once B's memory has expired.
    expectInvalidToken(await replicaA.http.get('/v1/audit?limit=1', key.key));
    await sleep(1_100);
    expectInvalidToken(await b().http.get('/v1/audit?limit=1', key.key));
  });

  it('a key rotated without grace through replica A stops working on replica B within 2 s', async () => {
    const key = await mintKey(replicaA.http, org.adminKey, ['audit:read'], 'rotated across replicas');
    await useOn(b(), key.key);

    const rotated = await replicaA.http.post<{ key: string }>(
      `/v1/keys/${key.id}/rotate`,
      undefined,
      org.adminKey,
    );
    expect(rotated.status).toBe(201);
    const since = Date.now();
    const { res, elapsedMs } = await untilRefused(b(), key.key, since);
    expectInvalidToken(res);
    expect(elapsedMs).toBeLessThan(MAX_PROPAGATION_MS);
    expect((await b().http.get('/v1/audit?limit=1', rotated.body.key)).status).toBe(200);
  });

  it('a dashboard session token logged out on replica A is refused on both replicas within 2 s', async () => {
    const login = await replicaA.http.post<{ session_token: string }>('/v1/auth/login', {
      email: org.email,
      password: PASSWORD,
    });
    expect(login.status).toBe(200);
    const token = login.body.session_token;
    expect(token).toMatch(/^css_/);
    await useOn(b(), token);
    await useOn(replicaA, token);

    expect((await replicaA.http.post('/v1/auth/logout', undefined, token)).status).toBe(204);
    const since = Date.now();
    const [onA, onB] = await Promise.all([
      untilRefused(replicaA, token, since),
      untilRefused(b(), token, since),
    ]);
    for (const { res, elapsedMs } of [onA, onB]) {
      expectInvalidToken(res);
      expect(elapsedMs).toBeLessThan(MAX_PROPAGATION_MS);
    }
    // The org's other session (from signup) is untouched.
    expect((await b().http.get('/v1/audit?limit=1', org.sessionToken)).status).toBe(200);
  });
});
