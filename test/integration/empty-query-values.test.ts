import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A query parameter given no value (`?status=`, as an empty form field sends it) is as if left
 * out, on every route: not a filter on the empty string on some routes and a 400 on others.
 */
let app: TestApp;
let org: SignedUpOrg;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  for (let i = 0; i < 2; i++) await app.http.post('/v1/sessions', { max_cost_usd: 1 }, org.adminKey);
  const [first] = (await app.http.get<{ data: { id: string }[] }>('/v1/sessions', org.adminKey)).body.data;
  await app.http.post(`/v1/sessions/${first?.id}/close`, {}, org.adminKey);
});
afterAll(() => app.close());

const get = (path: string) => app.http.get<{ data?: { id: string }[] }>(path, org.adminKey);

it.each([
  ['/v1/sessions?status=', '/v1/sessions'],
  ['/v1/sessions?status=&limit=&cursor=', '/v1/sessions'],
  ['/v1/llm/invocations?session_id=&status=', '/v1/llm/invocations'],
  ['/v1/audit?action=&actor_id=&resource_id=&since=&until=', '/v1/audit'],
  ['/v1/approvals?status=', '/v1/approvals'],
  ['/v1/stats/usage?group_by=&from=&to=', '/v1/stats/usage'],
])('%s answers as %s', async (withEmpty, without) => {
  const [given, plain] = [await get(withEmpty), await get(without)];
  expect([given.status, plain.status]).toEqual([200, 200]);
  // Stats carry the moment they were read: compare what does not move.
  const { from: _f, to: _t, ...givenBody } = given.body as Record<string, unknown>;
  const { from: _g, to: _u, ...plainBody } = plain.body as Record<string, unknown>;
  expect(givenBody).toEqual(plainBody);
});

it('still filters on a value given, and still refuses a bad one', async () => {
  const open = await get('/v1/sessions?status=open');
  expect(open.body.data).toHaveLength(1);
  const bad = await get('/v1/sessions?status=nope');
  expect([bad.status, (bad.body as { error_code?: string }).error_code]).toEqual([400, 'validation_error']);
});
