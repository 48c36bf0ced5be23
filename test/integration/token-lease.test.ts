import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { TokenLeases } from '../../infra/http/token-lease';
import { TEST_REDIS_URL } from '../support/test-db';

const prefix = `cpt_lease_${randomBytes(4).toString('hex')}`;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL);
  await redis.ping();
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
});

/** A replica's limiter: replicas share Redis, not memory. */
const replica = (limit: number, windowMs = 60_000) => new TokenLeases(redis, prefix, limit, windowMs);
const counter = async (subject: string) => Number(await redis.get(`${prefix}:${subject}`));

async function takeMany(leases: TokenLeases, subject: string, count: number) {
  const granted: boolean[] = [];
  for (let i = 0; i < count; i++) granted.push((await leases.take(subject)).granted);
  return granted;
}

describe('rate-limit tokens leased from Redis and spent in process', () => {
  it('leases a share of what is left, so most requests make no round trip, and counts exactly', async () => {
    const leases = replica(1_000);
    const remaining: number[] = [];
    for (let i = 0; i < 10; i++) remaining.push((await leases.take('steady')).remaining);
    expect(remaining).toEqual([999, 998, 997, 996, 995, 994, 993, 992, 991, 990]);
    // One token for the window's first request, then 1/16 of the 999 left: two leases in all.
    expect(await counter('steady')).toBe(1 + Math.floor(999 / 16));
  });

  it('never grants more than the limit across replicas, even all at once', async () => {
    const replicas = [replica(100), replica(100), replica(100)];
    const all = await Promise.all(
      Array.from({ length: 300 }, (_, i) => (replicas[i % 3] as TokenLeases).take('contended')),
    );
    expect(all.filter((t) => t.granted)).toHaveLength(100);
    for (const t of all.filter((t) => !t.granted)) expect(t.remaining).toBe(0);
  });

  it('grants the whole budget to replicas that keep asking: leased tokens get spent', async () => {
    const [a, b] = [replica(200), replica(200)];
    const granted = [...(await takeMany(a, 'shared', 150)), ...(await takeMany(b, 'shared', 150))];
    const more = [...(await takeMany(a, 'shared', 10)), ...(await takeMany(b, 'shared', 10))];
    expect([...granted, ...more].filter(Boolean)).toHaveLength(200);
  });

  it('refuses a spent window without a round trip, and opens a new one when it ends', async () => {
    const leases = replica(3, 300);
    expect(await takeMany(leases, 'short', 5)).toEqual([true, true, true, false, false]);
    const spent = await counter('short');
    const refused = await leases.take('short');
    expect(refused).toMatchObject({ granted: false, remaining: 0 });
    expect(refused.resetSeconds).toBeLessThanOrEqual(1);
    expect(await counter('short')).toBe(spent);
    await new Promise((r) => setTimeout(r, 350));
    expect(await leases.take('short')).toMatchObject({ granted: true, remaining: 2 });
  });

  it('forgets ended windows once it holds many, so a flood of addresses does not grow memory', async () => {
    const leases = replica(10, 100);
    const subjects = Array.from({ length: 10_000 }, (_, i) => `flood_${i}`);
    for (let i = 0; i < subjects.length; i += 1_000)
      await Promise.all(subjects.slice(i, i + 1_000).map((s) => leases.take(s)));
    expect(leases.held).toBe(10_000);
    await new Promise((r) => setTimeout(r, 150));
    await leases.take('after the flood');
    expect(leases.held).toBe(1);
  });

  it('spends what it leased even when the process stalls past a short window, instead of leasing again', async () => {
    const leases = replica(10, 100);
    // Every reading of the clock comes 150 ms after the one before: a process stalled past its windows.
    let clock = Date.now();
    const stalled = jest.spyOn(Date, 'now').mockImplementation(() => (clock += 150));
    try {
      expect(await leases.take('stalled')).toMatchObject({ granted: true });
    } finally {
      stalled.mockRestore();
    }
    expect(await counter('stalled')).toBe(1);
  });

  it('fails fast while Redis is not connected (the API answers 503)', async () => {
    const down = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    await expect(new TokenLeases(down, prefix, 10, 60_000).take('offline')).rejects.toThrow(
      /Redis is not ready/,
    );
    down.disconnect();
  });
});
