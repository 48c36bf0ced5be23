import { MAX_PRICES_PER_ORG } from '../../domain/pricing/price-use-cases';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * An org's own prices are one unpaginated list (and the models list is made from them), so an org
 * may set at most MAX_PRICES_PER_ORG of them; changing one it has is always allowed.
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http, 'Price Flood Inc');
  const rows = Array.from({ length: MAX_PRICES_PER_ORG - 1 }, (_, i) => ({
    org_id: org.orgId,
    model: `flood-${i}`,
    input_micros_per_mtok: 1,
    output_micros_per_mtok: 1,
    updated_at: new Date(),
    updated_by: org.userId,
  }));
  await app.infra.knex.batchInsert('model_prices', rows, 500);
});
afterAll(() => app.close());

const put = (model: string) =>
  app.http.call<{ error_code?: string; message?: string }>('PUT', `/v1/pricing/${model}`, {
    token: org.adminKey,
    body: { input_per_mtok_usd: 0.5, output_per_mtok_usd: 1.5 },
  });

it('takes the last new price once, even when several ask at the same moment, then refuses more', async () => {
  const racing = await Promise.all(['last-a', 'last-b', 'last-c', 'last-d'].map(put));
  expect(racing.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
  const refused = racing.find((r) => r.status === 400);
  expect(refused?.body).toMatchObject({ error_code: 'validation_error' });
  expect(refused?.body.message).toContain(`${MAX_PRICES_PER_ORG} prices of its own`);

  expect((await put('one-more')).status).toBe(400);
  expect((await put('flood-7')).status).toBe(200); // a price it has may still change
  const own = await app.infra.knex('model_prices').where({ org_id: org.orgId }).count<{ count: string }[]>();
  expect(Number(own[0]?.count)).toBe(MAX_PRICES_PER_ORG);
});

it('frees a place when a price is deleted', async () => {
  expect((await app.http.call('DELETE', '/v1/pricing/flood-8', { token: org.adminKey })).status).toBe(204);
  expect((await put('after-delete')).status).toBe(200);
});
