import type Redis from 'ioredis';
import type { OrgDeliverySlots } from '../../domain/webhooks/org-delivery-slots';

/**
 * KEYS[1]: the org's sorted set of job ids in flight, scored by when each started (Redis's clock,
 * so every process agrees). ARGV: job id, cap, how long an entry may stand. Entries older than that
 * are dropped first: their worker died without giving the slot back. 1 when the slot is taken.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - stale)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], stale)
  return 1
end
return 0`;

/** Beyond the receiver's timeout, what one delivery may spend reading and writing its row. */
export const SLOT_MARGIN_MS = 10_000;

/** The org's set of deliveries in flight, under the service's Redis prefix. */
export const orgSlotsKey = (prefix: string, orgId: string): string => `${prefix}:webhooks:inflight:${orgId}`;

/** OrgDeliverySlots in one Redis sorted set per org; taking is one script, so never over the cap. */
export class RedisOrgDeliverySlots implements OrgDeliverySlots {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly cap: number,
    /** After this long a slot is given up for lost: the delivery timeout plus SLOT_MARGIN_MS. */
    private readonly staleAfterMs: number,
  ) {}

  async take(orgId: string, jobId: string): Promise<boolean> {
    const key = orgSlotsKey(this.prefix, orgId);
    return (await this.redis.eval(TAKE, 1, key, jobId, this.cap, this.staleAfterMs)) === 1;
  }

  async release(orgId: string, jobId: string): Promise<void> {
    await this.redis.zrem(orgSlotsKey(this.prefix, orgId), jobId);
  }
}
