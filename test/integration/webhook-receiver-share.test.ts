import { eventually } from '../support/eventually';
import { Receiver } from '../support/hanging-receiver';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import type { Arrived } from '../support/local-server';
import { startTestApp, type TestApp } from '../support/test-app';
import { sendEvent } from '../support/webhook-events';

/**
 * Within an org, one receiver that never answers holds at most its share of the org's delivery
 * slots (half of them by default): with CP_WEBHOOK_ORG_CONCURRENCY=4 it has two deliveries in
 * flight, and the org's other receiver gets every event at once (QA: it waited behind the dead
 * receiver's first attempts, later and later).
 */
const TIMEOUT_MS = 4000;
const ORG_CAP = 4;

let app: TestApp;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  app = await startTestApp({
    workers: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true',
      CP_WEBHOOK_ORG_CONCURRENCY: String(ORG_CAP),
      CP_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      // No retry within the test: each delivery is attempted once.
      CP_WEBHOOK_BACKOFF_MS: '600000',
    },
  });
});
afterAll(async () => {
  await app.close();
  await receiver.stop();
});

async function subscribe(org: SignedUpOrg, url: string): Promise<void> {
  const res = await app.http.post('/v1/webhooks', { url, events: ['invocation.finished'] }, org.adminKey);
  expect(res.status).toBe(201);
}

it("delivers the org's other receiver every event while one receiver of the org hangs", async () => {
  const org = await signupOrg(app.http, 'One dead receiver');
  const hang = receiver.url('hang');
  const ok = receiver.url('ok');
  await subscribe(org, hang);
  await subscribe(org, ok);

  const sent = Date.now();
  for (let i = 0; i < 8; i++) await sendEvent(app.infra, org.orgId, 'invocation.finished', { i });
  const arrived = await eventually(() => receiver.at(ok).length >= 8 && receiver.at(ok), 10_000);
  // All eight before the hanging deliveries time out and free their slots.
  expect(Math.max(...arrived.map((a: Arrived) => a.at)) - sent).toBeLessThan(TIMEOUT_MS);
  expect(receiver.mostOpen.get(new URL(hang).pathname)).toBe(ORG_CAP / 2);
  // The hanging receiver's others wait their turn and are each attempted once, two at a time.
  await eventually(() => receiver.at(hang).length >= 8, 40_000);
  expect(new Set(receiver.at(hang).map((a) => a.headers['webhook-id'])).size).toBe(8);
  expect(receiver.mostOpen.get(new URL(hang).pathname)).toBe(ORG_CAP / 2);
}, 60_000);
