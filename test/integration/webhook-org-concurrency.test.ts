import { randomBytes } from 'node:crypto';
import {
  RedisOrgDeliverySlots,
  orgLineKeys,
  orgSlotsKey,
  receiverKeys,
  SLOT_MARGIN_MS,
} from '../../infra/webhooks/redis-org-delivery-slots';
import type { SlotClaim } from '../../domain/webhooks/org-delivery-slots';
import { eventually } from '../support/eventually';
import { sendEvent } from '../support/webhook-events';
import type { Arrived } from '../support/local-server';
import { Receiver } from '../support/hanging-receiver';
import { signupOrg, type SignedUpOrg } from '../support/factories';
import { startTestApp, type TestApp } from '../support/test-app';

/**
 * One org cannot hold every webhook slot of the workers: with CP_WEBHOOK_ORG_CONCURRENCY=2 and
 * a receiver that never answers, that org has at most two deliveries in flight, the others wait
 * their turn in the queue (not counted as attempts), and another org's delivery goes out at once.
 */
const TIMEOUT_MS = 3000;
const CAP = 2;

let app: TestApp;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  app = await startTestApp({
    workers: true,
    env: {
      CP_ALLOW_PRIVATE_PROVIDER_HOSTS: 'true',
      CP_ALLOW_PRIVATE_WEBHOOK_HOSTS: 'true',
      CP_WEBHOOK_ORG_CONCURRENCY: String(CAP),
      // One receiver may use the org's every slot here: these tests are of the org's cap.
      CP_WEBHOOK_RECEIVER_CONCURRENCY: String(CAP),
      // Fewer worker slots than the noisy org has deliveries: without a per-org cap it holds them all.
      CP_WEBHOOK_CONCURRENCY: '4',
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

async function subscribe(org: SignedUpOrg, url: string): Promise<string> {
  const res = await app.http.post<{ id: string }>(
    '/v1/webhooks',
    { url, events: ['invocation.finished'] },
    org.adminKey,
  );
  expect(res.status).toBe(201);
  return res.body.id;
}

const deliveriesOf = async (org: SignedUpOrg, webhookId: string) =>
  (
    await app.http.get<{
      data: { id: string; status: string; attempts: number; last_error: string | null }[];
    }>(`/v1/webhooks/${webhookId}/deliveries?limit=100`, org.adminKey)
  ).body.data;

/** Redis's clock, in milliseconds: the one the slots are scored by. */
const redisNow = async () => {
  const [seconds, micros] = await app.infra.redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

describe('webhooks: a cap on each org’s deliveries in flight', () => {
  it("lets another org's delivery through while one org's six hang, and attempts all six in turn", async () => {
    const noisy = await signupOrg(app.http, 'Noisy');
    const quiet = await signupOrg(app.http, 'Quiet');
    const hang = receiver.url('hang');
    const ok = receiver.url('ok');
    const noisyHook = await subscribe(noisy, hang);
    await subscribe(quiet, ok);

    const started = Date.now();
    for (let i = 0; i < 6; i++) await sendEvent(app.infra, noisy.orgId, 'invocation.finished', { i });
    await eventually(() => receiver.at(hang).length >= CAP);
    const sent = Date.now();
    await sendEvent(app.infra, quiet.orgId, 'invocation.finished', { invocation_id: 'inv_quiet' });
    const [arrived] = await eventually(() => receiver.at(ok).length > 0 && receiver.at(ok));
    // Well before the hanging deliveries time out and free their slots.
    expect((arrived as Arrived).at - sent).toBeLessThan(TIMEOUT_MS / 2);
    expect((arrived as Arrived).at - started).toBeLessThan(TIMEOUT_MS);
    expect(receiver.at(hang)).toHaveLength(CAP);

    // All six are attempted, two at a time, each once: waiting for a slot is not an attempt.
    await eventually(() => receiver.at(hang).length >= 6, 30_000);
    expect(new Set(receiver.at(hang).map((a) => a.headers['webhook-id'])).size).toBe(6);
    expect(receiver.mostOpen.get(new URL(hang).pathname)).toBe(CAP);
    // The metrics count the waits as deferrals, not as failed jobs.
    const metrics = await (await fetch(`${app.http.baseUrl}/metrics`)).text();
    const deferred = metrics.match(
      /cp_job_duration_seconds_count\{[^}]*job="webhook\.deliver"[^}]*outcome="deferred"[^}]*\} (\d+)/,
    );
    expect(Number(deferred?.[1])).toBeGreaterThan(0);
    const rows = await eventually(async () => {
      const all = await deliveriesOf(noisy, noisyHook);
      return all.length === 6 && all.every((d) => d.attempts === 1 && d.last_error !== null) && all;
    }, 10_000);
    for (const d of rows)
      expect(d).toMatchObject({
        status: 'pending',
        attempts: 1,
        last_error: `no answer within ${TIMEOUT_MS} ms`,
      });
  }, 60_000);

  it('gives up a slot whose job never finished (its worker killed) once it is older than any delivery', async () => {
    const org = await signupOrg(app.http, 'Orphaned');
    const ok = receiver.url('ok');
    await subscribe(org, ok);
    const key = orgSlotsKey(app.prefix, org.orgId);
    // Two slots held by jobs of a worker that is gone: the org is at its cap while they stand.
    const now = await redisNow();
    await app.infra.redis.zadd(key, now, 'killed-1', now, 'killed-2');
    await sendEvent(app.infra, org.orgId, 'invocation.finished', { invocation_id: 'inv_orphaned' });
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.at(ok)).toEqual([]);

    // Once older than the timeout and its margin, they are pruned and the delivery goes out.
    const old = now - TIMEOUT_MS - SLOT_MARGIN_MS - 1000;
    await app.infra.redis.zadd(key, old, 'killed-1', old, 'killed-2');
    await eventually(() => receiver.at(ok).length > 0, 5_000);
    await eventually(async () => (await app.infra.redis.zcard(key)) === 0);
  });
});

describe('webhooks: the per-org slots in Redis', () => {
  const newOrg = () => `org_${randomBytes(4).toString('hex')}`;
  const line = (org: string) => app.infra.redis.zrange(orgLineKeys(app.prefix, org)[0], 0, -1);
  /** The slots as jobs use them: whether a job took one, and the claim it gives back. */
  const asJobs = (slots: RedisOrgDeliverySlots, org: string) => {
    const claims = new Map<string, SlotClaim>();
    return {
      take: async (job: string) => {
        const claim = await slots.take(org, job, null);
        if (claim !== null) claims.set(job, claim);
        return claim !== null;
      },
      release: (job: string) => slots.release(org, job, claims.get(job) as SlotClaim, null),
    };
  };

  it('never goes over the cap, counts a job once, frees on release, and lets a lost slot lapse', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 2, 400, 400);
    const org = newOrg();
    const jobs = asJobs(slots, org);
    const key = orgSlotsKey(app.prefix, org);
    expect(key.startsWith(`${app.prefix}:`)).toBe(true);

    const taken = await Promise.all(['a', 'b', 'c', 'd'].map((job) => jobs.take(job)));
    expect(taken.filter(Boolean)).toHaveLength(2);
    const holders = await app.infra.redis.zrange(key, 0, -1);
    expect(holders).toHaveLength(2);
    // The same job run again (taken over after its worker died) holds its one slot, not a second.
    expect(await jobs.take(holders[0] as string)).toBe(true);
    expect(await app.infra.redis.zcard(key)).toBe(2);
    expect(await app.infra.redis.pttl(key)).toBeGreaterThan(0);

    await jobs.release(holders[0] as string);
    expect(await jobs.take('c')).toBe(true);
    expect(await jobs.take('d')).toBe(false);

    // Nobody releases 'c' or the other holder, and 'd' stops asking: all lapse, and the org has
    // its slots back.
    await new Promise((r) => setTimeout(r, 500));
    expect(await jobs.take('f')).toBe(true);
    expect(await jobs.take('g')).toBe(true);
    expect(await app.infra.redis.zrange(key, 0, -1)).toEqual(expect.arrayContaining(['f', 'g']));
    expect(await app.infra.redis.zcard(key)).toBe(2);
    expect(await line(org)).toEqual([]);
  });

  it('leaves the slot to a twin run that took it over: the first run ending does not free it', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 1, 60_000);
    const org = newOrg();
    const first = await slots.take(org, 'job', null);
    // The same job run again while the first still runs (its lock was lost): one slot, a new claim.
    const twin = await slots.take(org, 'job', null);
    expect(first).not.toBeNull();
    expect(twin).not.toBeNull();
    expect(twin).not.toBe(first);
    await slots.release(org, 'job', first as SlotClaim, null);
    // The twin still delivers in the org's one slot: no one else gets it yet.
    expect(await slots.take(org, 'other', null)).toBeNull();
    expect(await slots.owedTo(org)).toEqual([]);
    await slots.release(org, 'job', twin as SlotClaim, null);
    expect(await slots.owedTo(org)).toEqual(['other']);
    expect(await slots.take(org, 'other', null)).not.toBeNull();
  });

  it('keeps the line in the order asked when many ask in the same millisecond (not by job id)', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 1, 60_000);
    const org = newOrg();
    const jobs = asJobs(slots, org);
    expect(await jobs.take('holder')).toBe(true);
    // Sent back to back on one connection: Redis runs them in this order, most within one millisecond.
    const asking = ['w9', 'w8', 'w7', 'w6', 'w5', 'w4', 'w3', 'w2', 'w1', 'w0'];
    expect(await Promise.all(asking.map((job) => jobs.take(job)))).toEqual(asking.map(() => false));
    await jobs.release('holder');
    expect(await slots.owedTo(org)).toEqual(['w9']);
    for (const job of asking) await slots.leave(org, job, null);
  });

  it('gives a freed slot to the one that asked first, not to whoever asks next', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 1, 60_000);
    const org = newOrg();
    const jobs = asJobs(slots, org);
    expect(await jobs.take('first')).toBe(true);
    expect(await jobs.take('second')).toBe(false);
    expect(await jobs.take('third')).toBe(false);
    expect(await slots.owedTo(org)).toEqual([]);

    await jobs.release('first');
    // Owed to the first in line, so it can be woken; a newer delivery asking first does not take it.
    expect(await slots.owedTo(org)).toEqual(['second']);
    expect(await jobs.take('fourth')).toBe(false);
    expect(await jobs.take('third')).toBe(false);
    expect(await jobs.take('second')).toBe(true);
    await jobs.release('second');
    expect(await slots.owedTo(org)).toEqual(['third']);
    // A delivery given up leaves the line, and the slot goes to the next.
    await slots.leave(org, 'third', null);
    expect(await jobs.take('fourth')).toBe(true);
    await jobs.release('fourth');
    expect(await slots.owedTo(org)).toEqual([]);
    for (const key of orgLineKeys(app.prefix, org)) expect(await app.infra.redis.exists(key)).toBe(0);
  });

  it('puts a retry at the back of the line: a dead receiver’s retries do not hold up the others', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 1, 60_000);
    const org = newOrg();
    const jobs = asJobs(slots, org);
    expect(await jobs.take('retried')).toBe(true);
    expect(await jobs.take('healthy')).toBe(false);
    await jobs.release('retried');
    // Its next attempt asks again, after the healthy delivery did.
    expect(await jobs.take('retried')).toBe(false);
    expect(await slots.owedTo(org)).toEqual(['healthy']);
    expect(await line(org)).toEqual(['healthy', 'retried']);
  });

  it('drops lapsed waiters a hundred at a time, so one ask never blocks Redis for long', async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 1, 60_000, 1_000);
    const org = newOrg();
    const jobs = asJobs(slots, org);
    const [waiting, asked] = orgLineKeys(app.prefix, org);
    expect(await jobs.take('holder')).toBe(true);
    const old = Date.now() - 60_000;
    const ids = Array.from({ length: 250 }, (_, i) => `w${i}`);
    await app.infra.redis.zadd(waiting!, ...ids.flatMap((id, i) => [old + i, id]));
    await app.infra.redis.zadd(asked!, ...ids.flatMap((id) => [old, id]));
    expect(await jobs.take('new')).toBe(false);
    expect(await app.infra.redis.zcard(asked!)).toBe(150 + 1);
    expect(await jobs.take('new')).toBe(false);
    expect(await jobs.take('new')).toBe(false);
    expect(await line(org)).toEqual(['new']);
  });

  it("keeps a delivery whose receiver has its cap in flight out of the org's line, and wakes it when one ends", async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 3, 60_000, 60_000, 2);
    const org = newOrg();
    const claims = new Map<string, SlotClaim>();
    const take = async (job: string, hook: string) => {
      const claim = await slots.take(org, job, hook);
      if (claim !== null) claims.set(job, claim);
      return claim !== null;
    };
    expect(await take('dead-1', 'hook_dead')).toBe(true);
    expect(await take('dead-2', 'hook_dead')).toBe(true);
    // The dead receiver's third waits among its receiver's waiters, not in the org's line...
    expect(await take('dead-3', 'hook_dead')).toBe(false);
    expect(await line(org)).toEqual([]);
    // ...so the org's other receiver takes the slot left, and the next of it waits in line.
    expect(await take('ok-1', 'hook_ok')).toBe(true);
    expect(await take('ok-2', 'hook_ok')).toBe(false);
    expect(await line(org)).toEqual(['ok-2']);
    // One of the dead receiver's ends: its waiter is owed its receiver's slot, the org's to ok-2.
    expect(await slots.release(org, 'dead-1', claims.get('dead-1') as SlotClaim, 'hook_dead')).toEqual([
      'dead-3',
    ]);
    expect(await slots.owedTo(org)).toEqual(['ok-2']);
    expect(await take('ok-2', 'hook_ok')).toBe(true);
    expect(await take('dead-3', 'hook_dead')).toBe(false);
    expect(await slots.release(org, 'ok-1', claims.get('ok-1') as SlotClaim, 'hook_ok')).toEqual([]);
    expect(await take('dead-3', 'hook_dead')).toBe(true);
    const [, waiting] = receiverKeys(app.prefix, org, 'hook_dead');
    expect(await app.infra.redis.zcard(waiting)).toBe(0);
    // A job from before jobs named their webhook is under the org's cap only.
    expect(await slots.take(org, 'old', null)).toBeNull();
    expect(await line(org)).toEqual(['old']);
  });

  it("keeps the receiver's line in order: a newer delivery does not pass its older waiters (QA)", async () => {
    const slots = new RedisOrgDeliverySlots(app.infra.redis, app.prefix, 3, 60_000, 60_000, 1);
    const org = newOrg();
    const first = await slots.take(org, 'r-1', 'hook');
    expect(first).not.toBeNull();
    expect(await slots.take(org, 'r-2', 'hook')).toBeNull();
    expect(await slots.receiverOwedTo(org, 'hook')).toEqual([]);
    expect(await slots.release(org, 'r-1', first as SlotClaim, 'hook')).toEqual(['r-2']);
    // The freed slot is r-2's: r-3, newer, waits behind it, even asking first.
    expect(await slots.take(org, 'r-3', 'hook')).toBeNull();
    expect(await slots.receiverOwedTo(org, 'hook')).toEqual(['r-2']);
    const second = await slots.take(org, 'r-2', 'hook');
    expect(second).not.toBeNull();
    expect(await slots.release(org, 'r-2', second as SlotClaim, 'hook')).toEqual(['r-3']);
    // A waiter given up leaves the receiver's line, and the slot is owed to the next.
    await slots.leave(org, 'r-3', 'hook');
    expect(await slots.receiverOwedTo(org, 'hook')).toEqual([]);
    expect(await slots.take(org, 'r-4', 'hook')).not.toBeNull();
  });

  it('keeps every key of an org in one cluster slot', () => {
    const tags = [
      orgSlotsKey('p', 'org_1'),
      ...orgLineKeys('p', 'org_1'),
      ...receiverKeys('p', 'org_1', 'wh_1'),
    ].map((k) => /\{(.+)\}/.exec(k)?.[1]);
    expect(tags).toEqual(['org_1', 'org_1', 'org_1', 'org_1', 'org_1']);
  });
});
