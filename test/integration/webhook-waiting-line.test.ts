import type { ServerResponse } from 'node:http';
import { JOBS } from '../../domain/jobs';
import { DELIVERY_WINDOW_MS } from '../../domain/webhooks/retry-schedule';
import { orgLineKeys, orgSlotsKey } from '../../infra/webhooks/redis-org-delivery-slots';
import { NO_SLOT_IN_WINDOW } from '../../workers/webhook-processor';
import { eventually } from '../support/eventually';
import { sendEvent } from '../support/webhook-events';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startLocalServer, type LocalServer } from '../support/local-server';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * An org at its cap of deliveries in flight (CP_WEBHOOK_ORG_CONCURRENCY=1 here) has a waiting
 * line: its deliveries go out in the order they were queued, a freed slot wakes the next in line
 * at once, and a delivery that never had a slot ends `failed` when its 24 hours are over.
 */
const HOLD_MS = 80;

/** A receiver that answers 200 after HOLD_MS, or, on `/gate`, only when the test opens it. */
class Receiver {
  readonly order: number[] = [];
  readonly gated: ServerResponse[] = [];
  private server!: LocalServer;

  async start(): Promise<void> {
    this.server = await startLocalServer((req, res) => {
      this.order.push((JSON.parse(req.body) as { data: { i: number } }).data.i);
      if (req.path === '/gate') this.gated.push(res);
      else setTimeout(() => res.writeHead(200).end('ok'), HOLD_MS);
    });
  }

  url(path: string): string {
    return this.server.url(path);
  }

  openGate(): void {
    for (const res of this.gated.splice(0)) res.writeHead(200).end('ok');
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}

let app: TestApp;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  app = await startTestApp({
    workers: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true',
      CP_WEBHOOK_ORG_CONCURRENCY: '1',
      CP_WEBHOOK_CONCURRENCY: '8',
      CP_WEBHOOK_BACKOFF_MS: '600000',
    },
  });
});
afterAll(async () => {
  await app.close();
  await receiver.stop();
});

async function subscribed(name: string, path: string): Promise<{ org: SignedUpOrg; hook: string }> {
  const org = await signupOrg(app.http, name);
  const res = await app.http.post<{ id: string }>(
    '/v1/webhooks',
    { url: receiver.url(path), events: ['invocation.finished'] },
    org.adminKey,
  );
  expect(res.status).toBe(201);
  return { org, hook: res.body.id };
}

const deliveriesOf = async (org: SignedUpOrg, hook: string) =>
  (
    await app.http.get<{
      data: { id: string; status: string; attempts: number; last_error: string | null }[];
    }>(`/v1/webhooks/${hook}/deliveries?limit=100`, org.adminKey)
  ).body.data;

const webhookQueue = () => app.infra.queues.queue(JOBS['webhook.deliver'].queue);

/**
 * The org's delivery job that waits behind its cap, held back for a minute (left alone, it asks
 * again within a second). Tried again if the job was just then taken from its delay.
 */
const holdBack = (orgId: string) =>
  eventually(async () => {
    const job = (await webhookQueue().getDelayed()).find((j) => j.data.org_id === orgId);
    return (
      job &&
      (await job.changeDelay(60_000).then(
        () => job,
        () => null,
      ))
    );
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('webhooks: an org’s waiting line', () => {
  it('sends an org’s deliveries one at a time in the order they were queued', async () => {
    const { org } = await subscribed('Ordered', '/ordered');
    const count = 10;
    for (let i = 0; i < count; i++) {
      await sendEvent(app.infra, org.orgId, 'invocation.finished', { i });
      await sleep(25);
    }
    await eventually(() => receiver.order.filter((i) => i < 100).length >= count, 30_000);
    // Waiting with a random, doubling back-off instead, the deliveries took the slot in any order.
    expect(receiver.order.filter((i) => i < 100)).toEqual([...Array(count).keys()]);
  }, 40_000);

  it('wakes the next in line as soon as a slot is given back', async () => {
    const { org, hook } = await subscribed('Woken', '/gate');
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { i: 100 });
    await eventually(() => receiver.gated.length === 1);
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { i: 101 });
    // Behind the held slot, the second delivery waits; left alone it would not run for a minute.
    await eventually(async () => (await app.infra.redis.zcard(orgLineKeys(app.prefix, org.orgId)[0])) === 1);
    await holdBack(org.orgId);

    receiver.openGate();
    await eventually(() => receiver.gated.length === 1, 10_000);
    expect(receiver.order.slice(-2)).toEqual([100, 101]);
    receiver.openGate();
    await eventually(async () => (await deliveriesOf(org, hook)).every((d) => d.status === 'delivered'));
  }, 20_000);

  it('drops a dead entry first in line (its job gone) and gives the free slot to the one behind it', async () => {
    const { org } = await subscribed('Haunted', '/haunted');
    const [waiting, asked] = orgLineKeys(app.prefix, org.orgId);
    const inFlight = orgSlotsKey(app.prefix, org.orgId);
    const [seconds] = await app.infra.redis.time();
    const now = Number(seconds) * 1000;
    // First in line, a job that no longer exists; the one slot held by a delivery in flight.
    await app.infra.redis.zadd(waiting!, now - 1000, 'ghost');
    await app.infra.redis.zadd(asked!, now, 'ghost');
    await app.infra.redis.zadd(inFlight, now, 'in-flight');
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { i: 300 });
    await eventually(async () => (await app.infra.redis.zcard(waiting!)) === 2);

    // The slot lapses with no release to wake anyone: the living waiter still gets it at its next ask.
    const freed = Date.now();
    await app.infra.redis.zrem(inFlight, 'in-flight');
    await eventually(() => receiver.order.includes(300), 10_000);
    expect(Date.now() - freed).toBeLessThan(5_000);
    expect(await app.infra.redis.zrange(waiting!, 0, -1)).toEqual([]);
  }, 20_000);

  it('ends as failed a delivery that had no slot in its 24 hours, without attempting it', async () => {
    const { org, hook } = await subscribed('Starved', '/starved');
    // A slot held by a delivery still in flight: the org is at its cap.
    const [seconds] = await app.infra.redis.time();
    await app.infra.redis.zadd(orgSlotsKey(app.prefix, org.orgId), Number(seconds) * 1000, 'in-flight');
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { i: 200 });
    const job = await holdBack(org.orgId);

    // Its job was queued a day and a minute ago.
    const queuedAt = Date.now() - DELIVERY_WINDOW_MS - 60_000;
    await app.infra.redis.hset(
      `${app.infra.queues.bullPrefix}:${webhookQueue().name}:${job.id}`,
      'timestamp',
      queuedAt,
    );
    await job.promote();

    const [ended] = await eventually(async () => {
      const rows = await deliveriesOf(org, hook);
      return rows[0]?.status === 'failed' && rows;
    });
    expect(ended).toMatchObject({ status: 'failed', attempts: 0, last_error: NO_SLOT_IN_WINDOW });
    expect(receiver.order).not.toContain(200);
    expect(await app.infra.redis.zcard(orgLineKeys(app.prefix, org.orgId)[0])).toBe(0);
  });
});
