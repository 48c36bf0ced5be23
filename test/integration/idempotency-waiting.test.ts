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

it("a retry after the first request's process died while it waited gets the invocation it made, never a second", async () => {
  const session = await openSession(app.http, setup.org.adminKey, {
    agent_id: setup.agentId,
    max_cost_usd: 1,
  });
  const key = `died-${session.id}`;
  const send = () =>
    app.http.call<{ id: string; status: string }>('POST', '/v1/llm/invoke?wait=10', {
      token: setup.org.adminKey,
      body: invokeBody(session.id, { model: 'mock-slow-2500' }),
      headers: { 'idempotency-key': key },
    });
  // The first request's process dies before it stores its final answer: only what it kept once
  // the invocation existed is there, and its claim is as old as a dead process's would be.
  const store = app.infra.idempotency;
  const complete = store.complete.bind(store);
  const died = jest
    .spyOn(store, 'complete')
    .mockImplementation((scope, response) =>
      response.interim ? complete(scope, response) : Promise.resolve(),
    );
  let first: Awaited<ReturnType<typeof send>>;
  try {
    first = await send();
  } finally {
    died.mockRestore();
  }
  await app.infra
    .knex('idempotency_records')
    .where({ key })
    .update({ created_at: app.infra.knex.raw(`now() - interval '1 hour'`) });

  const again = await send();
  expect(again.status).toBe(202);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.headers.get('location')).toBe(`/v1/llm/invocations/${first.body.id}`);
  expect(again.body).toMatchObject({ id: first.body.id, status: 'queued' });
  const listed = await app.http.get<{ data: { id: string }[] }>(
    `/v1/llm/invocations?session_id=${session.id}`,
    setup.org.adminKey,
  );
  expect(listed.body.data.map((i) => i.id)).toEqual([first.body.id]);
});
