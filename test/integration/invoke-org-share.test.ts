import type { ServerResponse } from 'node:http';
import {
  eventually,
  finished,
  invoke,
  invokeBody,
  openSession,
  setUpInvoking,
  type InvokeSetup,
} from '../support/invoke-fixtures';
import { answerChat, StubProvider } from '../support/stub-provider';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * One org's share of a worker's invoke slots: an org whose provider does not answer holds at
 * most its share of them, and the other orgs' calls run in the rest instead of queueing behind.
 */
let app: TestApp;
let stub: StubProvider;
let slowOrg: InvokeSetup;
let otherOrg: InvokeSetup;
/** The slow org's provider calls not answered yet. */
const held: ServerResponse[] = [];
let mostHeld = 0;

const answer = (res: ServerResponse) => answerChat(res, 'late', 'slow-model');

beforeAll(async () => {
  stub = await new StubProvider().start();
  stub.handler = (_req, res) => {
    held.push(res);
    mostHeld = Math.max(mostHeld, held.length);
  };
  app = await startTestApp({
    workers: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_INVOKE_CONCURRENCY: '4',
      CP_INVOKE_ORG_CONCURRENCY: '2',
    },
  });
  slowOrg = await setUpInvoking(app.http, { baseUrl: stub.url, models: ['slow-model'] });
  otherOrg = await setUpInvoking(app.http);
}, 60_000);
afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  await app.close();
  await stub.stop();
});

it("an org holds at most its share of a worker's slots; another org's call runs beside them", async () => {
  const key = slowOrg.org.adminKey;
  const session = await openSession(app.http, key, { agent_id: slowOrg.agentId, max_cost_usd: 1 });
  const submitted = await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      invoke(
        app.http,
        key,
        invokeBody(session.id, { model: 'slow-model', messages: [{ role: 'user', content: `slow ${i}` }] }),
        0,
      ),
    ),
  );
  expect(submitted.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
  await eventually(() => held.length === 2);

  // The worker has four slots: without shares the slow org would hold them all.
  const other = await openSession(app.http, otherOrg.org.adminKey, {
    agent_id: otherOrg.agentId,
    max_cost_usd: 1,
  });
  const quick = await invoke(app.http, otherOrg.org.adminKey, invokeBody(other.id), 5);
  expect(quick.status).toBe(200);
  expect(quick.body.status).toBe('succeeded');
  expect(held).toHaveLength(2);

  // As the slow org's calls end, its waiting ones take their places, two at a time.
  while (held.length > 0 || stub.requests.length < 5) {
    await eventually(() => held.length > 0);
    for (const res of held.splice(0)) answer(res);
  }
  const outcomes = await Promise.all(submitted.map((r) => finished(app.http, key, r.body.id)));
  expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill('succeeded'));
  expect(mostHeld).toBe(2);
  expect(stub.requests).toHaveLength(5); // a call put back to wait is not an attempt: none twice
  const usage = (
    await app.http.get<{ usage: { calls: number; reserved_usd: number } }>(`/v1/sessions/${session.id}`, key)
  ).body.usage;
  expect(usage).toMatchObject({ calls: 5, reserved_usd: 0 });
}, 60_000);
