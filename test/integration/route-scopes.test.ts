import { z } from 'zod';
import { ROUTES } from '../../api/routes';
import { hashToken } from '../../domain/auth/tokens';
import { SCOPES, type Scope } from '../../domain/scopes';
import { mintKey, signupOrg, type SignedUpOrg } from '../support/factories';
import { callRaw, deepArray, namesField, rawNumber } from '../support/raw-json';
import { VALID_BODIES } from '../support/route-bodies';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let org: SignedUpOrg;
const keys = new Map<Scope, string>();

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  for (const scope of SCOPES) keys.set(scope, (await mintKey(app.http, org.adminKey, [scope], scope)).key);
});
afterAll(() => app.close());

/** Dummy path parameters: a route may answer 404 for them, which still proves the scope passed. */
const concretePath = (path: string) => path.replace(/\{\w+\}/g, 'key_doesnotexist');

const scopesOf = (r: (typeof ROUTES)[number]): Scope[] => (r.access.kind === 'scope' ? r.access.scopes : []);

const scoped = ROUTES.filter((r) => scopesOf(r).length === 1).map((r) => ({
  name: `${r.method} ${r.path}`,
  route: r,
  scope: scopesOf(r)[0] as Scope,
}));

const call = (route: (typeof scoped)[number]['route'], token?: string) =>
  app.http.call(route.method, concretePath(route.path), {
    token,
    body: VALID_BODIES[`${route.method} ${route.path}`],
  });

const otherScope = (scope: Scope): Scope => SCOPES.find((s) => s !== scope && s !== 'org:admin') as Scope;

describe.each(scoped)('$name requires $scope', ({ route, scope }) => {
  it('passes a key with exactly that scope', async () => {
    const res = await call(route, keys.get(scope));
    expect([401, 403]).not.toContain(res.status);
    expect(res.status).toBeLessThan(500);
  });

  it('refuses a key without it: 403 insufficient_scope naming it', async () => {
    const res = await call(route, keys.get(otherScope(scope)));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: scope });
    expect(res.body.message).toContain(scope);
  });

  it('passes org:admin', async () => {
    const res = await call(route, keys.get('org:admin'));
    expect([401, 403]).not.toContain(res.status);
  });

  it('refuses no token with 401 missing_credentials and a bad one with 401 invalid_api_key', async () => {
    expect((await call(route)).body.error_code).toBe('missing_credentials');
    const bad = await call(route, `csk_${'x'.repeat(43)}`);
    expect(bad.status).toBe(401);
    expect(bad.body.error_code).toBe('invalid_api_key');
  });
});

const anyOf = ROUTES.filter((r) => scopesOf(r).length > 1).map((r) => ({
  name: `${r.method} ${r.path}`,
  route: r,
  scopes: scopesOf(r),
}));

describe.each(anyOf)('$name accepts any of $scopes', ({ route, scopes }) => {
  it.each(scopes)('passes a key with only %s', async (scope) => {
    const res = await call(route, keys.get(scope));
    expect([401, 403]).not.toContain(res.status);
    expect(res.status).toBeLessThan(500);
  });

  it('refuses a key with none of them: 403 insufficient_scope naming them', async () => {
    const other = SCOPES.find((s) => !scopes.includes(s) && s !== 'org:admin') as Scope;
    const res = await call(route, keys.get(other));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      error_code: 'insufficient_scope',
      required_scope: scopes[0],
      accepted_scopes: scopes,
    });
    for (const scope of scopes) expect(res.body.message).toContain(scope);
  });
});

describe('read scopes cannot write', () => {
  it.each([
    ['credentials:read', 'POST', '/v1/credentials', { name: 'x', provider: 'mock', secret: 'x' }],
    ['credentials:read', 'POST', '/v1/credentials/cred_x/rotate', { secret: 'x' }],
    ['credentials:read', 'DELETE', '/v1/credentials/cred_x', undefined],
    ['agents:read', 'POST', '/v1/agents', { name: 'x' }],
    ['agents:read', 'PATCH', '/v1/agents/agt_x', { name: 'x' }],
    ['agents:read', 'POST', '/v1/agents/agt_x/suspend', undefined],
    ['stats:read', 'PUT', '/v1/pricing/gpt-4o', { input_per_mtok_usd: 1, output_per_mtok_usd: 1 }],
    ['stats:read', 'DELETE', '/v1/pricing/gpt-4o', undefined],
    ['policies:read', 'POST', '/v1/policies', VALID_BODIES['POST /v1/policies']],
    ['policies:read', 'PUT', '/v1/policies/pol_x', VALID_BODIES['PUT /v1/policies/{id}']],
    ['policies:read', 'DELETE', '/v1/policies/pol_x', undefined],
    ['sessions:read', 'POST', '/v1/sessions', { max_cost_usd: 1 }],
    ['sessions:read', 'POST', '/v1/sessions/ses_x/close', undefined],
    ['sessions:read', 'POST', '/v1/llm/invocations/inv_x/cancel', undefined],
    [
      'sessions:read',
      'POST',
      '/v1/llm/invoke',
      { session_id: 'ses_x', model: 'm', messages: [], max_tokens: 1 },
    ],
  ] as const)('%s cannot %s %s', async (scope, method, path, body) => {
    const res = await app.http.call(method, path, { token: keys.get(scope), body });
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('insufficient_scope');
  });

  it.each([
    ['credentials:read', '/v1/credentials'],
    ['agents:read', '/v1/agents'],
    ['stats:read', '/v1/pricing'],
    ['sessions:read', '/v1/sessions'],
    ['sessions:read', '/v1/llm/invocations'],
    ['llm:invoke', '/v1/llm/invocations'],
    ['stats:read', '/v1/stats/usage'],
    ['policies:read', '/v1/policies'],
  ])('%s can GET %s', async (scope, path) => {
    expect((await app.http.get(path, keys.get(scope as Scope))).status).toBe(200);
  });
});

describe('public routes', () => {
  it.each(ROUTES.filter((r) => r.access.kind === 'public' && r.method === 'GET').map((r) => r.path))(
    'GET %s answers without a token',
    async (path) => {
      expect((await app.http.get(path)).status).toBe(200);
    },
  );
});

describe('token states', () => {
  it('refuses an expired key with 401 expired_api_key', async () => {
    const key = await mintKey(app.http, org.adminKey, ['audit:read']);
    await app.infra
      .knex('api_keys')
      .where({ id: key.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    await app.infra.authenticator.forget(hashToken(key.key));
    const res = await app.http.get('/v1/audit', key.key);
    expect(res.status).toBe(401);
    expect(res.body.error_code).toBe('expired_api_key');
    expect(res.body.message).toContain('mint or rotate');
  });

  it('refuses an expired dashboard session with expired_api_key, telling the person to log in again', async () => {
    const token = (await signupOrg(app.http, 'Expiring')).sessionToken;
    await app.infra
      .knex('user_sessions')
      .where({ token_hash: hashToken(token) })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const res = await app.http.get<{ error_code: string; message: string }>('/v1/audit', token);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({
      error_code: 'expired_api_key',
      message: expect.stringContaining('log in again'),
    });
  });

  it('lets the owner session token act as org:admin', async () => {
    expect((await app.http.post('/v1/keys', { name: 's', scopes: ['read'] }, org.sessionToken)).status).toBe(
      201,
    );
  });

  it('refuses an Authorization header that is not a Bearer token', async () => {
    const res = await app.http.call('GET', '/v1/keys', {
      headers: { authorization: `Basic ${org.adminKey}` },
    });
    expect(res.status).toBe(401);
    expect(res.body.error_code).toBe('invalid_api_key');
  });
});

/** One poke at a route: a request with one unstorable value, and the field the 400 must name. */
interface Poke {
  label: string;
  path: string;
  body: unknown;
  field: string;
}

const queryKeys = (r: (typeof ROUTES)[number]): string[] =>
  r.query instanceof z.ZodObject ? Object.keys(r.query.shape as object) : [];

/** A NUL in each path parameter and query value; a NUL, a lone surrogate, 1e400 and deep nesting in the body. */
function pokesAt(route: (typeof ROUTES)[number]): Poke[] {
  const body = VALID_BODIES[`${route.method} ${route.path}`] as Record<string, unknown> | undefined;
  const path = concretePath(route.path);
  const params = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name as string);
  const pokes: Poke[] = [
    ...params.map((p) => ({
      label: `a NUL in path parameter ${p}`,
      path: concretePath(route.path.replace(`{${p}}`, 'a%00b')),
      body,
      field: p,
    })),
    ...queryKeys(route).map((q) => ({
      label: `a NUL in query ${q}`,
      path: `${path}?${q}=%00`,
      body,
      field: q,
    })),
  ];
  if (!route.body || !body) return pokes;
  const text = Object.keys(body).find((k) => typeof body[k] === 'string');
  const number = Object.keys(body).find((k) => typeof body[k] === 'number');
  if (text) {
    pokes.push({ label: `a NUL in ${text}`, path, body: { ...body, [text]: 'a\u0000b' }, field: text });
    pokes.push({
      label: `a lone surrogate in ${text}`,
      path,
      body: { ...body, [text]: 'a\ud800' },
      field: text,
    });
  }
  if (number)
    pokes.push({
      label: `1e400 as ${number}`,
      path,
      body: { ...body, [number]: rawNumber('1e400') },
      field: number,
    });
  pokes.push({
    label: 'a body nested 5,000 levels',
    path,
    body: { ...body, deep: deepArray(5000) },
    field: 'deep',
  });
  return pokes;
}

const readers = ROUTES.map((r) => ({ name: `${r.method} ${r.path}`, route: r, pokes: pokesAt(r) })).filter(
  (r) => r.pokes.length > 0,
);

describe('every route refuses unstorable input with 400 validation_error naming the field', () => {
  it('has a valid body for each route that reads one, so no route is left out', () => {
    const missing = ROUTES.filter((r) => r.body && !VALID_BODIES[`${r.method} ${r.path}`]);
    expect(missing.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(readers.length).toBeGreaterThan(30);
  });

  describe.each(readers)('$name', ({ route, pokes }) => {
    it.each(pokes)('$label -> 400 on $field', async ({ path, body, field }) => {
      const token = route.access.kind === 'public' ? undefined : keys.get('org:admin');
      const res = await callRaw(app.http, route.method, path, body, token);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(namesField(res, field)).toBe(true);
    });
  });
});
