import { invokeBody, openSession, setUpInvoking, type InvokeSetup } from '../support/invoke-fixtures';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * A request sent again with its Idempotency-Key while the first still runs waits for the first's
 * answer, looking for it less often the longer it waits: a thousand duplicates must not each ask
 * the database ten times a second.
 */
let app: TestApp;
let setup: InvokeSetup;

beforeAll(async () => {
  app = await startTestApp({ workers: true });
  setup = await setUpInvoking(app.http, { models: ['mock-slow-2500'] });
}, 60_000);
afterAll(() => app.close());

it("gets the first's answer replayed, having looked for it a few times, not every 100 ms", async () => {
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  const send = () =>
    app.http.call<{ id: string; status: string }>('POST', '/v1/llm/invoke?wait=10', {
      token: setup.org.adminKey,
      body: invokeBody(session.id, { model: 'mock-slow-2500' }),
      headers: { 'idempotency-key': `slow-${session.id}` },
    });
  const first = send();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const claim = jest.spyOn(app.infra.idempotency, 'claim');
  try {
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe((await first).body.id);
    expect(again.body.status).toBe('succeeded');
    // About 2.3 s of waiting: 100, 200, 400, 800 ms, then a second apart; every 100 ms was 23 looks.
    expect(claim.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(claim.mock.calls.length).toBeLessThanOrEqual(8);
  } finally {
    claim.mockRestore();
  }
});
