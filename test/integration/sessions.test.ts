import { mintKey, signupOrg } from '../support/factories';
import {
  eventually,
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
  type SessionBody,
  expireSession,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

interface ErrorBody {
  error_code: string;
  message: string;
  request_id: string;
  details?: { path: string; message: string }[];
  required_scope?: string;
  session_id?: string;
  status?: string;
}

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

interface DecisionBody {
  id: string;
  invocation_id: string | null;
  session_id: string | null;
  agent_id: string | null;
  verdict: string;
  reasons: unknown[];
  evaluated_at: string;
}

type HistoryItem =
  | { type: 'invocation'; at: string; invocation: InvocationBody }
  | { type: 'decision'; at: string; decision: DecisionBody };

interface AuditEntry {
  id: string;
  action: string;
  actor: { type: string; id: string };
  resource: { type: string; id: string };
  details: Record<string, unknown>;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const SESSION_KEYS = [
  'agent_id',
  'closed_at',
  'created_at',
  'expires_at',
  'id',
  'limits',
  'metadata',
  'status',
  'usage',
];

let app: TestApp;
let setup: InvokeSetup;
let admin: string;

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http);
  admin = setup.org.adminKey;
});
afterAll(() => app.close());

const getSession = (id: string, token = admin) => app.http.get<SessionBody>(`/v1/sessions/${id}`, token);

/** Moves a session's expiry into the past, as if its ttl had run out (no sweeper involved). */

const sessionRowStatus = async (knexApp: TestApp, id: string): Promise<string> =>
  ((await knexApp.infra.knex('sessions').where({ id }).first()) as { status: string }).status;

/** Every page of a session list, following next_cursor. */
async function listAll(query: string, token: string, limit = 2): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const path: string = `/v1/sessions?limit=${limit}${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await app.http.get<Page<SessionBody>>(path, token);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...res.body.data.map((s) => s.id));
    cursor = res.body.next_cursor;
    if (!cursor) return ids;
  }
  throw new Error('paging did not end');
}

async function auditOf(token: string, query: string): Promise<AuditEntry[]> {
  const res = await app.http.get<Page<AuditEntry>>(`/v1/audit?limit=100&${query}`, token);
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('POST /v1/sessions', () => {
  it('answers 201 with exactly the Session shape, a ses_ id and a default ttl of 3600 s', async () => {
    const before = Date.now();
    const res = await app.http.post<SessionBody>(
      '/v1/sessions',
      { agent_id: setup.agentId, max_cost_usd: 2.5, metadata: { team: 'search', run: 7 } },
      admin,
    );
    const after = Date.now();
    expect(res.status).toBe(201);
    const s = res.body;
    expect(Object.keys(s).sort()).toEqual(SESSION_KEYS);
    expect(s.id).toMatch(/^ses_[a-z0-9]+$/);
    expect(s).toMatchObject({
      agent_id: setup.agentId,
      status: 'open',
      metadata: { team: 'search', run: 7 },
      closed_at: null,
    });
    expect(s.limits).toEqual({ max_cost_usd: 2.5, max_calls: null, max_tokens: null });
    expect(s.usage).toEqual({
      cost_usd: 0,
      reserved_usd: 0,
      calls: 0,
      input_tokens: 0,
      output_tokens: 0,
    });
    expect(s.created_at).toMatch(ISO_UTC);
    expect(s.expires_at).toMatch(ISO_UTC);
    const created = Date.parse(s.created_at);
    expect(created).toBeGreaterThanOrEqual(before - 1000);
    expect(created).toBeLessThanOrEqual(after + 1000);
    expect(Date.parse(s.expires_at) - created).toBe(3600 * 1000);

    const fetched = await getSession(s.id);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(s);
  });

  it('honours ttl_seconds, max_calls and max_tokens; agent_id and metadata are optional', async () => {
    const s = await openSession(app.http, admin, {
      max_cost_usd: 1,
      max_calls: 3,
      max_tokens: 5000,
      ttl_seconds: 120,
    });
    expect(s.agent_id).toBeNull();
    expect(s.metadata).toEqual({});
    expect(s.limits).toEqual({ max_cost_usd: 1, max_calls: 3, max_tokens: 5000 });
    expect(Date.parse(s.expires_at) - Date.parse(s.created_at)).toBe(120 * 1000);
  });

  it('accepts max_cost_usd equal to the org cap (1000) and refuses above it with 400 on max_cost_usd', async () => {
    const atCap = await app.http.post<SessionBody>('/v1/sessions', { max_cost_usd: 1000 }, admin);
    expect(atCap.status).toBe(201);
    expect(atCap.body.limits.max_cost_usd).toBe(1000);

    const res = await app.http.post<ErrorBody>('/v1/sessions', { max_cost_usd: 1000.01 }, admin);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(res.body.details?.map((d) => d.path)).toEqual(['max_cost_usd']);
  });

  it.each([
    [{ max_cost_usd: 0 }, 'max_cost_usd'],
    [{ max_cost_usd: -1 }, 'max_cost_usd'],
    [{}, 'max_cost_usd'],
    [{ max_cost_usd: 1, ttl_seconds: 59 }, 'ttl_seconds'],
    [{ max_cost_usd: 1, ttl_seconds: 604_801 }, 'ttl_seconds'],
    [{ max_cost_usd: 1, max_calls: 0 }, 'max_calls'],
    [{ max_cost_usd: 1, max_tokens: 1.5 }, 'max_tokens'],
  ])('refuses %j with 400 validation_error on %s', async (body, path) => {
    const res = await app.http.post<ErrorBody>('/v1/sessions', body, admin);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(res.body.details?.map((d) => d.path)).toContain(path);
  });

  it('answers 404 not_found for an unknown agent, or another org’s, and creates nothing', async () => {
    const org = await signupOrg(app.http);
    const other = await setUpInvoking(app.http);
    for (const agentId of ['agt_doesnotexist000000000', other.agentId]) {
      const res = await app.http.post<ErrorBody>(
        '/v1/sessions',
        { agent_id: agentId, max_cost_usd: 1 },
        org.adminKey,
      );
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('not_found');
    }
    const rows = await app.infra.knex('sessions').where({ org_id: org.orgId });
    expect(rows).toEqual([]);
  });

  it('answers 409 invalid_state for a suspended agent, and opens sessions again once it is resumed', async () => {
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'to-suspend', allowed_models: ['mock-1'], credential_refs: [setup.credentialRef] },
      admin,
    );
    expect(agent.status).toBe(201);
    const suspended = await app.http.post(`/v1/agents/${agent.body.id}/suspend`, undefined, admin);
    expect(suspended.status).toBe(200);

    const res = await app.http.post<ErrorBody>(
      '/v1/sessions',
      { agent_id: agent.body.id, max_cost_usd: 1 },
      admin,
    );
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'invalid_state', status: 'suspended' });
    expect(await app.infra.knex('sessions').where({ agent_id: agent.body.id })).toEqual([]);

    const resumed = await app.http.post(`/v1/agents/${agent.body.id}/resume`, undefined, admin);
    expect(resumed.status).toBe(200);
    const s = await openSession(app.http, admin, { agent_id: agent.body.id, max_cost_usd: 1 });
    expect(s.agent_id).toBe(agent.body.id);
  });
});

describe('GET /v1/sessions', () => {
  let org: InvokeSetup;
  let open1: SessionBody;
  let closed: SessionBody;
  let expired: SessionBody;
  let open2: SessionBody;

  beforeAll(async () => {
    org = await setUpInvoking(app.http);
    const token = org.org.adminKey;
    open1 = await openSession(app.http, token, { max_cost_usd: 1 });
    closed = await openSession(app.http, token, { max_cost_usd: 1 });
    expired = await openSession(app.http, token, { max_cost_usd: 1, agent_id: org.agentId });
    open2 = await openSession(app.http, token, { max_cost_usd: 1 });
    expect((await app.http.post(`/v1/sessions/${closed.id}/close`, undefined, token)).status).toBe(200);
    await expireSession(app, expired.id);
  });

  it('lists newest first, paging with limit and next_cursor without repeats', async () => {
    const token = org.org.adminKey;
    const all = [open2.id, expired.id, closed.id, open1.id];
    expect(await listAll('', token, 2)).toEqual(all);
    expect(await listAll('', token, 1)).toEqual(all);
    expect(await listAll('', token, 3)).toEqual(all);

    const first = await app.http.get<Page<SessionBody>>('/v1/sessions?limit=4', token);
    expect(first.body.data.map((s) => s.id)).toEqual(all);
    expect(first.body.next_cursor).toBeNull();
    expect(first.body.data.map((s) => s.status)).toEqual(['open', 'expired', 'closed', 'open']);

    const byDefault = await app.http.get<Page<SessionBody>>('/v1/sessions', token);
    expect(byDefault.body.data.map((s) => s.id)).toEqual(all);
  });

  it.each([
    ['open', () => [open2.id, open1.id]],
    ['closed', () => [closed.id]],
    ['expired', () => [expired.id]],
  ])('filters ?status=%s', async (status, expected) => {
    const ids = await listAll(`status=${status}`, org.org.adminKey, 1);
    expect(ids).toEqual(expected());
    const res = await app.http.get<Page<SessionBody>>(`/v1/sessions?status=${status}`, org.org.adminKey);
    for (const s of res.body.data) expect(s.status).toBe(status);
  });

  it('filters ?agent_id', async () => {
    expect(await listAll(`agent_id=${org.agentId}`, org.org.adminKey)).toEqual([expired.id]);
  });

  it('refuses a bad status, limit or cursor with 400 validation_error', async () => {
    for (const query of ['status=deleted', 'limit=0', 'limit=101', 'cursor=garbage', 'bogus=1']) {
      const res = await app.http.get<ErrorBody>(`/v1/sessions?${query}`, org.org.adminKey);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.error_code).toBe('validation_error');
    }
  });
});

describe('an open session past its expiry, before any sweep', () => {
  // An app without workers: no sweeper runs, so the row stays 'open' and only time says expired.
  let bare: TestApp;
  let token: string;
  let session: SessionBody;

  beforeAll(async () => {
    bare = await startTestApp();
    const org = await setUpInvoking(bare.http);
    token = org.org.adminKey;
    session = await openSession(bare.http, token, { agent_id: org.agentId, max_cost_usd: 1 });
    await openSession(bare.http, token, { max_cost_usd: 1 });
    await expireSession(bare, session.id);
  });
  afterAll(() => bare.close());

  it('reads as expired in GET /v1/sessions/{id} and in ?status=expired, not in ?status=open', async () => {
    const res = await bare.http.get<SessionBody>(`/v1/sessions/${session.id}`, token);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('expired');
    expect(res.body.closed_at).toBeNull();

    const expired = await bare.http.get<Page<SessionBody>>('/v1/sessions?status=expired', token);
    expect(expired.body.data.map((s) => [s.id, s.status])).toEqual([[session.id, 'expired']]);
    const open = await bare.http.get<Page<SessionBody>>('/v1/sessions?status=open', token);
    expect(open.body.data.map((s) => s.id)).not.toContain(session.id);
    expect(open.body.data).toHaveLength(1);
    const all = await bare.http.get<Page<SessionBody>>('/v1/sessions', token);
    expect(all.body.data.find((s) => s.id === session.id)?.status).toBe('expired');

    expect(await sessionRowStatus(bare, session.id)).toBe('open');
  });

  it('refuses invokes with 409 session_not_open (status expired) and records no invocation', async () => {
    const res = await bare.http.post<ErrorBody>('/v1/llm/invoke', invokeBody(session.id), token);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      error_code: 'session_not_open',
      session_id: session.id,
      status: 'expired',
    });
    expect(await bare.infra.knex('invocations').where({ session_id: session.id })).toEqual([]);
  });

  it('cannot be closed: 409 invalid_state with status expired', async () => {
    const res = await bare.http.post<ErrorBody>(`/v1/sessions/${session.id}/close`, undefined, token);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'invalid_state', status: 'expired' });
    expect(await sessionRowStatus(bare, session.id)).toBe('open');
  });
});

describe('the sessions.expire sweeper', () => {
  it('records an expired session as expired, with a session.expired audit entry by the system', async () => {
    const org = await setUpInvoking(app.http);
    const token = org.org.adminKey;
    const due = await openSession(app.http, token, { max_cost_usd: 1 });
    const notDue = await openSession(app.http, token, { max_cost_usd: 1 });
    await expireSession(app, due.id);

    await app.infra.queues.enqueue('sessions.expire', {});
    await eventually(async () => (await sessionRowStatus(app, due.id)) === 'expired');
    expect(await sessionRowStatus(app, notDue.id)).toBe('open');

    const res = await getSession(due.id, token);
    expect(res.body.status).toBe('expired');
    expect(res.body.closed_at).toBeNull();

    const entries = await eventually(async () => {
      const found = await auditOf(token, 'action=session.expired');
      return found.length > 0 ? found : null;
    });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'session.expired',
      actor: { type: 'system' },
      resource: { type: 'session', id: due.id },
    });

    const invoked = await app.http.post<ErrorBody>('/v1/llm/invoke', invokeBody(due.id), token);
    expect(invoked.status).toBe(409);
    expect(invoked.body).toMatchObject({
      error_code: 'session_not_open',
      session_id: due.id,
      status: 'expired',
    });
  });
});

describe('POST /v1/sessions/{id}/close', () => {
  it('answers 200 with status closed and closed_at, then 409 invalid_state when closed again', async () => {
    const s = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 3 });
    const before = Date.now();
    const res = await app.http.post<SessionBody>(`/v1/sessions/${s.id}/close`, undefined, admin);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(SESSION_KEYS);
    expect(res.body).toMatchObject({
      id: s.id,
      status: 'closed',
      agent_id: setup.agentId,
      limits: s.limits,
      created_at: s.created_at,
      expires_at: s.expires_at,
    });
    expect(res.body.closed_at).toMatch(ISO_UTC);
    expect(Date.parse(res.body.closed_at ?? '')).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(res.body.closed_at ?? '')).toBeLessThanOrEqual(Date.now() + 1000);
    expect((await getSession(s.id)).body).toEqual(res.body);

    const again = await app.http.post<ErrorBody>(`/v1/sessions/${s.id}/close`, undefined, admin);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'invalid_state', status: 'closed' });
    expect((await getSession(s.id)).body.closed_at).toBe(res.body.closed_at);
  });

  it('refuses invokes in a closed session with 409 session_not_open (status closed)', async () => {
    const s = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 3 });
    const ok = await invoke(app.http, admin, invokeBody(s.id), 10);
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('succeeded');
    await app.http.post(`/v1/sessions/${s.id}/close`, undefined, admin);

    const res = await app.http.post<ErrorBody>('/v1/llm/invoke', invokeBody(s.id), admin);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'session_not_open', session_id: s.id, status: 'closed' });
    const rows = await app.infra.knex('invocations').where({ session_id: s.id });
    expect(rows).toHaveLength(1);
  });

  it('answers 404 not_found for an unknown session', async () => {
    for (const [method, path] of [
      ['POST', '/v1/sessions/ses_doesnotexist0000000000/close'],
      ['GET', '/v1/sessions/ses_doesnotexist0000000000'],
      ['GET', '/v1/sessions/ses_doesnotexist0000000000/history'],
    ] as const) {
      const res = await app.http.call<ErrorBody>(method, path, { token: admin });
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.body.error_code).toBe('not_found');
    }
    const res = await app.http.post<ErrorBody>(
      '/v1/llm/invoke',
      invokeBody('ses_doesnotexist0000000000'),
      admin,
    );
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('not_found');
  });
});

describe('session audit entries', () => {
  it('writes session.opened and session.closed with the acting key', async () => {
    const org = await signupOrg(app.http);
    const s = await openSession(app.http, org.adminKey, { max_cost_usd: 4 });
    await app.http.post(`/v1/sessions/${s.id}/close`, undefined, org.adminKey);

    const entries = await eventually(async () => {
      const found = await auditOf(org.adminKey, `resource_id=${s.id}`);
      return found.length >= 2 ? found : null;
    });
    expect(entries.map((e) => e.action)).toEqual(['session.closed', 'session.opened']);
    for (const e of entries)
      expect(e).toMatchObject({
        actor: { type: 'api_key', id: org.adminKeyId },
        resource: { type: 'session', id: s.id },
      });
    expect(entries[1]?.details).toMatchObject({ max_cost_usd: 4 });

    const opened = await auditOf(org.adminKey, 'action=session.opened');
    expect(opened.map((e) => e.resource.id)).toEqual([s.id]);
    const closed = await auditOf(org.adminKey, 'action=session.closed');
    expect(closed.map((e) => e.resource.id)).toEqual([s.id]);
  });
});

describe('session usage', () => {
  it('equals the sums over its succeeded invocations, with nothing reserved once all finished', async () => {
    const s = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 5 });
    const contents = ['hello', 'a somewhat longer message to count more tokens', 'x'.repeat(301)];
    const invocations: InvocationBody[] = [];
    for (const content of contents) {
      const res = await invoke(
        app.http,
        admin,
        invokeBody(s.id, { messages: [{ role: 'user', content }], max_tokens: 200 }),
        10,
      );
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
      invocations.push(res.body);
    }
    // A fourth one without waiting, finished by polling.
    const queued = await invoke(app.http, admin, invokeBody(s.id), 0);
    expect(queued.status).toBe(202);
    invocations.push(await finished(app.http, admin, queued.body.id));
    expect(invocations.map((i) => i.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);

    // The mock provider's documented counts: "hello" -> 8 input tokens, "mock reply to: hello" -> 5.
    expect(invocations[0]?.usage).toEqual({ input_tokens: 8, output_tokens: 5 });
    for (const i of invocations) {
      const usage = i.usage ?? { input_tokens: NaN, output_tokens: NaN };
      // mock-1 is priced 1 USD per Mtok in and 2 out.
      expect(i.cost_usd).toBeCloseTo((usage.input_tokens * 1 + usage.output_tokens * 2) / 1e6, 6);
    }

    const res = await getSession(s.id);
    expect(res.status).toBe(200);
    const sum = (f: (i: InvocationBody) => number) => invocations.reduce((acc, i) => acc + f(i), 0);
    expect(res.body.usage.calls).toBe(4);
    expect(res.body.usage.input_tokens).toBe(sum((i) => i.usage?.input_tokens ?? 0));
    expect(res.body.usage.output_tokens).toBe(sum((i) => i.usage?.output_tokens ?? 0));
    expect(res.body.usage.cost_usd).toBeCloseTo(
      sum((i) => i.cost_usd),
      6,
    );
    expect(res.body.usage.cost_usd).toBeGreaterThan(0);
    expect(res.body.usage.reserved_usd).toBe(0);

    const listed = await app.http.get<Page<SessionBody>>('/v1/sessions?limit=100', admin);
    expect(listed.body.data.find((x) => x.id === s.id)?.usage).toEqual(res.body.usage);
  });
});

describe('GET /v1/sessions/{id}/history', () => {
  let s: SessionBody;
  let allowed: InvocationBody[];
  let denied: InvocationBody;
  let items: HistoryItem[];

  beforeAll(async () => {
    // Priced but not in the agent's allowed_models: the guardian denies it.
    const priced = await app.http.call('PUT', '/v1/pricing/mock-unlisted', {
      token: admin,
      body: { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
    });
    expect(priced.status).toBe(200);
    s = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 5 });
    allowed = [];
    for (const content of ['first', 'second']) {
      const res = await invoke(app.http, admin, invokeBody(s.id, { messages: [{ role: 'user', content }] }));
      allowed.push(res.body);
    }
    denied = (await invoke(app.http, admin, invokeBody(s.id, { model: 'mock-unlisted' }))).body;
    const res = await app.http.get<Page<HistoryItem>>(`/v1/sessions/${s.id}/history?limit=100`, admin);
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    items = res.body.data;
  });

  it('lists each invocation and its decision, oldest first', async () => {
    expect(allowed.map((i) => i.status)).toEqual(['succeeded', 'succeeded']);
    expect(denied.status).toBe('denied');
    const order = items.map((i) => (i.type === 'invocation' ? i.invocation.id : i.decision.invocation_id));
    expect(items.map((i) => i.type)).toEqual([
      'invocation',
      'decision',
      'invocation',
      'decision',
      'invocation',
      'decision',
    ]);
    expect(order).toEqual([
      allowed[0]?.id,
      allowed[0]?.id,
      allowed[1]?.id,
      allowed[1]?.id,
      denied.id,
      denied.id,
    ]);
    const times = items.map((i) => Date.parse(i.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    for (const item of items) expect(item.at).toMatch(ISO_UTC);
  });

  it('shows the invocations as GET /v1/llm/invocations/{id} does, at their creation time', async () => {
    for (const item of items) {
      if (item.type !== 'invocation') continue;
      expect(Object.keys(item).sort()).toEqual(['at', 'invocation', 'type']);
      const res = await app.http.get<InvocationBody>(`/v1/llm/invocations/${item.invocation.id}`, admin);
      expect(item.invocation).toEqual(res.body);
      expect(item.at).toBe(res.body.created_at);
    }
  });

  it('shows the decisions: allow for the allowed invocations, deny for the other', async () => {
    const decisions = items.flatMap((i) => (i.type === 'decision' ? [i] : []));
    expect(decisions.map((d) => d.decision.verdict)).toEqual(['allow', 'allow', 'deny']);
    const invocations = [...allowed, denied];
    decisions.forEach((d, n) => {
      const invocation = invocations[n] as InvocationBody;
      expect(Object.keys(d).sort()).toEqual(['at', 'decision', 'type']);
      expect(d.decision).toMatchObject({
        id: invocation.decision?.id,
        invocation_id: invocation.id,
        session_id: s.id,
        agent_id: setup.agentId,
        verdict: invocation.decision?.verdict,
      });
      expect(d.decision.id).toMatch(/^dec_/);
      expect(d.at).toBe(d.decision.evaluated_at);
    });
  });

  it('walks every item in order with limit=1 and next_cursor, without repeats', async () => {
    const walked: HistoryItem[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 20; pages++) {
      const path: string = `/v1/sessions/${s.id}/history?limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await app.http.get<Page<HistoryItem>>(path, admin);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(1);
      walked.push(...res.body.data);
      cursor = res.body.next_cursor;
      if (!cursor) break;
    }
    expect(cursor).toBeNull();
    expect(walked).toEqual(items);

    const twoByTwo: HistoryItem[] = [];
    cursor = null;
    do {
      const path: string = `/v1/sessions/${s.id}/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await app.http.get<Page<HistoryItem>>(path, admin);
      twoByTwo.push(...res.body.data);
      cursor = res.body.next_cursor;
    } while (cursor && twoByTwo.length < 20);
    expect(twoByTwo).toEqual(items);
  });

  it('is empty for a session without invocations', async () => {
    const fresh = await openSession(app.http, admin, { max_cost_usd: 1 });
    const res = await app.http.get<Page<HistoryItem>>(`/v1/sessions/${fresh.id}/history`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], next_cursor: null });
  });

  it('refuses a garbage cursor with 400 validation_error', async () => {
    const forged = Buffer.from(JSON.stringify({ p: 'not a position' })).toString('base64url');
    const numeric = Buffer.from(JSON.stringify({ p: 42 })).toString('base64url');
    for (const cursor of ['garbage!!', 'Zm9v', forged, numeric]) {
      const res = await app.http.get<ErrorBody>(`/v1/sessions/${s.id}/history?cursor=${cursor}`, admin);
      expect({ cursor, status: res.status }).toEqual({ cursor, status: 400 });
      expect(res.body.error_code).toBe('validation_error');
    }
  });
});

describe('Idempotency-Key on POST /v1/sessions', () => {
  it('replays the first 201 for the same key and body, and creates one session only', async () => {
    const org = await signupOrg(app.http);
    const body = { max_cost_usd: 2, ttl_seconds: 600, metadata: { attempt: 1 } };
    const headers = { 'Idempotency-Key': 'open-session-1' };
    const first = await app.http.call<SessionBody>('POST', '/v1/sessions', {
      token: org.adminKey,
      body,
      headers,
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await app.http.call<SessionBody>('POST', '/v1/sessions', {
      token: org.adminKey,
      body,
      headers,
    });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await app.infra.knex('sessions').where({ org_id: org.orgId })).toHaveLength(1);

    const conflict = await app.http.call<ErrorBody>('POST', '/v1/sessions', {
      token: org.adminKey,
      body: { ...body, max_cost_usd: 3 },
      headers,
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error_code).toBe('idempotency_conflict');
    expect(await app.infra.knex('sessions').where({ org_id: org.orgId })).toHaveLength(1);

    const otherKey = await app.http.call<SessionBody>('POST', '/v1/sessions', {
      token: org.adminKey,
      body,
      headers: { 'Idempotency-Key': 'open-session-2' },
    });
    expect(otherKey.status).toBe(201);
    expect(otherKey.body.id).not.toBe(first.body.id);
    expect(await app.infra.knex('sessions').where({ org_id: org.orgId })).toHaveLength(2);
  });
});

describe("another org's session", () => {
  it('answers 404 not_found to GET, history, close and invoke, and changes nothing', async () => {
    const s = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 1 });
    const intruder = await setUpInvoking(app.http);
    const token = intruder.org.adminKey;
    const calls = [
      app.http.get<ErrorBody>(`/v1/sessions/${s.id}`, token),
      app.http.get<ErrorBody>(`/v1/sessions/${s.id}/history`, token),
      app.http.post<ErrorBody>(`/v1/sessions/${s.id}/close`, undefined, token),
      app.http.post<ErrorBody>('/v1/llm/invoke?wait=5', invokeBody(s.id), token),
      app.http.post<ErrorBody>(
        '/v1/llm/invoke?wait=5',
        invokeBody(s.id, { credential_ref: intruder.credentialRef }),
        token,
      ),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('not_found');
    }
    const list = await app.http.get<Page<SessionBody>>('/v1/sessions?limit=100', token);
    expect(list.body.data.map((x) => x.id)).not.toContain(s.id);

    const mine = await getSession(s.id);
    expect(mine.body.status).toBe('open');
    expect(await app.infra.knex('invocations').where({ session_id: s.id })).toEqual([]);
  });
});

describe('session scopes', () => {
  it('lets a sessions:read key read, but not open or close (403 insufficient_scope)', async () => {
    const s = await openSession(app.http, admin, { max_cost_usd: 1 });
    const reader = await mintKey(app.http, admin, ['sessions:read']);
    expect((await getSession(s.id, reader.key)).status).toBe(200);
    expect((await app.http.get(`/v1/sessions/${s.id}/history`, reader.key)).status).toBe(200);
    expect((await app.http.get('/v1/sessions', reader.key)).status).toBe(200);

    const opened = await app.http.post<ErrorBody>('/v1/sessions', { max_cost_usd: 1 }, reader.key);
    expect(opened.status).toBe(403);
    expect(opened.body).toMatchObject({
      error_code: 'insufficient_scope',
      required_scope: 'sessions:write',
    });
    const closed = await app.http.post<ErrorBody>(`/v1/sessions/${s.id}/close`, undefined, reader.key);
    expect(closed.status).toBe(403);
    expect(closed.body).toMatchObject({
      error_code: 'insufficient_scope',
      required_scope: 'sessions:write',
    });
    expect((await getSession(s.id)).body.status).toBe('open');
  });

  it('lets a sessions:write key open and close, but a key without sessions:read not read', async () => {
    const writer = await mintKey(app.http, admin, ['sessions:write']);
    const s = await openSession(app.http, writer.key, { max_cost_usd: 1 });
    const closed = await app.http.post<SessionBody>(`/v1/sessions/${s.id}/close`, undefined, writer.key);
    expect(closed.status).toBe(200);

    const auditor = await mintKey(app.http, admin, ['audit:read']);
    const res = await app.http.get<ErrorBody>(`/v1/sessions/${s.id}`, auditor.key);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'sessions:read' });
  });
});
