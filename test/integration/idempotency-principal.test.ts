import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import type { HttpResult } from '../support/http-client';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A stored response can hold a secret shown once (a minted key), so it is replayed only to the
 * principal that made the request. Another admin of the same org sending the same
 * Idempotency-Key makes a request of its own: it runs, and its own response is kept for it.
 */
let app: TestApp;
let org: SignedUpOrg;
let otherAdminKey: string;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Two Admins Inc');
  otherAdminKey = (await mintKey(app.http, org.adminKey, ['org:admin'], 'second admin')).key;
});
afterAll(() => app.close());

type MintedKey = { id: string; key: string; name: string };

const mintAs = (token: string, idempotencyKey: string): Promise<HttpResult<MintedKey>> =>
  app.http.call<MintedKey>('POST', '/v1/keys', {
    token,
    body: { name: 'deploy bot', scopes: ['read'] },
    headers: { 'Idempotency-Key': idempotencyKey },
  });

describe('Idempotency-Key is scoped to the principal that sent it', () => {
  it('runs the request afresh for another admin key, never replaying the first secret', async () => {
    const first = await mintAs(org.adminKey, 'shared-1');
    expect(first.status).toBe(201);

    const other = await mintAs(otherAdminKey, 'shared-1');
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(other.body.key).not.toBe(first.body.key);
    expect(other.body.id).not.toBe(first.body.id);
    expect(JSON.stringify(other.body)).not.toContain(first.body.key);
  });

  it('replays to each principal its own first response', async () => {
    const mine = await mintAs(org.adminKey, 'shared-2');
    const theirs = await mintAs(otherAdminKey, 'shared-2');
    const mineAgain = await mintAs(org.adminKey, 'shared-2');
    const theirsAgain = await mintAs(otherAdminKey, 'shared-2');
    expect(mineAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(mineAgain.body).toEqual(mine.body);
    expect(theirsAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(theirsAgain.body).toEqual(theirs.body);
  });

  it('treats a dashboard user as a principal of its own, apart from the org keys', async () => {
    const byKey = await mintAs(org.adminKey, 'shared-3');
    const byUser = await mintAs(org.sessionToken, 'shared-3');
    expect(byUser.status).toBe(201);
    expect(byUser.headers.get('idempotent-replayed')).toBeNull();
    expect(byUser.body.key).not.toBe(byKey.body.key);
  });

  it('answers 409 idempotency_conflict, never a 500, when the stored response no longer opens (its key was dropped)', async () => {
    const first = await mintAs(org.adminKey, 'sealed-by-a-dropped-key');
    expect(first.status).toBe(201);
    await app.infra
      .knex('idempotency_records')
      .where({ key: 'sealed-by-a-dropped-key' })
      .update({ response: 'k_dropped.c2VhbGVkIGJ5IGEga2V5IG5vIGxvbmdlciBoZWxk' });
    const again = await mintAs(org.adminKey, 'sealed-by-a-dropped-key');
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'idempotency_conflict' });
    expect(JSON.stringify(again.body)).not.toContain(first.body.key);
  });
});
