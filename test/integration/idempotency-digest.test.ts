import { createHash } from 'node:crypto';
import { canonicalJson } from '../../domain/canonical-json';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A request's body is kept only as a keyed digest: a credential's body holds its secret, and a
 * plain hash of it would let whoever reads the table confirm a guess of the secret offline.
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Digest Inc');
});
afterAll(() => app.close());

const body = { name: 'self-hosted', provider: 'openai', secret: 'changeme' };
const store = (key: string) =>
  app.http.call<{ credential_ref: string }>('POST', '/v1/credentials', {
    token: org.adminKey,
    body,
    headers: { 'Idempotency-Key': key },
  });
const plainHash = createHash('sha256').update(canonicalJson(body)).digest('hex');
const recordOf = (key: string) => app.infra.knex('idempotency_records').where({ key }).first();

it('stores a keyed digest, not the plain hash a guess of the secret could be checked against', async () => {
  const first = await store('digest-1');
  expect(first.status).toBe(201);
  const record = await recordOf('digest-1');
  expect(record.request_hash).toMatch(/^[0-9a-f]{64}$/);
  expect(record.request_hash).not.toBe(plainHash);

  const again = await store('digest-1');
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body.credential_ref).toBe(first.body.credential_ref);
});

it('still replays a record stored with a plain hash before the upgrade, and tells another body apart', async () => {
  const first = await store('digest-legacy');
  await app.infra
    .knex('idempotency_records')
    .where({ key: 'digest-legacy' })
    .update({ request_hash: plainHash });
  const again = await store('digest-legacy');
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body.credential_ref).toBe(first.body.credential_ref);

  const other = await app.http.call('POST', '/v1/credentials', {
    token: org.adminKey,
    body: { ...body, secret: 'changeme2' },
    headers: { 'Idempotency-Key': 'digest-legacy' },
  });
  expect(other.status).toBe(409);
  expect(other.body).toMatchObject({ error_code: 'idempotency_conflict' });
});
