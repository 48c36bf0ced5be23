import { mintKey, signupOrg } from '../support/factories';
import type { HttpResult } from '../support/http-client';
import {
  eventually,
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
  expireSession,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

interface ErrorBody {
  error_code: string;
  message: string;
  request_id: string;
  status?: string;
  model?: string;
  session_id?: string;
  limit?: number;
  remaining?: number;
  required_scope?: string;
  details?: { path: string; message: string }[];
}

interface Page {
  data: InvocationBody[];
  next_cursor: string | null;
}

/** No workers: nothing consumes the queue, so invocations stay queued. */
let app: TestApp;
/** Workers running: invocations reach the mock provider. */
let live: TestApp;
let setup: InvokeSetup;
let liveSetup: InvokeSetup;

beforeAll(async () => {
  [app, live] = await Promise.all([startTestApp(), startTestApp({ workers: true })]);
  [setup, liveSetup] = await Promise.all([setUpInvoking(app.http), setUpInvoking(live.http)]);
});
afterAll(async () => {
  await Promise.all([app?.close(), live?.close()]);
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const pathsOf = (res: HttpResult<ErrorBody>) => (res.body.details ?? []).map((d) => d.path);

const newSession = (s: InvokeSetup = setup, http = app.http, extra: Record<string, unknown> = {}) =>
  openSession(http, s.org.adminKey, { agent_id: s.agentId, max_cost_usd: 1, ...extra });

/** A queued invocation (no wait) on the worker-less app. */
async function queued(sessionId: string, token = setup.org.adminKey): Promise<InvocationBody> {
  const res = await invoke(app.http, token, invokeBody(sessionId), 0);
  if (res.status !== 202) throw new Error(`invoke: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const cancel = (id: string, token = setup.org.adminKey, http = app.http) =>
  http.post<InvocationBody & ErrorBody>(`/v1/llm/invocations/${id}/cancel`, undefined, token);

const list = (query: string, token = setup.org.adminKey, http = app.http) =>
  http.get<Page & ErrorBody>(`/v1/llm/invocations${query}`, token);

describe('an invocation nobody runs (no workers)', () => {
  it('POST /v1/llm/invoke without wait answers 202 queued, with Location to poll', async () => {
    const session = await newSession();
    const res = await invoke(app.http, setup.org.adminKey, invokeBody(session.id), 0);
    expect(res.status).toBe(202);
    expect(res.body.id).toMatch(/^inv_/);
    expect(res.headers.get('location')).toBe(`/v1/llm/invocations/${res.body.id}`);
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(res.body).toMatchObject({
      session_id: session.id,
      agent_id: setup.agentId,
      status: 'queued',
      model: 'mock-1',
      provider: 'mock',
      credential_ref: setup.credentialRef,
      decision: null,
      approval_id: null,
      output: null,
      usage: null,
      cost_usd: 0,
      error: null,
      completed_at: null,
    });
    expect(res.body.created_at).toMatch(ISO);
    expect(res.body.updated_at).toMatch(ISO);

    const got = await app.http.get<InvocationBody>(res.headers.get('location') ?? '', setup.org.adminKey);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('GET ?wait=1 waits about a second, then answers 200 with the invocation still queued', async () => {
    const invocation = await queued((await newSession()).id);
    const started = Date.now();
    const res = await app.http.get<InvocationBody>(
      `/v1/llm/invocations/${invocation.id}?wait=1`,
      setup.org.adminKey,
    );
    const elapsed = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('queued');
    expect(res.body.completed_at).toBeNull();
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(5000);
  });

  it('POST /v1/llm/invoke?wait=1 whose wait runs out answers 202 queued, not 200', async () => {
    const session = await newSession();
    const started = Date.now();
    const res = await invoke(app.http, setup.org.adminKey, invokeBody(session.id), 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('queued');
    expect(res.headers.get('location')).toBe(`/v1/llm/invocations/${res.body.id}`);
  });

  it('GET with Prefer: wait=1 long-polls too, and says so in Preference-Applied', async () => {
    const invocation = await queued((await newSession()).id);
    const started = Date.now();
    const res = await app.http.call<InvocationBody>('GET', `/v1/llm/invocations/${invocation.id}`, {
      token: setup.org.adminKey,
      headers: { prefer: 'wait=1' },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('queued');
    expect(res.headers.get('preference-applied')).toBe('wait=1');
  });

  it('cancels a queued invocation once; a second cancel is 409 invalid_state; the cancel is audited', async () => {
    const invocation = await queued((await newSession()).id);
    const res = await cancel(invocation.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: invocation.id, status: 'cancelled', output: null, cost_usd: 0 });
    expect(res.body.completed_at).toMatch(ISO);

    const again = await cancel(invocation.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'invalid_state', status: 'cancelled' });

    const got = await app.http.get<InvocationBody>(
      `/v1/llm/invocations/${invocation.id}`,
      setup.org.adminKey,
    );
    expect(got.status).toBe(200);
    expect(got.body.status).toBe('cancelled');
    expect(got.body.completed_at).toBe(res.body.completed_at);

    const audit = await app.http.get<{ data: { action: string; resource: { type: string; id: string } }[] }>(
      '/v1/audit?action=llm.invoke.cancelled',
      setup.org.adminKey,
    );
    expect(audit.status).toBe(200);
    const entries = audit.body.data.filter((e) => e.resource.id === invocation.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.action).toBe('llm.invoke.cancelled');
  });

  it('cancelling an unknown invocation is 404 not_found', async () => {
    const res = await cancel('inv_doesnotexist000000000000');
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('not_found');
    const get = await app.http.get<ErrorBody>('/v1/llm/invocations/inv_nope', setup.org.adminKey);
    expect(get.status).toBe(404);
    expect(get.body.error_code).toBe('not_found');
    // Nothing to wait for: the 404 does not wait out the long poll.
    const started = Date.now();
    const waited = await app.http.get<ErrorBody>('/v1/llm/invocations/inv_nope?wait=5', setup.org.adminKey);
    expect(waited.status).toBe(404);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a long poll on an invocation already finished answers at once', async () => {
    const invocation = await queued((await newSession()).id);
    expect((await cancel(invocation.id)).status).toBe(200);
    const started = Date.now();
    const res = await app.http.get<InvocationBody>(
      `/v1/llm/invocations/${invocation.id}?wait=10`,
      setup.org.adminKey,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
  });

  it('a long poll is answered as soon as the invocation finishes (here: cancelled by another request)', async () => {
    const invocation = await queued((await newSession()).id);
    const started = Date.now();
    let answeredAt: number | null = null;
    const poll = app.http
      .get<InvocationBody>(`/v1/llm/invocations/${invocation.id}?wait=10`, setup.org.adminKey)
      .then((res) => ((answeredAt = Date.now()), res));
    // Give the poll time to be waiting on the server, and check it really is.
    await new Promise((r) => setTimeout(r, 500));
    expect(answeredAt).toBeNull();

    const cancelledAt = Date.now();
    expect((await cancel(invocation.id)).status).toBe(200);
    const res = await poll;
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    expect(res.body.completed_at).toMatch(ISO);
    expect(answeredAt! - cancelledAt).toBeLessThan(2000);
    expect(answeredAt! - started).toBeLessThan(5000);
  });
});

describe('an invocation that runs (workers)', () => {
  it('Prefer: wait=5 answers 200 succeeded, with Preference-Applied', async () => {
    const session = await newSession(liveSetup, live.http);
    const res = await live.http.call<InvocationBody>('POST', '/v1/llm/invoke', {
      token: liveSetup.org.adminKey,
      body: invokeBody(session.id),
      headers: { prefer: 'wait=5' },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('succeeded');
    expect(res.headers.get('preference-applied')).toBe('wait=5');
  });

  it.each(['999', '1000000'])(
    'Prefer: wait=%s is bounded to max_wait_seconds (Preference-Applied wait=30), not ignored',
    async (seconds) => {
      const session = await newSession(liveSetup, live.http);
      const res = await live.http.call<InvocationBody>('POST', '/v1/llm/invoke', {
        token: liveSetup.org.adminKey,
        body: invokeBody(session.id),
        headers: { prefer: `wait=${seconds}` },
      });
      expect(res.headers.get('preference-applied')).toBe('wait=30');
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
    },
  );

  it('Prefer: wait=N may come with other preferences', async () => {
    const session = await newSession(liveSetup, live.http);
    const res = await live.http.call<InvocationBody>('POST', '/v1/llm/invoke', {
      token: liveSetup.org.adminKey,
      body: invokeBody(session.id),
      headers: { prefer: 'respond-async, wait=5' },
    });
    expect(res.headers.get('preference-applied')).toBe('wait=5');
    expect(res.status).toBe(200);
  });

  it('?wait=10 answers 200 with the mock provider output, usage and cost', async () => {
    const session = await newSession(liveSetup, live.http);
    const res = await invoke(live.http, liveSetup.org.adminKey, invokeBody(session.id), 10);
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(res.headers.get('location')).toBe(`/v1/llm/invocations/${res.body.id}`);
    expect(res.body).toMatchObject({
      status: 'succeeded',
      output: { role: 'assistant', content: 'mock reply to: hello' },
      // docs/mock-provider.md: ceil(5 / 4) + 3 × 1 + 3 input, ceil(20 / 4) output
      usage: { input_tokens: 8, output_tokens: 5 },
      // $1 and $2 per million tokens: 8 × 1 + 5 × 2 micro-dollars
      cost_usd: 0.000018,
      error: null,
    });
    expect(res.body.decision?.verdict).toBe('allow');
    expect(res.body.completed_at).toMatch(ISO);
  });

  it('a finished invocation cannot be cancelled: 409 invalid_state with its status', async () => {
    const session = await newSession(liveSetup, live.http);
    const res = await invoke(live.http, liveSetup.org.adminKey, invokeBody(session.id), 10);
    const done =
      res.status === 200 ? res.body : await finished(live.http, liveSetup.org.adminKey, res.body.id);
    expect(done.status).toBe('succeeded');
    const refused = await cancel(done.id, liveSetup.org.adminKey, live.http);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error_code: 'invalid_state', status: 'succeeded' });
    const got = await live.http.get<InvocationBody>(`/v1/llm/invocations/${done.id}`, liveSetup.org.adminKey);
    expect(got.body.status).toBe('succeeded');
  });
});

describe('GET /v1/llm/invocations', () => {
  let sessionId: string;
  let otherSessionId: string;
  /** Oldest first. */
  let ids: string[];

  beforeAll(async () => {
    sessionId = (await newSession()).id;
    otherSessionId = (await newSession()).id;
    ids = [];
    for (let i = 0; i < 5; i++) ids.push((await queued(sessionId)).id);
    await queued(otherSessionId);
    expect((await cancel(ids[1]!)).status).toBe(200);
    expect((await cancel(ids[3]!)).status).toBe(200);
  });

  it('lists newest first and filters by session_id', async () => {
    const res = await list(`?session_id=${sessionId}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((i) => i.id)).toEqual([...ids].reverse());
    expect(res.body.data.every((i) => i.session_id === sessionId)).toBe(true);
    expect(res.body.next_cursor).toBeNull();
    const created = res.body.data.map((i) => Date.parse(i.created_at));
    expect(created).toEqual([...created].sort((a, b) => b - a));
  });

  it('lists every session of the org without a filter', async () => {
    const res = await list('?limit=100');
    expect(res.status).toBe(200);
    const sessions = new Set(res.body.data.map((i) => i.session_id));
    expect(sessions.has(sessionId)).toBe(true);
    expect(sessions.has(otherSessionId)).toBe(true);
  });

  it('filters by status, and by status and session together', async () => {
    const cancelled = await list(`?session_id=${sessionId}&status=cancelled`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.map((i) => i.id)).toEqual([ids[3], ids[1]]);
    const stillQueued = await list(`?session_id=${sessionId}&status=queued`);
    expect(stillQueued.body.data.map((i) => i.id)).toEqual([ids[4], ids[2], ids[0]]);
    const anyCancelled = await list('?status=cancelled&limit=100');
    expect(anyCancelled.body.data.length).toBeGreaterThanOrEqual(2);
    expect(anyCancelled.body.data.every((i) => i.status === 'cancelled')).toBe(true);
    const none = await list(`?session_id=${sessionId}&status=succeeded`);
    expect(none.body).toEqual({ data: [], next_cursor: null });
  });

  it('pages with limit and next_cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: HttpResult<Page & ErrorBody> = await list(
        `?session_id=${sessionId}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((i) => i.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  it('a key with only sessions:read, or only llm:invoke, can list and get', async () => {
    for (const scope of ['sessions:read', 'llm:invoke']) {
      const key = await mintKey(app.http, setup.org.adminKey, [scope]);
      const listed = await list(`?session_id=${sessionId}`, key.key);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toHaveLength(5);
      const got = await app.http.get<InvocationBody>(`/v1/llm/invocations/${ids[0]}`, key.key);
      expect(got.status).toBe(200);
      expect(got.body.id).toBe(ids[0]);
    }
  });

  it('a key with only sessions:read cannot invoke or cancel (403 insufficient_scope, llm:invoke)', async () => {
    const key = await mintKey(app.http, setup.org.adminKey, ['sessions:read']);
    const invoked = await app.http.post<ErrorBody>('/v1/llm/invoke', invokeBody(sessionId), key.key);
    expect(invoked.status).toBe(403);
    expect(invoked.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'llm:invoke' });
    const cancelled = await cancel(ids[0]!, key.key);
    expect(cancelled.status).toBe(403);
    expect(cancelled.body.error_code).toBe('insufficient_scope');
    expect((await list(`?session_id=${sessionId}`)).body.data).toHaveLength(5);
  });

  it('a key with only audit:read gets 403 insufficient_scope', async () => {
    const key = await mintKey(app.http, setup.org.adminKey, ['audit:read']);
    const listed = await list('', key.key);
    expect(listed.status).toBe(403);
    expect(listed.body.error_code).toBe('insufficient_scope');
    const got = await app.http.get<ErrorBody>(`/v1/llm/invocations/${ids[0]}`, key.key);
    expect(got.status).toBe(403);
    expect(got.body.error_code).toBe('insufficient_scope');
  });
});

describe('another org', () => {
  let other: InvokeSetup;
  let theirs: InvocationBody;
  let theirSessionId: string;

  beforeAll(async () => {
    other = await setUpInvoking(app.http);
    theirSessionId = (await newSession(other)).id;
    theirs = await queued(theirSessionId, other.org.adminKey);
  });

  it("cannot see or cancel this org's invocation (404), which stays queued", async () => {
    const got = await app.http.get<ErrorBody>(`/v1/llm/invocations/${theirs.id}`, setup.org.adminKey);
    expect(got.status).toBe(404);
    expect(got.body.error_code).toBe('not_found');
    const waited = await app.http.get<ErrorBody>(
      `/v1/llm/invocations/${theirs.id}?wait=1`,
      setup.org.adminKey,
    );
    expect(waited.status).toBe(404);
    const cancelled = await cancel(theirs.id, setup.org.adminKey);
    expect(cancelled.status).toBe(404);
    expect(cancelled.body.error_code).toBe('not_found');
    const own = await app.http.get<InvocationBody>(`/v1/llm/invocations/${theirs.id}`, other.org.adminKey);
    expect(own.body.status).toBe('queued');
  });

  it('a brand-new org lists no invocations at all', async () => {
    const fresh = await signupOrg(app.http, 'Fresh');
    const res = await list('', fresh.adminKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], next_cursor: null });
  });

  it("never lists the other org's invocations", async () => {
    const all = await list('?limit=100');
    expect(all.status).toBe(200);
    expect(all.body.data.length).toBeGreaterThan(0);
    expect(all.body.data.map((i) => i.id)).not.toContain(theirs.id);
    const bySession = await list(`?session_id=${theirSessionId}`);
    expect(bySession.body).toEqual({ data: [], next_cursor: null });
  });

  it("cannot invoke in the other org's session (404 not_found)", async () => {
    const res = await app.http.post<ErrorBody>(
      '/v1/llm/invoke',
      invokeBody(theirSessionId, { credential_ref: setup.credentialRef }),
      setup.org.adminKey,
    );
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('not_found');
    expect((await list(`?session_id=${theirSessionId}`, other.org.adminKey)).body.data).toHaveLength(1);
  });
});

describe('admission errors', () => {
  const post = (body: Record<string, unknown>, token = setup.org.adminKey) =>
    app.http.post<ErrorBody>('/v1/llm/invoke', body, token);

  it('an unknown session_id is 404 not_found', async () => {
    const res = await post(invokeBody('ses_doesnotexist0000000000'));
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('not_found');
  });

  it('an unpriced model is 400 unpriced_model naming the model', async () => {
    const session = await newSession();
    const res = await post(invokeBody(session.id, { model: 'mock-unpriced-7' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'unpriced_model', model: 'mock-unpriced-7' });
    expect((await list(`?session_id=${session.id}`)).body.data).toEqual([]);
  });

  it("an agent_id other than the session's is 400 validation_error on agent_id", async () => {
    const session = await newSession();
    const second = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'second', allowed_models: ['mock-1'], credential_refs: [setup.credentialRef] },
      setup.org.adminKey,
    );
    expect(second.status).toBe(201);
    const res = await post(invokeBody(session.id, { agent_id: second.body.id }));
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(pathsOf(res)).toEqual(['agent_id']);
    // Naming the session's own agent is fine.
    expect((await post(invokeBody(session.id, { agent_id: setup.agentId }))).status).toBe(202);
  });

  it('an unknown credential_ref is 400 validation_error on credential_ref', async () => {
    const session = await newSession();
    const res = await post(invokeBody(session.id, { credential_ref: 'cred_nope' }));
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(pathsOf(res)).toEqual(['credential_ref']);
  });

  it('a session without an agent needs a credential_ref (400 on credential_ref)', async () => {
    const session = await openSession(app.http, setup.org.adminKey, { max_cost_usd: 1 });
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(pathsOf(res)).toEqual(['credential_ref']);
    const named = await invoke(
      app.http,
      setup.org.adminKey,
      invokeBody(session.id, { credential_ref: setup.credentialRef }),
      0,
    );
    expect(named.status).toBe(202);
    expect(named.body).toMatchObject({ agent_id: null, credential_ref: setup.credentialRef });
  });

  it("a suspended agent's session refuses invokes with 409 invalid_state", async () => {
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'to-suspend', allowed_models: ['mock-1'], credential_refs: [setup.credentialRef] },
      setup.org.adminKey,
    );
    const session = await openSession(app.http, setup.org.adminKey, {
      agent_id: agent.body.id,
      max_cost_usd: 1,
    });
    const suspended = await app.http.post(
      `/v1/agents/${agent.body.id}/suspend`,
      undefined,
      setup.org.adminKey,
    );
    expect(suspended.status).toBe(200);
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'invalid_state', status: 'suspended' });
    expect((await list(`?session_id=${session.id}`)).body.data).toEqual([]);
  });

  it('a closed session is 409 session_not_open', async () => {
    const session = await newSession();
    expect(
      (await app.http.post(`/v1/sessions/${session.id}/close`, undefined, setup.org.adminKey)).status,
    ).toBe(200);
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      error_code: 'session_not_open',
      session_id: session.id,
      status: 'closed',
    });
  });

  it('an expired session is 409 session_not_open with status expired', async () => {
    const session = await newSession();
    await expireSession(app, session.id);
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      error_code: 'session_not_open',
      session_id: session.id,
      status: 'expired',
    });
  });

  it('a session whose call cap is reached is 402 budget_exceeded on calls', async () => {
    const session = await newSession(setup, app.http, { max_calls: 2 });
    await app.infra.knex('sessions').where({ id: session.id }).update({ calls: 2 });
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({
      error_code: 'budget_exceeded',
      session_id: session.id,
      limit: 2,
      remaining: 0,
    });
  });

  it('a session whose cost cap is reached is 402 budget_exceeded', async () => {
    const session = await newSession(setup, app.http, { max_cost_usd: 0.5 });
    const { max_cost_micros } = (await app.infra.knex('sessions').where({ id: session.id }).first()) as {
      max_cost_micros: string;
    };
    expect(Number(max_cost_micros)).toBe(500_000);
    await app.infra.knex('sessions').where({ id: session.id }).update({ cost_micros: max_cost_micros });
    const res = await post(invokeBody(session.id));
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({
      error_code: 'budget_exceeded',
      session_id: session.id,
      limit: 0.5,
      remaining: 0,
    });
    expect((await list(`?session_id=${session.id}`)).body.data).toEqual([]);
  });
});

describe('Idempotency-Key on POST /v1/llm/invoke', () => {
  const send = (body: Record<string, unknown>, key: string) =>
    app.http.call<InvocationBody & ErrorBody>('POST', '/v1/llm/invoke', {
      token: setup.org.adminKey,
      body,
      headers: { 'idempotency-key': key },
    });

  it('replays the first answer for the same key and body, creating nothing new', async () => {
    const session = await newSession();
    const key = `invoke-${session.id}`;
    const first = await send(invokeBody(session.id), key);
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await send(invokeBody(session.id), key);
    expect(second.status).toBe(202);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('location')).toBe(`/v1/llm/invocations/${first.body.id}`);
    const listed = await list(`?session_id=${session.id}`);
    expect(listed.body.data.map((i) => i.id)).toEqual([first.body.id]);
  });

  it('creates one invocation when the same key and body arrive concurrently', async () => {
    const session = await newSession();
    const key = `race-${session.id}`;
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(invokeBody(session.id), key)));
    for (const a of answers) expect([202, 409]).toContain(a.status);
    const accepted = answers.filter((a) => a.status === 202);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(new Set(accepted.map((a) => a.body.id)).size).toBe(1);
    const listed = await list(`?session_id=${session.id}`);
    expect(listed.body.data.map((i) => i.id)).toEqual([accepted[0]?.body.id]);
    // Once the first has answered, the key replays.
    const later = await send(invokeBody(session.id), key);
    expect(later.status).toBe(202);
    expect(later.body.id).toBe(accepted[0]?.body.id);
    expect(later.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses the same key with another body: 409 idempotency_conflict', async () => {
    const session = await newSession();
    const key = `conflict-${session.id}`;
    expect((await send(invokeBody(session.id), key)).status).toBe(202);
    const other = await send(invokeBody(session.id, { max_tokens: 17 }), key);
    expect(other.status).toBe(409);
    expect(other.body.error_code).toBe('idempotency_conflict');
    expect((await list(`?session_id=${session.id}`)).body.data).toHaveLength(1);
  });
});

describe('X-Request-Id', () => {
  it('is echoed on invoke answers, successful or not', async () => {
    const session = await newSession();
    const ok = await app.http.call<InvocationBody>('POST', '/v1/llm/invoke', {
      token: setup.org.adminKey,
      body: invokeBody(session.id),
      headers: { 'x-request-id': 'client-invoke-1' },
    });
    expect(ok.status).toBe(202);
    expect(ok.headers.get('x-request-id')).toBe('client-invoke-1');
    const refused = await app.http.call<ErrorBody>('POST', '/v1/llm/invoke', {
      token: setup.org.adminKey,
      body: invokeBody('ses_unknown0000000000000'),
      headers: { 'x-request-id': 'client-invoke-2' },
    });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('x-request-id')).toBe('client-invoke-2');
    expect(refused.body.request_id).toBe('client-invoke-2');
    const plain = await invoke(app.http, setup.org.adminKey, invokeBody(session.id), 0);
    expect(plain.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('is echoed on a long-polled answer that finished (workers)', async () => {
    const session = await newSession(liveSetup, live.http);
    const res = await live.http.call<InvocationBody>('POST', '/v1/llm/invoke?wait=10', {
      token: liveSetup.org.adminKey,
      body: invokeBody(session.id),
      headers: { 'x-request-id': 'client-invoke-3' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('client-invoke-3');
    // The invocation remembers which request asked for it.
    const row = await eventually(() => live.infra.knex('invocations').where({ id: res.body.id }).first());
    expect((row as { request_id: string }).request_id).toBe('client-invoke-3');
  });
});
