import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { CapSnapshot } from '../../domain/budget/cap-ledger';
import { RedisCapLedger } from '../../infra/budget/redis-cap-ledger';
import { TEST_REDIS_URL } from '../support/test-db';

const prefix = `cpt_${randomBytes(5).toString('hex')}`;
let redis: Redis;
let ledger: RedisCapLedger;
let clock = 1_000_000;

beforeAll(() => {
  redis = new Redis(TEST_REDIS_URL);
  ledger = new RedisCapLedger(redis, prefix, () => clock);
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

let n = 0;
const snapshot = (over: Partial<CapSnapshot> = {}): CapSnapshot => ({
  sessionId: `ses_${++n}`,
  limits: { costMicros: 1000, calls: 3, tokens: 500 },
  spent: { costMicros: 0, calls: 0, tokens: 0 },
  expiresAt: new Date(Date.now() + 3_600_000),
  inFlight: [],
  ...over,
});
const amounts = (costMicros: number, tokens = 10) => ({ costMicros, calls: 1, tokens });
const held = async (sessionId: string) => (await ledger.reserved([sessionId])).get(sessionId);
const spent = (sessionId: string) => redis.hmget(`${prefix}:cap:{${sessionId}}`, 'cs', 'ks', 'ts');

describe('the cap ledger', () => {
  it('has no state for a session it never saw: the caller restores it from PostgreSQL', async () => {
    expect(await ledger.reserve('ses_unknown', 'inv_1', amounts(1))).toEqual({ kind: 'missing' });
    expect(await ledger.settle('ses_unknown', 'inv_1', amounts(1))).toBe('missing');
  });

  it('reserves while spent + reserved + amount fits, and refuses with the cap and what remains', async () => {
    const s = snapshot({ spent: { costMicros: 400, calls: 0, tokens: 0 } });
    expect(await ledger.restore(s)).toBe(true);
    expect(await ledger.reserve(s.sessionId, 'inv_a', amounts(500))).toEqual({ kind: 'reserved' });
    expect(await ledger.reserve(s.sessionId, 'inv_b', amounts(101))).toEqual({
      kind: 'refused',
      cap: 'cost',
      limit: 1000,
      remaining: 100,
    });
    expect(await ledger.reserve(s.sessionId, 'inv_c', amounts(100))).toEqual({ kind: 'reserved' });
    expect(await held(s.sessionId)).toEqual({ costMicros: 600, calls: 2, tokens: 20 });
  });

  it('checks calls and tokens too', async () => {
    const s = snapshot();
    await ledger.restore(s);
    for (const id of ['i1', 'i2', 'i3'])
      expect((await ledger.reserve(s.sessionId, id, amounts(1))).kind).toBe('reserved');
    expect(await ledger.reserve(s.sessionId, 'i4', amounts(1))).toMatchObject({
      kind: 'refused',
      cap: 'calls',
    });
    const t = snapshot();
    await ledger.restore(t);
    expect(await ledger.reserve(t.sessionId, 'big', amounts(1, 501))).toMatchObject({
      kind: 'refused',
      cap: 'tokens',
      limit: 500,
    });
  });

  it('is idempotent per charge: a second reserve holds nothing more (it is told the charge is held), a second settle charges nothing', async () => {
    const s = snapshot();
    await ledger.restore(s);
    await ledger.reserve(s.sessionId, 'inv_1', amounts(300, 50));
    expect(await ledger.isHeld(s.sessionId, 'inv_1')).toBe(true);
    expect(await ledger.reserve(s.sessionId, 'inv_1', amounts(300, 50))).toEqual({ kind: 'held' });
    expect(await held(s.sessionId)).toEqual({ costMicros: 300, calls: 1, tokens: 50 });
    expect(await ledger.settle(s.sessionId, 'inv_1', amounts(120, 30))).toBe('settled');
    expect(await ledger.settle(s.sessionId, 'inv_1', amounts(120, 30))).toBe('already_settled');
    expect(await ledger.reserve(s.sessionId, 'inv_1', amounts(300, 50))).toEqual({ kind: 'settled' });
    expect(await ledger.isHeld(s.sessionId, 'inv_1')).toBe(false);
    expect(await ledger.isHeld('ses_without_state', 'inv_1')).toBeNull();
    expect(await spent(s.sessionId)).toEqual(['120', '1', '30']);
    expect(await held(s.sessionId)).toEqual({ costMicros: 0, calls: 0, tokens: 0 });
  });

  it('never settles more than was reserved', async () => {
    const s = snapshot();
    await ledger.restore(s);
    await ledger.reserve(s.sessionId, 'inv_1', amounts(100, 10));
    await ledger.settle(s.sessionId, 'inv_1', { costMicros: 999, calls: 5, tokens: 999 });
    expect(await spent(s.sessionId)).toEqual(['100', '1', '10']);
  });

  it('settles a reservation of 0 micro-dollars (a model priced at 0), releasing its call and tokens', async () => {
    const s = snapshot();
    await ledger.restore(s);
    await ledger.reserve(s.sessionId, 'inv_free', amounts(0, 88));
    expect(await ledger.settle(s.sessionId, 'inv_free', amounts(0, 12))).toBe('settled');
    expect(await held(s.sessionId)).toEqual({ costMicros: 0, calls: 0, tokens: 0 });
    expect(await spent(s.sessionId)).toEqual(['0', '1', '12']);
  });

  it('refuses a rebuilt reservation of 0 micro-dollars that no longer fits, releasing what it held', async () => {
    const s = snapshot({
      limits: { costMicros: 1000, calls: 1, tokens: 500 },
      spent: { costMicros: 0, calls: 1, tokens: 0 },
      inFlight: [{ invocationId: 'inv_free', amounts: amounts(0, 40) }],
    });
    await ledger.restore(s);
    expect(await ledger.reserve(s.sessionId, 'inv_free', amounts(0, 40))).toMatchObject({
      kind: 'refused',
      cap: 'calls',
    });
    expect(await held(s.sessionId)).toEqual({ costMicros: 0, calls: 0, tokens: 0 });
  });

  it('restores only a session without state, with in-flight invocations held and confirmed only while all fits', async () => {
    const s = snapshot({
      spent: { costMicros: 600, calls: 1, tokens: 0 },
      inFlight: [
        { invocationId: 'inv_x', amounts: amounts(300) },
        { invocationId: 'inv_y', amounts: amounts(300) },
      ],
    });
    expect(await ledger.restore(s)).toBe(true);
    expect(await ledger.restore({ ...s, spent: { costMicros: 0, calls: 0, tokens: 0 }, inFlight: [] })).toBe(
      false,
    );
    // 600 + 300 + 300 > 1000: a rebuilt reservation is confirmed only if everything held fits.
    expect(await held(s.sessionId)).toEqual({ costMicros: 600, calls: 2, tokens: 20 });
    // What remains for it: 1000 - 600 spent - 300 held by inv_y, not 0.
    expect(await ledger.reserve(s.sessionId, 'inv_x', amounts(300))).toEqual({
      kind: 'refused',
      cap: 'cost',
      limit: 1000,
      remaining: 100,
    });
    expect(await ledger.reserve(s.sessionId, 'inv_y', amounts(300))).toEqual({ kind: 'reserved' });
    expect(await held(s.sessionId)).toEqual({ costMicros: 300, calls: 1, tokens: 10 });
    // An in-flight invocation that was really running settles its rebuilt reservation as usual.
    expect(await ledger.settle(s.sessionId, 'inv_y', amounts(250))).toBe('settled');
    expect(await spent(s.sessionId)).toEqual(['850', '2', '10']);
  });

  it('a rebuilt reservation larger than its cap alone is refused with the whole cap remaining', async () => {
    // A redaction grew the prompt after admission: the row holds more than the cap.
    const s = snapshot({ inFlight: [{ invocationId: 'inv_big', amounts: amounts(1500) }] });
    await ledger.restore(s);
    expect(await ledger.reserve(s.sessionId, 'inv_big', amounts(1500))).toEqual({
      kind: 'refused',
      cap: 'cost',
      limit: 1000,
      remaining: 1000,
    });
    expect(await held(s.sessionId)).toEqual({ costMicros: 0, calls: 0, tokens: 0 });
  });

  it('keeps every key of a session in one cluster slot (one hash tag)', async () => {
    const s = snapshot();
    await ledger.restore(s);
    await ledger.reserve(s.sessionId, 'inv_1', amounts(1));
    await ledger.settle(s.sessionId, 'inv_1', amounts(1));
    const keys = await redis.keys(`${prefix}:cap:{${s.sessionId}}*`);
    expect(keys.sort()).toEqual(
      [`${prefix}:cap:{${s.sessionId}}`, `${prefix}:cap:{${s.sessionId}}:settled`].sort(),
    );
    expect(await redis.pttl(keys[0] as string)).toBeGreaterThan(3_600_000);
  });

  it('indexes reservations by when they were taken, for the reaper, and drops the index entry on settle', async () => {
    const s = snapshot();
    await ledger.restore(s);
    clock = 5_000_000;
    await ledger.reserve(s.sessionId, 'old', amounts(1));
    clock = 5_060_000;
    await ledger.reserve(s.sessionId, 'new', amounts(1));
    const stale = await ledger.heldLongerThan(30_000, 100);
    expect(stale).toContainEqual({ sessionId: s.sessionId, invocationId: 'old' });
    expect(stale).not.toContainEqual({ sessionId: s.sessionId, invocationId: 'new' });
    await ledger.settle(s.sessionId, 'old', amounts(1));
    expect(await ledger.heldLongerThan(30_000, 100)).not.toContainEqual({
      sessionId: s.sessionId,
      invocationId: 'old',
    });
  });

  it('keeps the index entry of a reservation whose settle failed, so the reaper still finds it', async () => {
    const s = snapshot();
    await ledger.restore(s);
    clock = 7_000_000;
    await ledger.reserve(s.sessionId, 'stuck', amounts(1));
    // The reservations hash turned into a string: the settle script fails on it.
    await redis.set(`${prefix}:cap:{${s.sessionId}}:res`, 'not a hash');
    await expect(ledger.settle(s.sessionId, 'stuck', amounts(1))).rejects.toThrow(/WRONGTYPE/);
    clock = 7_060_000;
    expect(await ledger.heldLongerThan(30_000, 100)).toContainEqual({
      sessionId: s.sessionId,
      invocationId: 'stuck',
    });
  });
});
