import type { ServerResponse } from 'node:http';
import {
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
  type SessionBody,
} from '../support/invoke-fixtures';
import { mintKey } from '../support/factories';
import { answerChat, StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A retry comes up to a minute after the call before it (a provider's Retry-After): closing the
 * session or suspending the agent meanwhile stops it as it stops a new call, before the provider
 * is called again; nothing more is charged, and nothing stays reserved.
 */
let app: TestApp;
let stub: StubProvider;
let setup: InvokeSetup;
/** Prompts whose first call was answered 503, by marker. */
const refusedOnce = new Set<string>();

const ok = (res: ServerResponse) => answerChat(res, 'fine', 'retry-model');

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (req, res) => {
    const marker = JSON.stringify(req.body);
    if (refusedOnce.has(marker)) return ok(res);
    refusedOnce.add(marker);
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ error: { message: 'overloaded' } }));
  };
  app = await startTestApp({ workers: true, env: { CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true' } });
  setup = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['retry-model'] });
}, 60_000);
afterAll(async () => {
  await app.close();
  await stub.stop();
});

const callsWith = (text: string) => stub.requests.filter((r) => JSON.stringify(r.body).includes(text)).length;

/** Invokes, waits for the first (refused) call, does `meanwhile`, and returns the outcome. */
async function retriedAfter(
  text: string,
  meanwhile: (session: SessionBody) => Promise<unknown>,
  key = setup.org.adminKey,
) {
  const session = await openSession(app.http, key, { agent_id: setup.agentId, max_cost_usd: 1 });
  const body = invokeBody(session.id, { model: 'retry-model', messages: [{ role: 'user', content: text }] });
  const queued = await invoke(app.http, key, body, 0);
  for (let i = 0; callsWith(text) === 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 20));
  await meanwhile(session);
  const admin = setup.org.adminKey;
  const outcome = await finished(app.http, admin, queued.body.id);
  const after = (await app.http.get<SessionBody>(`/v1/sessions/${session.id}`, admin)).body;
  return { outcome, usage: after.usage, calls: callsWith(text) };
}

it('without a change meanwhile, the retry is made and succeeds', async () => {
  const { outcome, calls } = await retriedAfter('plain retry', async () => undefined);
  expect(outcome.status).toBe('succeeded');
  expect(calls).toBe(2);
});

it('a session closed meanwhile stops the retry: failed session_not_open, one call made and charged', async () => {
  const { outcome, usage, calls } = await retriedAfter('closed meanwhile', (s) =>
    app.http.post(`/v1/sessions/${s.id}/close`, {}, setup.org.adminKey),
  );
  expect(outcome).toMatchObject({ status: 'failed', error: { error_code: 'session_not_open' } });
  expect(outcome.error?.message).toContain('the call was not tried again');
  expect(calls).toBe(1);
  expect(usage).toMatchObject({ calls: 1, reserved_usd: 0 });
});

it('an agent suspended meanwhile stops the retry: denied by the guardian, no second call', async () => {
  const { outcome, usage, calls } = await retriedAfter('suspended meanwhile', () =>
    app.http.post(`/v1/agents/${setup.agentId}/suspend`, {}, setup.org.adminKey),
  );
  await app.http.post(`/v1/agents/${setup.agentId}/resume`, {}, setup.org.adminKey);
  expect(outcome).toMatchObject({ status: 'denied', error: { error_code: 'guardian_denied' } });
  expect(outcome.error?.message).toContain('denied before its retry');
  expect(calls).toBe(1);
  expect(usage).toMatchObject({ calls: 1, reserved_usd: 0 });
});

it('the key that asked revoked meanwhile stops the retry: failed invalid_api_key, no second call', async () => {
  const scopes = ['llm:invoke', 'sessions:write', 'sessions:read'];
  const agentKey = await mintKey(app.http, setup.org.adminKey, scopes, 'revoked meanwhile');
  const { outcome, usage, calls } = await retriedAfter(
    'revoked meanwhile',
    () => app.http.call('DELETE', `/v1/keys/${agentKey.id}`, { token: setup.org.adminKey }),
    agentKey.key,
  );
  expect(outcome).toMatchObject({ status: 'failed', error: { error_code: 'invalid_api_key' } });
  expect(outcome.error?.message).toContain('the call was not tried again');
  expect(calls).toBe(1);
  expect(usage).toMatchObject({ calls: 1, reserved_usd: 0 });
});

it('a retry while its org is past its share of evaluation time waits its turn before it reserves, then runs', async () => {
  const time = app.infra.evaluationTime;
  const refusals: number[] = [];
  const assertTurn = time.assertTurn.bind(time);
  const spy = jest.spyOn(time, 'assertTurn').mockImplementation((orgId) => {
    try {
      assertTurn(orgId);
    } catch (err) {
      refusals.push(Date.now());
      throw err;
    }
  });
  try {
    const { outcome, usage, calls } = await retriedAfter('in debt meanwhile', async () => {
      time.charge(setup.org.orgId, 1_500); // half a second in debt at 250 ms a second: 2 s
    });
    expect(refusals.length).toBeGreaterThan(0);
    expect(outcome.status).toBe('succeeded');
    expect(calls).toBe(2);
    // Waiting its turn is not an attempt, and held nothing: two calls charged, nothing reserved.
    expect(usage).toMatchObject({ calls: 2, reserved_usd: 0 });
  } finally {
    spy.mockRestore();
  }
});
