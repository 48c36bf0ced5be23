import { resolvePrice } from '../../domain/pricing/price-use-cases';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

interface PriceBody {
  model: string;
  input_per_mtok_usd: number;
  output_per_mtok_usd: number;
  source: string;
}

let app: TestApp;
let org: SignedUpOrg;
let other: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  other = await signupOrg(app.http, 'Other');
});
afterAll(() => app.close());

const list = async (token = org.adminKey) =>
  (await app.http.get<{ data: PriceBody[]; builtin_prices_taken_on: string }>('/v1/pricing', token)).body;
const put = (model: string, input: number, output: number) =>
  app.http.call<PriceBody>('PUT', `/v1/pricing/${encodeURIComponent(model)}`, {
    token: org.adminKey,
    body: { input_per_mtok_usd: input, output_per_mtok_usd: output },
  });
const resolve = (model: string, orgId = org.orgId) =>
  app.infra.uow.read((tx) => resolvePrice(tx, orgId, model));

describe('pricing', () => {
  it('lists the built-in prices with their date, sorted by model, to stats:read', async () => {
    const reader = await mintKey(app.http, org.adminKey, ['stats:read']);
    const body = await list(reader.key);
    expect(body.builtin_prices_taken_on).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(body.data).toContainEqual({
      model: 'gpt-4o-mini',
      input_per_mtok_usd: 0.15,
      output_per_mtok_usd: 0.6,
      source: 'builtin',
    });
    const models = body.data.map((p) => p.model);
    expect(models).toEqual([...models].sort());
  });

  it('overrides a built-in price for the org only, and DELETE brings the built-in one back', async () => {
    const res = await put('gpt-4o', 1.25, 5);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      model: 'gpt-4o',
      input_per_mtok_usd: 1.25,
      output_per_mtok_usd: 5,
      source: 'org',
    });
    expect((await list()).data.filter((p) => p.model === 'gpt-4o')).toEqual([res.body]);
    expect((await list(other.adminKey)).data.find((p) => p.model === 'gpt-4o')?.source).toBe('builtin');
    expect(await resolve('gpt-4o')).toMatchObject({ inputMicrosPerMtok: 1_250_000, source: 'org' });

    const del = await app.http.delete('/v1/pricing/gpt-4o', org.adminKey);
    expect(del.status).toBe(204);
    expect(await resolve('gpt-4o')).toMatchObject({ inputMicrosPerMtok: 2_500_000, source: 'builtin' });
    // Idempotent: deleting again (or a model never priced) is 204 and audits nothing more.
    expect((await app.http.delete('/v1/pricing/gpt-4o', org.adminKey)).status).toBe(204);
    expect((await app.http.delete('/v1/pricing/never-priced', org.adminKey)).status).toBe(204);
    const audit = await app.http.get<{ data: { action: string; resource: { id: string } }[] }>(
      '/v1/audit?action=pricing.deleted&limit=100',
      org.adminKey,
    );
    expect(audit.body.data.map((e) => e.resource.id)).toEqual(['gpt-4o']);
  });

  it('prices a model the table lacks, including names with a slash', async () => {
    await expect(resolve('meta-llama/Llama-3-8B')).rejects.toMatchObject({
      code: 'unpriced_model',
      extra: { model: 'meta-llama/Llama-3-8B' },
    });
    const res = await put('meta-llama/Llama-3-8B', 0.05, 0.1);
    expect(res.body).toMatchObject({ model: 'meta-llama/Llama-3-8B', source: 'org' });
    expect(await resolve('meta-llama/Llama-3-8B')).toMatchObject({
      inputMicrosPerMtok: 50_000,
      outputMicrosPerMtok: 100_000,
    });
    await expect(resolve('meta-llama/Llama-3-8B', other.orgId)).rejects.toMatchObject({
      code: 'unpriced_model',
    });
    await app.http.delete(`/v1/pricing/${encodeURIComponent('meta-llama/Llama-3-8B')}`, org.adminKey);
    await expect(resolve('meta-llama/Llama-3-8B')).rejects.toMatchObject({ code: 'unpriced_model' });
  });

  it('refuses a model with no price at all (mock models included) as unpriced_model', async () => {
    await expect(resolve('mock-1')).rejects.toMatchObject({ code: 'unpriced_model' });
    await put('mock-1', 0, 0);
    expect(await resolve('mock-1')).toMatchObject({ inputMicrosPerMtok: 0, outputMicrosPerMtok: 0 });
  });

  it('audits every price change with the old and new price', async () => {
    await put('o3', 1, 4);
    await put('o3', 1.5, 6);
    await app.http.delete('/v1/pricing/o3', org.adminKey);
    const audit = await app.http.get<{ data: { action: string; details: Record<string, unknown> }[] }>(
      '/v1/audit?resource_id=o3',
      org.adminKey,
    );
    expect(audit.body.data.map((e) => e.action)).toEqual(['pricing.deleted', 'pricing.set', 'pricing.set']);
    expect(audit.body.data[1]?.details).toMatchObject({
      model: 'o3',
      input_per_mtok_usd: 1.5,
      output_per_mtok_usd: 6,
      previous: { input_per_mtok_usd: 1, output_per_mtok_usd: 4 },
    });
    expect(audit.body.data[2]?.details).toMatchObject({
      previous: { input_per_mtok_usd: 2, output_per_mtok_usd: 8 },
    });
  });
});
