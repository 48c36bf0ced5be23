import type Redis from 'ioredis';
import type { OrgDeliverySlots, SlotClaim } from '../../domain/webhooks/org-delivery-slots';

/**
 * KEYS: the org's deliveries in flight (job ids scored by when each started), its waiting line
 * (scored by when each waiter first asked, each after the one before) and when each waiter last
 * asked, all by Redis's clock so every process agrees; then the receiver's (the webhook's)
 * deliveries in flight and its waiters. ARGV: job id, cap, how long a slot may stand, how long a
 * waiter may go without asking, the receiver's cap (0: none, a job from before it was known).
 * Slots and waiters past those ages are dropped first (their worker died, or their job ended
 * unseen), a hundred waiters a call at most. A job whose receiver has its cap in flight waits out
 * of the org's line, so it keeps none of the org's other receivers waiting (QA: one receiver that
 * never answered held every slot of its org). When the job takes a slot: the slot's score, which
 * is its claim (a job taking again the slot it holds gets a new, higher one); else 0.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local job, cap, stale, lapse = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local receiverCap = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - stale)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - lapse, 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[2], gone)
  redis.call('ZREM', KEYS[3], gone)
end
local holds = redis.call('ZSCORE', KEYS[1], job)
if receiverCap > 0 and not holds then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - stale)
  local free = receiverCap - redis.call('ZCARD', KEYS[4])
  local rank = redis.call('ZRANK', KEYS[5], job)
  -- The receiver's own line: a newer delivery does not pass its older waiters (QA).
  if free <= 0 or (rank and rank >= free) or (not rank and redis.call('ZCARD', KEYS[5]) > 0) then
    redis.call('ZREM', KEYS[2], job)
    redis.call('ZREM', KEYS[3], job)
    if not redis.call('ZSCORE', KEYS[5], job) then
      local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')[2]
      local place = now
      if last and tonumber(last) >= now then place = tonumber(last) + 1 end
      redis.call('ZADD', KEYS[5], place, job)
    end
    redis.call('PEXPIRE', KEYS[5], lapse)
    return 0
  end
end
if not redis.call('ZSCORE', KEYS[2], job) then
  -- After the last in line, even if it asked in the same millisecond (ties would go by job id).
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]
  local place = now
  if last and tonumber(last) >= now then place = tonumber(last) + 1 end
  redis.call('ZADD', KEYS[2], place, job)
end
local free = cap - redis.call('ZCARD', KEYS[1])
if holds or (free > 0 and redis.call('ZRANK', KEYS[2], job) < free) then
  local claim = now
  if holds and tonumber(holds) >= now then claim = tonumber(holds) + 1 end
  redis.call('ZADD', KEYS[1], claim, job)
  redis.call('PEXPIRE', KEYS[1], stale)
  redis.call('ZREM', KEYS[2], job)
  redis.call('ZREM', KEYS[3], job)
  if receiverCap > 0 then
    redis.call('ZADD', KEYS[4], claim, job)
    redis.call('PEXPIRE', KEYS[4], stale)
    redis.call('ZREM', KEYS[5], job)
  end
  return claim
end
redis.call('ZADD', KEYS[3], now, job)
redis.call('PEXPIRE', KEYS[2], lapse)
redis.call('PEXPIRE', KEYS[3], lapse)
return 0`;

/**
 * KEYS: the org's in flight, the receiver's in flight and its waiters. ARGV: job id, claim, the
 * receiver's cap. Frees the job's slot only if it is still this claim's. Returns the receiver's
 * first waiters, one per slot of its cap now free, to be woken.
 */
const RELEASE = `
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[2])
if free <= 0 then return {} end
return redis.call('ZRANGE', KEYS[3], 0, free - 1)`;

/**
 * KEYS: in flight, waiting line (the org's, or a receiver's). ARGV: cap (0: none, so nothing
 * owed), how long a slot may stand. The first in line, one per free slot.
 */
const OWED_TO = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local free = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
if free <= 0 then return {} end
return redis.call('ZRANGE', KEYS[2], 0, free - 1)`;

/** Beyond the receiver's timeout, what one delivery may spend reading and writing its row. */
export const SLOT_MARGIN_MS = 10_000;

/**
 * How long a waiter may go without asking before its place in line is dropped: a backstop only,
 * for an entry whose job ended unseen. A waiter asks at least every 30 s; workers stopped for a
 * few minutes keep the line as it was; a dead entry first in line is found (its job gone) and
 * dropped as soon as a slot is owed to it.
 */
export const WAITER_LAPSE_MS = 10 * 60_000;

/** The org's keys share a hash tag, so each script runs on one Redis (or one cluster slot). */
const orgKey = (prefix: string, orgId: string, what: string) => `${prefix}:webhooks:{${orgId}}:${what}`;
/** The org's set of deliveries in flight, under the service's Redis prefix. */
export const orgSlotsKey = (prefix: string, orgId: string): string => orgKey(prefix, orgId, 'inflight');
/** The org's waiting line, and when each waiter last asked. */
export const orgLineKeys = (prefix: string, orgId: string): [string, string] => [
  orgKey(prefix, orgId, 'waiting'),
  orgKey(prefix, orgId, 'asked'),
];
/** A receiver's (a webhook's) deliveries in flight, and its waiters; in its org's hash tag. */
export const receiverKeys = (prefix: string, orgId: string, webhookId: string | null): [string, string] => [
  orgKey(prefix, orgId, `receiver:${webhookId ?? '-'}:inflight`),
  orgKey(prefix, orgId, `receiver:${webhookId ?? '-'}:waiting`),
];

/** OrgDeliverySlots in Redis sorted sets per org; taking is one script, so never over the cap. */
export class RedisOrgDeliverySlots implements OrgDeliverySlots {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly cap: number,
    /** After this long a slot is given up for lost: the delivery timeout plus SLOT_MARGIN_MS. */
    private readonly staleAfterMs: number,
    /** After this long without asking, a waiter's place in line is dropped. */
    private readonly lapseAfterMs = WAITER_LAPSE_MS,
    /** One receiver's deliveries in flight at most (CP_WEBHOOK_RECEIVER_CONCURRENCY). */
    private readonly receiverCap = cap,
  ) {}

  /**
   * The receiver's cap for a job: none for one that does not name its webhook (queued before),
   * nor when it is the org's own (the org's line alone keeps the order then).
   */
  private capOf(webhookId: string | null): number {
    return webhookId === null || this.receiverCap >= this.cap ? 0 : this.receiverCap;
  }

  async take(orgId: string, jobId: string, webhookId: string | null): Promise<SlotClaim | null> {
    const keys = [
      orgSlotsKey(this.prefix, orgId),
      ...orgLineKeys(this.prefix, orgId),
      ...receiverKeys(this.prefix, orgId, webhookId),
    ];
    const args = [jobId, this.cap, this.staleAfterMs, this.lapseAfterMs, this.capOf(webhookId)];
    const claim = Number(await this.redis.eval(TAKE, 5, ...keys, ...args));
    return claim > 0 ? claim : null;
  }

  async release(orgId: string, jobId: string, claim: SlotClaim, webhookId: string | null): Promise<string[]> {
    const keys = [orgSlotsKey(this.prefix, orgId), ...receiverKeys(this.prefix, orgId, webhookId)];
    const args = [jobId, claim, this.capOf(webhookId)];
    return (await this.redis.eval(RELEASE, 3, ...keys, ...args)) as string[];
  }

  async owedTo(orgId: string): Promise<string[]> {
    const [waiting] = orgLineKeys(this.prefix, orgId);
    const keys = [orgSlotsKey(this.prefix, orgId), waiting];
    return (await this.redis.eval(OWED_TO, 2, ...keys, this.cap, this.staleAfterMs)) as string[];
  }

  async receiverOwedTo(orgId: string, webhookId: string | null): Promise<string[]> {
    const keys = receiverKeys(this.prefix, orgId, webhookId);
    return (await this.redis.eval(OWED_TO, 2, ...keys, this.capOf(webhookId), this.staleAfterMs)) as string[];
  }

  async leave(orgId: string, jobId: string, webhookId: string | null): Promise<void> {
    const [waiting, asked] = orgLineKeys(this.prefix, orgId);
    const [, receiverWaiting] = receiverKeys(this.prefix, orgId, webhookId);
    await this.redis.multi().zrem(waiting, jobId).zrem(asked, jobId).zrem(receiverWaiting, jobId).exec();
  }
}
