import { randomUUID } from 'node:crypto';
import type { DecisionWrite } from '../../domain/invocations/invocation-store';
import { SLOW_DECISION_MS } from '../../domain/invocations/slow-decision';
import { invoke, invokeBody, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { answerChat, StubProvider, type RecordedRequest } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * An invoke the API runs itself (CP_SYNC_INVOKES_IN_API) is decided before it is recorded, on what
 * admission read, and written once, decided: no queued row for the guardian stage to read and
 * update. What a client, an auditor and the decision log see is what the guardian stage leaves:
 * the same entries, in the same order, the same decision. What cannot be decided at once (a slow
 * decision, an invocation that would not be sent) is left to the guardian stage, as before.
 */
let app: TestApp;
let stub: StubProvider;

interface InvocationBody {
  id: string;
  status: string;
  decision: { verdict: string } | null;
  error: { error_code: string } | null;
}

const contentOf = (req: RecordedRequest): string =>
  String((req.body as { messages?: { content?: unknown }[] }).messages?.[0]?.content ?? '');
const sentWith = (content: string) => stub.requests.filter((r) => contentOf(r) === content);

const body = (sessionId: string, content: string, extra: Record<string, unknown> = {}) =>
  invokeBody(sessionId, { model: 'stub-model', messages: [{ role: 'user', content }], ...extra });

/** A new org (its own policies), with a session. */
async function newOrg(policy?: Record<string, unknown>): Promise<InvokeSetup & { sessionId: string }> {
  const setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['stub-model'] });
  if (policy) expect((await app.http.post('/v1/policies', policy, setup.org.adminKey)).status).toBe(201);
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  return { ...setup, sessionId: session.id };
}

/** The store's writes and reads of the invoke path, counted (the real store, called through). */
function watchStore() {
  const store = app.infra.invocations;
  const spies = {
    insert: jest.spyOn(store, 'insert'),
    insertDecided: jest.spyOn(store, 'insertDecided'),
    forGuardian: jest.spyOn(store, 'forGuardian'),
    decide: jest.spyOn(store, 'decide'),
  };
  const callsFor = (id: string) => ({
    insert: spies.insert.mock.calls.filter(([i]) => i.id === id).length,
    insertDecided: spies.insertDecided.mock.calls.filter(([i]) => i.invocation.id === id).length,
    forGuardian: spies.forGuardian.mock.calls.filter(([i]) => i === id).length,
    decide: spies.decide.mock.calls.filter(([w]) => w.invocationId === id).length,
  });
  const decidedAs = (id: string): DecisionWrite | undefined =>
    spies.insertDecided.mock.calls.find(([i]) => i.invocation.id === id)?.[0].write;
  return { callsFor, decidedAs };
}

/** Its audit entries' actions, oldest first. */
async function actionsOf(org: InvokeSetup, invocationId: string): Promise<string[]> {
  const res = await app.http.get<{ data: { action: string; seq: number }[] }>(
    `/v1/audit?resource_id=${invocationId}`,
    org.org.adminKey,
  );
  expect(res.status).toBe(200);
  return [...res.body.data].sort((a, b) => a.seq - b.seq).map((e) => e.action);
}

async function decisionsOf(org: InvokeSetup, sessionId: string) {
  const res = await app.http.get<{
    data: { verdict: string; invocation_id: string; action_digest: string }[];
  }>(`/v1/acs/decisions?session_id=${sessionId}`, org.org.adminKey);
  expect(res.status).toBe(200);
  return res.body.data;
}

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (_req, res) => answerChat(res, 'ok');
  app = await startTestApp({
    env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true', CP_SYNC_INVOKES_IN_API: 'true' },
  });
}, 60_000);
afterAll(async () => {
  jest.restoreAllMocks();
  await app.close();
  await stub.stop();
});

it('an allowed invoke is written once, decided: requested, allowed, succeeded; one decision; usage exact', async () => {
  const org = await newOrg();
  const store = watchStore();
  const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'allowed'), 5);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'succeeded', decision: { verdict: 'allow' } });
  expect(store.callsFor(res.body.id)).toEqual({ insert: 0, insertDecided: 1, forGuardian: 0, decide: 0 });
  expect(store.decidedAs(res.body.id)?.status).toBe('running');
  expect(await actionsOf(org, res.body.id)).toEqual([
    'llm.invoke.requested',
    'llm.invoke.allowed',
    'llm.invoke.succeeded',
  ]);
  const decisions = await decisionsOf(org, org.sessionId);
  expect(decisions).toEqual([expect.objectContaining({ verdict: 'allow', invocation_id: res.body.id })]);
  expect(decisions[0]?.action_digest).toMatch(/^[0-9a-f]{64}$/);
  const verify = await app.http.get<{ valid: boolean }>('/v1/audit/verify', org.org.adminKey);
  expect(verify.body.valid).toBe(true);
  const session = await app.http.get<{ usage: Record<string, number> }>(
    `/v1/sessions/${org.sessionId}`,
    org.org.adminKey,
  );
  expect(session.body.usage).toMatchObject({ calls: 1, reserved_usd: 0, cost_usd: res.body.cost_usd });
});

it('a denied invoke is written denied, with its decision; the client is told at once and nothing is sent', async () => {
  const org = await newOrg({ name: 'no secrets', rules: [{ type: 'deny_pattern', pattern: 'secret plan' }] });
  const store = watchStore();
  const started = Date.now();
  const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'the secret plan'), 10);
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(res.body).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
  expect(store.callsFor(res.body.id)).toMatchObject({ insert: 0, insertDecided: 1, decide: 0 });
  expect(sentWith('the secret plan')).toHaveLength(0);
  expect(await actionsOf(org, res.body.id)).toEqual(['llm.invoke.requested', 'llm.invoke.denied']);
  expect(await decisionsOf(org, org.sessionId)).toEqual([
    expect.objectContaining({ verdict: 'deny', invocation_id: res.body.id }),
  ]);
  const read = await app.http.get<InvocationBody>(`/v1/llm/invocations/${res.body.id}`, org.org.adminKey);
  expect(read.body).toMatchObject({ status: 'denied', decision: { verdict: 'deny' } });
});

it('an invoke that needs approval is written awaiting it, with its approval pending', async () => {
  const org = await newOrg({ name: 'approve all', rules: [{ type: 'require_approval' }] });
  const store = watchStore();
  const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'may I'), 1);
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({ status: 'awaiting_approval', decision: { verdict: 'require_approval' } });
  expect(store.decidedAs(res.body.id)?.status).toBe('awaiting_approval');
  expect(sentWith('may I')).toHaveLength(0);
  const pending = await app.http.get<{ data: { invocation_id: string; status: string }[] }>(
    '/v1/approvals?status=pending',
    org.org.adminKey,
  );
  expect(pending.body.data).toEqual([
    expect.objectContaining({ invocation_id: res.body.id, status: 'pending' }),
  ]);
  expect(await actionsOf(org, res.body.id)).toEqual(['llm.invoke.requested', 'llm.invoke.awaiting_approval']);
});

it('a modified request is written as modified, and sent so', async () => {
  const org = await newOrg({ name: 'clamp', rules: [{ type: 'max_tokens', limit: 10 }] });
  const store = watchStore();
  const res = await invoke(
    app.http,
    org.org.adminKey,
    body(org.sessionId, 'long answer', { max_tokens: 1000 }),
    5,
  );
  expect(res.body).toMatchObject({ status: 'succeeded', decision: { verdict: 'modify' } });
  expect(store.decidedAs(res.body.id)?.request?.maxTokens).toBe(10);
  expect(sentWith('long answer').map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([10]);
  const row = await app.infra
    .knex('invocations')
    .where({ id: res.body.id })
    .first<{ request: { maxTokens?: number; max_tokens?: number } }>('request');
  expect(row?.request.maxTokens ?? row?.request.max_tokens).toBe(10);
});

it('a slow decision is recorded by the guardian stage after a fresh read, not made twice', async () => {
  const org = await newOrg();
  const store = watchStore();
  const guardian = app.infra.guardian;
  const decideNow = guardian.decide.bind(guardian);
  const decide = jest.spyOn(guardian, 'decide').mockImplementationOnce(async (input) => {
    await new Promise((resolve) => setTimeout(resolve, 150));
    return decideNow(input);
  });
  try {
    const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'slowly'), 5);
    expect(res.body).toMatchObject({ status: 'succeeded', decision: { verdict: 'allow' } });
    expect(store.callsFor(res.body.id)).toEqual({ insert: 1, insertDecided: 0, forGuardian: 1, decide: 1 });
    expect(decide.mock.calls.filter(([input]) => input.orgId === org.org.orgId)).toHaveLength(1);
    expect(await actionsOf(org, res.body.id)).toEqual([
      'llm.invoke.requested',
      'llm.invoke.allowed',
      'llm.invoke.succeeded',
    ]);
  } finally {
    decide.mockRestore();
  }
});

it('an invoke whose credential was deleted is left to the guardian stage: failed, never sent', async () => {
  const org = await newOrg();
  const deleted = await app.http.call('DELETE', `/v1/credentials/${org.credentialRef}`, {
    token: org.org.adminKey,
  });
  expect(deleted.status).toBe(204);
  const store = watchStore();
  const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'no key'), 5);
  expect(res.body).toMatchObject({ status: 'failed', error: { error_code: 'credential_not_found' } });
  expect(store.callsFor(res.body.id)).toMatchObject({ insert: 1, insertDecided: 0 });
  expect(sentWith('no key')).toHaveLength(0);
});

it("a session's history lists the request before its decision, even within one millisecond", async () => {
  const org = await newOrg();
  const now = jest.spyOn(app.infra.clock, 'now').mockReturnValue(new Date());
  try {
    const res = await invoke(app.http, org.org.adminKey, body(org.sessionId, 'at once'), 5);
    expect(res.body.status).toBe('succeeded');
  } finally {
    now.mockRestore();
  }
  const history = await app.http.get<{ data: { type: string }[] }>(
    `/v1/sessions/${org.sessionId}/history?limit=10`,
    org.org.adminKey,
  );
  expect(history.body.data.map((item) => item.type)).toEqual(['invocation', 'decision']);
});

/**
 * Runs one invoke whose guardian decision (made before the invocation is recorded) first lets
 * `meanwhile` change something it is decided on, as a concurrent request would. Returns the
 * invocation and the status `meanwhile`'s request was answered (asserted by the caller: a failed
 * assertion inside the guardian would only be taken for a guardian that failed).
 */
async function invokeWhileDeciding(
  token: string,
  request: Record<string, unknown>,
  meanwhile: () => Promise<{ status: number }>,
  { slowly = false } = {},
): Promise<{ res: InvocationBody; meanwhileStatus: number | null }> {
  const guardian = app.infra.guardian;
  const decideNow = guardian.decide.bind(guardian);
  let meanwhileStatus: number | null = null;
  const decide = jest.spyOn(guardian, 'decide').mockImplementationOnce(async (input) => {
    const verdict = await decideNow(input);
    meanwhileStatus = (await meanwhile()).status;
    // Past SLOW_DECISION_MS: the verdict goes to the guardian stage to be recorded (a busy policy thread).
    if (slowly) await new Promise((resolve) => setTimeout(resolve, SLOW_DECISION_MS + 50));
    return verdict;
  });
  try {
    const res = (await invoke(app.http, token, request, 5)).body as InvocationBody;
    return { res, meanwhileStatus };
  } finally {
    decide.mockRestore();
  }
}

describe('what changes while an invoke is decided is seen, as the guardian stage sees it (QA)', () => {
  it('a session closed meanwhile: the invocation fails session_not_open and is never sent', async () => {
    const org = await newOrg();
    const store = watchStore();
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, 'closed meanwhile'),
      () => app.http.post(`/v1/sessions/${org.sessionId}/close`, undefined, org.org.adminKey),
    );
    expect(meanwhileStatus).toBe(200);
    expect(res).toMatchObject({ status: 'failed', error: { error_code: 'session_not_open' } });
    expect(store.callsFor(res.id)).toMatchObject({ insertDecided: 1, insert: 1 });
    expect(sentWith('closed meanwhile')).toHaveLength(0);
    expect(await actionsOf(org, res.id)).toEqual(['llm.invoke.requested', 'llm.invoke.failed']);
  });

  it('a deny policy created meanwhile: the invocation is decided again, on it, and denied', async () => {
    const org = await newOrg();
    const policy = { name: 'late', rules: [{ type: 'deny_pattern', pattern: 'deny me' }] };
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, 'deny me later'),
      () => app.http.post('/v1/policies', policy, org.org.adminKey),
    );
    expect(meanwhileStatus).toBe(201);
    expect(res).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
    expect(sentWith('deny me later')).toHaveLength(0);
  });

  it('an agent suspended meanwhile: the invocation is not sent', async () => {
    const org = await newOrg();
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, 'suspended meanwhile'),
      () => app.http.post(`/v1/agents/${org.agentId}/suspend`, undefined, org.org.adminKey),
    );
    expect(meanwhileStatus).toBe(200);
    expect(res.status).not.toBe('succeeded');
    expect(sentWith('suspended meanwhile')).toHaveLength(0);
  });

  it('the key that asked revoked meanwhile: the invocation fails invalid_api_key and is never sent', async () => {
    const org = await newOrg();
    const minted = await app.http.post<{ id: string; key: string }>(
      '/v1/keys',
      { name: 'agent', scopes: ['llm:invoke'] },
      org.org.adminKey,
    );
    expect(minted.status).toBe(201);
    const store = watchStore();
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      minted.body.key,
      body(org.sessionId, 'revoked meanwhile'),
      () => app.http.call('DELETE', `/v1/keys/${minted.body.id}`, { token: org.org.adminKey }),
    );
    expect(meanwhileStatus).toBe(200);
    expect(res).toMatchObject({ status: 'failed', error: { error_code: 'invalid_api_key' } });
    expect(store.callsFor(res.id)).toMatchObject({ insertDecided: 1, insert: 1 });
    expect(sentWith('revoked meanwhile')).toHaveLength(0);
  });

  it('a credential rotated meanwhile: the call goes out with the new secret, never the old', async () => {
    const org = await newOrg();
    const store = watchStore();
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, 'rotated meanwhile'),
      () =>
        app.http.post(
          `/v1/credentials/${org.credentialRef}/rotate`,
          { secret: 'sk-stub-rotated' },
          org.org.adminKey,
        ),
    );
    expect(meanwhileStatus).toBe(200);
    expect(res.status).toBe('succeeded');
    expect(store.callsFor(res.id)).toMatchObject({ insertDecided: 1, insert: 1 });
    expect(sentWith('rotated meanwhile').map((r) => r.headers.authorization)).toEqual([
      'Bearer sk-stub-rotated',
    ]);
  });
});

/**
 * A decision slow enough (SLOW_DECISION_MS) is recorded by the guardian stage after the invocation
 * is written queued and read again; what it was reached on must still stand then (QA, second round:
 * under a busy policy thread, all four went through).
 */
describe('what changes while an invoke is decided slowly is seen too (QA)', () => {
  const changes: [string, (org: InvokeSetup) => Promise<{ status: number }>][] = [
    [
      'an agent suspended',
      (org) => app.http.post(`/v1/agents/${org.agentId}/suspend`, undefined, org.org.adminKey),
    ],
    [
      "the agent's allowed_models narrowed",
      (org) =>
        app.http.call('PATCH', `/v1/agents/${org.agentId}`, {
          token: org.org.adminKey,
          body: { allowed_models: ['other-model'] },
        }),
    ],
    [
      'a deny policy created',
      (org) =>
        app.http.post(
          '/v1/policies',
          { name: 'late', rules: [{ type: 'deny_pattern', pattern: 'slow race' }] },
          org.org.adminKey,
        ),
    ],
  ];

  it.each(changes)('%s meanwhile: decided again on it and denied, never sent', async (_, change) => {
    const org = await newOrg();
    const store = watchStore();
    const content = `slow race ${randomUUID()}`;
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, content),
      () => change(org),
      { slowly: true },
    );
    expect([200, 201]).toContain(meanwhileStatus);
    expect(res).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
    expect(store.callsFor(res.id)).toMatchObject({ insertDecided: 0, insert: 1, decide: 1 });
    expect(sentWith(content)).toHaveLength(0);
  });

  it('a redaction policy created meanwhile: decided again, and the provider gets the redacted prompt', async () => {
    const org = await newOrg();
    const policy = {
      name: 'redact',
      rules: [{ type: 'redact_pattern', pattern: 'secret-[0-9]+', replacement: '[X]' }],
    };
    const { res, meanwhileStatus } = await invokeWhileDeciding(
      org.org.adminKey,
      body(org.sessionId, 'slow secret-1234'),
      () => app.http.post('/v1/policies', policy, org.org.adminKey),
      { slowly: true },
    );
    expect(meanwhileStatus).toBe(201);
    expect(res.status).toBe('succeeded');
    expect(sentWith('slow [X]')).toHaveLength(1);
    expect(sentWith('slow secret-1234')).toHaveLength(0);
  });
});
