import { connect } from 'node:net';
import { MAX_BODY_DEPTH, UNSTORABLE_INPUT_RULE } from '../../api/http/unstorable-input';
import { mintKey, PASSWORD, signupOrg, uniqueEmail, type SignedUpOrg } from '../support/factories';
import { callRaw, deepArray, deepObject, namesField, rawNumber } from '../support/raw-json';
import { auditOf, storedRows } from '../support/stored-rows';
import { startTestApp, type TestApp } from '../support/test-app';

let app: TestApp;
let org: SignedUpOrg;
let keyId: string;
let credentialRef: string;
let agentId: string;
let invokeAgentId: string;
let sessionId: string;

beforeAll(async () => {
  app = await startTestApp();
  org = await signupOrg(app.http);
  keyId = (await mintKey(app.http, org.adminKey, ['audit:read'])).id;
  const credential = await app.http.post<{ credential_ref: string }>(
    '/v1/credentials',
    { name: 'c', provider: 'mock', secret: 'mock-secret-123456' },
    org.adminKey,
  );
  credentialRef = credential.body.credential_ref;
  agentId = (await app.http.post<{ id: string }>('/v1/agents', { name: 'a' }, org.adminKey)).body.id;
  const invoker = await app.http.post<{ id: string }>(
    '/v1/agents',
    { name: 'invoker', allowed_models: ['mock-1'], credential_refs: [credentialRef] },
    org.adminKey,
  );
  expect(invoker.status).toBe(201);
  invokeAgentId = invoker.body.id;
  const priced = await app.http.call('PUT', '/v1/pricing/mock-1', {
    token: org.adminKey,
    body: { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
  });
  expect(priced.status).toBe(200);
  const session = await app.http.post<{ id: string }>(
    '/v1/sessions',
    { agent_id: invokeAgentId, max_cost_usd: 1 },
    org.adminKey,
  );
  expect(session.status).toBe(201);
  sessionId = session.body.id;
});

/** A route's path with real ids of this org in it. */
const concrete = (path: string) =>
  path
    .replace('/v1/keys/{id}', `/v1/keys/${keyId}`)
    .replace('/v1/agents/{id}', `/v1/agents/${agentId}`)
    .replace('{ref}', credentialRef)
    .replace('{model}', 'my-model');

/** Stands for the session opened in beforeAll (bodies are written before it exists). */
const SESSION = '{session}';
const withSession = (body: unknown): unknown =>
  body !== null && typeof body === 'object' && (body as { session_id?: unknown }).session_id === SESSION
    ? { ...body, session_id: sessionId }
    : body;
afterAll(() => app.close());

type Case = [label: string, body: unknown, field: string];

const long = (n: number) => 'x'.repeat(n);
const signup = { org_name: 'Org', email: 'a@example.test', password: PASSWORD };
const user = { email: 'b@example.test', password: PASSWORD, invite_token: 'cit_x' };
const login = { email: 'a@example.test', password: PASSWORD };
const invite = { email: 'c@example.test', role: 'viewer' };
const key = { name: 'k', scopes: ['read'] };
const cred = { name: 'c', provider: 'openai', secret: 'sk-test-1234567890' };
const price = { input_per_mtok_usd: 1, output_per_mtok_usd: 2 };
const session = { max_cost_usd: 1 };
const hello = { role: 'user', content: 'hello' };
const call = { session_id: SESSION, model: 'mock-1', messages: [hello], max_tokens: 16 };
const tool = { name: 't', arguments: { q: 1 } };

/** Each field of a body: missing, wrong type, out of range; plus unknown fields (bodies are strict). */
const BODY_CASES: Record<string, Case[]> = {
  'POST /v1/orgs/signup': [
    ['org_name missing', { ...signup, org_name: undefined }, 'org_name'],
    ['org_name a number', { ...signup, org_name: 5 }, 'org_name'],
    ['org_name blank', { ...signup, org_name: '   ' }, 'org_name'],
    ['org_name too long', { ...signup, org_name: long(201) }, 'org_name'],
    ['email missing', { ...signup, email: undefined }, 'email'],
    ['email not an email', { ...signup, email: 'nope' }, 'email'],
    ['email an array', { ...signup, email: ['a@example.test'] }, 'email'],
    ['password missing', { ...signup, password: undefined }, 'password'],
    ['password under 12 characters', { ...signup, password: 'short' }, 'password'],
    ['password null', { ...signup, password: null }, 'password'],
    ['name an object', { ...signup, name: {} }, 'name'],
    ['an unknown field', { ...signup, plan: 'gold' }, 'body'],
  ],
  'POST /v1/auth/signup': [
    ['email missing', { ...user, email: undefined }, 'email'],
    ['password too short', { ...user, password: 'x' }, 'password'],
    ['invite_token missing', { ...user, invite_token: undefined }, 'invite_token'],
    ['invite_token a number', { ...user, invite_token: 7 }, 'invite_token'],
    ['invite_token empty', { ...user, invite_token: '' }, 'invite_token'],
    ['name too long', { ...user, name: long(201) }, 'name'],
    ['an unknown field', { ...user, role: 'owner' }, 'body'],
  ],
  'POST /v1/auth/login': [
    ['email missing', { ...login, email: undefined }, 'email'],
    ['email a number', { ...login, email: 1 }, 'email'],
    ['password missing', { ...login, password: undefined }, 'password'],
    ['password empty', { ...login, password: '' }, 'password'],
    ['password too long', { ...login, password: long(1025) }, 'password'],
    ['an unknown field', { ...login, remember: true }, 'body'],
  ],
  'POST /v1/orgs/invites': [
    ['email missing', { ...invite, email: undefined }, 'email'],
    ['email not an email', { ...invite, email: 'x@' }, 'email'],
    ['role missing', { ...invite, role: undefined }, 'role'],
    ['role unknown', { ...invite, role: 'god' }, 'role'],
    ['role owner', { ...invite, role: 'owner' }, 'role'],
    ['an unknown field', { ...invite, note: 'hi' }, 'body'],
  ],
  'POST /v1/keys': [
    ['name missing', { ...key, name: undefined }, 'name'],
    ['name empty', { ...key, name: '' }, 'name'],
    ['name too long', { ...key, name: long(101) }, 'name'],
    ['name a number', { ...key, name: 1 }, 'name'],
    ['scopes missing', { ...key, scopes: undefined }, 'scopes'],
    ['scopes empty', { ...key, scopes: [] }, 'scopes'],
    ['scopes a string', { ...key, scopes: 'read' }, 'scopes'],
    ['an unknown scope', { ...key, scopes: ['llm:fly'] }, 'scopes.0'],
    ['a preset mixed with a scope', { ...key, scopes: ['read', 'llm:invoke'] }, 'scopes.0'],
    ['a scope that is not a string', { ...key, scopes: [3] }, 'scopes.0'],
    ['expires_in_days 0', { ...key, expires_in_days: 0 }, 'expires_in_days'],
    ['expires_in_days 366', { ...key, expires_in_days: 366 }, 'expires_in_days'],
    ['expires_in_days 1.5', { ...key, expires_in_days: 1.5 }, 'expires_in_days'],
    ['expires_in_days a string', { ...key, expires_in_days: '30' }, 'expires_in_days'],
    ['an unknown field', { ...key, owner: 'me' }, 'body'],
  ],
  'POST /v1/keys/{id}/rotate': [
    ['grace_seconds -1', { grace_seconds: -1 }, 'grace_seconds'],
    ['grace_seconds 86401', { grace_seconds: 86_401 }, 'grace_seconds'],
    ['grace_seconds a string', { grace_seconds: '60' }, 'grace_seconds'],
    ['an unknown field', { grace: 60 }, 'body'],
  ],
  'POST /v1/credentials': [
    ['name missing', { ...cred, name: undefined }, 'name'],
    ['name too long', { ...cred, name: long(101) }, 'name'],
    ['provider missing', { ...cred, provider: undefined }, 'provider'],
    ['provider unknown', { ...cred, provider: 'skynet' }, 'provider'],
    ['secret missing', { ...cred, secret: undefined }, 'secret'],
    ['secret empty', { ...cred, secret: '' }, 'secret'],
    ['secret a number', { ...cred, secret: 12345 }, 'secret'],
    ['secret with a line break', { ...cred, secret: 'sk-abc\n' }, 'secret'],
    ['secret too long', { ...cred, secret: long(8193) }, 'secret'],
    ['base_url a number', { ...cred, base_url: 42 }, 'base_url'],
    ['base_url not a URL', { ...cred, base_url: 'api.example.com' }, 'base_url'],
    ['base_url plain http', { ...cred, base_url: 'http://api.example.com/v1' }, 'base_url'],
    ['base_url ftp', { ...cred, base_url: 'ftp://api.example.com/v1' }, 'base_url'],
    ['base_url with user info', { ...cred, base_url: 'https://u:p@api.example.com' }, 'base_url'],
    ['base_url loopback', { ...cred, base_url: 'https://127.0.0.1/v1' }, 'base_url'],
    ['base_url localhost', { ...cred, base_url: 'https://localhost:8443' }, 'base_url'],
    ['base_url private 10/8', { ...cred, base_url: 'https://10.1.2.3/v1' }, 'base_url'],
    ['base_url metadata service', { ...cred, base_url: 'https://169.254.169.254/' }, 'base_url'],
    ['base_url IPv6 loopback', { ...cred, base_url: 'https://[::1]/v1' }, 'base_url'],
    ['base_url mapped IPv4', { ...cred, base_url: 'https://[::ffff:127.0.0.1]/' }, 'base_url'],
    ['base_url decimal loopback', { ...cred, base_url: 'https://2130706433/' }, 'base_url'],
    ['openai_compatible without base_url', { ...cred, provider: 'openai_compatible' }, 'base_url'],
    ['an unknown field', { ...cred, region: 'eu' }, 'body'],
  ],
  'POST /v1/credentials/{ref}/rotate': [
    ['secret missing', {}, 'secret'],
    ['secret with a space', { secret: 'sk abc' }, 'secret'],
    ['an unknown field', { secret: 'sk-abc', name: 'x' }, 'body'],
  ],
  'POST /v1/agents': [
    ['name missing', {}, 'name'],
    ['name blank', { name: '  ' }, 'name'],
    ['description too long', { name: 'a', description: long(2001) }, 'description'],
    ['allowed_models a string', { name: 'a', allowed_models: 'gpt-4o' }, 'allowed_models'],
    ['allowed_models repeated', { name: 'a', allowed_models: ['m', 'm'] }, 'allowed_models'],
    ['allowed_models odd characters', { name: 'a', allowed_models: ['gpt 4o'] }, 'allowed_models.0'],
    ['tools without a name', { name: 'a', tools: [{ version: '1' }] }, 'tools.0.name'],
    ['tools repeated', { name: 'a', tools: [{ name: 't' }, { name: 't' }] }, 'tools'],
    ['tools with an unknown field', { name: 'a', tools: [{ name: 't', secret: 'x' }] }, 'tools.0'],
    ['credential_refs unknown', { name: 'a', credential_refs: ['cred_nope'] }, 'credential_refs.0'],
    ['credential_refs a number', { name: 'a', credential_refs: [1] }, 'credential_refs.0'],
    ['metadata an array', { name: 'a', metadata: [] }, 'metadata'],
    ['metadata over 16 KiB', { name: 'a', metadata: { big: long(17_000) } }, 'metadata'],
    ['an unknown field', { name: 'a', status: 'suspended' }, 'body'],
  ],
  'PATCH /v1/agents/{id}': [
    ['an empty patch', {}, 'body'],
    ['name null', { name: null }, 'name'],
    ['credential_refs unknown', { credential_refs: ['cred_nope'] }, 'credential_refs.0'],
    ['version given', { version: 7 }, 'body'],
  ],
  'PUT /v1/pricing/{model}': [
    ['input missing', { ...price, input_per_mtok_usd: undefined }, 'input_per_mtok_usd'],
    ['input negative', { ...price, input_per_mtok_usd: -1 }, 'input_per_mtok_usd'],
    ['input a string', { ...price, input_per_mtok_usd: '1' }, 'input_per_mtok_usd'],
    ['output over 100000', { ...price, output_per_mtok_usd: 100_001 }, 'output_per_mtok_usd'],
    ['output with seven decimals', { ...price, output_per_mtok_usd: 0.0000001 }, 'output_per_mtok_usd'],
    ['an unknown field', { ...price, currency: 'EUR' }, 'body'],
  ],
  'POST /v1/sessions': [
    ['max_cost_usd missing', { ...session, max_cost_usd: undefined }, 'max_cost_usd'],
    ['max_cost_usd 0', { ...session, max_cost_usd: 0 }, 'max_cost_usd'],
    ['max_cost_usd negative', { ...session, max_cost_usd: -1 }, 'max_cost_usd'],
    ['max_cost_usd a string', { ...session, max_cost_usd: '1' }, 'max_cost_usd'],
    ['max_cost_usd with seven decimals', { ...session, max_cost_usd: 0.0000001 }, 'max_cost_usd'],
    ['max_cost_usd above the org cap', { ...session, max_cost_usd: 1000.01 }, 'max_cost_usd'],
    ['max_calls 0', { ...session, max_calls: 0 }, 'max_calls'],
    ['max_calls 1.5', { ...session, max_calls: 1.5 }, 'max_calls'],
    ['max_calls a string', { ...session, max_calls: '5' }, 'max_calls'],
    ['max_tokens 0', { ...session, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens -5', { ...session, max_tokens: -5 }, 'max_tokens'],
    ['ttl_seconds 59', { ...session, ttl_seconds: 59 }, 'ttl_seconds'],
    ['ttl_seconds 604801', { ...session, ttl_seconds: 604_801 }, 'ttl_seconds'],
    ['ttl_seconds 1.5', { ...session, ttl_seconds: 1.5 }, 'ttl_seconds'],
    ['agent_id a number', { ...session, agent_id: 7 }, 'agent_id'],
    ['agent_id empty', { ...session, agent_id: '' }, 'agent_id'],
    ['metadata an array', { ...session, metadata: ['a'] }, 'metadata'],
    ['metadata over 16 KiB', { ...session, metadata: { big: long(17_000) } }, 'metadata'],
    ['an unknown field', { ...session, max_cost: 5 }, 'body'],
  ],
  'POST /v1/llm/invoke': [
    ['session_id missing', { ...call, session_id: undefined }, 'session_id'],
    ['session_id a number', { ...call, session_id: 42 }, 'session_id'],
    ['session_id empty', { ...call, session_id: '' }, 'session_id'],
    ['model missing', { ...call, model: undefined }, 'model'],
    ['model with a space', { ...call, model: 'bad model' }, 'model'],
    ['model too long', { ...call, model: long(201) }, 'model'],
    ['messages missing', { ...call, messages: undefined }, 'messages'],
    ['messages empty', { ...call, messages: [] }, 'messages'],
    ['messages not an array', { ...call, messages: hello }, 'messages'],
    ['a message with role wizard', { ...call, messages: [{ ...hello, role: 'wizard' }] }, 'messages.0.role'],
    ['a message without content', { ...call, messages: [{ role: 'user' }] }, 'messages.0.content'],
    [
      'a message with content a number',
      { ...call, messages: [{ ...hello, content: 5 }] },
      'messages.0.content',
    ],
    [
      'a message with an unknown field',
      { ...call, messages: [hello, { ...hello, name: 'x' }] },
      'messages.1',
    ],
    ['max_tokens missing', { ...call, max_tokens: undefined }, 'max_tokens'],
    ['max_tokens 0', { ...call, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens 1.5', { ...call, max_tokens: 1.5 }, 'max_tokens'],
    ['max_tokens a string', { ...call, max_tokens: '16' }, 'max_tokens'],
    ['max_tokens 1000001', { ...call, max_tokens: 1_000_001 }, 'max_tokens'],
    ['temperature -0.1', { ...call, temperature: -0.1 }, 'temperature'],
    ['temperature 2.1', { ...call, temperature: 2.1 }, 'temperature'],
    ['temperature a string', { ...call, temperature: '1' }, 'temperature'],
    ['credential_ref a number', { ...call, credential_ref: 1 }, 'credential_ref'],
    ['credential_ref empty', { ...call, credential_ref: '' }, 'credential_ref'],
    ['agent_id empty', { ...call, agent_id: '' }, 'agent_id'],
    ['tool without a name', { ...call, tool: { arguments: {} } }, 'tool.name'],
    ['tool with an unknown field', { ...call, tool: { ...tool, version: '1' } }, 'tool'],
    [
      'tool.arguments over 16 KiB',
      { ...call, tool: { ...tool, arguments: { big: long(17_000) } } },
      'tool.arguments',
    ],
    ['metadata an array', { ...call, metadata: [] }, 'metadata'],
    ['an unknown field', { ...call, stream: true }, 'body'],
    ['more than 256 messages', { ...call, messages: Array.from({ length: 257 }, () => hello) }, 'messages'],
  ],
};

const PUBLIC = new Set(['POST /v1/orgs/signup', 'POST /v1/auth/signup', 'POST /v1/auth/login']);

const bodyCases = Object.entries(BODY_CASES).flatMap(([route, cases]) =>
  cases.map(([label, body, field]) => ({ route, label, body, field })),
);

describe('bad request bodies', () => {
  it.each(bodyCases)(
    '$route with $label -> 400 validation_error on $field',
    async ({ route, body, field }) => {
      const [method, path] = route.split(' ') as [string, string];
      const token = PUBLIC.has(route) ? undefined : org.adminKey;
      const res = await app.http.call<{ error_code: string; details: { path: string; message: string }[] }>(
        method,
        concrete(path),
        { token, body: withSession(body) },
      );
      expect(res.status).toBeLessThan(500);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(res.body.details.map((d) => d.path)).toContain(field);
      expect(res.body.details.every((d) => d.message.length > 0)).toBe(true);
    },
  );

  it.each([
    ['a JSON array', '[]'],
    ['a JSON string', '"hello"'],
    ['JSON null', 'null'],
  ])('POST /v1/keys with %s as the body -> 400 validation_error', async (_label, raw) => {
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      rawBody: raw,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
  });

  it('POST /v1/keys with no body at all -> 400 validation_error', async () => {
    const res = await app.http.call('POST', '/v1/keys', { token: org.adminKey });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
  });
});

describe('bad query strings', () => {
  it.each([
    '/v1/keys?limit=0',
    '/v1/keys?limit=101',
    '/v1/keys?limit=abc',
    '/v1/keys?cursor=not-a-cursor',
    '/v1/keys?unknown=1',
    '/v1/audit?limit=0',
    '/v1/audit?since=yesterday',
    '/v1/audit?until=2026-13-45T00:00:00Z',
    '/v1/audit?cursor=eyJwIjoiYSJ9',
    `/v1/audit?action=${long(101)}`,
    '/v1/audit?since=2026-11-29T04:00:00Z&until=2026-11-29T03:00:00Z',
    '/v1/audit?since=2026-11-29T04:00:00Z&until=2026-11-29T04:00:00Z',
    '/v1/acs/decisions?since=2026-11-29T04:00:00Z&until=2026-11-29T03:00:00%2B00:00',
    '/v1/credentials?limit=0',
    '/v1/credentials?cursor=nope',
    '/v1/agents?limit=1000',
    '/v1/agents?status=active',
    '/v1/llm/invocations?limit=0',
    '/v1/llm/invocations?status=flying',
    '/v1/llm/invocations?cursor=nope',
    '/v1/llm/invocations?unknown=1',
    '/v1/sessions?status=sleeping',
    '/v1/sessions?limit=101',
  ])('GET %s -> 400 validation_error', async (path) => {
    const res = await app.http.get<{ error_code: string; details: unknown[] }>(path, org.adminKey);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(res.body.details.length).toBeGreaterThan(0);
  });

  it.each(['31', '-1', 'abc', '1.5'])(
    'POST /v1/llm/invoke?wait=%s with a valid body -> 400 validation_error on wait, nothing queued',
    async (wait) => {
      const res = await app.http.post<{
        error_code: string;
        details: { path: string }[];
        request_id: string;
      }>(`/v1/llm/invoke?wait=${wait}`, withSession(call), org.adminKey);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(res.body.details.map((d) => d.path)).toContain('wait');
      const rows = await app.infra.knex('invocations').where({ request_id: res.body.request_id });
      expect(rows).toEqual([]);
    },
  );

  it.each(['31', '-1', 'abc'])(
    'GET /v1/llm/invocations/inv_x?wait=%s -> 400 on wait, before the lookup',
    async (wait) => {
      const res = await app.http.get<{ error_code: string; details: { path: string }[] }>(
        `/v1/llm/invocations/inv_x?wait=${wait}`,
        org.adminKey,
      );
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(res.body.details.map((d) => d.path)).toContain('wait');
    },
  );

  it('the valid bodies these cases start from are accepted (the 400s come from the field changed)', async () => {
    const opened = await app.http.post('/v1/sessions', session, org.adminKey);
    expect(opened.status).toBe(201);
    const queued = await app.http.post<{ status: string }>('/v1/llm/invoke', withSession(call), org.adminKey);
    expect(queued.status).toBe(202);
    expect(queued.body.status).toBe('queued');
    const withTool = await app.http.post('/v1/llm/invoke', withSession({ ...call, tool }), org.adminKey);
    expect(withTool.status).toBe(202);
    const at256 = withSession({ ...call, messages: Array.from({ length: 256 }, () => hello) });
    expect((await app.http.post('/v1/llm/invoke', at256, org.adminKey)).status).toBe(202);
    const atLimits = await app.http.post(
      '/v1/sessions',
      { ...session, max_cost_usd: 1000, ttl_seconds: 604_800, max_calls: 1, max_tokens: 1 },
      org.adminKey,
    );
    expect(atLimits.status).toBe(201);
  });
});

type HostileCase = [label: string, method: string, path: string, body: unknown, field: string];

/** A forged cursor: base64url of `{"p": <json>}` with any JSON text as the position. */
const cursorOf = (json: string) => Buffer.from(`{"p":${json}}`).toString('base64url');

/**
 * Issue 9, item 7: values a fuzz run turned into 500s. Each must be a 400 validation_error naming
 * the field, and leave nothing stored. Path and query strings are percent-encoded by hand.
 */
const HOSTILE_CASES: HostileCase[] = [
  ['a NUL in a key name', 'POST', '/v1/keys', { ...key, name: 'a\u0000b' }, 'name'],
  [
    'a NUL in an org name at signup',
    'POST',
    '/v1/orgs/signup',
    { ...signup, org_name: 'O\u0000' },
    'org_name',
  ],
  ['a NUL in a user name at signup', 'POST', '/v1/auth/signup', { ...user, name: 'x\u0000' }, 'name'],
  ['a NUL in an agent name', 'POST', '/v1/agents', { name: '\u0000' }, 'name'],
  [
    'a NUL in a metadata value',
    'POST',
    '/v1/agents',
    { name: 'a', metadata: { k: 'v\u0000' } },
    'metadata.k',
  ],
  ['a NUL in a metadata key', 'POST', '/v1/sessions', { ...session, metadata: { 'k\u0000': 1 } }, 'metadata'],
  [
    'a NUL in message content',
    'POST',
    '/v1/llm/invoke',
    { ...call, messages: [{ ...hello, content: 'hi\u0000' }] },
    'messages.0.content',
  ],
  ['a NUL in a path id', 'DELETE', '/v1/keys/a%00b', undefined, 'id'],
  ['a NUL in a query value', 'GET', '/v1/audit?action=%00', undefined, 'action'],
  ['a lone surrogate in an agent name', 'POST', '/v1/agents', { name: 'a\ud800' }, 'name'],
  ['a lone surrogate in a credential name', 'POST', '/v1/credentials', { ...cred, name: 'c\udfff' }, 'name'],
  [
    'a lone surrogate in a metadata key',
    'POST',
    '/v1/agents',
    { name: 'a', metadata: { '\udc00k': 1 } },
    'metadata',
  ],
  [
    'a lone surrogate in message content',
    'POST',
    '/v1/llm/invoke',
    { ...call, messages: [{ ...hello, content: '\ud83d' }] },
    'messages.0.content',
  ],
  [
    'metadata nested 5,000 levels',
    'POST',
    '/v1/agents',
    { name: 'a', metadata: { k: deepArray(5000) } },
    'metadata.k',
  ],
  [
    'metadata nested 2,000 levels',
    'POST',
    '/v1/sessions',
    { ...session, metadata: { k: deepObject(2000) } },
    'metadata.k',
  ],
  [
    'tool.arguments nested 5,000 levels',
    'POST',
    '/v1/llm/invoke',
    { ...call, tool: { ...tool, arguments: deepArray(5000) } },
    'tool.arguments',
  ],
  [
    '1e400 in agent metadata',
    'POST',
    '/v1/agents',
    { name: 'a', metadata: { n: rawNumber('1e400') } },
    'metadata.n',
  ],
  [
    '-1e400 as max_tokens',
    'POST',
    '/v1/llm/invoke',
    { ...call, max_tokens: rawNumber('-1e400') },
    'max_tokens',
  ],
  ['max_cost_usd 5e-324', 'POST', '/v1/sessions', { ...session, max_cost_usd: 5e-324 }, 'max_cost_usd'],
  ['max_cost_usd 1e-13', 'POST', '/v1/sessions', { ...session, max_cost_usd: 1e-13 }, 'max_cost_usd'],
  [
    'a price of 5e-324',
    'PUT',
    '/v1/pricing/my-model',
    { ...price, input_per_mtok_usd: 5e-324 },
    'input_per_mtok_usd',
  ],
  ['a forged cursor holding a NUL', 'GET', `/v1/keys?cursor=${cursorOf('"\\u0000"')}`, undefined, 'cursor'],
  ['a forged cursor holding 1e400', 'GET', `/v1/audit?cursor=${cursorOf('1e400')}`, undefined, 'cursor'],
  ['a forged cursor holding 1.5', 'GET', `/v1/audit?cursor=${cursorOf('1.5')}`, undefined, 'cursor'],
  ['a forged cursor holding 1e308', 'GET', `/v1/audit?cursor=${cursorOf('1e308')}`, undefined, 'cursor'],
  [
    'a forged time cursor before year 0 (a time PostgreSQL cannot hold)',
    'GET',
    `/v1/acs/decisions?cursor=${cursorOf('"-004714-11-23T00:00:00.000Z|dec_x"')}`,
    undefined,
    'cursor',
  ],
  [
    'a forged time cursor past year 9999',
    'GET',
    `/v1/approvals?cursor=${cursorOf('"+275760-09-13T00:00:00.000Z|apr_x"')}`,
    undefined,
    'cursor',
  ],
  [
    'a forged cursor past a safe integer',
    'GET',
    `/v1/audit?cursor=${cursorOf('99999999999999999999')}`,
    undefined,
    'cursor',
  ],
];

describe('unstorable input: 400 validation_error naming the field, nothing stored', () => {
  it.each(HOSTILE_CASES.map(([label, method, path, body, field]) => ({ label, method, path, body, field })))(
    '$method $path with $label -> 400 on $field',
    async ({ method, path, body, field }) => {
      const before = await storedRows(app.infra.knex);
      const route = `${method} ${path.split('?')[0]}`;
      const token = PUBLIC.has(route) ? undefined : org.adminKey;
      const res = await callRaw(app.http, method, path, withSession(body), token);
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('validation_error');
      expect(namesField(res, field)).toBe(true);
      expect(await storedRows(app.infra.knex)).toEqual(before);
      expect(await auditOf(app.infra.knex, res.body.request_id)).toEqual([]);
    },
  );

  it(`accepts a body nested exactly ${MAX_BODY_DEPTH} levels, and refuses one level more`, async () => {
    // The body is level 1 and metadata level 2, so metadata.k's arrays are levels 3 and on.
    const at = await callRaw(
      app.http,
      'POST',
      '/v1/agents',
      { name: 'a', metadata: { k: deepArray(MAX_BODY_DEPTH - 2) } },
      org.adminKey,
    );
    expect(at.status).toBe(201);
    const past = await callRaw(
      app.http,
      'POST',
      '/v1/agents',
      { name: 'a', metadata: { k: deepArray(MAX_BODY_DEPTH - 1) } },
      org.adminKey,
    );
    expect(past.status).toBe(400);
    expect(past.body.details?.[0]?.message).toContain(`deeper than ${MAX_BODY_DEPTH} levels`);
  });

  it('accepts well-formed surrogate pairs (emoji) in names, metadata keys and content', async () => {
    const agent = await app.http.post(
      '/v1/agents',
      { name: 'bot 🤖', metadata: { '🔑': '😀' } },
      org.adminKey,
    );
    expect(agent.status).toBe(201);
    expect(agent.body).toMatchObject({ name: 'bot 🤖', metadata: { '🔑': '😀' } });
    const content = { ...call, messages: [{ ...hello, content: '𝄞 music' }] };
    expect((await app.http.post('/v1/llm/invoke', withSession(content), org.adminKey)).status).toBe(202);
  });

  it('is documented in the OpenAPI document: its info and the metadata and tool.arguments fields', async () => {
    const doc = (await app.http.get('/v1/openapi.json')).body as {
      info: { description: string };
      paths: Record<
        string,
        Record<string, { requestBody: { content: Record<string, { schema: unknown }> } }>
      >;
    };
    expect(doc.info.description).toContain(UNSTORABLE_INPUT_RULE);
    const invoke = JSON.stringify(doc.paths['/v1/llm/invoke']?.post?.requestBody.content['application/json']);
    expect(invoke).toContain(`the body nested at most ${MAX_BODY_DEPTH} levels`);
    expect(invoke).toContain(`the body nests at most ${MAX_BODY_DEPTH} levels`);
  });

  it('accepts the smallest money amount, one micro-dollar, and a price of 0', async () => {
    expect((await app.http.post('/v1/sessions', { max_cost_usd: 0.000001 }, org.adminKey)).status).toBe(201);
    const free = await app.http.call('PUT', '/v1/pricing/free-model', {
      token: org.adminKey,
      body: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 },
    });
    expect(free.status).toBe(200);
  });
});

describe('bad path parameters', () => {
  it.each(['bad%20model', '-leading-dash', long(201)])(
    'PUT /v1/pricing/%s -> 400 on path.model',
    async (model) => {
      const res = await app.http.call<{ error_code: string; details: { path: string }[] }>(
        'PUT',
        `/v1/pricing/${model}`,
        { token: org.adminKey, body: price },
      );
      expect(res.status).toBe(400);
      expect(res.body.details.map((d) => d.path)).toContain('model');
    },
  );
});

describe('HTTP conventions', () => {
  it('tells caches to keep no answer of the API, errors included: a new key carries its secret once (QA)', async () => {
    const minted = await app.http.post('/v1/keys', { name: 'cached?', scopes: ['read'] }, org.adminKey);
    expect(minted.status).toBe(201);
    expect(minted.headers.get('cache-control')).toBe('no-store');
    const missing = await app.http.get('/v1/keys/key_nope', org.adminKey);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).toBe('no-store');
    expect((await app.http.get('/v1/keys')).headers.get('cache-control')).toBe('no-store');
    // The router takes the path in any case; so does this (QA).
    const upper = await app.http.post('/V1/keys', { name: 'upper', scopes: ['read'] }, org.adminKey);
    expect(upper.status).toBe(201);
    expect(upper.headers.get('cache-control')).toBe('no-store');
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      rawBody: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('invalid_json');
  });

  it('answers a body that is not UTF-8 with 400 invalid_json, and creates nothing (QA: a key named "\ufffd\ufffd")', async () => {
    const before = await app.infra.knex('api_keys').count('* as n').first();
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      rawBody: Buffer.concat([
        Buffer.from('{"name":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('","scopes":["read"]}'),
      ]),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'invalid_json', message: expect.stringContaining('UTF-8') });
    expect(await app.infra.knex('api_keys').count('* as n').first()).toEqual(before);
    // UTF-8 beyond ASCII is taken as it is.
    const named = await app.http.post<{ name: string }>(
      '/v1/keys',
      { name: 'Grüße 🔑', scopes: ['read'] },
      org.adminKey,
    );
    expect(named.body.name).toBe('Grüße 🔑');
  });

  it('answers a body that is not JSON with 415 unsupported_media_type', async () => {
    const res = await app.http.call('POST', '/v1/auth/login', {
      rawBody: 'email=a',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error_code).toBe('unsupported_media_type');
  });

  it.each(['gzip', 'br', 'deflate, gzip'])(
    'refuses a body sent with Content-Encoding %s as 415 unsupported_media_type, and creates nothing',
    async (encoding) => {
      const before = await app.infra.knex('api_keys').count('* as n').first();
      const res = await app.http.call('POST', '/v1/keys', {
        token: org.adminKey,
        rawBody: JSON.stringify({ name: 'compressed', scopes: ['read'] }),
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      });
      expect(res.status).toBe(415);
      expect(res.body).toMatchObject({
        error_code: 'unsupported_media_type',
        message: expect.stringContaining('Content-Encoding'),
      });
      expect(await app.infra.knex('api_keys').count('* as n').first()).toEqual(before);
    },
  );

  it('refuses a key named twice in one object with 400 validation_error naming it, and creates nothing', async () => {
    const before = await app.infra.knex('api_keys').count('* as n').first();
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      // JSON.parse keeps the last: a reader of the first would see a read-only key minted.
      rawBody: '{"name":"dup","scopes":["read"],"scopes":["org:admin"]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error_code: 'validation_error',
      message: expect.stringContaining('"scopes" appears twice'),
    });
    expect(await app.infra.knex('api_keys').count('* as n').first()).toEqual(before);
  });

  it('refuses a key named __proto__ with 400 validation_error, rather than dropping it unseen (QA)', async () => {
    const res = await app.http.call('POST', '/v1/agents', {
      token: org.adminKey,
      rawBody: '{"name":"proto","metadata":{"__proto__":{"role":"admin"}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error_code: 'validation_error',
      message: expect.stringContaining('__proto__'),
    });
  });

  it.each(['utf-16', 'iso-8859-1', '"UTF-16LE"'])(
    'refuses a JSON body in charset %s as 415 unsupported_media_type',
    async (charset) => {
      const res = await app.http.call('POST', '/v1/keys', {
        token: org.adminKey,
        rawBody: JSON.stringify({ name: 'charset', scopes: ['read'] }),
        headers: { 'content-type': `application/json; charset=${charset}` },
      });
      expect(res.status).toBe(415);
      expect(res.body).toMatchObject({
        error_code: 'unsupported_media_type',
        message: expect.stringContaining('UTF-8'),
      });
    },
  );

  it.each(['utf-8', 'UTF-8', 'utf8'])('accepts a JSON body in charset %s', async (charset) => {
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      rawBody: JSON.stringify({ name: 'utf8', scopes: ['read'] }),
      headers: { 'content-type': `application/json; charset=${charset}` },
    });
    expect(res.status).toBe(201);
  });

  it('accepts Content-Encoding: identity', async () => {
    const res = await app.http.call('POST', '/v1/keys', {
      token: org.adminKey,
      rawBody: JSON.stringify({ name: 'plain', scopes: ['read'] }),
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    });
    expect(res.status).toBe(201);
  });

  it('answers a body over 1 MiB with 413 payload_too_large and the limit', async () => {
    const res = await app.http.post('/v1/keys', { name: long(1024 * 1024), scopes: ['read'] }, org.adminKey);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error_code: 'payload_too_large', limit_bytes: 1048576 });
  });

  it('answers a URL past the header limit with 431 headers_too_large in the error shape', async () => {
    const res = await fetch(`${app.http.baseUrl}/v1/approvals/${'b'.repeat(20_000)}`, {
      headers: { authorization: `Bearer ${org.adminKey}` },
    });
    expect(res.status).toBe(431);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      error_code: 'headers_too_large',
      message: expect.stringContaining('bytes'),
      request_id: res.headers.get('x-request-id'),
      limit_bytes: expect.any(Number),
    });
  });

  it('answers a request that is not HTTP with 400 malformed_request in the error shape', async () => {
    const { port } = new URL(app.http.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(body).toMatchObject({
      error_code: 'malformed_request',
      request_id: expect.stringMatching(/^req_/),
    });
  });

  it('answers an unknown route with 404 not_found in the error shape', async () => {
    const res = await app.http.get('/v1/nothing-here', org.adminKey);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      error_code: 'not_found',
      message: expect.any(String),
      request_id: expect.any(String),
    });
  });

  it('answers a known path with a wrong method with 405 method_not_allowed', async () => {
    const res = await app.http.call('PUT', '/v1/keys', { token: org.adminKey, body: {} });
    expect(res.status).toBe(405);
    expect(res.body.error_code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('puts X-Request-Id on every response and echoes the one the client sent', async () => {
    expect((await app.http.get('/health')).headers.get('x-request-id')).toMatch(/^req_/);
    const res = await app.http.call('GET', '/v1/nothing', { headers: { 'x-request-id': 'client-id-123' } });
    expect(res.headers.get('x-request-id')).toBe('client-id-123');
    expect(res.body.request_id).toBe('client-id-123');
  });

  it('answers GET, PUT and DELETE /v1/policies/preview with 405 Allow: POST, not as a policy id', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await app.http.call(method, '/v1/policies/preview', {
        token: org.adminKey,
        ...(method === 'PUT' ? { body: {} } : {}),
      });
      expect([method, res.status, res.body.error_code]).toEqual([method, 405, 'method_not_allowed']);
      expect(res.headers.get('allow')).toBe('POST');
    }
    // The parameter route still answers every other id (the literal path's case counts), and
    // POST reaches the preview.
    expect((await app.http.get('/v1/policies/pol_nope', org.adminKey)).status).toBe(404);
    expect((await app.http.get('/v1/policies/PREVIEW', org.adminKey)).body.error_code).toBe('not_found');
    const preview = await app.http.post('/v1/policies/preview', {}, org.adminKey);
    expect([preview.status, preview.body.error_code]).toEqual([400, 'validation_error']);
  });

  it('echoes any X-Request-Id of 1..128 visible ASCII characters and replaces any other', async () => {
    const sendId = (id: string) => app.http.call('GET', '/v1/nothing', { headers: { 'x-request-id': id } });
    for (const id of ['a', 'trace/4bf92f35+00f067aa=', '{"span":1}', '~!@#$%^&*()[]<>?', 'x'.repeat(128)]) {
      const res = await sendId(id);
      expect([id, res.headers.get('x-request-id'), res.body.request_id]).toEqual([id, id, id]);
    }
    for (const id of ['two words', 'x'.repeat(129), 'caf\u00e9', 'tab\there']) {
      const res = await sendId(id);
      const made = res.headers.get('x-request-id');
      expect([id, made]).toEqual([id, expect.stringMatching(/^req_/)]);
      expect(res.body.request_id).toBe(made);
    }
    const empty = await sendId('');
    expect(empty.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('refuses a second signup with the same email as 409 conflict, not 5xx', async () => {
    const email = uniqueEmail();
    await app.http.post('/v1/orgs/signup', { ...signup, email });
    const res = await app.http.post('/v1/orgs/signup', { ...signup, email });
    expect(res.status).toBe(409);
  });
});
