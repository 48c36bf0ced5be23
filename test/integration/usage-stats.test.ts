import { mintKey, signupOrg } from '../support/factories';
import {
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvocationBody,
  type InvokeSetup,
  type SessionBody,
} from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';
import type { Figures, UsageBody as Usage } from '../support/usage-stats-body';

interface ErrorBody {
  error_code: string;
  details?: { path: string; message: string }[];
  required_scope?: string;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DAY_MS = 86_400_000;
const ZERO: Figures = {
  calls: 0,
  succeeded: 0,
  failed: 0,
  denied: 0,
  cancelled: 0,
  input_tokens: 0,
  output_tokens: 0,
  cost_usd: 0,
};
const COUNTS = [
  'calls',
  'succeeded',
  'failed',
  'denied',
  'cancelled',
  'input_tokens',
  'output_tokens',
] as const;

let app: TestApp;

/** Provider calls per invocation at most: mock-error-500 is retried until they are spent. */
const ATTEMPTS = 3;

beforeAll(async () => {
  app = await startTestApp({
    workers: true,
    env: { CP_INVOKE_ATTEMPTS: String(ATTEMPTS), CP_INVOKE_BACKOFF_MS: '10' },
  });
});
afterAll(() => app.close());

const stats = (token: string, query = '') =>
  app.http.get<Usage>(`/v1/stats/usage${query ? `?${query}` : ''}`, token);

const sumOf = (items: Figures[]): Figures =>
  items.reduce(
    (acc, f) => ({
      calls: acc.calls + f.calls,
      succeeded: acc.succeeded + f.succeeded,
      failed: acc.failed + f.failed,
      denied: acc.denied + f.denied,
      cancelled: acc.cancelled + f.cancelled,
      input_tokens: acc.input_tokens + f.input_tokens,
      output_tokens: acc.output_tokens + f.output_tokens,
      cost_usd: acc.cost_usd + f.cost_usd,
    }),
    ZERO,
  );

/** Counts exactly, money to the micro-dollar. */
function expectFigures(actual: Figures, expected: Figures): void {
  for (const field of COUNTS)
    expect({ field, value: actual[field] }).toEqual({ field, value: expected[field] });
  expect(actual.cost_usd).toBeCloseTo(expected.cost_usd, 6);
}

/** What the invocations themselves say: the figures stats must report for them. */
function figuresOf(invocations: InvocationBody[]): Figures {
  const count = (status: string) => invocations.filter((i) => i.status === status).length;
  // Every request the provider received is a call: one per success and per final error (the
  // mock's 400), one per attempt of what was retried (its 500), none for a denial.
  const callsOf = (i: InvocationBody) =>
    i.status === 'denied' ? 0 : i.model === 'mock-error-500' ? ATTEMPTS : 1;
  return {
    calls: invocations.reduce((n, i) => n + callsOf(i), 0),
    succeeded: count('succeeded'),
    failed: count('failed'),
    denied: count('denied'),
    cancelled: count('cancelled'),
    input_tokens: invocations.reduce((n, i) => n + (i.usage?.input_tokens ?? 0), 0),
    output_tokens: invocations.reduce((n, i) => n + (i.usage?.output_tokens ?? 0), 0),
    cost_usd: invocations.reduce((n, i) => n + i.cost_usd, 0),
  };
}

const price = async (token: string, model: string, input: number, output: number) => {
  const res = await app.http.call('PUT', `/v1/pricing/${encodeURIComponent(model)}`, {
    token,
    body: { input_per_mtok_usd: input, output_per_mtok_usd: output },
  });
  expect(res.status).toBe(200);
};

describe('GET /v1/stats/usage without any invocation', () => {
  it('answers zero totals and no groups over the last 30 days', async () => {
    const org = await signupOrg(app.http);
    const before = Date.now();
    const res = await stats(org.adminKey);
    const after = Date.now();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['from', 'groups', 'groups_truncated', 'to', 'totals']);
    expect(res.body.totals).toEqual(ZERO);
    expect(res.body.groups).toEqual([]);
    expect(res.body.groups_truncated).toBe(false);
    expect(res.body.from).toMatch(ISO_UTC);
    expect(res.body.to).toMatch(ISO_UTC);
    const to = Date.parse(res.body.to);
    expect(to).toBeGreaterThanOrEqual(before - 1000);
    expect(to).toBeLessThanOrEqual(after + 1000);
    expect(to - Date.parse(res.body.from)).toBe(30 * DAY_MS);

    for (const groupBy of ['day', 'agent', 'model', 'session', 'key']) {
      const grouped = await stats(org.adminKey, `group_by=${groupBy}`);
      expect(grouped.status).toBe(200);
      expect(grouped.body.totals).toEqual(ZERO);
      expect(grouped.body.groups).toEqual([]);
      expect(grouped.body.groups_truncated).toBe(false);
    }
  });

  it('needs stats:read (403 insufficient_scope otherwise)', async () => {
    const org = await signupOrg(app.http);
    const reader = await mintKey(app.http, org.adminKey, ['stats:read']);
    expect((await stats(reader.key)).status).toBe(200);
    const other = await mintKey(app.http, org.adminKey, ['sessions:read', 'audit:read']);
    const res = await app.http.get<ErrorBody>('/v1/stats/usage', other.key);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'insufficient_scope', required_scope: 'stats:read' });
  });
});

describe('GET /v1/stats/usage after a mix of outcomes in two sessions', () => {
  let setup: InvokeSetup;
  let admin: string;
  let invoker: { id: string; key: string };
  let agent2: string;
  let sessionA: SessionBody;
  let sessionB: SessionBody;
  let inA: InvocationBody[];
  let inB: InvocationBody[];
  let all: InvocationBody[];
  let startedAt: Date;
  let betweenSessions: Date;
  let other: InvokeSetup;
  let otherInvocation: InvocationBody;

  const run = async (token: string, sessionId: string, extra: Record<string, unknown>) => {
    const res = await invoke(app.http, token, invokeBody(sessionId, extra), 10);
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    startedAt = new Date(Date.now() - 1000);
    // Agent 1 (mock credential 1) may use mock-1, mock-error-400 and mock-error-500.
    setup = await setUpInvoking(app.http, { models: ['mock-1', 'mock-error-400', 'mock-error-500'] });
    admin = setup.org.adminKey;
    invoker = await mintKey(app.http, admin, ['invoke'], 'invoker');
    // Priced, but allowed to no agent: the guardian denies it.
    await price(admin, 'mock-denied', 1, 2);
    // Agent 2 with a second mock credential, allowed mock-2 (priced differently).
    await price(admin, 'mock-2', 3, 5);
    const credential = await app.http.post<{ credential_ref: string }>(
      '/v1/credentials',
      { name: 'mock two', provider: 'mock', secret: 'mock-secret-0002' },
      admin,
    );
    expect(credential.status).toBe(201);
    const agent = await app.http.post<{ id: string }>(
      '/v1/agents',
      { name: 'agent two', allowed_models: ['mock-2'], credential_refs: [credential.body.credential_ref] },
      admin,
    );
    expect(agent.status).toBe(201);
    agent2 = agent.body.id;

    sessionA = await openSession(app.http, admin, { agent_id: setup.agentId, max_cost_usd: 5 });
    sessionB = await openSession(app.http, admin, { agent_id: agent2, max_cost_usd: 5 });

    inA = [
      await run(admin, sessionA.id, { messages: [{ role: 'user', content: 'hello' }] }),
      await run(admin, sessionA.id, { messages: [{ role: 'user', content: 'tell me more, please' }] }),
      await run(admin, sessionA.id, { model: 'mock-error-400' }),
      await run(admin, sessionA.id, { model: 'mock-denied' }),
      await run(admin, sessionA.id, { model: 'mock-error-500' }),
    ];
    await new Promise((r) => setTimeout(r, 5)); // distinct milliseconds around the boundary
    betweenSessions = new Date();
    await new Promise((r) => setTimeout(r, 5));
    inB = [
      await run(invoker.key, sessionB.id, { model: 'mock-2', max_tokens: 64 }),
      await run(invoker.key, sessionB.id, {
        model: 'mock-2',
        messages: [{ role: 'user', content: 'x'.repeat(500) }],
        max_tokens: 400,
      }),
      await run(invoker.key, sessionB.id, { model: 'mock-denied' }),
    ];
    all = [...inA, ...inB];

    // Another org, invoking the same model name: never counted here.
    other = await setUpInvoking(app.http);
    const otherSession = await openSession(app.http, other.org.adminKey, {
      agent_id: other.agentId,
      max_cost_usd: 1,
    });
    otherInvocation = await run(other.org.adminKey, otherSession.id, {});
  });

  it('ran the outcomes the scenario needs', () => {
    expect(inA.map((i) => i.status)).toEqual(['succeeded', 'succeeded', 'failed', 'denied', 'failed']);
    expect(inB.map((i) => i.status)).toEqual(['succeeded', 'succeeded', 'denied']);
    expect(otherInvocation.status).toBe('succeeded');
    for (const i of all) expect(i.completed_at).not.toBeNull();
  });

  it('reports totals that match the invocations', async () => {
    const res = await stats(admin);
    expect(res.status).toBe(200);
    expect(res.body.groups).toEqual([]);
    expectFigures(res.body.totals, figuresOf(all));
    expectFigures(res.body.totals, {
      ...figuresOf(all),
      calls: 8, // four answers, the 400's one call and the 500's three attempts
      succeeded: 4,
      failed: 2,
      denied: 2,
      cancelled: 0,
    });
    expect(res.body.totals.cost_usd).toBeGreaterThan(0);
  });

  it("reports totals equal to the sum of the sessions' usage", async () => {
    const sessions = await Promise.all(
      [sessionA, sessionB].map(
        async (s) => (await app.http.get<SessionBody>(`/v1/sessions/${s.id}`, admin)).body,
      ),
    );
    const res = await stats(admin);
    const { totals } = res.body;
    expect(totals.calls).toBe(sessions.reduce((n, s) => n + s.usage.calls, 0));
    expect(totals.input_tokens).toBe(sessions.reduce((n, s) => n + s.usage.input_tokens, 0));
    expect(totals.output_tokens).toBe(sessions.reduce((n, s) => n + s.usage.output_tokens, 0));
    expect(totals.cost_usd).toBeCloseTo(
      sessions.reduce((n, s) => n + s.usage.cost_usd, 0),
      6,
    );
    for (const s of sessions) expect(s.usage.reserved_usd).toBe(0);
  });

  it.each(['day', 'agent', 'model', 'session', 'key'])(
    'group_by=%s: the groups sum to the totals, each key once',
    async (groupBy) => {
      const res = await stats(admin, `group_by=${groupBy}`);
      expect(res.status).toBe(200);
      expect(res.body.groups.length).toBeGreaterThan(0);
      expect(res.body.groups_truncated).toBe(false);
      expectFigures(sumOf(res.body.groups), res.body.totals);
      expectFigures(res.body.totals, figuresOf(all));
      const keys = res.body.groups.map((g) => g.key);
      expect(new Set(keys).size).toBe(keys.length);
    },
  );

  it('group_by=model has one group per model, with that model’s figures', async () => {
    const res = await stats(admin, 'group_by=model');
    const models = [...new Set(all.map((i) => i.model))].sort();
    expect(models).toEqual(['mock-1', 'mock-2', 'mock-denied', 'mock-error-400', 'mock-error-500']);
    expect(res.body.groups.map((g) => g.key).sort()).toEqual(models);
    for (const group of res.body.groups) {
      const { key, ...figures } = group;
      expectFigures(figures, figuresOf(all.filter((i) => i.model === key)));
    }
  });

  it("group_by=session keys are the session ids, each with its session's usage", async () => {
    const res = await stats(admin, 'group_by=session');
    expect(res.body.groups.map((g) => g.key).sort()).toEqual([sessionA.id, sessionB.id].sort());
    for (const group of res.body.groups) {
      const session = (await app.http.get<SessionBody>(`/v1/sessions/${group.key}`, admin)).body;
      expect(group.calls).toBe(session.usage.calls);
      expect(group.input_tokens).toBe(session.usage.input_tokens);
      expect(group.output_tokens).toBe(session.usage.output_tokens);
      expect(group.cost_usd).toBeCloseTo(session.usage.cost_usd, 6);
      const { key, ...figures } = group;
      expectFigures(figures, figuresOf(key === sessionA.id ? inA : inB));
    }
  });

  it('group_by=agent keys are the agent ids', async () => {
    const res = await stats(admin, 'group_by=agent');
    expect(res.body.groups.map((g) => g.key).sort()).toEqual([setup.agentId, agent2].sort());
    const agentOne = res.body.groups.find((g) => g.key === setup.agentId) as Figures;
    expectFigures(agentOne, figuresOf(inA));
  });

  it('group_by=key keys are the requesting keys', async () => {
    const res = await stats(admin, 'group_by=key');
    expect(res.body.groups.map((g) => g.key).sort()).toEqual([setup.org.adminKeyId, invoker.id].sort());
    const byInvoker = res.body.groups.find((g) => g.key === invoker.id) as Figures;
    expectFigures(byInvoker, figuresOf(inB));
  });

  it('group_by=day keys are the UTC days the invocations finished', async () => {
    const res = await stats(admin, 'group_by=day');
    const days = [...new Set(all.map((i) => (i.completed_at ?? '').slice(0, 10)))].sort();
    expect(res.body.groups.map((g) => g.key)).toEqual(days);
    for (const key of res.body.groups.map((g) => g.key)) expect(key).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('counts only invocations finished in [from, to)', async () => {
    const past = await stats(admin, 'from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z&group_by=model');
    expect(past.status).toBe(200);
    expect(past.body.totals).toEqual(ZERO);
    expect(past.body.groups).toEqual([]);
    expect(past.body.from).toBe('2024-01-01T00:00:00.000Z');
    expect(past.body.to).toBe('2024-02-01T00:00:00.000Z');

    const upToB = await stats(
      admin,
      `from=${startedAt.toISOString()}&to=${betweenSessions.toISOString()}&group_by=session`,
    );
    expect(upToB.status).toBe(200);
    expectFigures(upToB.body.totals, figuresOf(inA));
    expect(upToB.body.groups.map((g) => g.key)).toEqual([sessionA.id]);

    const fromB = await stats(admin, `from=${betweenSessions.toISOString()}&group_by=session`);
    expectFigures(fromB.body.totals, figuresOf(inB));
    expect(fromB.body.groups.map((g) => g.key)).toEqual([sessionB.id]);

    // `to` is exclusive: the window ending at the last completion leaves that invocation out.
    const last = inB.reduce((a, b) =>
      Date.parse(a.completed_at ?? '') >= Date.parse(b.completed_at ?? '') ? a : b,
    );
    const beforeLast = await stats(admin, `from=${betweenSessions.toISOString()}&to=${last.completed_at}`);
    expectFigures(
      beforeLast.body.totals,
      figuresOf(inB.filter((i) => Date.parse(i.completed_at ?? '') < Date.parse(last.completed_at ?? ''))),
    );
    const fromLast = await stats(admin, `from=${last.completed_at}`);
    expectFigures(
      fromLast.body.totals,
      figuresOf(all.filter((i) => Date.parse(i.completed_at ?? '') >= Date.parse(last.completed_at ?? ''))),
    );
  });

  it('never counts another org’s invocations', async () => {
    const mine = await stats(admin, 'group_by=session');
    expect(mine.body.groups.map((g) => g.key)).not.toContain(otherInvocation.session_id);
    const theirs = await stats(other.org.adminKey, 'group_by=model');
    expect(theirs.status).toBe(200);
    expectFigures(theirs.body.totals, figuresOf([otherInvocation]));
    expect(theirs.body.groups.map((g) => g.key)).toEqual(['mock-1']);
    const mineByModel = await stats(admin, 'group_by=model');
    const mock1 = mineByModel.body.groups.find((g) => g.key === 'mock-1') as Figures;
    expectFigures(mock1, figuresOf(all.filter((i) => i.model === 'mock-1')));
  });
});

describe('GET /v1/stats/usage query validation', () => {
  let token: string;
  beforeAll(async () => {
    token = (await signupOrg(app.http)).adminKey;
  });

  it.each([
    ['from >= to', 'from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z', 'from'],
    ['from == to', 'from=2025-01-01T00:00:00Z&to=2025-01-01T00:00:00Z', 'from'],
    ['from not ISO', 'from=yesterday', 'from'],
    ['from a date only', 'from=2025-01-01', 'from'],
    ['to not ISO', 'to=1735689600', 'to'],
    ['an unknown group_by', 'group_by=week', 'group_by'],
    ['an unknown query parameter', 'granularity=day', null],
    ['a window over 366 days', 'from=2020-01-01T00:00:00Z&to=2025-01-01T00:00:00Z', 'from'],
  ])('refuses %s with 400 validation_error', async (_what, query, path) => {
    const res = await app.http.get<ErrorBody>(`/v1/stats/usage?${query}`, token);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('validation_error');
    expect(res.body.details?.length).toBeGreaterThan(0);
    if (path) expect(res.body.details?.map((d) => d.path)).toContain(path);
  });

  it('accepts an offset timestamp and answers in UTC', async () => {
    const res = await stats(
      token,
      `from=${encodeURIComponent('2025-01-01T02:00:00+02:00')}&to=2025-01-02T00:00:00Z`,
    );
    expect(res.status).toBe(200);
    expect(res.body.from).toBe('2025-01-01T00:00:00.000Z');
    expect(res.body.to).toBe('2025-01-02T00:00:00.000Z');
  });
});
